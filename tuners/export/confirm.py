"""``lwnas confirm``: train a sweep's front (and, for contrast, a sample of dominated trials) at a longer
budget and measure how well the sweep's short-budget ranking predicted the longer one.

Each chosen trial is exported as ``lwnas export`` writes it (its exact configuration, task, training
settings and seed) and trained by ``lwnas train``'s own code (``train_file.train_config_file``) with
only ``epochs`` changed; checkpoints and metrics go to ``OUTPUT/NAME-trial-NNNN/``.

The results are a study user attribute (``lwnas:confirmations``, one entry per run of the command,
keyed by trial number): Optuna refuses to change a finished trial's user attributes
(``check_trial_is_updatable``), so they cannot live on the trials themselves.

Agreement is Kendall's tau-b (scipy) between sweep and confirmed values of each task metric, with a
95 % percentile bootstrap interval over the confirmed trials (resampled in pairs).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from searchspace.errors import LwnasError
from tuners.export.configs import export_file_name, export_text
from tuners.fronts.objectives import study_objectives
from tuners.fronts.seeds import SeedGroup, pareto_front_groups, seed_groups
from tuners.store import keys
from tuners.store.budget import now
from tuners.store.record import TrialRecord

BOOTSTRAP_RESAMPLES = 2000


class ConfirmError(LwnasError, ValueError):
    pass


@dataclass
class Confirmed:
    record: TrialRecord
    role: str  # front | dominated
    sweep: dict[str, float]  # the task metrics the sweep recorded
    confirmed: dict[str, float] | None  # validation metrics after the longer training; None if it failed
    test: dict[str, float] | None = None
    wall_time: float | None = None
    failure: str | None = None


def choose_trials(ot_study: optuna.Study, dominated: int, seed: int) -> list[tuple[SeedGroup, str]]:
    """The front, then ``dominated`` points drawn (with ``seed``) from the complete, feasible rest.

    Points, not trials: as in ``lwnas status`` and ``lwnas export``, a point trained with several seeds
    (``budget.front_seeds``) is one entry, ranked by its seed mean and retrained as its first trial."""
    groups = seed_groups(ot_study.get_trials(deepcopy=False))
    front = pareto_front_groups(groups, study_objectives(ot_study))
    on_front = {g.number for g in front}
    rest = [g for g in groups if g.number not in on_front]
    sample = random.Random(seed).sample(rest, min(dominated, len(rest)))
    return [(g, "front") for g in front] + [(g, "dominated") for g in sorted(sample, key=lambda g: g.number)]


def task_metrics(ot_study: optuna.Study) -> list[str]:
    """The study's objectives that training measures (costs are static: a longer training leaves them)."""
    return [o.metric for o in study_objectives(ot_study) if not o.is_cost]


def confirm_trials(
    ot_study: optuna.Study, epochs: int, dominated: int, output: Path, seed: int = 0, progress=None
) -> list[Confirmed]:
    """Train the chosen trials for ``epochs`` through ``lwnas train``'s path; one ``Confirmed`` each."""
    from trainers.loop import TrainingError
    from tuners.export.train_file import train_config_file

    metrics = task_metrics(ot_study)
    if not metrics:
        raise ConfirmError(
            f"study {ot_study.study_name!r} has no task metric among its objectives "
            f"({', '.join(o.metric for o in study_objectives(ot_study))}): there is nothing to confirm by training"
        )
    chosen = choose_trials(ot_study, dominated, seed)
    if not chosen:
        raise ConfirmError(f"study {ot_study.study_name!r} has no trial on its Pareto front yet")
    names = [o.metric for o in study_objectives(ot_study)]
    out = []
    for index, (group, role) in enumerate(chosen, 1):
        record = group.members[0]  # the trial itself, exported as `lwnas export` writes it
        config = output / export_file_name(ot_study, record)
        output.mkdir(parents=True, exist_ok=True)
        config.write_text(export_text(ot_study, record))
        run_dir = output / config.stem
        sweep = {m: group.record.scores[names.index(m)] for m in metrics}  # the seed mean (one seed: its value)
        label = f"[{index}/{len(chosen)}] trial {record.number}"  # each epoch's progress says which, of how many
        if progress:
            progress(f"{label} ({role}): training for {epochs} epochs -> {run_dir}")
        try:
            result, _ = train_config_file(config, overrides={"epochs": epochs}, out=run_dir, label=label)
        except (TrainingError, ValueError) as exc:  # one trial that fails does not stop the others
            out.append(Confirmed(record, role, sweep, None, failure=str(exc)))
            continue
        out.append(Confirmed(record, role, sweep, {m: result.val[m] for m in metrics}, result.test, result.wall_time))
    return out


def kendall(sweep: list[float], confirmed: list[float], seed: int = 0) -> dict[str, Any]:
    """Kendall's tau-b of two rankings with a 95 % percentile bootstrap interval (pairs resampled)."""
    from scipy.stats import kendalltau

    n = len(sweep)
    tau = float(kendalltau(sweep, confirmed).statistic) if n >= 2 else math.nan
    low = high = None
    if n >= 3:
        rng = np.random.default_rng(seed)
        x, y = np.asarray(sweep, dtype=float), np.asarray(confirmed, dtype=float)
        taus = []
        for _ in range(BOOTSTRAP_RESAMPLES):
            idx = rng.integers(0, n, n)
            t = kendalltau(x[idx], y[idx]).statistic
            if not math.isnan(t):  # a resample whose values all tie has no ranking
                taus.append(t)
        if taus:
            low, high = (float(v) for v in np.percentile(taus, [2.5, 97.5]))
    return {"tau": None if math.isnan(tau) else tau, "ci95": [low, high] if low is not None else None, "n": n}


def agreement(results: list[Confirmed]) -> dict[str, dict[str, Any]]:
    """Per task metric: Kendall's tau between sweep and confirmed values of the trials that trained."""
    trained = [(c.sweep, c.confirmed) for c in results if c.confirmed is not None]
    metrics = list(trained[0][1]) if trained else []
    return {m: kendall([sweep[m] for sweep, _ in trained], [confirmed[m] for _, confirmed in trained]) for m in metrics}


def record_confirmation(
    ot_study: optuna.Study, epochs: int, results: list[Confirmed], taus: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Append this run to the study's ``lwnas:confirmations``; the entry written."""
    entry = {
        "epochs": epochs,
        "at": now(),
        "kendall": taus,
        "sweep_epochs": sweep_epochs(ot_study),
        "trials": {
            str(c.record.number): {
                "role": c.role,
                "sweep": c.sweep,
                "confirmed": c.confirmed,
                "test": c.test,
                "wall_time": c.wall_time,
                "failure": c.failure,
            }
            for c in results
        },
    }
    ot_study.set_user_attr(keys.STUDY_CONFIRMATIONS, keys.plain([*confirmations(ot_study), entry]))
    return entry


def sweep_epochs(ot_study: optuna.Study) -> int:
    """Epochs each trial of the sweep trained (its study file's budget)."""
    from searchspace.study import Budget

    return int(((ot_study.user_attrs.get(keys.STUDY_SPEC) or {}).get("budget") or {}).get("epochs", Budget().epochs))


def confirmations(ot_study: optuna.Study) -> list[dict[str, Any]]:
    return list(ot_study.user_attrs.get(keys.STUDY_CONFIRMATIONS, []))
