"""Shared fixtures; the test plugins' registration (tests/helpers/plugins.py)."""

import json
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import optuna
import pytest
import torch
from helpers import plugins
from helpers.procs import PG_URL, postgres_or_skip
from helpers.studies import Swept, shared_study

_registry: Path | None = None
LONG_MARKERS = ("slow", "browser", "cluster")
TESTS = Path(__file__).resolve().parent
DURATIONS = TESTS / "durations.json"
UNMEASURED_LONG_S, UNMEASURED_S = 60.0, 5.0  # a module not in durations.json yet: marked long, or not


# One intra-op thread for every process the suite starts (unless the caller's environment says otherwise): the suite
# runs one pytest-xdist worker per core, and each of its processes (this one, `lwnas` commands, `lwnas train`) would
# otherwise start a torch thread pool per core. Those pools busy-wait for each other: beside a busy machine the same
# 3-epoch scene-captions training took 73 s of wall and 47 s of CPU on 2 threads, 11 s and 7 s on one (2026-12-01).
# Ray's trial workers already run on one thread each (Ray sets OMP_NUM_THREADS to a trial's CPUs).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config):
    """One thread per process (above); register tests/plugins as entry points of `lwnas.tasks` unless
    `pip install -e tests/plugins` did."""
    for variable in THREAD_VARIABLES:
        os.environ.setdefault(variable, "1")
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    global _registry
    if not plugins.installed():
        _registry = Path(tempfile.mkdtemp(prefix="lwnas-test-plugins-"))  # under /tmp: every netns host sees it
        plugins.register(_registry)


def pytest_unconfigure(config):
    if _registry is not None:
        shutil.rmtree(_registry, ignore_errors=True)


@pytest.fixture(scope="module")
def one_thread():
    """Run a module's tiny models on one intra-op thread: on a busy 2-core machine torch's thread
    pool makes a 32-wide forward pass ~40x slower than running it single-threaded."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def away_from_utc(monkeypatch):
    """Optuna stores naive UTC and shows naive local time: a local zone off UTC makes a wrong conversion show."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def storage_url(request, tmp_path):
    """Every storage backend lwnas supports: a fresh SQLite file, and the PostgreSQL test server (skipped with
    the reason when no server answers at LWNAS_TEST_POSTGRES)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'lwnas.db'}"
    postgres_or_skip()
    return PG_URL


@pytest.fixture
def study_name(storage_url):
    """A study name of its own (PostgreSQL is shared between tests and runs), deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    yield name
    try:
        optuna.delete_study(study_name=name, storage=storage_url)
    except KeyError:
        pass


@pytest.fixture(scope="session")
def swept_study(tmp_path_factory) -> Swept:
    """The test run's one real `lwnas sweep` for the tests that only read a swept study (tests/helpers/studies.py
    says what it holds), shared by all pytest-xdist workers. Read it, export from it, confirm it; never add
    trials to it."""
    base = tmp_path_factory.getbasetemp()  # a worker's own folder under the run's, which all workers share
    return shared_study((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "swept-study")


def pytest_collection_modifyitems(items):
    """Markers that follow from what a test uses, so a test cannot forget them: `postgres` for a test
    parametrized with a `postgresql` backend or given a PostgreSQL database fixture, `slow` for one that reads
    the session's swept study (its first user pays for the sweep)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "postgresql" in params.values() or "pg_database" in item.fixturenames:
            item.add_marker(pytest.mark.postgres)
        if "swept_study" in item.fixturenames:
            item.add_marker(pytest.mark.slow)
    # the longest modules first (tests/durations.json, bench/suite_durations.py; a module missing there by its
    # markers), each in its own order: pytest-xdist hands whole modules out in this order (--dist loadscope), so
    # the run does not end on one worker busy with a long module begun last while the others idle
    long = {item.module for item in items if any(item.get_closest_marker(m) for m in LONG_MARKERS)}
    measured = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}

    def seconds(item) -> float:
        module = Path(item.module.__file__).relative_to(TESTS.parent).as_posix()
        return measured.get(module, UNMEASURED_LONG_S if item.module in long else UNMEASURED_S)

    items.sort(key=lambda item: -seconds(item))
