"""A sweep on a Ray cluster of several hosts, with a storage outage, a killed driver and a lost node.

The hosts are Linux namespaces on this machine (``tests/helpers/netns_cluster.py``): a head
(``ray start --head --num-cpus 0``, so it trains nothing), two worker nodes with one CPU each, a client host
without Ray and a PostgreSQL host, each with its own address, hostname and node-local disk. It runs one
story, as a cluster lives it, and the tests below check what each step left:

1. ``lwnas sweep --address HEAD:6379`` on the head, PostgreSQL on the db host: trials run on both workers.
2. The db host's link goes down for some seconds while trials run, and comes back: the driver goes on.
3. The driver is killed (``kill -9``). ``lwnas resume`` on worker w1, another host, is refused at once
   (exit 3, naming the driver on the head): a holder on another host is gone only once its heartbeat is
   60 s old. Meanwhile the client host reads the study (``lwnas status --json``, ``lwnas export``, the
   dashboard's trials view) and the head is refused a sweep whose data lies on its own disk only.
4. Once the heartbeat is stale, ``lwnas resume`` on w1 takes the study over; while it runs, every Ray
   process of worker w2 is killed (``kill -9``) in the middle of a trial. Ray runs that trial again on w1
   (``tuner.max_failures``: 1) and the record says so; the budget is spent.

Through all of it nothing is lost or duplicated: the trial numbers, each trial's record, the interrupted
trials re-queued once each, the budget exactly. The story shares one cluster (starting one takes a
minute on a busy machine); the steps that wait for something (the stale heartbeat) run the reads meanwhile.
Skips, saying why, where namespaces cannot be made (not root, no iproute2) or PostgreSQL is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import optuna
import pytest
import yaml
from helpers.netns_cluster import ClusterError, NetnsCluster, unavailable
from helpers.procs import outcome, read_trials

from tuners.driver.lease import STALE_S
from tuners.store import keys

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PLUGIN = Path(__file__).parent / "plugins" / "sleep_task.py"
NAME, BUDGET = "cluster-faults", 6
OUTAGE_S = 12  # longer than the lease's heartbeat period (10 s): the heartbeat meets the outage
STEP_S = 420  # the most one step may take on a busy machine (a sweep's start imports Ray, Tune, torch)
COMPLETE, RUNNING, FAIL = (
    optuna.trial.TrialState.COMPLETE,
    optuna.trial.TrialState.RUNNING,
    optuna.trial.TrialState.FAIL,
)

STUDY = {
    "name": NAME,
    "task": "sleep_task:SleepDigits",  # on every node's PYTHONPATH, as a plugin must be
    "task_options": {"sleep_s": 3},  # one epoch of 3 s: long enough to be caught mid-trial
    "objectives": [{"metric": "accuracy", "direction": "maximize"}, {"metric": "params", "direction": "minimize"}],
    "budget": {"trials": BUDGET, "epochs": 1},
    "tuner": {"sampler": "random", "scheduler": "none", "max_concurrent": 2, "seed": 0, "cpus_per_trial": 1},
    "training": {"batch_size": 16, "threads": 1},
    "space": {"d_model": {"choice": [16, 32]}, "heads": 2, "layers": 1, "lr": {"float": [1.0e-3, 5.0e-3], "log": True}},
}

DASHBOARD = """
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=300)
at.session_state["view"] = "Trials"
at.run()
frames = [d.value for d in at.dataframe]
seen = {"trials": sorted({int(n) for f in frames if "trial" in f for n in f["trial"].dropna()})}
at.session_state["view"], at.session_state["detail_trial"] = "Trial detail", int(sys.argv[2])
at.run()
seen["detail"] = [str(c.value) for c in at.caption]
seen["problems"] = [str(e.value) for e in [*at.exception, *at.error]]
print("DASHBOARD " + json.dumps(seen))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(f"no multi-host cluster on this machine: {reason}")
    pytest.importorskip("psycopg", reason="psycopg (the PostgreSQL driver) is not installed")
    plugins = tmp_path_factory.mktemp("plugins")  # under /tmp: a folder every host sees
    shutil.copy(PLUGIN, plugins / "sleep_task.py")
    c = NetnsCluster(workers=2, worker_cpus=1, pythonpath=(str(plugins),))
    try:
        c.start()
    except ClusterError as exc:
        pytest.fail(f"the cluster did not come up: {exc}")
    try:
        yield c
    finally:
        c.close()


