"""Reading a large study: lwnas's bulk reader vs Optuna's ``load_study(...).trials``, in one run.

For each size a synthetic study (``dashboards.sample``: the record a real sweep writes, nothing trained)
is written in batches (``TrialStore.insert``; its time is reported as ``write_s``), then timed, each
from a freshly opened storage:

* optuna_load_trials_s: ``optuna.load_study(name, storage).trials``, the anchor;
* bulk_read_s: ``tuners.store.trial_store.TrialStore.frozen_since()``, every trial as Optuna's FrozenTrial;
* record_read_s: ``TrialStore.records_since()``, every trial as lwnas's TrialRecord (what the
  dashboard and ``lwnas status`` read);
* first_view_s: what the dashboard does on opening the study: ``TrialCache.load()`` (a read as columns,
  ``TrialStore.columns_since``, and the study data), the trial table (``StudyData.frame``) and the Pareto
  front;
* status_s: ``lwnas status``'s figures (bulk read, counts, front, hypervolume) without the CLI start;
* refresh_s: the dashboard's incremental refresh (``TrialCache.load()``) after another process-like writer
  added ``--new`` trials and finished one that was running; refresh_view_s the same refresh followed by
  what the page then shows (the trial table and the front); refresh_unchanged_s when nothing changed;
  first_refresh_view_s the first refresh + view after a first view (one trial started), which also builds the
  records and live sets the first view skipped (``TrialCache._settle``), once.

Each timing runs ``--repeats`` times (Optuna's at most ``--optuna-repeats``; 0 skips it); all runs are
printed, the median summarises.

``--compare REV`` also times the first view of the code at git revision ``REV`` (checked out in a temporary
``git worktree``) on the same study, alternated with this code's, each in a fresh process (``--repeats``
pairs): ``compare`` gives each side's CPU (``time.process_time``, the figure a loaded machine distorts least)
and wall seconds and their ratio. ``--study NAME`` reads an existing study of ``--storage`` instead of
writing one (its size is counted; the refresh figures add trials to it). Prints JSON.

    python bench/dashboard_read.py --trials 5000,100000
    python bench/dashboard_read.py --trials 5000 --storage postgresql://postgres@127.0.0.1:5432/bench
    python bench/dashboard_read.py --trials 100000 --repeats 3 --optuna-repeats 0 --compare afc3e26
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def runs(fn, repeats: int) -> dict:
    times = [timed(fn)[0] for _ in range(repeats)]
    return {"median": round(statistics.median(times), 3), "all": [round(t, 3) for t in times]}


def first_view(url: str, name: str) -> None:
    from dashboards.data import TrialCache

    data = TrialCache(url, name).load()
    _ = data.frame, data.front()


def fresh_first_view(url: str, name: str) -> dict:
    """The first view in this (fresh) process, as the dashboard's: connect, then time the load, table and front."""
    from dashboards.data import TrialCache, connect

    connect(url)  # Optuna's lazy storage imports, once, outside the timing
    cpu0, wall0 = time.process_time(), time.perf_counter()
    data = TrialCache(url, name).load()
    cpu1 = time.process_time()
    frame = data.frame
    cpu2 = time.process_time()
    front = data.front()
    cpu3, wall3 = time.process_time(), time.perf_counter()
    return {
        "cpu_s": round(cpu3 - cpu0, 3),
        "wall_s": round(wall3 - wall0, 3),
        "load_cpu_s": round(cpu1 - cpu0, 3),
        "table_cpu_s": round(cpu2 - cpu1, 3),
        "front_cpu_s": round(cpu3 - cpu2, 3),
        "rows": len(frame),
        "front": [r.number for r in front],
    }


