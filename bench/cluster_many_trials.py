"""Many concurrent trials spread over the nodes of a multi-host Ray cluster on this machine: `lwnas sweep --address`
on the head of a cluster built from Linux namespaces (``tests/helpers/netns_cluster.py``, the harness the multi-host
test uses: each node its own address, hostname and node-local disk; PostgreSQL on a host of its own), over the
sleep-task plugin of ``bench/many_workers.py`` (each epoch's training step sleeps ``--sleep`` seconds), with
``--concurrent`` trials at once spread over ``--workers`` worker nodes; the head declares no CPU, so every
trial runs on a worker.

Figures (JSON on stdout), measured as ``bench/many_workers.py`` measures them on one node:
  * utilisation = busy trial-seconds (each trial's recorded training wall time) / (wall x concurrency), with
    wall both the command (Ray's connection and every actor's start included) and the span from the first
    trial's start to the last one's end as storage records them; the most trials running at once, when;
  * where the trials ran: trials per node from each trial's record (its host), and the most trials running at
    once on each node;
  * memory: the machine's available memory before and at its lowest while the sweep ran, the trial workers
    (Ray Tune's actors, on every node) counted at that moment, and their USS/PSS (psutil) at their most;
  * nothing lost or duplicated: every trial number once, the whole budget complete with every epoch.

Needs root (it makes network namespaces); aborts, killing its own cluster, when the machine's available
memory falls below ``--min-available-gb`` (other work shares this machine).

    sudo python bench/cluster_many_trials.py --workers 3 --concurrent 24 --trials 48 --epochs 2 --sleep 60
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the harness is shared with the multi-host test

try:
    import psutil
except ImportError:
    sys.exit("bench/cluster_many_trials.py needs psutil to sample the workers' memory: pip install psutil")

from _common import HelpFormatter, LoadMonitor, log  # noqa: E402
from helpers.netns_cluster import NetnsCluster, unavailable  # noqa: E402
from many_workers import ALLOW, GB, PLUGIN, study_spec, timing  # noqa: E402

NAME = "cluster-many"


class ClusterMemoryWatch(threading.Thread):
    """Samples the trial workers on every node of ``cluster`` and the machine's available memory; sets
    ``aborted`` (the caller tears the cluster down) when available memory falls below ``floor`` bytes."""

    def __init__(self, cluster: NetnsCluster, floor: int, every_s: float = 1.0, detail_every_s: float = 15.0):
        super().__init__(daemon=True)
        self.cluster, self.floor, self.every_s, self.detail_every_s = cluster, floor, every_s, detail_every_s
        self.available_before = psutil.virtual_memory().available
        self.lowest_available, self.workers_at_lowest = self.available_before, 0
        self.most_workers: dict[str, int] = {}
        self.detail: dict | None = None
        self.aborted: str | None = None
        self._halt = threading.Event()

    def workers(self) -> dict[str, list[psutil.Process]]:
        """Ray Tune's trial actors (``ray::ImplicitFunc``) on each node."""
        found: dict[str, list[psutil.Process]] = {}
        for name in self.cluster.worker_names + ["head"]:
            for pid in self.cluster.pids(name):
                try:
                    p = psutil.Process(pid)
                    if "ImplicitFunc" in " ".join(p.cmdline()[:1]):
                        found.setdefault(name, []).append(p)
                except psutil.Error:
                    continue
        return found

    def run(self) -> None:
        last_detail = 0.0
        while not self._halt.wait(self.every_s):
            by_node = self.workers()
            count = sum(map(len, by_node.values()))
            for name, procs in by_node.items():
                self.most_workers[name] = max(self.most_workers.get(name, 0), len(procs))
            available = psutil.virtual_memory().available
            if available < self.lowest_available:
                self.lowest_available, self.workers_at_lowest = available, count
            if available < self.floor:
                self.aborted = (
                    f"available memory {available / GB:.1f} GB fell below --min-available-gb {self.floor / GB:g} "
                    f"with {count} trial workers running"
                )
                log(f"aborting: {self.aborted}")
                return
            if count and time.monotonic() - last_detail >= self.detail_every_s:
                last_detail = time.monotonic()
                self._sample([p for procs in by_node.values() for p in procs])

    def _sample(self, workers: list[psutil.Process]) -> None:
        uss, pss = [], []
        for p in workers:
            try:
                info = p.memory_full_info()
            except psutil.Error:
                continue
            uss.append(info.uss)
            pss.append(info.pss)
        if uss and (self.detail is None or len(uss) >= self.detail["workers"]):
            self.detail = {
                "workers": len(uss),
                "uss_mb_median": round(statistics.median(uss) / 2**20),
                "pss_mb_median": round(statistics.median(pss) / 2**20),
                "uss_gb_total": round(sum(uss) / GB, 2),
            }

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)

    def report(self) -> dict:
        drop = self.available_before - self.lowest_available
        return {
            "available_gb_before": round(self.available_before / GB, 1),
            "available_gb_lowest": round(self.lowest_available / GB, 1),
            "trial_workers_at_lowest": self.workers_at_lowest,
            "machine_mb_per_trial_worker": round(drop / 2**20 / self.workers_at_lowest)
            if self.workers_at_lowest
            else None,
            "most_trial_workers_per_node": self.most_workers,
            "workers_sample": self.detail,
        }


