"""Export chosen trials as configuration files that ``lwnas train`` accepts as they are.

One YAML per trial: the exact configuration (every knob), the task (and its options), the training
settings the trial used (its seed and thread count included, so retraining reproduces its values), and
provenance (study, trial number, objective values, lwnas version). The dashboard's download
calls the same function, so both give byte-for-byte the same text.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import optuna

from searchspace import ArchConfig
from searchspace.errors import LwnasError
from searchspace.files import dump_config
from searchspace.study import Study, StudyError, path_component, study_from_dict
from tuners.fronts.objectives import study_objectives
from tuners.fronts.seeds import front_entry, groups_of, pareto_front_groups, seed_groups
from tuners.planning.check import task_family
from tuners.store import keys
from tuners.store.outcomes import Outcome
from tuners.store.record import TrialRecord, trial_seed, trial_training
from tuners.store.trial_store import TrialStore


class ExportError(LwnasError, ValueError):
    pass


def select_trials(ot_study: optuna.Study, store: TrialStore, which: str, infeasible: bool = False) -> list[TrialRecord]:
    """``pareto`` (the front) or a comma-separated list of trial numbers.

    The front never holds an infeasible trial; a trial number naming one is refused unless
    ``infeasible`` asks for it (its -inf value was never measured, and its point breaks a constraint).
    """
    trials = store.records_since()  # ``ot_study``'s trials, read now
    records = {t.record.number: t.record for t in trials}
    if which.strip() == "pareto":  # the front of the seed means; each point exported as its first trial
        groups = groups_of(list(records.values()), {t.record.number: t.parent for t in trials})
        return [records[g.number] for g in pareto_front_groups(groups, study_objectives(ot_study))]
    try:
        numbers = [int(n) for n in which.split(",") if n.strip()]
    except ValueError:
        raise ExportError(f"--trials takes `pareto` or trial numbers like 1,5,9, got {which!r}") from None
    missing = [n for n in numbers if n not in records]
    if missing:
        raise ExportError(
            f"study {ot_study.study_name!r} has no trial {', '.join(map(str, missing))} "
            f"(trials are numbered 0..{max(records, default=-1)})"
        )
    unusable = [n for n in numbers if not records[n].config]
    if unusable:
        raise ExportError(f"trial(s) {', '.join(map(str, unusable))} have no recorded configuration")
    refused = [n for n in numbers if _infeasible(records[n])]
    if refused and not infeasible:
        raise ExportError(
            f"trial(s) {', '.join(map(str, refused))} are infeasible (they break the study's "
            f"constraints and were never trained); export them anyway with --infeasible"
        )
    return [records[n] for n in numbers]


def _infeasible(record: TrialRecord) -> bool:
    """A point the sweep rejected before training: constraint broken or a value never measured."""
    return (
        record.outcome == Outcome.INFEASIBLE
        or not record.feasible
        or any(not math.isfinite(v) for v in record.values or [])
    )


def recorded_study(ot_study: optuna.Study) -> Study:
    """The study a sweep recorded (its objectives, tuner and training sections)."""
    spec = ot_study.user_attrs.get(keys.STUDY_SPEC)
    if not spec:
        raise ExportError(
            f"study {ot_study.study_name!r} was not created by lwnas sweep (it has no {keys.STUDY_SPEC} attribute)"
        )
    try:
        # the name rule guards the paths a sweep makes; a stored name predating it is contained where export
        # makes paths (export_file_name), so it must not stop the rest of the study from reading
        return study_from_dict(
            {**spec, "name": path_component(ot_study.study_name)}, task_family=task_family, check_space=False
        )
    except StudyError as exc:
        raise ExportError(
            f"study {ot_study.study_name!r}: its recorded study no longer reads: "
            + "; ".join(f"{w}: {m}" for w, m in exc.problems)
        ) from None


def trial_settings(ot_study: optuna.Study, record: TrialRecord) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The task, task options and training settings (seed and threads included) trial ``record`` ran with.

    A record the driver planned holds all three; a study written by an earlier lwnas kept only the
    sampled settings on the trial, so the rest comes from its recorded study, as its driver derived them.
    """
    if record.planned and record.task is not None:  # a planned record always names its task
        return record.task, record.task_options, record.training
    study = recorded_study(ot_study)
    seed = trial_seed(study.tuner.seed, record.number)
    return study.task, study.task_options, trial_training(study, record.training, seed, study.tuner.cpus_per_trial)