def first_view_at(root: Path, url: str, name: str) -> dict:
    """``fresh_first_view`` in a new process importing lwnas from ``root``."""
    out = subprocess.run(
        [sys.executable, __file__, "--first-view-of", url, name],
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(url: str, name: str, old_root: Path, pairs: int) -> dict:
    """This code's first view and the one at ``old_root``, alternated in fresh processes, same study."""
    here = Path(__file__).resolve().parent.parent
    runs: dict[str, list[dict]] = {"new": [], "old": []}
    for _ in range(pairs):
        for side, root in (("new", here), ("old", old_root)):
            load = os.getloadavg()[0]
            runs[side].append({**first_view_at(root, url, name), "load": round(load, 2)})
    fronts = {side: runs[side][0].pop("front") for side in runs}
    for side in runs:
        for run in runs[side]:
            run.pop("front", None)
    median = {side: {k: statistics.median(r[k] for r in runs[side]) for k in ("cpu_s", "wall_s")} for side in runs}
    return {
        "runs": runs,
        "median": median,
        "cpu_ratio": round(median["old"]["cpu_s"] / median["new"]["cpu_s"], 2),
        "wall_ratio": round(median["old"]["wall_s"] / median["new"]["wall_s"], 2),
        "same_front": fronts["new"] == fronts["old"],
        "same_rows": runs["new"][0]["rows"] == runs["old"][0]["rows"],
    }


def status(url: str, name: str) -> None:
    import optuna

    from tuners.fronts.status import read_trials, study_status
    from tuners.store.connection import open_storage

    storage = open_storage(url)
    ot_study = optuna.load_study(study_name=name, storage=storage)
    study_status(ot_study, read_trials(ot_study, storage))


def refresh(url: str, name: str, new: int, repeats: int) -> tuple[dict, dict, dict, float]:
    """Incremental refresh after ``new`` trials were added and a running one finished (the load alone, and
    the load with the table and front the page shows next); then a refresh with nothing changed; and the first
    refresh + view after the first view (one trial started), which also builds the records and live sets the
    first view skipped."""
    import optuna

    from dashboards.data import TrialCache
    from tuners.store import keys
    from tuners.store.connection import open_storage
    from tuners.store.record import planned_attrs, record_of

    storage = open_storage(url)
    # a random sampler: NSGA-II would read every trial at each ask, which is not what is measured here
    writer = optuna.load_study(study_name=name, storage=storage, sampler=optuna.samplers.RandomSampler(seed=0))
    study_id = storage.get_study_id_from_name(name)

    def view() -> None:
        data = cache.load()
        _ = data.frame, data.front()

    def started(number: int) -> optuna.trial.Trial:
        """A trial as the driver starts it with the point of trial ``number``: its params and planned record
        (tuners/driver/searcher.py), no values, no end time."""
        planned = storage.get_trial(storage.get_trial_id_from_study_id_trial_number(study_id, number))
        writer.enqueue_trial(planned.params)
        trial = writer.ask()
        for key, value in planned_attrs(record_of(planned)).items():  # as the driver writes it
            trial.set_user_attr(key, value)
        return trial

    def finished(trial: optuna.trial.Trial, values: list[float]) -> None:
        for epoch in range(1, 3):
            trial.set_user_attr(keys.epoch_key(epoch), {"epoch": epoch, "val_accuracy": values[0], "wall_time": epoch})
        trial.set_user_attr(keys.OUTCOME, "complete")
        writer.tell(trial, values)

    cache = TrialCache(url, name)
    view()
    changed, viewed, unchanged, first = [], [], [], []
    for i in range(repeats):
        for times, step in ((changed, cache.load), (viewed, view)):
            running = started(i)
            seen = timed(view)[0]  # sees it running
            if not first:  # the first refresh after the first view also takes its trials in (TrialCache._settle)
                first.append(seen)
            for j in range(new):
                finished(started(100 + j), [0.5, 1000.0])
            finished(running, [0.6, 900.0])
            times.append(timed(step)[0])
        unchanged.append(timed(cache.load)[0])
    summary = lambda ts: {"median": round(statistics.median(ts), 3), "all": [round(t, 3) for t in ts]}  # noqa: E731
    return summary(changed), summary(viewed), summary(unchanged), round(first[0], 3)


def one_size(url: str, trials: int, args) -> dict:
    import optuna

    from dashboards.data import count_trials
    from dashboards.sample import seed_study
    from tuners.store.connection import open_storage
    from tuners.store.trial_store import TrialStore

    if args.study:
        name, write_s = args.study, 0.0
        storage = open_storage(url)
        trials = count_trials(storage, storage.get_study_id_from_name(name))
    else:
        name = f"bench-read-{trials}-{uuid.uuid4().hex[:6]}"
        log(f"writing {trials} synthetic trials")
        write_s, _ = timed(lambda: seed_study(url, name=name, trials=trials, seed=0))
    try:
        anchor = None
        if args.optuna_repeats > 0:
            log("optuna load_study(...).trials")
            anchor = runs(
                lambda: optuna.load_study(study_name=name, storage=open_storage(url)).trials,
                min(args.repeats, args.optuna_repeats),
            )
        compared = None
        if args.old_root:
            log(f"first view, this code against {args.compare}, alternated in fresh processes")
            compared = compare(url, name, args.old_root, args.repeats)
        log("bulk read, first view, status, refresh")

        def bulk():
            storage = open_storage(url)
            return TrialStore.of(storage, name).frozen_since()

        bulk_read = runs(bulk, args.repeats)

        def records():
            storage = open_storage(url)
            return TrialStore.of(storage, name).records_since()

        record_read = runs(records, args.repeats)
        view = runs(lambda: first_view(url, name), args.repeats)
        status_s = runs(lambda: status(url, name), args.repeats)
        changed, viewed, unchanged, first_refresh = refresh(url, name, args.new, args.repeats)
    finally:
        if args.storage and not args.study:
            optuna.delete_study(study_name=name, storage=url)
    speedup = lambda read: round(anchor["median"] / read["median"], 1) if anchor else None  # noqa: E731
    return {
        "trials": trials,
        "write_s": round(write_s, 1),
        "optuna_load_trials_s": anchor,
        "bulk_read_s": bulk_read,
        "bulk_read_speedup": speedup(bulk_read),
        "record_read_s": record_read,
        "record_read_speedup": speedup(record_read),
        "first_view_s": view,
        "first_view_speedup": speedup(view),
        "compare": compared,
        "status_s": status_s,
        "refresh_s": changed,
        "refresh_view_s": viewed,
        "refresh_unchanged_s": unchanged,
        "first_refresh_view_s": first_refresh,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--trials", default="5000,100000", help="comma-separated study sizes")
    parser.add_argument("--storage", help="a database URL to use (default: a temporary SQLite file)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each read")
    parser.add_argument("--optuna-repeats", type=int, default=2, help="at most this many runs of Optuna's read")
    parser.add_argument("--new", type=int, default=10, help="trials added before each incremental refresh")
    parser.add_argument("--compare", metavar="REV", help="also time the first view of the code at git revision REV")
    parser.add_argument("--study", help="read this existing study of --storage instead of writing one")
    parser.add_argument("--first-view-of", nargs=2, metavar=("URL", "NAME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_view_of:  # one side of --compare, in its own process
        print(json.dumps(fresh_first_view(*args.first_view_of)))
        return
    if args.study and not args.storage:
        parser.error("--study reads a study of --storage: give --storage too")

    import optuna

    import dashboards.data  # noqa: F401  (imports are not what is measured)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        url = args.storage or f"sqlite:///{Path(tmp) / 'bench.db'}"
        args.old_root = None
        repo = Path(__file__).resolve().parent.parent
        if args.compare:
            args.old_root = Path(tmp) / "old"
            git = ["git", "-C", str(repo)]
            # git's messages to stderr: stdout is the JSON
            subprocess.run(
                [*git, "worktree", "add", "--detach", str(args.old_root), args.compare], check=True, stdout=sys.stderr
            )
        try:
            monitor = LoadMonitor(threads=1)
            sizes = []
            for n in [args.trials.split(",")[0]] if args.study else args.trials.split(","):
                sizes.append(one_size(url, int(n), args))
                log(json.dumps(sizes[-1]))  # each size as it finishes: a run stopped early keeps the smaller ones
        finally:
            if args.old_root:
                subprocess.run(
                    [*git, "worktree", "remove", "--force", str(args.old_root)], check=True, stdout=sys.stderr
                )
    report = {"backend": url.split(":", 1)[0], "compare": args.compare, "sizes": sizes, "machine": monitor.report()}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
