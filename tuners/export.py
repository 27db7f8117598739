"""Export chosen trials as configuration files that ``lwnas train`` accepts as they are.

One YAML per trial: the exact configuration (every knob), the training settings the trial used,
and provenance (study, trial number, objective values, lwnas version). The dashboard's download
calls the same function, so both give byte-for-byte the same text.
"""

from __future__ import annotations

from pathlib import Path

import optuna

from searchspace import ArchConfig
from searchspace.errors import LwnasError
from searchspace.files import dump_config
from searchspace.study import path_component

from . import storage as keys
from .pareto import pareto_front
from .storage import TrialRecord, record_of


class ExportError(LwnasError, ValueError):
    pass


def select_trials(ot_study: optuna.Study, which: str) -> list[TrialRecord]:
    """``pareto`` (the front) or a comma-separated list of trial numbers."""
    records = {t.number: record_of(t) for t in ot_study.get_trials(deepcopy=False)}
    if which.strip() == "pareto":
        directions = ["maximize" if d == optuna.study.StudyDirection.MAXIMIZE else "minimize"
                      for d in ot_study.directions]
        return pareto_front(list(records.values()), directions)
    try:
        numbers = [int(n) for n in which.split(",") if n.strip()]
    except ValueError:
        raise ExportError(f"--trials takes `pareto` or trial numbers like 1,5,9, got {which!r}") from None
    missing = [n for n in numbers if n not in records]
    if missing:
        raise ExportError(f"study {ot_study.study_name!r} has no trial {', '.join(map(str, missing))} "
                          f"(trials are numbered 0..{max(records, default=-1)})")
    unusable = [n for n in numbers if not records[n].config]
    if unusable:
        raise ExportError(f"trial(s) {', '.join(map(str, unusable))} have no recorded configuration")
    return [records[n] for n in numbers]


def export_text(ot_study: optuna.Study, record: TrialRecord) -> str:
    """The YAML of one trial: configuration, training settings, provenance."""
    spec = ot_study.user_attrs.get(keys.STUDY_SPEC, {})
    config = ArchConfig.from_dict(record.config)
    budget = (spec.get("budget") or {}).get("epochs")
    training = {**(spec.get("training") or {}), **record.training}
    if budget:
        training["epochs"] = budget
    names = ot_study.metric_names or [f"objective_{i}" for i in range(len(ot_study.directions))]
    provenance = {"study": ot_study.study_name, "task": spec.get("task"), "trial": record.number,
                  "state": record.state, "values": dict(zip(names, record.values or [])),
                  "costs": record.costs, "params": record.params,
                  "lwnas_version": ot_study.user_attrs.get(keys.STUDY_VERSION, "unknown")}
    return dump_config(config, {"training": training, "provenance": keys.plain(provenance)})


def export_file_name(ot_study: optuna.Study, record: TrialRecord) -> str:
    """One file name, never a path: the study's name may come from storage written by anyone."""
    return f"{path_component(ot_study.study_name)}-trial-{record.number:04d}.yaml"


def export_trials(ot_study: optuna.Study, which: str, out_dir: Path) -> list[Path]:
    """Write the chosen trials' YAML files into ``out_dir`` (created if needed); their paths."""
    records = select_trials(ot_study, which)
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"-o {out_dir} is a file, not a folder: give a folder for the YAML files")
    paths = []
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for record in records:
            path = out_dir / export_file_name(ot_study, record)
            path.write_text(export_text(ot_study, record))
            paths.append(path)
    except OSError as exc:
        where = exc.filename or out_dir
        raise ExportError(f"cannot write {where}: {exc.strerror or exc}; choose a folder you can write to "
                          f"with -o") from None
    return paths
