"""Write many finished trials at once: for synthetic studies (``dashboards.sample``, benches) only.

Optuna's ``Study.add_trials`` writes each trial in a transaction of its own (lock the study, count
the trials for its number, one INSERT per param and attribute, commit): about 19 ms a trial on
SQLite here (94 s for 5,000), so 100,000 trials would take half an hour. ``insert_trials`` writes the same rows with
batched INSERTs in one transaction per batch, through the table layout of ``optuna_tables``, and
falls back to Optuna's ``create_new_trial`` on a schema it does not know.

It numbers trials from the count at its start, so nothing else may add trials to the study while
it runs: a live sweep never writes through here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from optuna.distributions import distribution_to_json
from optuna.trial import FrozenTrial
from sqlalchemy import func, insert, select

from tuners.store import tables as t

BATCH = 2000  # trials per transaction


def insert_trials(storage: Any, study_id: int, frozen: Sequence[FrozenTrial]) -> None:
    """Append ``frozen`` (from ``optuna.trial.create_trial``) to study ``study_id`` of ``storage``."""
    engine = t.bulk_engine(storage)
    if engine is None:
        for trial in frozen:
            storage.create_new_trial(study_id, template_trial=trial)
        return
    for start in range(0, len(frozen), BATCH):
        with engine.begin() as conn:
            _insert_batch(conn, study_id, frozen[start : start + BATCH])


def _insert_batch(conn: Any, study_id: int, batch: Sequence[FrozenTrial]) -> None:
    count = conn.execute(select(func.count()).select_from(t.trials).where(t.trials.c.study_id == study_id)).scalar()
    conn.execute(
        insert(t.trials),
        [
            {
                "number": count + i,
                "study_id": study_id,
                "state": tr.state.name,
                "datetime_start": t.to_utc(tr.datetime_start),
                "datetime_complete": t.to_utc(tr.datetime_complete),
            }
            for i, tr in enumerate(batch)
        ],
    )
    ids = dict(
        conn.execute(
            select(t.trials.c.number, t.trials.c.trial_id).where(
                t.trials.c.study_id == study_id, t.trials.c.number >= count
            )
        ).all()
    )
    rows: dict[Any, list[dict[str, Any]]] = {
        table: []
        for table in (
            t.trial_values,
            t.trial_params,
            t.trial_user_attributes,
            t.trial_system_attributes,
            t.trial_intermediate_values,
        )
    }
    for i, tr in enumerate(batch):
        trial_id = ids[count + i]
        for objective, value in enumerate(tr.values or ()):
            stored, kind = t.stored_value(value)
            rows[t.trial_values].append(
                {"trial_id": trial_id, "objective": objective, "value": stored, "value_type": kind}
            )
        for name, value in tr.params.items():
            dist = tr.distributions[name]
            rows[t.trial_params].append(
                {
                    "trial_id": trial_id,
                    "param_name": name,
                    "param_value": dist.to_internal_repr(value),
                    "distribution_json": distribution_to_json(dist),
                }
            )
        for table, attrs in ((t.trial_user_attributes, tr.user_attrs), (t.trial_system_attributes, tr.system_attrs)):
            rows[table] += [{"trial_id": trial_id, "key": k, "value_json": json.dumps(v)} for k, v in attrs.items()]
        for step, value in tr.intermediate_values.items():
            stored, kind = t.stored_value(value)
            rows[t.trial_intermediate_values].append(
                {"trial_id": trial_id, "step": step, "intermediate_value": stored, "intermediate_value_type": kind}
            )
    for table, values in rows.items():
        if values:
            conn.execute(insert(table), values)
