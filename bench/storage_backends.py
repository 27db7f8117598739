"""Storage for clusters: many worker processes writing one study, on each of Optuna's storages, in one run.

For each backend and each worker count P, P processes (forked, each opening its own storage: its own
engine and connection pool, Redis client or gRPC channel) write trials into one fresh study for
``--seconds``, each trial shaped like lwnas's driver writes (``tuners/driver/searcher.py``): ``ask``, five
``suggest_*``, six planned-record user attributes, one user attribute per epoch (``--epochs``), three
outcome attributes and a two-objective ``tell``. Every call is timed. Then a fresh process opens the
storage again and loads the study twice: Optuna's ``load_study(...).trials`` and lwnas's
``tuners.store.trial_store.TrialStore.frozen_since()`` (bulk SQL on an RDB storage, Optuna's ``get_all_trials`` on the
others), each from a newly opened storage (for a journal that includes replaying its log).

Backends (``--backends``):

* sqlite: RDB on one SQLite file as lwnas opens it (WAL, 60 s busy timeout): the anchor;
* postgresql: RDB on ``--postgres-url`` (one engine per process: one connection each);
* journal-file: ``JournalStorage(JournalFileBackend(file))`` (symlink lock, one machine or a shared FS);
* journal-redis: ``JournalStorage(JournalRedisBackend(--redis-url))`` (keys under a unique prefix, deleted after);
* grpc-postgresql: ``GrpcStorageProxy`` clients in front of one ``run_grpc_proxy_server`` process serving
  ``get_storage`` (Optuna's cached RDB storage) on ``--postgres-url``; needs grpcio (``pip install
  'lwnas[cluster]'``); without it the arm is reported as skipped with that reason.

PostgreSQL's ``max_connections`` is shared with everything else on the server: before an arm that may hold
P (or the proxy's pool of) connections the script checks that ``--pg-headroom`` connections stay free and
skips the arm, saying so, where they would not; during the arm it samples the connections to the database.

With ``--read-trials N`` it also writes the same N synthetic trials (``dashboards.sample``, a sweep's record)
into each backend (SQL storages in batches; journals through Optuna's ``copy_study`` from a SQLite source)
and times the fresh reader on them (through the proxy, the second read finds the proxy's cache warm).

Prints JSON: per arm completed trials/s, per-call latency p50/p99 (all calls and per kind), errors by
type, trials left unfinished, peak connections, and the fresh reader's timings, with the machine's load.

    python bench/storage_backends.py --workers 1 4 16 64 --seconds 20
    python bench/storage_backends.py --backends sqlite journal-redis --workers 4 --seconds 5
    python bench/storage_backends.py --workers 0 --read-trials 5000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import tempfile
import threading
import time
import traceback
import uuid
import warnings
from collections import Counter, defaultdict
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

go_at = mp.Value("d", 0.0)  # wall time the workers start at (set by the parent; shared through fork)
# GrpcStorageProxy and JournalRedisBackend are marked experimental; the warning would repeat once per worker
warnings.filterwarnings("ignore", message=".*is experimental")

BACKENDS = ("sqlite", "postgresql", "journal-file", "journal-redis", "grpc-postgresql")
KINDS = ("ask", "suggest", "planned_attr", "epoch_attr", "outcome_attr", "tell")
PLANNED = {
    "config": {
        "d_model": 64,
        "layers": 2,
        "heads": 4,
        "groups": 2,
        "g_mha": True,
        "g_ffn": True,
        "pooling": "mean",
        "layer_sharing": "(0x2)",
    },
    "training": {"lr": 1e-3, "batch_size": 64, "epochs": 5, "seed": 0, "threads": 1},
    "task": "digits",
    "task_options": {},
    "seed": 0,
    "costs": {"params": 52106, "madds": 4218880, "memory": None},
}  # the planned record's six keys


# ---- backends: how a process opens each one (called in the process that uses it, never before a fork) ------


class Backend:
    def __init__(self, name: str, args: argparse.Namespace, workdir: Path):
        self.name, self.args, self.tag = name, args, uuid.uuid4().hex[:10]
        self.file = workdir / f"{name}-{self.tag}.{'db' if name == 'sqlite' else 'log'}"
        self.prefix = f"lwnas-bench-{self.tag}"  # Redis keys of this arm only
        self.port = args.grpc_port

    def open(self):
        import optuna
        from optuna.storages import journal

        from tuners.store.connection import open_storage

        if self.name == "sqlite":
            return open_storage(f"sqlite:///{self.file}", create=True)
        if self.name == "postgresql":
            return open_storage(self.args.postgres_url, create=True)
        if self.name == "journal-file":
            return optuna.storages.JournalStorage(journal.JournalFileBackend(str(self.file)))
        if self.name == "journal-redis":
            return optuna.storages.JournalStorage(journal.JournalRedisBackend(self.args.redis_url, prefix=self.prefix))
        proxy = optuna.storages.GrpcStorageProxy(host="127.0.0.1", port=self.port)
        proxy.wait_server_ready(timeout=60)
        return proxy

    def missing(self) -> str | None:
        """Why this backend cannot run here (a missing client library), else None."""
        needs = {
            "journal-redis": ("redis", "pip install redis"),
            "grpc-postgresql": ("grpc", "pip install 'lwnas[cluster]' (grpcio)"),
            "postgresql": ("psycopg", "pip install 'lwnas[postgres]'"),
        }.get(self.name)
        if needs is None:
            return None
        try:
            __import__(needs[0])
        except ImportError:
            return f"{needs[0]} is not installed: {needs[1]}"
        return None

    def cleanup(self) -> None:
        for path in (self.file, Path(f"{self.file}-wal"), Path(f"{self.file}-shm")):
            path.unlink(missing_ok=True)
        if self.name == "journal-redis":
            import redis

            client = redis.Redis.from_url(self.args.redis_url)
            keys = list(client.scan_iter(f"{self.prefix}:*"))
            if keys:
                client.delete(*keys)


def serve_grpc(postgres_url: str, port: int) -> None:
    """The proxy process: Optuna's cached RDB storage on PostgreSQL behind ``run_grpc_proxy_server``."""
    import optuna

    from tuners.store.connection import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.storages.run_grpc_proxy_server(
        optuna.storages.get_storage(open_storage(postgres_url, create=True)), host="127.0.0.1", port=port
    )