def checks(trials, budget: int, epochs: int) -> dict:
    """Nothing lost or duplicated: every number once, the budget complete with every epoch, nothing left running."""
    from tuners.store import keys

    complete = [t for t in trials if t.state.name == "COMPLETE"]
    return {
        "stored_trials": len(trials),
        "numbers_each_once": sorted(t.number for t in trials) == list(range(len(trials))),
        "complete": len(complete),
        "complete_full_budget": sum(len(keys.epochs_of(t.user_attrs)) == epochs for t in complete),
        "budget_met": len(complete) == budget,
        "still_running": sum(t.state.name == "RUNNING" for t in trials),
        "retried": sum(keys.RETRIED in t.user_attrs for t in trials),
    }


def spread(trials, cluster: NetnsCluster) -> dict:
    """Trials per node (from each trial's recorded host) and the most running at once on each node."""
    from tuners.store import keys

    names = {n.hostname: n.name for n in cluster.nodes.values()}
    per_node = Counter(names.get(t.user_attrs.get(keys.HOST), "unknown") for t in trials if t.datetime_complete)
    peak: dict[str, int] = {}
    for node in per_node:
        events = sorted(
            (when, step)
            for t in trials
            if t.datetime_complete and names.get(t.user_attrs.get(keys.HOST), "unknown") == node
            for when, step in ((t.datetime_start, 1), (t.datetime_complete, -1))
        )
        running = 0
        for _, step in events:
            running += step
            peak[node] = max(peak.get(node, 0), running)
    return {"trials_per_node": dict(sorted(per_node.items())), "most_running_per_node": dict(sorted(peak.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--workers", type=int, default=3, help="worker nodes")
    parser.add_argument("--concurrent", type=int, default=24, help="trials running at once, over all nodes")
    parser.add_argument("--trials", type=int, default=48, help="trials in the sweep (its budget)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per trial")
    parser.add_argument("--sleep", type=float, default=60.0, help="seconds each epoch sleeps")
    parser.add_argument(
        "--min-available-gb", type=float, default=5.0, help="abort when the machine's available memory falls below this"
    )
    args = parser.parse_args()
    if args.concurrent % args.workers:
        parser.error(f"--concurrent must be a multiple of --workers, but got {args.concurrent} and {args.workers}")
    reason = unavailable()
    if reason:
        sys.exit(f"cannot build the cluster on this machine: {reason}")

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    monitor = LoadMonitor(threads=1)
    per_node = args.concurrent // args.workers
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # /tmp: every host of the cluster sees it
        work = Path(tmp)
        shutil.copy(PLUGIN, work / "sleep_task.py")
        spec = study_spec(args.concurrent, args.trials, args.epochs, args.sleep)
        spec["name"] = NAME
        spec["tuner"]["cpus_per_trial"] = 1  # each worker node declares one CPU per trial it holds at once
        (work / "study.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        cluster = NetnsCluster(workers=args.workers, worker_cpus=per_node, pythonpath=(str(work),))
        t0 = time.perf_counter()
        cluster.start()
        try:
            nodes = cluster.ray_nodes(expect=args.workers + 1)
            started_s = time.perf_counter() - t0
            log(f"cluster up in {started_s:.0f} s: {sorted(nodes.values())}")
            watch = ClusterMemoryWatch(cluster, floor=int(args.min_available_gb * GB))
            watch.start()
            log(
                f"lwnas sweep: {args.trials} trials, {args.concurrent} at once, "
                f"{per_node} on each of {args.workers} nodes"
            )
            cmd = [
                "lwnas",
                "sweep",
                "study.yaml",
                "--address",
                cluster.head_address,
                "--storage",
                cluster.storage_url,
                *ALLOW,
            ]
            t1 = time.perf_counter()
            proc = cluster.popen("head", cmd, work / "sweep.log", cwd=work)
            while proc.poll() is None and watch.aborted is None:
                time.sleep(0.5)
            wall = time.perf_counter() - t1
            watch.stop()
            result: dict = {
                "workers": args.workers,
                "concurrent": args.concurrent,
                "per_node": per_node,
                "trials": args.trials,
                "epochs": args.epochs,
                "sleep_s": args.sleep,
                "cluster_start_s": round(started_s, 1),
                "command_wall_s": round(wall, 1),
                "exit_code": proc.returncode,
                "aborted": watch.aborted,
            }
            if proc.returncode not in (0, None) or watch.aborted:
                result["log_tail"] = (work / "sweep.log").read_text(errors="replace")[-3000:]
            try:
                trials = optuna.load_study(study_name=NAME, storage=cluster.storage_url).trials
            except KeyError:
                trials = []
            if trials:
                result["checks"] = checks(trials, args.trials, args.epochs)
                result.update(timing(trials, wall, args.concurrent))
                result.update(spread(trials, cluster))
            result["memory"] = watch.report()
        finally:
            cluster.close()
    result["machine"] = monitor.report()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