# ---- reading storage and hosts while the story runs -------------------------------------------------------
def states(c: NetnsCluster, name: str) -> dict[int, str]:
    """Trial number -> state, read with SQL from this machine (over the bridge)."""
    try:
        rows = c.sql(
            "lwnas",
            "SELECT t.number, t.state FROM trials t JOIN studies s ON s.study_id = t.study_id "
            f"WHERE s.study_name = '{name}'",
        )
    except ClusterError:  # the tables are not there yet (or the db host's link is down)
        return {}
    return {number: str(state) for number, state in rows}


def count(c: NetnsCluster, state: str) -> int:
    return sum(s == state for s in states(c, NAME).values())


def lease_age(c: NetnsCluster) -> float | None:
    """Seconds since the study's lease was last renewed, by the database's clock (None: no lease)."""
    rows = c.sql(
        "lwnas",
        "SELECT extract(epoch FROM (now() AT TIME ZONE 'utc') - heartbeat) FROM lwnas_leases "
        f"WHERE study_name = '{NAME}'",
    )
    return float(rows[0][0]) if rows else None


def training_on(c: NetnsCluster, node: str) -> int | None:
    """The trial a Ray Tune actor on ``node`` is training now (its working folder names it), or None."""
    for pid in c.pids(node):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        found = re.search(r"/trial-(\d+)-[^/]*$", cwd)
        if "ImplicitFunc.train" in title and found:
            return int(found.group(1))
    return None


