"""Measured latency as a metric: the measurement, the study's `latency` section, `lwnas cost --latency`, and a
study with `objectives: [accuracy, latency]` swept end to end through `lwnas sweep`, whose front `lwnas status`
shows with the device that measured it and `lwnas export` writes as files that run without lwnas.

No timing is asserted (machines here are shared): only that a latency is measured, recorded and shown with its
spread and its device.
"""

from __future__ import annotations

import json
import shutil
import socket

import numpy as np
import optuna
import pytest
import torch
from helpers.deploy import ATOL, RTOL, expected_output, inputs_for, run_standalone
from helpers.procs import lwnas, one_error, proc_env, read_trials, run_proc

from dashboards.data import TrialCache
from searchspace import ArchConfig, build_model
from searchspace.study import StudyError, loads_study
from trainers.latency import MIN_REPEATS, LatencyError, check_device, measure_latency
from tuners.planning.check import task_family
from tuners.store.record import record_of, trial_seed

pytestmark = pytest.mark.usefixtures("one_thread")

STUDY = """\
name: {name}
task: digits
objectives: [accuracy, latency]
budget: {{trials: 2, epochs: 1}}
tuner: {{sampler: random, max_concurrent: 1, seed: 0}}
training: {{batch_size: 64, threads: 1}}
latency: {{device: cpu, batch_size: 4, threads: 1}}
space:
  d_model: {{choice: [16, 32]}}
  heads: 2
  layers: {{int: [1, 2]}}
"""


def test_measure_latency_records_median_spread_and_device():
    torch.manual_seed(0)
    model = build_model(
        ArchConfig(family="encoder", d_model=16, heads=2, layers=1, grid=(4, 4), patch_features=3, num_classes=5)
    )
    lat = measure_latency(model, batch=2, device="cpu", threads=1)
    assert lat.batch == 2 and lat.ms > 0 and lat.cv >= 0 and lat.repeats >= MIN_REPEATS
    assert lat.device.startswith("cpu: ") and "1 thread" in lat.device and socket.gethostname() in lat.device
    assert torch.get_num_threads() == 1  # the fixture's thread count is restored


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where no GPU is")
def test_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    with pytest.raises(LatencyError, match="latency device `cuda` was asked for, but torch sees no CUDA GPU"):
        check_device("cuda")
    config = tmp_path / "c.yaml"
    config.write_text("family: encoder\nd_model: 16\nheads: 2\nlayers: 1\n")
    out = lwnas(tmp_path, "cost", config, "--latency", "--device", "cuda", "--no-memory")
    assert out.returncode != 0 and "torch sees no CUDA GPU" in out.stderr, out.stderr
    memory = lwnas(tmp_path, "cost", config, "--device", "cuda")  # the memory probe on a GPU this machine lacks
    assert one_error(memory).startswith("error peak memory on `cuda` was asked for, but torch sees no CUDA GPU")


def test_study_latency_section_is_checked_with_file_and_line():
    bad = STUDY.format(name="s").replace(
        "latency: {device: cpu, batch_size: 4, threads: 1}", "latency: {device: tpu, batch_size: 0, thread: 1}"
    )
    with pytest.raises(StudyError) as info:
        loads_study(bad, "s.yaml", task_family=task_family)
    problems = dict(info.value.problems)
    assert problems["s.yaml:7: latency.device"] == "must be one of cpu, cuda, got 'tpu'"
    assert problems["s.yaml:7: latency.batch_size"] == "must be an integer from 1 to 4096, got 0"
    assert problems["s.yaml:7: latency.thread"].startswith("unknown key")
    maximised = STUDY.format(name="s").replace("[accuracy, latency]", "{accuracy: maximize, latency: maximize}")
    with pytest.raises(StudyError, match="`latency` is a cost: it can only be minimised"):
        loads_study(maximised, "s.yaml", task_family=task_family)
    study = loads_study(
        STUDY.format(name="s") + "constraints: {latency_batch: {max: 50}}\n", "s.yaml", task_family=task_family
    )
    assert study.latency.batch_size == 4 and study.constraints[0].metric == "latency_batch"


