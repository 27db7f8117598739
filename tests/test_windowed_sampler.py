"""tuners/driver/windowed_sampler.py: TPE and GP over a bounded view of the study.

Below its window the wrapper must propose exactly what the inner sampler proposes (same seed, same
asks and tells, concurrent trials, pruned and infeasible ones, a conditional knob); above it the inner
sampler must see only the last ``window`` finished trials, the running ones and the current front.
"""

from __future__ import annotations

import warnings

import optuna
import pytest
from optuna.trial import TrialState

from searchspace.study import DEFAULT_SAMPLER_WINDOW, loads_study
from tuners.driver.samplers import make_sampler
from tuners.driver.sweep import SweepOptions, open_study_storage
from tuners.driver.windowed_sampler import WindowedSampler
from tuners.store import keys
from tuners.store.connection import open_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)
DIRECTIONS = ["minimize", "minimize"]


def objective(trial: optuna.Trial) -> list[float]:
    """Two objectives over a float, a categorical, an int and a knob that exists only for one choice."""
    x = trial.suggest_float("x", 0.0, 1.0)
    kind = trial.suggest_categorical("kind", ["a", "b", "c"])
    n = trial.suggest_int("n", 1, 8)
    if kind == "a":
        trial.suggest_int("m", 2, 4)  # conditional: TPE samples it independently
    trial.set_constraint("x_max", x - 0.8)  # x > 0.8 is infeasible
    return [x + n / 8, (1 - x) ** 2 + (kind == "b")]


def drive(sampler: optuna.samplers.BaseSampler, trials: int, concurrent: int = 3) -> optuna.Study:
    """Ask ``concurrent`` trials ahead of the tells (as a sweep with several workers); every 7th is pruned."""
    study = optuna.create_study(directions=DIRECTIONS, sampler=sampler)
    pending = []
    for _ in range(trials):
        trial = study.ask()
        pending.append((trial, objective(trial)))
        if len(pending) >= concurrent:
            finish(study, *pending.pop(0))
    for trial, values in pending:
        finish(study, trial, values)
    return study


def finish(study: optuna.Study, trial: optuna.Trial, values: list[float]) -> None:
    if trial.number % 7 == 3:
        study.tell(trial, state=TrialState.PRUNED)
    else:
        study.tell(trial, values)


def tpe(seed: int = 1) -> optuna.samplers.TPESampler:
    return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=5)


@pytest.mark.parametrize("concurrent", [1, 3])
def test_tpe_below_the_window_proposes_what_tpe_proposes(concurrent):
    plain = drive(tpe(), 40, concurrent)
    windowed = drive(WindowedSampler(tpe(), window=100), 40, concurrent)
    assert [t.params for t in windowed.trials] == [t.params for t in plain.trials]
    assert len({t.params["x"] for t in plain.trials}) == 40  # not a constant proposal that would match anyway


def test_gp_below_the_window_proposes_what_gp_proposes():
    def gp():
        return optuna.samplers.GPSampler(seed=2, n_startup_trials=3)

    def one_objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        kind = trial.suggest_categorical("kind", ["a", "b"])
        trial.set_constraint("x_max", x - 0.8)
        return (x - 0.3) ** 2 + (kind == "b")

    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for sampler in (gp(), WindowedSampler(gp(), window=50)):
            study = optuna.create_study(sampler=sampler)
            study.optimize(one_objective, n_trials=6)
            runs.append([t.params for t in study.trials])
    assert runs[0] == runs[1]


