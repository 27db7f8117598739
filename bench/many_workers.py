"""Many concurrent trials: `lwnas sweep` (the installed script, as a user runs it) over a sleep-based task
plugin (``tests/plugins/sleep_task.py``: each epoch's training step sleeps ``--sleep`` seconds), with
``--concurrent`` trials at once on fractional CPUs, optionally killed mid-sweep (SIGKILL to the driver's
process group) and continued with `lwnas resume`; then checks storage and Ray's trial directories:
every trial number once, the whole budget complete, each interrupted trial re-run once, one Ray trial
per stored trial that ran.

Figures (JSON on stdout):
  * utilisation = busy trial-seconds (each trial's recorded training wall time, sleeps included) /
    (wall x concurrency), with wall both the command(s) (Ray's and every actor's start included) and
    the span from the first trial's start to the last one's end as storage records them;
  * memory of the Ray worker processes, sampled while the sweep runs: per-worker USS (pages no other
    process maps) and PSS (shared pages split between their users) from psutil, and the machine's
    available memory (what `free` shows) before and at its lowest, so (before - lowest) / workers is
    the per-worker cost as the whole machine sees it;
  * start latency: when the sweep first had ``--concurrent`` trials running, and per trial the time
    its slot was held without training (storage's start -> end minus the training wall time): a
    fresh actor's start and imports for the first wave, Tune's and the driver's round trips after;
  * the driver's CPU seconds per trial.

With ``--anchor``, the same trials (concurrency, count, epochs, sleep, CPUs) then run once more in plain Ray
Tune (``bench/plain_tune_sleep.py``: a function trainable that only sleeps, nothing of lwnas and no torch in
its workers), measured the same way: Ray Tune's own floor for memory per concurrent trial and utilisation.

The run aborts (kills its own processes and says so in the JSON) when the machine's available memory
falls below ``--min-available-gb``: other work shares this machine.

    python bench/many_workers.py --concurrent 32 --trials 64 --epochs 2 --sleep 20 --restart-after 16
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import yaml

try:
    import psutil  # USS/PSS of the workers (comes with the test extra, through nni)
except ImportError:
    sys.exit("bench/many_workers.py needs psutil to sample the workers' memory: pip install psutil")

from _common import HelpFormatter, LoadMonitor, all_cores, log

PLUGIN = Path(__file__).resolve().parents[1] / "tests" / "plugins" / "sleep_task.py"
ALLOW = ("--allow-plugin", "sleep_task:SleepDigits")
ANCHOR = Path(__file__).resolve().with_name("plain_tune_sleep.py")
NAME = "many-workers"
GB = 2**30


def study_spec(concurrent: int, trials: int, epochs: int, sleep: float) -> dict:
    cpus = round(0.9 * all_cores() / concurrent, 4)  # all trials fit at once on this machine's cores
    return {
        "name": NAME,
        "task": "sleep_task:SleepDigits",
        "task_options": {"sleep_s": sleep},
        "objectives": [{"metric": "accuracy", "direction": "maximize"}, {"metric": "params", "direction": "minimize"}],
        "budget": {"trials": trials, "epochs": epochs},
        "tuner": {
            "sampler": "random",
            "scheduler": "none",
            "max_concurrent": concurrent,
            "seed": 0,
            "cpus_per_trial": cpus,
        },
        "training": {"batch_size": 16, "threads": 1},
        "space": {
            "d_model": {"choice": [16, 32]},
            "heads": 2,
            "layers": 1,
            "lr": {"float": [1.0e-3, 5.0e-3], "log": True},
        },
    }


# ---- processes -------------------------------------------------------------------------------------
def session_procs(sid: int) -> list[psutil.Process]:
    """Live processes of session ``sid`` (the sweep's: Ray's workers leave its process group, not its session)."""
    procs = []
    for p in psutil.process_iter():
        try:
            if os.getsid(p.pid) == sid and p.status() != psutil.STATUS_ZOMBIE:
                procs.append(p)
        except (psutil.Error, OSError):
            continue
    return procs


def kill_session(sid: int, timeout: float = 30) -> None:
    """SIGKILL every process of session ``sid`` until none is left (only this bench's own processes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = [p for p in session_procs(sid) if p.pid != os.getpid()]
        if not procs:
            return
        for p in procs:
            try:
                p.kill()
            except psutil.Error:
                pass
        time.sleep(0.3)


def is_worker(p: psutil.Process) -> bool:
    """A Ray worker that holds a trial: Tune's function-trainable actor (title ``ray::ImplicitFunc``,
    ``ray::ImplicitFunc.train``); Ray's idle pre-started workers (``ray::IDLE``) and agents are not counted."""
    try:
        return "ImplicitFunc" in " ".join(p.cmdline()[:1])
    except psutil.Error:
        return False


class MemoryWatch(threading.Thread):
    """Samples the sweep's Ray workers and the machine's available memory; kills the sweep's session when
    available memory falls below ``floor`` bytes (then ``aborted`` says so)."""

    def __init__(self, floor: int, every_s: float = 1.0, detail_every_s: float = 15.0):
        super().__init__(daemon=True)
        self.floor, self.every_s, self.detail_every_s = floor, every_s, detail_every_s
        self.sid: int | None = None
        self.available_before = psutil.virtual_memory().available
        self.lowest_available = self.available_before
        self.workers_at_lowest = 0
        self.most_workers = 0
        self.detail: dict | None = None  # the per-worker USS/PSS sample with the most workers
        self.cpu_s: dict[tuple[str, int], float] = {}  # ("driver" | "ray", pid) -> CPU seconds last seen
        self.aborted: str | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        last_detail = 0.0
        while not self._halt.wait(self.every_s):
            if self.sid is None:
                continue
            procs = session_procs(self.sid)
            workers = [p for p in procs if is_worker(p)]
            available = psutil.virtual_memory().available
            self.most_workers = max(self.most_workers, len(workers))
            if available < self.lowest_available:
                self.lowest_available, self.workers_at_lowest = available, len(workers)
            if available < self.floor:
                self.aborted = (
                    f"available memory {available / GB:.1f} GB fell below --min-available-gb "
                    f"{self.floor / GB:g} with {len(workers)} Ray workers running"
                )
                log(f"aborting: {self.aborted}")
                kill_session(self.sid)
                return
            self._cpu(procs, workers)
            if time.monotonic() - last_detail >= self.detail_every_s and workers:
                last_detail = time.monotonic()
                self._sample_workers(workers)

    def _cpu(self, procs: list[psutil.Process], workers: list[psutil.Process]) -> None:
        """CPU seconds of the driver (the `lwnas` process leads its session) and of Ray's own processes."""
        worker_pids = {w.pid for w in workers}
        for p in procs:
            if p.pid in worker_pids:
                continue
            try:
                times = p.cpu_times()
            except psutil.Error:
                continue
            self.cpu_s[("driver" if p.pid == self.sid else "ray", p.pid)] = times.user + times.system

    def cpu_seconds(self, kind: str) -> float:
        return sum(v for (k, _), v in self.cpu_s.items() if k == kind)

    def _sample_workers(self, workers: list[psutil.Process]) -> None:
        uss, pss, rss = [], [], []
        for p in workers:
            try:
                info = p.memory_full_info()  # reads smaps_rollup: a few ms per process
            except psutil.Error:
                continue
            uss.append(info.uss)
            pss.append(info.pss)
            rss.append(info.rss)
        if uss and (self.detail is None or len(uss) >= self.detail["workers"]):
            self.detail = {
                "workers": len(uss),
                "uss_mb_median": round(statistics.median(uss) / 2**20),
                "pss_mb_median": round(statistics.median(pss) / 2**20),
                "rss_mb_median": round(statistics.median(rss) / 2**20),
                "uss_gb_total": round(sum(uss) / GB, 2),
                "pss_gb_total": round(sum(pss) / GB, 2),
                "rss_gb_total": round(sum(rss) / GB, 2),
            }

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)

    def report(self) -> dict:
        drop = self.available_before - self.lowest_available
        return {
            "available_gb_before": round(self.available_before / GB, 1),
            "available_gb_lowest": round(self.lowest_available / GB, 1),
            "most_workers_seen": self.most_workers,
            "machine_mb_per_worker": round(drop / 2**20 / self.workers_at_lowest) if self.workers_at_lowest else None,
            "workers_sample": self.detail,
        }


