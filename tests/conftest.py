"""Shared fixtures."""

import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """Run a module's tiny models on one intra-op thread: on a busy 2-core machine torch's thread
    pool makes a 32-wide forward pass ~40x slower than running it single-threaded."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
