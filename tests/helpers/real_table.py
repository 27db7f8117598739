"""A small REAL table for the simulator's tests: every architecture of a tiny digits space trained with two
seeds by the sweep worker's own code (``tuners.driver.trainable.train_record`` on records planned as the
driver plans them), with the driver's static costs. Nothing in it is written by hand.

The tests read the copy shipped as ``tests/data/tiny-digits.lwtable.json.gz`` (about 40 s of training to
rebuild: ``cd tests && python -m helpers.real_table``); the slow simulator-vs-real test sweeps the same space
for real with ``lwnas``'s driver and compares.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from searchspace.study import Study, study_from_dict
from tuners.driver.searcher import StudySearcher
from tuners.driver.trainable import train_record
from tuners.planning.check import prepare, task_family
from tuners.simulate.table import Entry, Run, Table, load_table, save_table

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "tiny-digits.lwtable.json.gz"

# 8 architectures, 3 epochs: enough for a rung at epoch 1 to matter, small enough to train in seconds
SPACE = {
    "d_model": {"choice": [8, 16]},
    "heads": 2,
    "layers": {"choice": [1, 2]},
    "pooling": {"choice": ["mean", "attention"]},
}
EPOCHS = 3
SEEDS = (0, 1)


def tiny_study(strategy: str = "full", trials: int = 8, sampler: str = "nsga2", concurrent: int = 2) -> Study:
    spec = {
        "name": f"tiny-{strategy}",
        "task": "digits",
        "objectives": ["accuracy", "params"],
        "budget": {"trials": trials, "epochs": EPOCHS},
        "tuner": {"sampler": sampler, "max_concurrent": concurrent, "seed": 0, "reduction_factor": 2},
        "search": {"strategy": strategy},
        "training": {"threads": 1, "batch_size": 64, "lr": 0.01},
        "space": SPACE,
    }
    return study_from_dict(spec, task_family=task_family)


def grid() -> list[dict]:
    names = [k for k, v in SPACE.items() if isinstance(v, dict)]
    return [dict(zip(names, values)) for values in itertools.product(*(SPACE[n]["choice"] for n in names))]


class _Planner(StudySearcher):
    """The driver's planning (resolve, adapt, cost, training settings) without a storage behind it."""

    def __init__(self, study: Study, static):
        self.study, self.static = study, static


def build(path: Path) -> Table:
    """Train every architecture of ``SPACE`` with each of ``SEEDS`` and save the table at ``path``."""
    study = tiny_study()
    planner = _Planner(study, prepare(study).costs)
    entries = []
    for params in grid():
        runs = []
        costs: dict = {}
        for seed in SEEDS:
            record, verdict = planner._plan(seed, params)  # trial number = seed: its training seed is the seed
            costs = {k: float(v) for k, v in verdict.costs.items() if k in ("params", "madds", "memory")}
            metrics: list[float] = []
            walls: list[float] = []

            def report(result, metrics=metrics, walls=walls):
                metrics.append(float(result["val_accuracy"]))
                walls.append(float(result["epoch_time"]))

            train_record(record, report)
            runs.append(Run(seed=record.seed, metrics={"accuracy": metrics}, wall_s=walls))
        entries.append(Entry(params=params, costs=costs, runs=tuple(runs)))
    table = Table(
        task="digits",
        study=study.name,
        family=study.family,
        space=SPACE,
        objectives=study.objectives,
        epochs=EPOCHS,
        seeds=len(SEEDS),
        entries=tuple(entries),
        training=dict(study.training),
    )
    save_table(table, path)
    return load_table(path)


if __name__ == "__main__":
    SHIPPED.parent.mkdir(exist_ok=True)
    built = build(SHIPPED)
    print(f"{SHIPPED}: {len(built.entries)} architectures, true hypervolume {built.true_hypervolume():.1f}")
