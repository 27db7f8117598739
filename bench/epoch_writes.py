"""What recording a trial's epochs costs in SQL storage: one key per epoch against the old whole-list rewrite.

The driver records every epoch's metrics as the trial runs. lwnas used to rewrite the trial's whole epoch
list as one user attribute each epoch (bytes written grow with epochs squared); it now writes each epoch
under a key of its own (``tuners.store.keys.epoch_key``). Both layouts are written here, alternately, through
the same Optuna RDB storage on one SQLite file, with the same epoch dicts; then the trial is read back
with ``record_of``. Prints JSON: bytes of attribute values written, write seconds per layout (median and
spread of the repeats) and their ratio, for each epoch count.

    python bench/epoch_writes.py --epochs 20 100 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log


def epoch_metrics(epoch: int) -> dict:
    return {
        "epoch": epoch,
        "val_accuracy": 0.5 + epoch * 1e-4,
        "train_loss": 1.0 / epoch,
        "lr": 1e-3,
        "epoch_time": 1.25,
        "wall_time": 1.25 * epoch,
        "samples_per_s": 1234.5,
    }


def write(storage, study_id: int, epochs: int, layout: str) -> tuple[float, int, list]:
    """Record ``epochs`` epochs of a new trial in ``layout``; (seconds, bytes of values written, epochs read back)."""
    from tuners.store import keys

    trial_id = storage.create_new_trial(study_id)
    written, so_far = 0, []
    t0 = time.perf_counter()
    for e in range(1, epochs + 1):
        so_far.append(epoch_metrics(e))
        key, value = (keys.epoch_key(e), so_far[-1]) if layout == "per-key" else (keys.EPOCHS, so_far)
        storage.set_trial_user_attr(trial_id, key, value)
        written += len(json.dumps(value))
    seconds = time.perf_counter() - t0
    return seconds, written, keys.epochs_of(storage.get_trial(trial_id).user_attrs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--epochs", type=int, nargs="+", default=[20, 100], help="epoch counts to record")
    parser.add_argument("--repeats", type=int, default=3, help="trials per layout and epoch count")
    args = parser.parse_args()

    import optuna

    monitor = LoadMonitor(threads=1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        storage = optuna.storages.RDBStorage(f"sqlite:///{Path(tmp) / 'bench.db'}")
        study_id = storage.create_new_study([optuna.study.StudyDirection.MAXIMIZE], "epochs")
        for epochs in args.epochs:
            log(f"{epochs} epochs x {args.repeats} repeats, both layouts alternately")
            times: dict[str, list[float]] = {"whole-list": [], "per-key": []}
            sizes: dict[str, int] = {}
            for _ in range(args.repeats):
                for layout in times:
                    seconds, written, read = write(storage, study_id, epochs, layout)
                    assert read == [epoch_metrics(e) for e in range(1, epochs + 1)], layout  # both read back whole
                    times[layout].append(seconds)
                    sizes[layout] = written
            ratios = [old / new for old, new in zip(times["whole-list"], times["per-key"])]
            results.append(
                {
                    "epochs": epochs,
                    "bytes_written": sizes,
                    "write_s": {
                        k: {"median": round(statistics.median(v), 4), "min": round(min(v), 4), "max": round(max(v), 4)}
                        for k, v in times.items()
                    },
                    "ratio_whole_list_over_per_key": {
                        "median": round(statistics.median(ratios), 2),
                        "min": round(min(ratios), 2),
                        "max": round(max(ratios), 2),
                    },
                }
            )
    print(json.dumps({"results": results, "machine": monitor.report()}, indent=2))


if __name__ == "__main__":
    main()
