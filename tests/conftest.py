"""Shared fixtures; the test plugins' registration (tests/helpers/plugins.py)."""

import shutil
import tempfile
from pathlib import Path

import pytest
import torch
from helpers import plugins

_registry: Path | None = None


def pytest_configure(config):
    """Register tests/plugins as entry points of `lwnas.tasks` unless `pip install -e tests/plugins` did."""
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
