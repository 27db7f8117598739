"""bench/storage_backends.py at small size: concurrent worker processes write one study on SQLite (WAL)
and on a journal file; every trial they report complete is in the study a fresh reader loads, complete,
none left running, and lwnas's reader (bulk SQL or its get_all_trials fallback) sees what Optuna sees; the
read arms put the same synthetic study in both storages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "storage_backends.py"


def run_bench(*args: str) -> dict:
    out = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.mark.slow
def test_concurrent_writers_lose_nothing_and_the_fresh_reader_agrees():
    report = run_bench(
        "--backends",
        "sqlite",
        "journal-file",
        "--workers",
        "3",
        "--seconds",
        "1",
        "--epochs",
        "2",
        "--read-trials",
        "30",
    )
    arms = {arm["backend"]: arm for arm in report["results"] if "read_trials" not in arm}
    reads = {arm["backend"]: arm for arm in report["results"] if "read_trials" in arm}
    assert sorted(arms) == ["journal-file", "sqlite"]
    for name, arm in arms.items():
        assert "skipped" not in arm and "failed" not in arm, arm
        assert arm["errors"] == {} and arm["workers_failed_to_open"] == {}, arm
        reader = arm["fresh_reader"]
        assert arm["completed_trials"] > 0
        # every trial a worker told is stored complete, and nothing else was written (no trial left running)
        assert reader["states"] == {"COMPLETE": arm["completed_trials"]}, (name, reader)
        assert reader["reader_equals_optuna"] is True
        assert reader["trial_reader_path"] == ("bulk SQL" if name == "sqlite" else "get_all_trials")
        calls = arm["latency_ms"]
        trials = arm["completed_trials"]
        # the loop's shape: per trial one ask and tell, 5 suggests, 6 planned, 2 epoch and 3 outcome attributes
        assert {k: calls[k]["n"] for k in ("ask", "suggest", "planned_attr", "epoch_attr", "outcome_attr", "tell")} == {
            "ask": trials,
            "suggest": 5 * trials,
            "planned_attr": 6 * trials,
            "epoch_attr": 2 * trials,
            "outcome_attr": 3 * trials,
            "tell": trials,
        }
        assert calls["all"]["p50"] <= calls["all"]["p99"]
    # the read arms: the same 30 synthetic trials (dashboards.sample) in both, read back whole by both readers
    assert sorted(reads) == ["journal-file", "sqlite"]
    states = {name: arm["fresh_reader"]["states"] for name, arm in reads.items()}
    assert states["sqlite"] == states["journal-file"] and sum(states["sqlite"].values()) == 30
    assert all(arm["fresh_reader"]["reader_equals_optuna"] for arm in reads.values())


def test_bad_arguments_name_the_field_and_help_runs():
    out = subprocess.run([sys.executable, str(BENCH), "--workers", "-1"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--workers must be >= 1 (0: no write arms)" in out.stderr
    out = subprocess.run([sys.executable, str(BENCH), "--workers", "0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "nothing to run" in out.stderr
    assert (
        "journal-redis"
        in subprocess.run(
            [sys.executable, str(BENCH), "--help"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    )


def test_a_backend_whose_client_is_missing_is_skipped_with_the_install_hint():
    # grpc made unimportable in the bench's process, as on a machine without the `cluster` extra
    code = (
        "import runpy, sys; sys.modules['grpc'] = None; "
        f"sys.argv = [{str(BENCH)!r}, '--backends', 'grpc-postgresql', '--workers', '1', '--seconds', '1']; "
        f"runpy.run_path({str(BENCH)!r}, run_name='__main__')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    (arm,) = json.loads(out.stdout)["results"]
    assert arm["skipped"] == "grpc is not installed: pip install 'lwnas[cluster]' (grpcio)"
