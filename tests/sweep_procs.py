"""Moved to tests/helpers/procs.py; this name stays for branches written against it (import from helpers.procs)."""

from helpers.procs import *  # noqa: F403
from helpers.procs import ROOT, SWEEP_TIMEOUT  # noqa: F401  (names `import *` would also give; listed for readers)