# ---- the run ---------------------------------------------------------------------------------------
def run_lwnas(args: list[str], cwd: Path, env: dict, watch: MemoryWatch, kill_when=None) -> tuple[int | None, float]:
    """Run `lwnas ...` in a session of its own; with ``kill_when`` (a predicate on storage), SIGKILL the
    driver's process group once it holds. Returns (exit code or None when killed, wall seconds)."""
    return run_session(["lwnas", *args], cwd, env, watch, kill_when)


def run_session(
    command: list[str], cwd: Path, env: dict, watch: MemoryWatch, kill_when=None
) -> tuple[int | None, float]:
    """Run ``command`` in a session of its own, watched by ``watch`` (see run_lwnas)."""
    t0 = time.perf_counter()
    with open(cwd / "lwnas.log", "ab") as out:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    watch.sid = proc.pid
    killed = False
    try:
        while proc.poll() is None and watch.aborted is None:
            if kill_when is not None and not killed and kill_when():
                os.killpg(proc.pid, signal.SIGKILL)  # the driver and Ray's local processes, as a crash would
                killed = True
            time.sleep(0.5)
        proc.wait(timeout=60)
    finally:
        kill_session(proc.pid)  # workers left orphaned by a kill
        watch.sid = None
    return (None if killed else proc.returncode), time.perf_counter() - t0