def export_text(ot_study: optuna.Study, record: TrialRecord) -> str:
    """The YAML of one trial: configuration, task, training settings (its seed included), provenance."""
    task, task_options, training = trial_settings(ot_study, record)
    config = ArchConfig.from_dict(record.config)
    names = [o.metric for o in study_objectives(ot_study)]
    provenance = {
        "study": ot_study.study_name,
        "task": task,
        "trial": record.number,
        "state": record.state,
        "outcome": record.outcome,
        "values": dict(zip(names, record.values or [])),
        "costs": record.costs,
        "params": record.params,
        "lwnas_version": ot_study.user_attrs.get(keys.STUDY_VERSION, "unknown"),
    }
    group = next((g for g in seed_groups(ot_study.get_trials(deepcopy=False)) if g.number == record.number), None)
    # (only the trial that stands for a point carries its seeds; a repeat exported by number is one run)
    if group is not None and group.seeds > 1:  # trained with several seeds (budget.front_seeds)
        entry = front_entry(group, names)
        provenance["seeds"] = {k: entry[k] for k in ("seeds", "seed_trials", "mean", "std")}
    task_section = {"task": task, **({"task_options": task_options} if task_options else {})}
    return dump_config(config, keys.plain({**task_section, "training": training, "provenance": provenance}))


def export_file_name(ot_study: optuna.Study, record: TrialRecord, suffix: str = ".yaml") -> str:
    """One file name, never a path: the study's name may come from storage written by anyone."""
    return f"{path_component(ot_study.study_name)}-trial-{record.number:04d}{suffix}"


def write_trial_model(ot_study: optuna.Study, record: TrialRecord, fmt: str, path: Path) -> Path:
    """A trial's model as a deployable file (``torch`` .pt2 or ``onnx``), with initialised weights: a search
    trial keeps none, so they are drawn with the trial's seed; train the YAML export for trained weights."""
    from tuners.export.deploy import initialised_model, write_model

    task, _, training = trial_settings(ot_study, record)
    config = ArchConfig.from_dict(record.config)
    provenance = {
        "study": ot_study.study_name,
        "task": task,
        "trial": record.number,
        "values": dict(zip([o.metric for o in study_objectives(ot_study)], record.values or [])),
        "costs": record.costs,
        "weights": f"initialised (seed {training['seed']}), not trained",
    }
    return write_model(initialised_model(config, training["seed"]), config, fmt, path, keys.plain(provenance))


def export_trials(
    ot_study: optuna.Study, store: TrialStore, which: str, out_dir: Path, infeasible: bool = False, fmt: str = "yaml"
) -> list[Path]:
    """Write the chosen trials' files (YAML, or a model file for ``torch``/``onnx``) into ``out_dir``; ``store`` is
    ``ot_study``'s trial store."""
    from tuners.export.deploy import FORMATS, SUFFIX

    if fmt not in FORMATS:
        raise ExportError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    records = select_trials(ot_study, store, which, infeasible)
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"-o {out_dir} is a file, not a folder: give a folder for the exported files")
    paths = []
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for record in records:
            path = out_dir / export_file_name(ot_study, record, SUFFIX.get(fmt, ".yaml"))
            if fmt == "yaml":
                path.write_text(export_text(ot_study, record))
            else:
                write_trial_model(ot_study, record, fmt, path)
            paths.append(path)
    except OSError as exc:
        where = exc.filename or out_dir
        raise ExportError(
            f"cannot write {where}: {exc.strerror or exc}; choose a folder you can write to with -o"
        ) from None
    return paths