# ---- the worker loop ---------------------------------------------------------------------------------------


def one_trial(study, epochs: int, timings: dict) -> None:
    """One trial as lwnas's driver writes it, each storage call timed under its kind."""

    def timed(kind, fn, *a, **kw):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        timings[kind].append(time.perf_counter() - t0)
        return out

    trial = timed("ask", study.ask)
    try:
        timed("suggest", trial.suggest_float, "lr", 1e-4, 1e-2, log=True)
        timed("suggest", trial.suggest_categorical, "d_model", [32, 64, 128])
        timed("suggest", trial.suggest_int, "layers", 1, 4)
        timed("suggest", trial.suggest_categorical, "pooling", ["mean", "attention", "sketch"])
        timed("suggest", trial.suggest_categorical, "g_mha", [True, False])
        for key, value in PLANNED.items():
            timed("planned_attr", trial.set_user_attr, key, value)
        for epoch in range(1, epochs + 1):
            timed(
                "epoch_attr",
                trial.set_user_attr,
                f"epoch:{epoch:04d}",
                {"epoch": epoch, "val_accuracy": 0.5 + 0.01 * epoch, "train_loss": 1.0 / epoch, "wall_time": 0.1},
            )
        for key, value in (("wall_time", 0.5), ("host", "bench"), ("outcome", "complete")):
            timed("outcome_attr", trial.set_user_attr, key, value)
        timed("tell", study.tell, trial, [0.55, 52106.0])
    except Exception:
        try:
            study.tell(trial, state=__import__("optuna").trial.TrialState.FAIL)
        except Exception:  # noqa: BLE001 - the storage is what failed; the error is counted by the caller
            pass
        raise


