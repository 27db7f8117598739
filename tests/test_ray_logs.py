"""Ray's interrupt messages during a sweep: its restore advice and metrics-file warnings are dropped,
its stop notice reworded, anything else passes (the SIGINT test in test_sweep_resume_cluster.py runs
a real sweep; this covers the metrics warning, which depends on when the signal lands)."""

import logging

from tuners.driver.ray_logs import STOP_NOTICE, quiet_ray_interrupts


def test_only_the_contradicting_messages_are_dropped(caplog):
    tune_log, analysis_log = (
        logging.getLogger("ray.tune.tune"),
        logging.getLogger("ray.tune.analysis.experiment_analysis"),
    )
    with caplog.at_level(logging.WARNING), quiet_ray_interrupts():
        tune_log.warning("Stop signal received (e.g. via SIGINT/Ctrl+C), ending Ray Tune run. Press CTRL+C to skip.")
        tune_log.warning(
            "Experiment has been interrupted, but the most recent state was saved.\n"
            'Resume experiment with: Tuner.restore(path="/x", trainable=...)'
        )
        analysis_log.warning("Failed to fetch metrics for 1 trial(s):\n- run_trial_1: FileNotFoundError('x')")
        tune_log.warning("something else Ray says")
    assert [r.getMessage() for r in caplog.records] == [STOP_NOTICE, "something else Ray says"]
    tune_log.warning("Resume experiment with: Tuner.restore(...)")  # outside a sweep, Ray's loggers are untouched
    assert caplog.records[-1].getMessage().startswith("Resume experiment")
