"""Ray Tune's messages that contradict lwnas, kept from the user during a sweep.

A sweep lives in its Optuna study, not in Ray's experiment folder: after Ctrl-C, Ray's advice to
``Tuner.restore(...)`` would restart nothing lwnas knows about (``lwnas resume NAME`` is the way), and
its warning that trials which never started have no metrics files is about files lwnas never reads.
Filters on Ray's own loggers (the standard ``logging`` API) drop those records and reword the stop
notice; every other Ray message passes unchanged.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

STOP_NOTICE = "Ctrl-C: stopping the sweep; the trials that finished are kept (Ctrl-C again stops at once)"


class _RayInterruptFilter(logging.Filter):
    """Drops Ray's restore advice and metrics-file warnings; rewords its stop notice."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Tuner.restore" in message or "Failed to fetch metrics" in message:
            return False
        if message.startswith("Stop signal received"):
            record.msg, record.args = STOP_NOTICE, ()
        return True


# the loggers that print them (ray.tune.tune: stop notice and restore advice; the analysis: metrics files)
_LOGGERS = ("ray.tune.tune", "ray.tune.analysis.experiment_analysis")


@contextlib.contextmanager
def quiet_ray_interrupts() -> Iterator[None]:
    """While a sweep runs, Ray's interrupt messages are lwnas's own or none."""
    rule = _RayInterruptFilter()
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    for logger in loggers:
        logger.addFilter(rule)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(rule)


# Ray starting a cluster of its own (a local sweep) turns token authentication on when RAY_AUTH_MODE is unset and
# says so, with how to opt out, on every sweep; lwnas keeps Ray's default. Ray's warning that authentication is
# *disabled*, and every other record of that logger, still pass.
_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
TOKEN_BANNER = "Token authentication is enabled for this Ray cluster"


class _TokenBannerFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(TOKEN_BANNER)


def drop_token_banner() -> None:
    """From now on, Ray's notice that it enabled token authentication by default is dropped (once per process)."""
    logger = logging.getLogger(_TOKEN_LOGGER)
    if not any(isinstance(f, _TokenBannerFilter) for f in logger.filters):
        logger.addFilter(_TokenBannerFilter())