def test_cost_reports_latency_with_its_device(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("family: encoder\nd_model: 16\nheads: 2\nlayers: 1\n")
    out = lwnas(tmp_path, "cost", config, "--latency", "--latency-batch", "3", "--no-memory", "--json")
    assert out.returncode == 0, out.stderr
    latency = json.loads(out.stdout)["latency"]
    assert [lat["batch"] for lat in latency] == [1, 3]
    assert all(lat["ms"] > 0 and lat["cv"] >= 0 and lat["device"].startswith("cpu: ") for lat in latency)
    assert all(lat["mode"] == "eager" for lat in latency)  # the default mode, recorded with each figure
    table = lwnas(tmp_path, "cost", config, "--latency", "--no-memory")
    assert "latency, batch 1 (median)" in table.stdout and "CV" in table.stdout, table.stdout
    assert ", eager)" in table.stdout, table.stdout


@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="inductor needs a C compiler")
@pytest.mark.slow
def test_cost_measures_latency_compiled_by_torch_compile(tmp_path):
    """``--latency-mode compile``: torch.compile (inductor) compiles in the untimed warm-up; one batch size keeps it
    to one compilation (about 20-50 s on a loaded 2-core machine)."""
    config = tmp_path / "c.yaml"
    config.write_text("family: encoder\nd_model: 16\nheads: 2\nlayers: 1\n")
    out = lwnas(
        tmp_path,
        "cost",
        config,
        "--latency",
        "--latency-mode",
        "compile",
        "--latency-batch",
        "1",
        "--no-memory",
        "--json",
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    [lat] = json.loads(out.stdout)["latency"]
    assert lat["mode"] == "compile" and lat["ms"] > 0 and lat["repeats"] >= MIN_REPEATS
    assert any((tmp_path / "inductor").rglob("*.py")), "inductor wrote no kernels: nothing was compiled"


def test_modes_that_cannot_run_here_are_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("family: encoder\nd_model: 16\nheads: 2\nlayers: 1\n")
    graph = lwnas(tmp_path, "cost", config, "--latency", "--latency-mode", "cuda-graph", "--no-memory")
    assert one_error(graph) == (
        "error latency mode `cuda-graph` replays a captured CUDA graph and needs `device: cuda`; on cpu use eager "
        "or compile"
    )
    alone = lwnas(tmp_path, "cost", config, "--latency-mode", "compile", "--no-memory")
    assert one_error(alone) == "error --latency-mode: measures only with --latency"
    unknown = lwnas(tmp_path, "cost", config, "--latency", "--latency-mode", "jit", "--no-memory")
    assert one_error(unknown) == "error latency mode must be one of eager, compile, cuda-graph, got 'jit'"
    # inductor on cpu without a C compiler: refused before anything is measured (PATH without one)
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "lwnas").symlink_to(shutil.which("lwnas"))
    no_cc = lwnas(
        tmp_path, "cost", config, "--latency", "--latency-mode", "compile", "--no-memory", PATH=str(bare), CXX=""
    )
    assert one_error(no_cc).startswith(
        "error latency mode `compile` on cpu needs a C compiler (torch.compile's inductor builds C++ kernels), and "
        "none (gcc, cc, clang, or $CXX) is on PATH"
    )
    # in a study file: cuda-graph on cpu is a rule of the file, refused at load with its line
    study = tmp_path / "s.yaml"
    study.write_text(STUDY.format(name="s").replace("threads: 1}\nspace", "threads: 1, mode: cuda-graph}\nspace"))
    validate = lwnas(tmp_path, "space", "validate", study)
    assert validate.returncode == 2 and "s.yaml:7: latency.mode: `cuda-graph` replays a captured CUDA graph" in (
        validate.stderr
    ), validate.stderr