def worker(backend: Backend, study_name: str, seed: int, ready, go, out) -> None:
    """Open the storage, wait for every worker, write trials until the shared deadline, report."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    timings, errors, done = defaultdict(list), Counter(), 0
    t0 = time.perf_counter()
    try:
        study = optuna.load_study(
            study_name=study_name, storage=backend.open(), sampler=optuna.samplers.RandomSampler(seed=seed)
        )
    except Exception as exc:  # noqa: BLE001 - counted: too many connections shows up here
        out.put({"open_error": error_line(exc), "errors": {}, "done": 0, "timings": {}})
        ready.release()
        return
    open_s = time.perf_counter() - t0
    ready.release()
    go.wait()
    cpu0 = time.process_time()  # this process's CPU: the client side's cost, less sensitive to load than wall time
    deadline = go_at.value + backend.args.seconds
    while time.time() < deadline:  # a trial started before the deadline is finished (no trial left running)
        try:
            one_trial(study, backend.args.epochs, timings)
            done += 1
        except Exception as exc:  # noqa: BLE001 - locks, connection limits: count them and go on
            errors[error_line(exc)] += 1
            time.sleep(0.1)
    out.put(
        {
            "done": done,
            "errors": dict(errors),
            "open_s": open_s,
            "end": time.time(),
            "timings": dict(timings),
            "cpu_s": time.process_time() - cpu0,
        }
    )


def error_line(exc: BaseException) -> str:
    from tuners.store.urls import first_line

    return f"{type(exc).__name__}: {first_line(exc)[:160]}"


# ---- the fresh reader --------------------------------------------------------------------------------------


def read_back(backend: Backend, study_name: str, out) -> None:
    """A new process loading the study: Optuna's view, then lwnas's reader, each from a fresh storage."""
    import optuna
    from optuna.trial import TrialState

    from tuners.store.trial_store import TrialStore

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    t0 = time.perf_counter()
    trials = optuna.load_study(study_name=study_name, storage=backend.open()).trials
    optuna_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    storage = backend.open()
    reader = TrialStore.of(storage, study_name)
    bulk = reader.frozen_since()
    reader_s = time.perf_counter() - t0
    states = Counter(tr.state.name for tr in trials)
    out.put(
        {
            "trials": len(trials),
            "states": dict(states),
            "optuna_load_trials_s": round(optuna_s, 3),
            "trial_reader_s": round(reader_s, 3),
            "trial_reader_path": "bulk SQL" if reader.bulk else "get_all_trials",
            "reader_equals_optuna": [t.number for t in bulk] == [t.number for t in trials]
            and all(a.state == b.state and a.user_attrs == b.user_attrs for a, b in zip(bulk, trials)),
            "complete": states.get(TrialState.COMPLETE.name, 0),
        }
    )
    if not backend.args.keep:
        optuna.delete_study(study_name=study_name, storage=storage)


# ---- PostgreSQL connections: the headroom check and a sampler during the arm ------------------------------


def pg_connections(url: str) -> dict:
    """max_connections, connections on the whole server and to this database, now."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), connect_timeout=10) as conn:
        row = conn.execute(
            "select current_setting('max_connections')::int, count(*), "
            "count(*) filter (where datname = current_database()) from pg_stat_activity"
        ).fetchone()
    return {"max_connections": row[0], "server": row[1], "database": row[2]}