def finished_numbers(study: optuna.Study, last: int) -> list[int]:
    done = [t for t in study.trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    return [t.number for t in sorted(done, key=lambda t: t.datetime_complete)[-last:]]


class CountingTPE(optuna.samplers.TPESampler):
    """TPE that records how many finished trials each of its relative samplings read."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen: list[int] = []

    def sample_relative(self, study, trial, search_space):
        self.seen.append(len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))))
        return super().sample_relative(study, trial, search_space)


def test_the_inner_sampler_sees_at_most_the_window():
    inner = CountingTPE(seed=0, multivariate=True, n_startup_trials=5)
    sampler = WindowedSampler(inner, window=15, keep_front=False)
    study = drive(sampler, 80, concurrent=3)
    assert sampler.slack == 3  # the window is trimmed back to 15 once 3 more have finished
    assert max(inner.seen) == 18 and min(inner.seen[30:]) == 15  # it filled, then stayed within 15 to 18
    mirror = sampler.seen_trials()
    # the mirror's trials are the real study's last finished ones, with what samplers read of them
    assert 15 <= len(mirror) <= 18
    last = [study.trials[n] for n in finished_numbers(study, len(mirror))]
    assert rows(mirror) == rows(last)


def rows(trials) -> list[str]:
    return sorted(
        repr((t.state, t.values, t.params, t.distributions, t.constraints, t.intermediate_values)) for t in trials
    )


def test_the_front_stays_in_view():
    inner = CountingTPE(seed=0, multivariate=True, n_startup_trials=5)
    sampler = WindowedSampler(inner, window=15, keep_front=True)
    study = drive(sampler, 80, concurrent=1)
    seen = {tuple(t.values) for t in sampler.seen_trials() if t.state == TrialState.COMPLETE}
    front = front_values(study)
    assert front <= seen  # every front point is in view, also those older than the window

    def recent(last):
        return {
            tuple(study.trials[n].values)
            for n in finished_numbers(study, last)
            if study.trials[n].state == TrialState.COMPLETE
        }

    assert recent(15) <= seen <= front | recent(15 + sampler.slack)  # the window, and the front beside it


def test_a_resumed_study_starts_from_its_last_trials():
    """Trials stored before the sampler existed (a resumed sweep): the window takes the newest."""
    storage = optuna.storages.InMemoryStorage()
    first = optuna.create_study(storage=storage, directions=DIRECTIONS, sampler=tpe(3), study_name="s")
    first.optimize(lambda t: objective(t), n_trials=40)
    sampler = WindowedSampler(tpe(4), window=10, keep_front=False)
    resumed = optuna.load_study(study_name="s", storage=storage, sampler=sampler)
    trial = resumed.ask()
    objective(trial)
    finished = [t for t in sampler.seen_trials() if t.state.is_finished()]
    assert [t.params for t in finished] == [first.trials[n].params for n in range(30, 40)]
    assert [t.state for t in sampler.seen_trials()][-1] == TrialState.RUNNING  # the trial being asked


def spaces_asked(sampler: optuna.samplers.BaseSampler, missing: int, trials: int) -> dict[int, list[str]]:
    """The relative search space ``sampler`` infers for each trial; ``y`` is suggested by every trial but
    ``missing`` (a conditional knob whose other branch is taken once). Three trials run at a time: trial
    ``k`` is told just before trial ``k + 3`` is asked."""
    spaces: dict[int, list[str]] = {}
    infer = sampler.infer_relative_search_space

    def recording(study, trial):
        space = infer(study, trial)
        spaces[trial.number] = sorted(space)
        return space

    sampler.infer_relative_search_space = recording
    study = optuna.create_study(sampler=sampler)
    pending = []
    for _ in range(trials):
        trial = study.ask()
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0) if trial.number != missing else 0.5
        pending.append((trial, (x - 0.3) ** 2 + y))
        if len(pending) >= 3:
            study.tell(*pending.pop(0))
    for trial, value in pending:
        study.tell(trial, value)
    return spaces


def expected_spaces(missing: int, trials: int) -> dict[int, list[str]]:
    """The intersection of the finished trials' params at each ask (trial ``k`` is told before ``k + 3``)."""
    return {n: [] if n < 3 else ["x"] if n >= missing + 3 else ["x", "y"] for n in range(trials)}


# window 10 (slack 2): the mirror is first rebuilt when trial 12 is told, with trials 13 and 14 running;
# 15 is the first asked after it. Rebuilt mirrors number their trials from 0 again, which an intersection
# search space computed on the mirror (cached by trial number) took for trials it had seen already.
@pytest.mark.parametrize("missing", [13, 14, 15])
def test_tpe_drops_a_param_that_goes_missing_after_a_rebuild(missing):
    windowed = spaces_asked(WindowedSampler(tpe(), window=10), missing, 30)
    assert windowed == spaces_asked(tpe(), missing, 30) == expected_spaces(missing, 30)


def test_gp_drops_a_param_that_goes_missing_after_a_rebuild():
    """GP fits on every COMPLETE trial's params in the space: a stale ``y`` raised KeyError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        gp = optuna.samplers.GPSampler(seed=2, n_startup_trials=3, warn_independent_sampling=False)
        assert spaces_asked(WindowedSampler(gp, window=10), 13, 20) == expected_spaces(13, 20)


def test_window_must_be_a_positive_integer():
    with pytest.raises(ValueError, match=r"`window >= 1` must hold .* window=0"):
        WindowedSampler(tpe(), window=0)


STUDY = """
name: windowed
task: digits
family: encoder
objectives: [accuracy, params]
tuner: {tuner}
space: {{d_model: {{choice: [32, 64]}}, layers: {{int: [1, 2]}}}}
"""


@pytest.mark.parametrize(
    "tuner, window",
    [
        ("{sampler: tpe}", DEFAULT_SAMPLER_WINDOW["tpe"]),
        ("{sampler: gp}", DEFAULT_SAMPLER_WINDOW["gp"]),
        ("{sampler: gp, sampler_window: 300}", 300),
        ("{sampler: tpe, sampler_window: all}", None),
        ("{sampler: nsga2}", None),
    ],
)
def test_the_study_sets_the_window_and_storage_records_it(tmp_path, tuner, window):
    study = loads_study(STUDY.format(tuner=tuner))
    assert study.tuner.window() == window
    sampler = make_sampler(study)
    assert isinstance(sampler, WindowedSampler) == (window is not None)
    if window is not None:
        assert sampler.window == window
    ot_study = open_study_storage(
        study,
        SweepOptions(storage=f"sqlite:///{tmp_path / 's.db'}"),
        False,
        open_storage(f"sqlite:///{tmp_path / 's.db'}", create=True),
    )
    assert ot_study.user_attrs[keys.STUDY_SAMPLER_WINDOW] == window


def test_the_sweep_searcher_drives_a_windowed_tpe(tmp_path):
    """lwnas's driver path (Ray's Searcher interface, no Ray): asks two ahead, infeasible points told at once."""
    from helpers.studies import params_of_d_model, write_study

    from searchspace.study import load_study
    from tuners.driver.searcher import StudySearcher
    from tuners.planning.check import make_task, task_family
    from tuners.planning.costs import StaticCosts

    path = write_study(tmp_path, "windowed", trials=24, epochs=1, d_models=(16, 32, 48))
    path.write_text(path.read_text().replace("sampler: random", "sampler: tpe, sampler_window: 10"))
    path.write_text(path.read_text().replace("max: 1000000000.0", f"max: {params_of_d_model(path, 32)}"))
    study = load_study(path, task_family=task_family)
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    storage = open_storage(url, create=True)
    ot_study = open_study_storage(study, SweepOptions(storage=url), False, storage)
    searcher = StudySearcher(study, ot_study, StaticCosts(study, make_task(study)), storage)
    running = []
    for i in range(24):
        running.append(f"ray-{i}")
        assert searcher.suggest(running[-1]) is not None
        if len(running) == 2:
            trial_id = running.pop(0)
            searcher.on_trial_complete(trial_id, {"epoch": 1, "val_accuracy": 0.5 + 0.01 * (i % 7), "wall_time": 1.0})
    trials = ot_study.get_trials()
    infeasible = [t for t in trials if t.user_attrs.get("outcome") == "infeasible"]
    assert infeasible and all(t.params["d_model"] == 48 and t.constraints["params"] > 0 for t in infeasible)
    sampler = ot_study.sampler
    assert isinstance(sampler, WindowedSampler) and sampler.window == 10
    finished = [t for t in sampler.seen_trials() if t.state.is_finished()]
    assert len(finished) <= 10 + sampler.slack + len(front_values(ot_study))
    recent = [ot_study.trials[n] for n in finished_numbers(ot_study, 10)]
    assert set(rows(recent)) <= set(rows(finished))  # the newest ten, with their constraints


def front_values(study: optuna.Study) -> set[tuple[float, ...]]:
    """Values of the non-dominated feasible COMPLETE trials (as minimisation: directions applied)."""
    signs = [1 if d == optuna.study.StudyDirection.MINIMIZE else -1 for d in study.directions]
    feasible = [
        tuple(s * v for s, v in zip(signs, t.values))
        for t in study.trials
        if t.state == TrialState.COMPLETE and all(c <= 0 for c in t.constraints.values())
    ]
    return {
        tuple(s * v for s, v in zip(signs, p))
        for p in feasible
        if not any(all(a <= b for a, b in zip(o, p)) and o != p for o in feasible)
    }