def wait(condition, what: str, proc=None, log: Path | None = None, timeout: float = STEP_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the process ended (exit {proc.returncode}) before {what}:\n{_tail(log)}")
        time.sleep(0.2)
    pytest.fail(f"no {what} after {timeout:.0f} s:\n{_tail(log)}")


def _tail(log: Path | None) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log and log.exists() else ""


# ---- the story ----------------------------------------------------------------------------------------------
@dataclass
class Story:
    cluster: NetnsCluster
    nodes: dict[str, str]  # Ray node id -> host name (head, w1, w2), when the cluster came up
    outage: dict = field(default_factory=dict)
    killed_driver: dict = field(default_factory=dict)
    refused_resume: tuple[int, str] = (0, "")
    reads: dict = field(default_factory=dict)  # the client host's reads while the study stood still
    byod: tuple[int, str] = (0, "")
    resumed: tuple[int, str] = (0, "")
    lost_node: dict = field(default_factory=dict)
    trials: dict[int, optuna.trial.FrozenTrial] = field(default_factory=dict)
    timeline: list[tuple[float, str]] = field(default_factory=list)  # (seconds since the story began, step)
    began: float = field(default_factory=time.monotonic)

    def mark(self, step: str) -> None:
        """Note when a step happened (printed at the end: where the story's minutes go)."""
        self.timeline.append((round(time.monotonic() - self.began, 1), step))


@pytest.fixture(scope="module")
def story(cluster: NetnsCluster, tmp_path_factory) -> Story:
    c = cluster
    s = Story(c, c.ray_nodes(expect=3))
    assert sorted(s.nodes.values()) == ["head", "w1", "w2"], s.nodes
    work = tmp_path_factory.mktemp("story")  # every host sees it (the logs stay with pytest's temporary files)
    (work / "study.yaml").write_text(yaml.safe_dump(STUDY, sort_keys=False))
    url, address = c.storage_url, c.head_address

    # 1-2. the sweep on the head; the db host's link goes down while trials run, then comes back
    log = work / "sweep.log"
    s.mark("sweep on the head")
    driver = c.popen("head", ["lwnas", "sweep", "study.yaml", "--address", address, "--storage", url], log, cwd=work)
    try:
        wait(
            lambda: count(c, "COMPLETE") >= 1 and count(c, "RUNNING") >= 1, "a trial done and one running", driver, log
        )
        before = states(c, NAME)
        s.mark("db link down")
        c.link("db", up=False)
        time.sleep(OUTAGE_S)
        c.link("db", up=True)
        s.outage = {"before": before, "driver_alive_after": driver.poll() is None}
        # 3. once half the budget is done and trials run, the driver is killed
        wait(lambda: count(c, "COMPLETE") >= BUDGET // 2 and count(c, "RUNNING") >= 1, "half the budget", driver, log)
        s.outage["completed_after"] = count(c, "COMPLETE") - sum(v == "COMPLETE" for v in before.values())
        s.mark("driver killed")
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
    s.killed_driver = {"trials": read_trials(url, NAME), "output": log.read_text(errors="replace")}
    resume = ["lwnas", "resume", NAME, "--address", address, "--storage", url]
    s.refused_resume = c.run("w1", resume, work / "resume-refused.log", timeout=STEP_S)

    # while the heartbeat goes stale: the client host reads the study, which stands still
    s.mark("resume on w1 refused")
    # (at once: each of them spends most of its time starting Python)
    byod = _start_head_local_data_sweep(c, work, url, address)
    s.reads = _client_reads(c, work, url)
    s.byod = c.finish(byod, work / "byod.log", timeout=STEP_S)
    s.mark("client reads done, head-local data refused")
    wait(lambda: (lease_age(c) or 0) > STALE_S + 1, "stale lease", timeout=STALE_S + 60)
    s.mark("lease stale: resume on w1")

    # 4. the resume on w1 takes over; worker w2 is killed in the middle of a trial
    log = work / "resume.log"
    driver = c.popen("w1", resume, log)
    try:
        number = wait(
            lambda: (n := training_on(c, "w2")) is not None and states(c, NAME).get(n) == "RUNNING" and n,
            "a trial training on w2",
            driver,
            log,
        )
        s.mark(f"w2 killed (trial {number})")
        s.lost_node = {"trial": number, "killed": c.kill_ray("w2")}
        rc = driver.wait(timeout=STEP_S)
        s.mark("resume done")
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
    s.resumed = (rc, log.read_text(errors="replace"))
    s.trials = read_trials(url, NAME)
    hosts = {n.hostname: n.name for n in c.nodes.values()}
    rows = [
        f"trial {n}: {t.state.name} {outcome(t)} on {hosts.get(t.user_attrs.get(keys.HOST), '-')}"
        + (f", re-queued from {t.user_attrs[keys.REQUEUED_FROM]}" if keys.REQUEUED_FROM in t.user_attrs else "")
        + (f", lost {len(t.user_attrs[keys.RETRIED])} attempt(s)" if keys.RETRIED in t.user_attrs else "")
        for n, t in sorted(s.trials.items())
    ]
    steps = [f"{t:7.1f} {step}" for t, step in s.timeline]
    print("\nthe story's steps (seconds since the cluster was up):", *steps, "the trials:", *rows, sep="\n")
    return s


def _client_reads(c: NetnsCluster, work: Path, url: str) -> dict:
    """What the client host reads of the study: status, export and the dashboard; and storage, before and after."""
    reads: dict = {"trials": read_trials(url, NAME)}
    app = Path(__file__).resolve().parents[1] / "dashboards" / "app.py"
    shown = min(n for n, t in reads["trials"].items() if t.state == COMPLETE)  # the trial the detail view opens
    dashboard_log = work / "dashboard.log"
    dashboard = c.popen(
        "client", [sys.executable, "-c", DASHBOARD, str(app), str(shown)], dashboard_log, env={"LWNAS_STORAGE": url}
    )
    reads["status"] = c.run("client", ["lwnas", "status", NAME, "--storage", url, "--json"], work / "status.log")
    exported = work / "exported"
    reads["export"] = c.run(
        "client", ["lwnas", "export", NAME, "--storage", url, "-o", str(exported)], work / "export.log"
    )
    reads["exported"] = {p.name: yaml.safe_load(p.read_text()) for p in sorted(exported.glob("*.yaml"))}
    reads["dashboard"] = c.finish(dashboard, dashboard_log, timeout=STEP_S)
    reads["trials_after"] = read_trials(url, NAME)
    return reads


def _start_head_local_data_sweep(c: NetnsCluster, work: Path, url: str, address: str):
    """Start `lwnas sweep` on the head of a `features` study whose data sits on the head's own disk."""
    data = c.local / "mine.npz"  # the head's node-local folder: the workers have their own, without it
    script = (
        "import numpy as np, sys; rng = np.random.default_rng(0); "
        "np.savez(sys.argv[1], regions=rng.normal(size=(40, 4, 8)).astype('float32'), labels=rng.integers(0, 3, 40))"
    )
    rc, out = c.run("head", [sys.executable, "-c", script, str(data)], work / "byod-data.log")
    assert rc == 0, out
    study = {**STUDY, "name": "head-local-data", "task": "features", "family": "encoder", "task_options": {}}
    study["task_options"] = {"path": str(data)}
    (work / "byod.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    sweep = ["lwnas", "sweep", "byod.yaml", "--address", address, "--storage", url]
    return c.popen("head", sweep, work / "byod.log", cwd=work)


# ---- 1. trials ran on the workers, and their records say which --------------------------------------------
def test_trials_ran_on_both_workers_never_on_the_head(story: Story):
    hostnames = {n.hostname: n.name for n in story.cluster.nodes.values()}
    ran = {
        n: (t.user_attrs.get(keys.HOST), t.user_attrs.get(keys.NODE))
        for n, t in story.trials.items()
        if t.state == COMPLETE
    }
    assert ran, story.resumed[1][-3000:]
    on = {n: (hostnames.get(host), story.nodes.get(node)) for n, (host, node) in ran.items()}
    # the host name a trial recorded and the Ray node it recorded are the same machine
    assert all(host == node and host in ("w1", "w2") for host, node in on.values()), on
    assert {host for host, _ in on.values()} == {"w1", "w2"}, f"trials did not run on both workers: {on}"


# ---- 2. storage outage ------------------------------------------------------------------------------------
def test_driver_rides_out_a_storage_outage(story: Story):
    o = story.outage
    assert o["driver_alive_after"], (
        f"the driver stopped during a {OUTAGE_S} s outage:\n{story.killed_driver['output'][-3000:]}"
    )
    assert o["completed_after"] >= 1, o  # trials finished and were recorded after the link came back
    before = story.killed_driver["trials"]
    assert all(outcome(t) == "complete" for t in before.values() if t.state == COMPLETE), {
        n: outcome(t) for n, t in before.items()
    }
    assert "error" not in story.killed_driver["output"].lower(), story.killed_driver["output"][-3000:]


# ---- 3. the killed driver, resumed from another host --------------------------------------------------------
def test_resume_on_another_host_waits_for_a_stale_heartbeat(story: Story):
    rc, out = story.refused_resume
    head = story.cluster.nodes["head"].hostname
    assert rc == 3, out[-3000:]
    assert re.search(rf"study '{NAME}' is being run by another driver \(pid \d+ on {head} since", out), out[-3000:]
    rc, out = story.resumed
    assert rc == 0, out[-4000:]
    assert re.search(rf"took the study over from a driver that is gone \(pid \d+ on {head} since", out), out[-3000:]


def test_client_host_reads_the_study(story: Story):
    r = story.reads
    assert sorted(r["trials"]) == sorted(r["trials_after"])  # the study stood still while the client read it
    trials = r["trials"]
    rc, out = r["status"]
    assert rc == 0, out[-3000:]
    status = json.loads(out[out.index("{") :])
    expected = {}
    for t in trials.values():
        key = outcome(t) or t.state.name.lower()
        expected[key] = expected.get(key, 0) + 1
    assert status["outcomes"] == expected and status["trials"] == len(trials), (status, expected)

    rc, out = r["export"]
    assert rc == 0 and r["exported"], out[-3000:]
    complete = {n for n, t in trials.items() if t.state == COMPLETE}
    for name, exported in r["exported"].items():
        assert exported["task"] == STUDY["task"] and exported["provenance"]["trial"] in complete, (name, exported)

    rc, out = r["dashboard"]
    found = re.search(r"^DASHBOARD (.*)$", out, re.M)
    assert rc == 0 and found, out[-3000:]
    dashboard = json.loads(found.group(1))
    assert not dashboard["problems"] and dashboard["trials"] == sorted(trials), dashboard
    shown = trials[min(n for n, t in trials.items() if t.state == COMPLETE)]  # its detail names its host
    detail = [line.replace("\\", "") for line in dashboard["detail"]]  # the page escapes Markdown's characters
    assert any(f"host {shown.user_attrs[keys.HOST]} " in line for line in detail), detail


def test_data_on_the_heads_own_disk_is_refused_before_anything_is_stored(story: Story):
    rc, out = story.byod
    lines = [line for line in out.splitlines() if line.startswith("error ")]
    workers = [story.cluster.nodes[w].hostname for w in ("w1", "w2")]
    assert rc == 2 and len(lines) == 1, out[-3000:]
    assert "byod.yaml" in lines[0] and "task_options.path" in lines[0], lines
    assert f"{story.cluster.local / 'mine.npz'} does not exist on Ray nodes" in lines[0], lines
    assert all(w in lines[0] for w in workers) and story.cluster.nodes["head"].hostname not in lines[0], lines
    assert "head-local-data" not in [s.study_name for s in optuna.get_all_study_summaries(story.cluster.storage_url)]


# ---- 4. the lost worker node ------------------------------------------------------------------------------
def test_trial_of_a_lost_node_runs_again_on_another(story: Story):
    number = story.lost_node["trial"]
    assert story.lost_node["killed"], "no process of w2 was killed"
    t = story.trials[number]
    hostnames = {n.hostname: n.name for n in story.cluster.nodes.values()}
    assert t.state == COMPLETE and outcome(t) == "complete", (t.state, t.user_attrs)
    assert hostnames[t.user_attrs[keys.HOST]] == "w1", t.user_attrs  # it finished on the node that was left
    retried = t.user_attrs.get(keys.RETRIED)
    assert retried and len(retried) == 1 and retried[0]["failure"] == 1, retried
    assert f"trial {number} failed" in story.resumed[1] and "Ray runs it again" in story.resumed[1], story.resumed[1][
        -3000:
    ]
    # no other trial was re-run: only one ran on w2 at the kill (one CPU)
    assert [n for n, t in story.trials.items() if keys.RETRIED in t.user_attrs] == [number]


# ---- through all of it ----------------------------------------------------------------------------------
def test_nothing_lost_or_duplicated(story: Story):
    after, before = story.trials, story.killed_driver["trials"]
    assert sorted(after) == list(range(len(after))), sorted(after)  # every number once, none skipped
    interrupted = sorted(n for n, t in before.items() if t.state == RUNNING)
    assert interrupted, {n: t.state.name for n, t in before.items()}
    for n, b in before.items():  # what the killed driver finished is kept as it was
        if b.state == COMPLETE:
            a = after[n]
            assert (a.state, a.values, a.params, a.user_attrs) == (b.state, b.values, b.params, b.user_attrs), n
    for n in interrupted:  # each trial the driver left running: marked and re-queued exactly once, same params
        assert after[n].state == FAIL and outcome(after[n]) == "interrupted", after[n].user_attrs
        reruns = [t for t in after.values() if t.user_attrs.get(keys.REQUEUED_FROM) == n]
        assert len(reruns) == 1 and after[n].params.items() <= reruns[0].params.items(), (n, reruns)
    requeued = sorted(t.user_attrs[keys.REQUEUED_FROM] for t in after.values() if keys.REQUEUED_FROM in t.user_attrs)
    assert requeued == interrupted
    assert not [n for n, t in after.items() if t.state not in (COMPLETE, FAIL)], {
        n: t.state.name for n, t in after.items()
    }
    counted = [n for n, t in after.items() if outcome(t) in ("complete", "pruned", "failed")]
    assert len(counted) == BUDGET and {outcome(after[n]) for n in counted} == {"complete"}, {
        n: outcome(t) for n, t in after.items()
    }
    assert len(after) == BUDGET + len(interrupted)
    for t in after.values():  # every counted trial trained its one epoch, recorded once
        if outcome(t) == "complete":
            assert len(keys.epochs_of(t.user_attrs)) == 1, (t.number, t.user_attrs)
