"""``lwnas dashboard``: serve the Streamlit dashboard over a sweep's storage."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from tuners.cli.sweep import Storage
from tuners.store.keys import DEFAULT_STORAGE
from tuners.store.urls import masked

err = Console(stderr=True, soft_wrap=True)
STOP_GRACE_S = 10  # how long the server gets to stop before it is killed


def app_path() -> Path:
    """The dashboard's Streamlit script, ``dashboards/app.py``, located without importing ``dashboards``:
    the command line sits below the dashboard (docs/architecture.md), and Streamlit imports it in its own process."""
    spec = importlib.util.find_spec("dashboards")  # a top-level name: found on sys.path, nothing is imported
    if spec is None or not spec.submodule_search_locations:
        raise typer.BadParameter("the dashboards package is not installed beside lwnas (pip install -e .)")
    return Path(next(iter(spec.submodule_search_locations))).resolve() / "app.py"


def streamlit_command(port: int, host: str) -> list[str]:
    """The ``streamlit run`` command line; the storage URL travels in the environment, not in argv,
    so a password in it never shows in ``ps``."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path()),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]


def dashboard(
    storage: Storage = DEFAULT_STORAGE,
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8501,
    host: Annotated[
        str,
        typer.Option(
            help="Address to bind. The default serves this machine only; 0.0.0.0 exposes the dashboard "
            "(it can read every study in the storage) to the network."
        ),
    ] = "127.0.0.1",
) -> None:
    """Browse sweeps in the browser: Pareto fronts, hypervolume, trials, comparison and export.

    Reads the same storage as `lwnas sweep` and never writes to it. Stop with Ctrl-C.
    """
    try:
        import streamlit  # noqa: F401
    except ImportError:
        err.print("[red]error[/red] the dashboard needs streamlit: pip install streamlit plotly", highlight=False)
        raise typer.Exit(1) from None
    # as `lwnas status` does: a storage that is missing, unreachable or not a sweep's is one line and exit 1,
    # before a server starts that could only show the error in a page nobody may open
    from tuners.store.connection import open_storage

    open_storage(storage, read_only=True).engine.dispose()
    env = {**os.environ, "LWNAS_STORAGE": storage}
    err.print(
        f"dashboard on http://{escape(host)}:{port} over {escape(masked(storage))} (Ctrl-C stops it)", highlight=False
    )
    raise typer.Exit(serve(streamlit_command(port, host), env))


def serve(command: list[str], env: dict[str, str]) -> int:
    """Run the Streamlit server until it exits; SIGTERM or SIGINT to this process stops the server too (by
    default SIGTERM would end only this process and leave the server running, port and all)."""
    stopped_at: list[float] = []  # when a stop was asked for
    children: list[subprocess.Popen] = []

    def stop(_signum: int, _frame: object) -> None:
        stopped_at.append(time.monotonic())
        for child in children:
            if child.poll() is None:
                child.terminate()  # Streamlit shuts down cleanly on SIGTERM

    # the handlers go in first: a signal that arrives while the server starts still reaches it
    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        child = subprocess.Popen(command, env=env)
        children.append(child)
        if stopped_at:
            child.terminate()
        while True:
            try:
                code = child.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if stopped_at and time.monotonic() - stopped_at[0] > STOP_GRACE_S:
                    child.kill()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0 if stopped_at else code  # stopping the server on request is its normal end