def completed_count(db: Path) -> int:
    import sqlite3

    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute("SELECT count(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def check_storage(url: str, tmp: Path, budget: int, epochs: int) -> tuple[dict, list]:
    """Nothing lost or duplicated: every number once, the budget complete, re-runs once, one Ray trial each."""
    import optuna

    from tuners.store import keys

    trials = optuna.load_study(study_name=NAME, storage=url).trials
    numbers = [t.number for t in trials]
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    interrupted = {t.number for t in trials if t.user_attrs.get(keys.OUTCOME) == "interrupted"}
    requeued = Counter(t.user_attrs[keys.REQUEUED_FROM] for t in trials if keys.REQUEUED_FROM in t.user_attrs)
    ray = Counter(
        json.loads(p.read_text())["_lwnas_number"] for p in (tmp / "cache" / "ray_results").glob("*/*/params.json")
    )
    return {
        "stored_trials": len(trials),
        "numbers_each_once": sorted(numbers) == list(range(len(trials))),
        "complete": len(complete),
        "complete_full_budget": sum(len(keys.epochs_of(t.user_attrs)) == epochs for t in complete),
        "budget_met": len(complete) == budget,
        "still_running": sum(t.state == optuna.trial.TrialState.RUNNING for t in trials),
        "interrupted": len(interrupted),
        "each_interrupted_rerun_once": set(requeued) == interrupted and set(requeued.values()) <= {1},
        "ray_trials": sum(ray.values()),
        # a trial the killed driver had asked for but Ray had not yet started has no Ray trial
        "one_ray_trial_per_complete_trial": set(ray.values()) <= {1}
        and {t.number for t in complete} <= set(ray) <= set(numbers),
    }, trials


def timing(trials, t_command: float, concurrent: int) -> dict:
    """Utilisation and start latency from the trials' stored start and end times."""
    from tuners.store.record import record_of

    done = [(t, record_of(t)) for t in trials if t.datetime_start and t.datetime_complete]
    busy = sum((r.wall_time or 0.0) for t, r in done if t.state.name == "COMPLETE")
    starts = [t.datetime_start for t, _ in done]
    first, last = min(starts), max(t.datetime_complete for t, _ in done)
    span = (last - first).total_seconds()
    # the most trials running at once, and when the sweep first reached it
    events = sorted([(t.datetime_start, 1) for t, _ in done] + [(t.datetime_complete, -1) for t, _ in done])
    running = peak = 0
    reached = None
    for when, step in events:
        running += step
        if running > peak:
            peak, reached = running, when
    held = sorted(
        (t.datetime_complete - t.datetime_start).total_seconds() - (r.wall_time or 0.0)
        for t, r in done
        if t.state.name == "COMPLETE" and r.wall_time is not None
    )
    return {
        "busy_trial_s": round(busy, 1),
        "trials_span_s": round(span, 1),
        "utilisation_command": round(busy / (t_command * concurrent), 3),
        "utilisation_span": round(busy / (span * concurrent), 3),
        "most_running_at_once": peak,
        "most_running_reached_after_s": round((reached - first).total_seconds(), 1),
        "slot_held_without_training_s": {
            "median": round(statistics.median(held), 2),
            "max": round(held[-1], 2),
            "min": round(held[0], 2),
        }
        if held
        else None,
    }


def anchor_arm(args: argparse.Namespace, cpus: float, env: dict) -> dict:
    """The same trials in plain Ray Tune (bench/plain_tune_sleep.py), in a session of its own, watched alike."""
    watch = MemoryWatch(floor=int(args.min_available_gb * GB))
    watch.start()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        out = tmp / "trials.json"
        log(f"anchor: plain Ray Tune, {args.trials} sleep trials, {args.concurrent} at once, {cpus} CPUs each")
        rc, wall = run_session(
            [
                sys.executable,
                str(ANCHOR),
                str(out),
                str(args.concurrent),
                str(args.trials),
                str(args.epochs),
                str(args.sleep),
                str(cpus),
                str(tmp / "ray_results"),
            ],
            tmp,
            env,
            watch,
        )
        watch.stop()
        result = {"exit_code": rc, "aborted": watch.aborted, "command_wall_s": round(wall, 1)}
        if out.exists():
            rows = json.loads(out.read_text())["trials"]
            done = [r for r in rows if r["epochs"] == args.epochs]
            busy = sum(r["busy"] for r in done)
            span = max(r["end"] for r in rows) - min(r["start"] for r in rows) if rows else 0.0
            result.update(
                {
                    "trials_complete": len(done),
                    "busy_trial_s": round(busy, 1),
                    "trials_span_s": round(span, 1),
                    "utilisation_command": round(busy / (wall * args.concurrent), 3),
                    "utilisation_span": round(busy / (span * args.concurrent), 3) if span else None,
                }
            )
        elif rc != 0:
            result["log_tail"] = (tmp / "lwnas.log").read_text(errors="replace")[-3000:]
    result["memory"] = watch.report()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--concurrent", type=int, default=20, help="trials running at once")
    parser.add_argument("--trials", type=int, default=40, help="trials in the sweep (its budget)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per trial")
    parser.add_argument("--sleep", type=float, default=2.0, help="seconds each epoch sleeps")
    parser.add_argument(
        "--restart-after",
        type=int,
        default=0,
        metavar="N",
        help="kill -9 the driver's process group once N trials are complete, then `lwnas resume` (0: no restart)",
    )
    parser.add_argument(
        "--min-available-gb", type=float, default=4.0, help="abort when the machine's available memory falls below this"
    )
    parser.add_argument(
        "--anchor",
        action="store_true",
        help="then run the same trials in plain Ray Tune (sleep only, no lwnas, no torch) and report "
        "its utilisation and worker memory beside lwnas's",
    )
    args = parser.parse_args()
    if args.restart_after >= args.trials:
        parser.error(f"--restart-after must be below --trials, but got {args.restart_after} >= {args.trials}")

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    monitor = LoadMonitor(threads=1)
    watch = MemoryWatch(floor=int(args.min_available_gb * GB))
    watch.start()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        spec = study_spec(args.concurrent, args.trials, args.epochs, args.sleep)
        (tmp / "study.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        db = tmp / "many.db"
        url = f"sqlite:///{db}"
        env = {
            **os.environ,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            "LWNAS_CACHE": str(tmp / "cache"),
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_ADDRESS": "local",
            # the plugin is not installed: its folder goes on PYTHONPATH and --allow-plugin lets lwnas import it
            "PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGIN.parent), os.environ.get("PYTHONPATH")])),
        }
        env.pop("LWNAS_STORAGE", None)
        log(
            f"lwnas sweep: {args.trials} trials, {args.concurrent} at once, {spec['tuner']['cpus_per_trial']} CPUs each"
        )
        kill_when = (lambda: completed_count(db) >= args.restart_after) if args.restart_after else None
        rc, wall = run_lwnas(["sweep", "study.yaml", "--storage", url, *ALLOW], tmp, env, watch, kill_when)
        walls = {"sweep_s": round(wall, 1)}
        if rc is None and watch.aborted is None:
            log("driver killed; lwnas resume")
            rc, wall2 = run_lwnas(["resume", NAME, "--storage", url, *ALLOW], tmp, env, watch)
            walls["resume_s"] = round(wall2, 1)
        watch.stop()
        out = (tmp / "lwnas.log").read_text(errors="replace")
        result = {
            "concurrent": args.concurrent,
            "trials": args.trials,
            "epochs": args.epochs,
            "sleep_s": args.sleep,
            "cpus_per_trial": spec["tuner"]["cpus_per_trial"],
            "restart_after": args.restart_after or None,
            "aborted": watch.aborted,
            "exit_code": rc,
            "command_wall_s": walls,
        }
        if watch.aborted is None and rc != 0:
            result["log_tail"] = out[-3000:]
        if completed_count(db):
            checks, trials = check_storage(url, tmp, args.trials, args.epochs)
            result["checks"] = checks
            result.update(timing(trials, sum(walls.values()), args.concurrent))
            result["cpu_s_per_trial"] = {
                kind: round(watch.cpu_seconds(kind) / len(trials), 3) for kind in ("driver", "ray")
            }
    result["memory"] = watch.report()
    if args.anchor and watch.aborted is None:
        result["plain_tune_anchor"] = anchor_arm(args, spec["tuner"]["cpus_per_trial"], env)
    result["machine"] = monitor.report()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