class ConnectionSampler(threading.Thread):
    """Peak connections to the database while the workers run (started after they are forked)."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.peak, self.stop = url, {"server": 0, "database": 0}, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                now = pg_connections(self.url)
                self.peak = {k: max(self.peak[k], now[k]) for k in self.peak}
            except Exception:  # noqa: BLE001 - a full server refuses the sampler too; the workers' errors say so
                pass
            self.stop.wait(0.5)


def uses_postgres(name: str) -> bool:
    return name in ("postgresql", "grpc-postgresql")


# ---- one arm -----------------------------------------------------------------------------------------------


def run_arm(backend: Backend, workers: int) -> dict:
    ctx = mp.get_context("fork")  # fast start for 64+ workers; nothing is opened in this process before a fork
    arm = {"backend": backend.name, "workers": workers, "epochs": backend.args.epochs, "seconds": backend.args.seconds}
    if why := backend.missing():
        return {**arm, "skipped": why}
    if uses_postgres(backend.name):
        before = pg_connections(backend.args.postgres_url)
        # measured here: two connections per worker process with direct RDB; the proxy's pool holds at most 15
        needed = 2 * workers if backend.name == "postgresql" else 15
        free = before["max_connections"] - before["server"]
        arm["pg_before"] = before
        if needed + backend.args.pg_headroom > free:
            return {
                **arm,
                "skipped": f"PostgreSQL has {free} of {before['max_connections']} connections free; this arm "
                f"needs up to {needed} and --pg-headroom {backend.args.pg_headroom} stay free for others",
            }
    server = None
    if backend.name == "grpc-postgresql":
        server = ctx.Process(target=serve_grpc, args=(backend.args.postgres_url, backend.port), daemon=True)
        server.start()
    try:
        return {**arm, **drive(ctx, backend, workers)}
    finally:
        if server is not None:
            server.terminate()
            server.join(10)
        backend.cleanup()


def drive(ctx, backend: Backend, workers: int) -> dict:
    study_name = f"bench-storage-{backend.name}-{workers}-{backend.tag}"
    setup = ctx.Process(target=create_study, args=(backend, study_name))  # in a child: no storage opened here
    setup.start()
    setup.join()
    if setup.exitcode != 0:
        raise RuntimeError(f"creating the study on {backend.name} failed (exit {setup.exitcode})")
    ready, go, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    load_start = os.getloadavg()[0]
    procs = [ctx.Process(target=worker, args=(backend, study_name, seed, ready, go, out)) for seed in range(workers)]
    t_open = time.perf_counter()
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()
    open_all_s = time.perf_counter() - t_open
    sampler = ConnectionSampler(backend.args.postgres_url) if uses_postgres(backend.name) else None
    if sampler:
        sampler.start()
    go_at.value = time.time() + 0.2
    go.set()
    reports = [out.get() for _ in procs]
    for p in procs:
        p.join()
    if sampler:
        sampler.stop.set()
        sampler.join()
    result = summarise(reports, go_at.value)
    result.update(
        all_workers_open_s=round(open_all_s, 2), loadavg_1min=[round(load_start, 2), round(os.getloadavg()[0], 2)]
    )
    if sampler:
        result["pg_peak_connections"] = sampler.peak
    reader = ctx.Process(target=read_back, args=(backend, study_name, out))
    reader.start()
    result["fresh_reader"] = out.get(timeout=backend.args.reader_timeout)
    reader.join()
    return result


# ---- reading one large study: the same synthetic trials in every backend -----------------------------------


def read_arm(backend: Backend, trials: int, source_url: str) -> dict:
    """``trials`` synthetic trials (``dashboards.sample``) written to ``backend``, then the fresh reader."""
    arm = {"backend": backend.name, "read_trials": trials}
    if why := backend.missing():
        return {**arm, "skipped": why}
    ctx = mp.get_context("fork")
    name, out, server = f"bench-storage-read-{backend.tag}", ctx.Queue(), None
    if backend.name == "grpc-postgresql":
        server = ctx.Process(target=serve_grpc, args=(backend.args.postgres_url, backend.port), daemon=True)
        server.start()
    try:
        filler = ctx.Process(target=fill, args=(backend, name, trials, source_url, out))
        filler.start()
        arm["write_s"] = out.get(timeout=backend.args.reader_timeout)
        filler.join()
        reader = ctx.Process(target=read_back, args=(backend, name, out))
        reader.start()
        arm["fresh_reader"] = out.get(timeout=backend.args.reader_timeout)
        reader.join()
        arm["loadavg_1min"] = round(os.getloadavg()[0], 2)
        return arm
    finally:
        if server is not None:
            server.terminate()
            server.join(10)
        backend.cleanup()


def fill(backend: Backend, name: str, trials: int, source_url: str, out) -> None:
    """SQL storages get the trials in batches (``TrialStore.insert``); journals a copy of the SQLite source
    study through Optuna's ``copy_study`` (``add_trials``: one log entry per trial); the proxy's study is
    written on PostgreSQL directly and read through the proxy."""
    import optuna

    from dashboards.sample import seed_study
    from tuners.store.connection import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    t0 = time.perf_counter()
    if backend.name in ("sqlite", "postgresql"):
        seed_study(backend.open(), name, trials)
    elif backend.name == "grpc-postgresql":
        seed_study(open_storage(backend.args.postgres_url, create=True), name, trials)
    else:
        optuna.copy_study(
            from_study_name="source",
            from_storage=open_storage(source_url),
            to_storage=backend.open(),
            to_study_name=name,
        )
    out.put(round(time.perf_counter() - t0, 2))


def seed_source(url: str, trials: int) -> None:
    from dashboards.sample import seed_study

    seed_study(url, "source", trials)


def create_study(backend: Backend, study_name: str) -> None:
    import optuna

    optuna.create_study(study_name=study_name, storage=backend.open(), directions=["maximize", "minimize"])


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def summarise(reports: list[dict], start: float) -> dict:
    """Trials/s over the span from the start to the last worker's end, latencies in ms, errors by type."""
    opened = [r for r in reports if "open_error" not in r]
    done = sum(r["done"] for r in opened)
    span = max((r["end"] for r in opened), default=start) - start
    calls = defaultdict(list)
    for r in opened:
        for kind, values in r["timings"].items():
            calls[kind] += values
    every = [v for values in calls.values() for v in values]
    errors = Counter()
    for r in opened:
        errors.update(r["errors"])
    return {
        "completed_trials": done,
        "span_s": round(span, 2),
        "completed_trials_per_s": round(done / span, 2) if span > 0 else None,
        "worker_cpu_ms_per_trial": round(1000 * sum(r["cpu_s"] for r in opened) / done, 1) if done else None,
        "calls": len(every),
        "latency_ms": {
            "all": {"p50": pct(every, 0.5), "p99": pct(every, 0.99)},
            **{k: {"p50": pct(calls[k], 0.5), "p99": pct(calls[k], 0.99), "n": len(calls[k])} for k in KINDS},
        },
        "errors": dict(errors.most_common()),
        "workers_failed_to_open": Counter(r["open_error"] for r in reports if "open_error" in r),
        "worker_open_s": {
            "median": round(statistics.median([r["open_s"] for r in opened]), 3),
            "max": round(max(r["open_s"] for r in opened), 3),
        }
        if opened
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument(
        "--workers",
        nargs="+",
        type=int,
        default=[1, 4, 16, 64],
        help="concurrent worker processes (P); 1 is lwnas's own case: the sweep's driver is the one writer",
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="how long every worker writes trials")
    parser.add_argument("--epochs", type=int, default=5, help="per-epoch user attributes per trial (E)")
    parser.add_argument(
        "--postgres-url", default=os.environ.get("LWNAS_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--grpc-port", type=int, default=0, help="proxy port (0: a free one)")
    parser.add_argument(
        "--pg-headroom", type=int, default=20, help="PostgreSQL connections to leave free for other users of the server"
    )
    parser.add_argument("--reader-timeout", type=float, default=600.0, help="seconds the fresh reader may take")
    parser.add_argument(
        "--read-trials",
        type=int,
        default=0,
        help="also write this many synthetic trials (dashboards.sample) into each backend and time a "
        "fresh reader on them (0: skip)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the studies (default: delete them after reading)")
    args = parser.parse_args()
    if any(p < 0 for p in args.workers) or args.seconds <= 0 or args.epochs < 0 or args.read_trials < 0:
        parser.error(
            f"--workers must be >= 1 (0: no write arms), --seconds > 0, --epochs >= 0 and --read-trials >= 0, "
            f"but got {args.workers=}, {args.seconds=}, {args.epochs=}, {args.read_trials=}"
        )
    if not any(args.workers) and not args.read_trials:
        parser.error("nothing to run: --workers are all 0 and --read-trials is 0")
    monitor = LoadMonitor(threads=1)
    workdir = Path(tempfile.mkdtemp(prefix="lwnas-storage-bench-"))
    results = []
    try:
        for workers in [p for p in args.workers if p > 0]:
            for name in args.backends:
                backend = Backend(name, args, workdir)
                if name == "grpc-postgresql" and not args.grpc_port:
                    backend.port = free_port()
                log(f"{name}, {workers} workers ...")
                try:
                    results.append(run_arm(backend, workers))
                except Exception as exc:  # noqa: BLE001 - one broken arm is reported; the others still run
                    results.append(
                        {
                            "backend": name,
                            "workers": workers,
                            "failed": traceback.format_exception_only(exc)[-1].strip(),
                        }
                    )
                log(json.dumps(results[-1])[:400])
        if args.read_trials:
            results += read_arms(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps({"results": results, "machine": {**monitor.report(), "cores": os.cpu_count()}}, indent=2))


def read_arms(args: argparse.Namespace, workdir: Path) -> list[dict]:
    source = f"sqlite:///{workdir / 'source.db'}"
    seeder = mp.get_context("fork").Process(target=seed_source, args=(source, args.read_trials))
    seeder.start()
    seeder.join()
    results = []
    for name in args.backends:
        backend = Backend(name, args, workdir)
        if name == "grpc-postgresql" and not args.grpc_port:
            backend.port = free_port()
        log(f"{name}, reading {args.read_trials} trials ...")
        try:
            results.append(read_arm(backend, args.read_trials, source))
        except Exception as exc:  # noqa: BLE001 - one broken arm is reported; the others still run
            results.append(
                {
                    "backend": name,
                    "read_trials": args.read_trials,
                    "failed": traceback.format_exception_only(exc)[-1].strip(),
                }
            )
        log(json.dumps(results[-1])[:400])
    return results


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