def test_a_latency_constraint_no_point_meets_is_refused_before_the_sweep(tmp_path):
    study = tmp_path / "s.yaml"
    study.write_text(STUDY.format(name="s") + "constraints: {latency: {max: 1.0e-6}}\n")
    out = lwnas(tmp_path, "sweep", study, "--storage", f"sqlite:///{tmp_path / 'l.db'}")
    assert out.returncode == 2 and "no point meets latency <= 1e-06" in out.stderr, out.stderr


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")  # set_metric_names
def test_latency_objective_sweeps_end_to_end_and_its_front_exports(tmp_path):
    name = "lat"
    study = tmp_path / f"{name}.yaml"
    study.write_text(STUDY.format(name=name))
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    rc, out = run_proc(
        ["lwnas", "sweep", str(study), "--storage", url], tmp_path, proc_env(tmp_path), tmp_path / "sweep.log"
    )
    assert rc == 0, out[-4000:]
    trials = read_trials(url, name)
    complete = [t for t in trials.values() if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == 2, {n: t.state for n, t in trials.items()}
    for t in complete:
        costs = record_of(t).costs
        assert t.values[1] == costs["latency"] > 0  # the objective is the recorded measurement
        assert costs["latency_cv"] >= 0 and costs["latency_batch"] > 0 and costs["latency_batch_size"] == 4
        assert costs["latency_device"].startswith("cpu: ") and socket.gethostname() in costs["latency_device"]
        assert costs["latency_mode"] == "eager"  # how it was measured is recorded with the figure

    status = lwnas(tmp_path, "status", name, "--storage", url)
    assert status.returncode == 0, status.stderr
    assert "latency (min)" in status.stdout and "latency measured on cpu: " in status.stdout, status.stdout
    assert status.stdout.rstrip().endswith("(eager)"), status.stdout  # the mode, after the device line
    front = json.loads(lwnas(tmp_path, "status", name, "--storage", url, "--json").stdout)["front"]
    assert front and all(f["latency_device"].startswith("cpu: ") and f["latency_mode"] == "eager" for f in front)

    frame = TrialCache(url, name).load().frame  # the dashboard's trials table: latency with its spread and device
    assert {"latency", "latency_cv", "latency_device"} <= set(frame.columns)
    assert all(d.startswith("cpu: ") for d in frame["latency_device"])

    # a study whose trials were measured on two machines (a resume elsewhere) is flagged, never compared silently
    original = optuna.load_study(study_name=name, storage=url)
    mixed = optuna.create_study(storage=url, study_name="mixed", directions=original.directions)
    mixed.set_metric_names(original.metric_names)
    for key, value in original.user_attrs.items():
        mixed.set_user_attr(key, value)
    moved = complete[0].number
    for t in complete:
        costs = {**record_of(t).costs, **({"latency_device": "cpu: X"} if t.number == moved else {})}
        plan = {**t.user_attrs["plan"], "costs": costs}  # the planned record is one attribute
        mixed.add_trial(
            optuna.trial.create_trial(
                params=t.params,
                distributions=t.distributions,
                values=t.values,
                user_attrs={**t.user_attrs, "plan": plan},
            )
        )
    shown = lwnas(tmp_path, "status", "mixed", "--storage", url)
    assert "measured on 2 different devices or machines and are not comparable" in shown.stdout, shown.stdout
    assert "cpu: X: trials 0" in shown.stdout

    folder = tmp_path / "deploy"
    for fmt in ("torch", "onnx"):
        exported = lwnas(tmp_path, "export", name, "--storage", url, "--format", fmt, "-o", folder)
        assert exported.returncode == 0, exported.stderr
        assert "initialised weights" in exported.stderr
    expected = {}
    for f in front:
        stem = f"{name}-trial-{f['trial']:04d}"
        t = trials[f["trial"]]
        torch.manual_seed(trial_seed(0, t.number))  # the export's initialised weights use the trial's seed
        model = build_model(ArchConfig.from_dict(record_of(t).config)).eval()
        inputs = inputs_for(model)
        np.savez(folder / f"{stem}.inputs.npz", **inputs)
        expected[stem] = expected_output(model, inputs)
    run_standalone(folder, tmp_path)
    for stem in expected:
        got = np.load(folder / f"{stem}.outputs.npz")
        for fmt in ("torch", "onnx"):
            np.testing.assert_allclose(got[fmt], expected[stem], atol=ATOL, rtol=RTOL, err_msg=f"{stem} ({fmt})")
