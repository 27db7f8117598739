"""What a sweep prints: one line per finished trial, then the Pareto front and what to do next.

A failed trial is one line on the terminal (its reason and where the full log is); Ray Tune's own
records, with the trial's traceback, go to the sweep's log file (``ray_logs_to``), never the terminal.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import optuna
from ray.tune import Callback
from rich.console import Console
from rich.markup import escape

from searchspace.study import Study
from tuners.driver.mo_asha import describe_stop
from tuners.driver.pack_trainable import ENDED, MEMBER, MEMBERS, PRUNED, RECORDS
from tuners.driver.trainable import NUMBER
from tuners.fronts.front_table import print_front
from tuners.store.urls import storage_arg

RAY_LOGGERS = ("ray.tune", "ray.air", "ray.train")
LOG = logging.getLogger("lwnas.sweep")


@contextlib.contextmanager
def ray_logs_to(path: Path) -> Iterator[Path]:
    """Send Ray Tune's log records (a failed trial's traceback among them) and lwnas's own failure
    records to ``path`` instead of the terminal, for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved = []
    for logger in (*map(logging.getLogger, RAY_LOGGERS), LOG):
        saved.append((logger, logger.propagate, logger.level))
        logger.addHandler(handler)
        logger.propagate = False  # the "ray" logger's handler prints to the terminal
    LOG.setLevel(logging.INFO)
    try:
        yield path
    finally:
        for logger, propagate, level in saved:
            logger.removeHandler(handler)
            logger.propagate, logger.level = propagate, level
        handler.close()


class SweepProgress(Callback):
    """Ray Tune callback: a line per finished trial with its metric, cost and time, and one per trial that Ray
    runs again after its worker or node died (``on_retry`` records it: ``StudySearcher.record_retry``)."""

    def __init__(
        self,
        ot_study: optuna.Study,
        study: Study,
        total: int,
        out: Console,
        quiet: bool = False,
        log_path: Path | None = None,
        on_retry: Callable[[str, dict[str, Any]], None] | None = None,
        prune_reasons: dict[str, dict[str, Any]] | None = None,
    ):
        self.ot_study, self.study, self.total, self.out, self.quiet = ot_study, study, total, out, quiet
        self.log_path, self.on_retry = log_path, on_retry
        self.prune_reasons = prune_reasons if prune_reasons is not None else {}  # the scheduler's, by Ray trial id
        # the live line (running trials, their epochs, elapsed, an estimate): only on a terminal, never in logs
        self.live = LiveLine(out, study.budget.epochs, total) if out.is_terminal and not quiet else None
        self.done = 0
        self.start = time.time()
        self.metric = next((o.metric for o in study.objectives if not o.is_cost), None)
        self._reports: dict[str, int] = {}  # results of each trial's current attempt (Tune keeps the last one's)
        self._ended: dict[str, set[int]] = {}  # a pack's members that sent their last report, by Ray trial id

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("ot_study", "out", "study", "on_retry", "live")}

    def _line(self, trial: Any, what: str) -> None:
        self._print_line(trial.trial_id, trial.config.get(NUMBER, "?"), trial.last_result or {}, what)

    def _print_line(self, live_key: str, number: Any, r: dict[str, Any], what: str) -> None:
        self.done += 1
        if self.live is not None:
            self.live.finished(live_key)
        if self.quiet:
            return
        parts = [f"[{self.done}/{self.total}] trial {number} {what}"]
        if self.metric and f"val_{self.metric}" in r:
            parts.append(f"{self.metric} {r[f'val_{self.metric}']:.4f} after {r.get('epoch')} epochs")
        if "params" in r:
            parts.append(f"params {r['params']:,}")
        parts.append(f"{time.time() - self.start:.0f}s elapsed")
        self.out.print(escape(", ".join(parts)), highlight=False)

    def _failed(self, trial: Any, reason: str, traceback: str | None = None) -> None:
        """One line for the terminal; the reason and any traceback go to the log file too."""
        number = trial.config.get(NUMBER, "?")
        LOG.error("trial %s failed: %s%s", number, reason, f"\n{traceback}" if traceback else "")
        where = f"; full log: {self.log_path}" if self.log_path else ""
        self._line(trial, f"failed ({reason}{where})")

    # ---- packs (tuner.pack): a line per member as it ends, the Ray trial itself prints none ----------------
    def _members(self, trial: Any) -> list[int]:
        return [r["number"] for r in trial.config.get(RECORDS, ())]

    def _member_ended(self, trial: Any, result: dict[str, Any]) -> None:
        number = result[MEMBER]
        self._ended.setdefault(trial.trial_id, set()).add(number)
        key = f"{trial.trial_id}#{number}"
        if result[ENDED] == "failed":
            LOG.error("trial %s failed: %s", number, result.get("lwnas_failed"))
            where = f"; full log: {self.log_path}" if self.log_path else ""
            self._print_line(key, number, result, f"failed ({result.get('lwnas_failed')}{where})")
        elif result[ENDED] == "pruned":
            self._print_line(key, number, result, f"stopped early (pruned: {describe_stop(result[PRUNED])})")
        else:
            self._print_line(key, number, result, "complete")

    def _pack_ended(self, trial: Any, what: str) -> None:
        """Lines for the members of a pack that ended without their own last report."""
        ended = self._ended.pop(trial.trial_id, set())
        for number in self._members(trial):
            if number not in ended:
                self._print_line(f"{trial.trial_id}#{number}", number, {}, what)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        r = trial.last_result or {}
        if RECORDS in trial.config:
            self._pack_ended(trial, "stopped early")
        elif "lwnas_failed" in r:
            self._failed(trial, r["lwnas_failed"])
        elif r.get("epoch", 0) < self.study.budget.epochs:
            reason = self.prune_reasons.get(trial.trial_id)
            self._line(trial, f"stopped early (pruned: {describe_stop(reason)})" if reason else "stopped early")
        else:
            self._line(trial, "complete")

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._reports[trial.trial_id] = 0  # a first start, or a retry's
        if self.live is not None and RECORDS in trial.config:
            ended = self._ended.get(trial.trial_id, set())
            for number in self._members(trial):
                if number not in ended:
                    self.live.started(f"{trial.trial_id}#{number}", number)
        elif self.live is not None:
            self.live.started(trial.trial_id, trial.config.get(NUMBER, "?"))

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        self._reports[trial.trial_id] = self._reports.get(trial.trial_id, 0) + 1
        if MEMBERS in result:  # a round of a pack's members
            for member in result[MEMBERS]:
                self._member_result(trial, member)
        elif self.live is not None and isinstance(result.get("epoch"), int):
            self.live.epoch(trial.trial_id, result["epoch"])

    def _member_result(self, trial: Any, result: dict[str, Any]) -> None:
        number = result.get(MEMBER)
        if number in self._ended.get(trial.trial_id, set()):
            return  # a retried pack repeating a member that already ended
        if self.live is not None and isinstance(result.get("epoch"), int):
            self.live.epoch(f"{trial.trial_id}#{number}", result["epoch"])
        if ENDED in result:
            self._member_ended(trial, result)

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        if self.live is not None:
            self.live.refresh()

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """Tune runs a failed attempt again (its worker or node died, or it raised; ``tuner.max_failures``):
        one line, and the attempt goes to the trial's record."""
        reported = self._reports.pop(trial.trial_id, 0)
        r = (trial.last_result or {}) if reported else {}  # Tune's last result may be an earlier attempt's
        lost = {
            "failure": trial.num_failures,
            "error": r.get("lwnas_error") or _last_failure(trial),
            "epochs": r.get("epoch", 0),
            "host": r.get("host"),
            "node": r.get("node"),
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        number = trial.config.get(NUMBER, "?")
        where = f" on {lost['host']}" if lost["host"] else ""
        LOG.warning("trial %s failed%s and runs again: %s", number, where, lost["error"])
        if not self.quiet:
            self.out.print(
                escape(
                    f"trial {number} failed{where} after {lost['epochs']} epochs "
                    f"({lost['error'] or 'no reason given'}); Ray runs it again "
                    f"(failure {lost['failure']}, tuner.max_failures {self.study.tuner.max_failures})"
                ),
                highlight=False,
            )
        if self.on_retry is not None:
            self.on_retry(trial.trial_id, lost)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        r = trial.last_result or {}
        if RECORDS in trial.config:
            reason = r.get("lwnas_error", "worker error (the worker died before reporting)")
            LOG.error("pack %s failed: %s\n%s", self._members(trial), reason, r.get("lwnas_traceback") or "")
            where = f"; full log: {self.log_path}" if self.log_path else ""
            self._pack_ended(trial, f"failed ({reason}{where})")
            return
        self._failed(
            trial, r.get("lwnas_error", "worker error (the worker died before reporting)"), r.get("lwnas_traceback")
        )

    def close(self) -> None:
        """Take the live line off the terminal (the sweep ended, or stopped)."""
        if self.live is not None:
            self.live.stop()

    def finish(self, interrupted: bool, storage: str) -> None:
        self.close()
        # the front is the sweep's result: on stdout, as `lwnas status` prints it (progress and advice: stderr)
        on_front = print_front(self.ot_study, self.study, Console(soft_wrap=True))
        name = self.ot_study.study_name
        url = storage_arg(storage)  # shell-quoted; never the password
        if url != shlex.quote(storage):
            self.out.print("(set LWNAS_STORAGE to the storage URL; the commands below then need no --storage)")
        quoted = shlex.quote(name)
        if interrupted:
            self.out.print(
                f"[yellow]stopped before the budget was spent[/yellow]; continue with: "
                f"{escape(f'lwnas resume {quoted} --storage {url}')}"
            )
        export = f"export the front: lwnas export {quoted} --trials pareto --storage {url} -o exported/\n"
        export = export if on_front else ""  # an empty front has nothing to export
        if export and self.study.search.strategy != "full":  # a front found cheaply is confirmed before export
            epochs = 3 * self.study.budget.epochs
            export = f"confirm the front first: lwnas confirm {quoted} --epochs {epochs} --storage {url}\n{export}"
        self.out.print(
            escape(
                f"status: lwnas status {quoted} --storage {url}\n"
                f"browse the fronts: lwnas dashboard --storage {url}\n"
                f"{export}"
                f"open in Optuna: optuna.load_study(study_name={name!r}, storage=<the storage URL>)"
            ),
            highlight=False,
        )


class LiveLine:
    """One transient line under the sweep's output on a terminal: the running trials with their epoch and time,
    how many are done, the time elapsed and an estimate of the time left.

    The estimate assumes every remaining trial trains its full budget of epochs at the rate epochs were
    trained so far (trials the scheduler stops early make it an upper bound).
    """

    def __init__(self, out: Console, epochs: int, total: int):
        from rich.live import Live

        self.epochs, self.total = epochs, total
        self.start = time.monotonic()
        self.running: dict[str, tuple[Any, int, float]] = {}  # Ray trial id -> (number, epoch, started)
        self.done = 0
        self.epochs_done = 0  # epochs trained by finished trials, and by running ones below
        # lwnas's own lines go through ``out`` (rich prints them above the live line); sys.stdout and stderr
        # are left alone: the driver redirects stdout itself while Ray runs
        self._live = Live(
            "", console=out, transient=True, auto_refresh=False, redirect_stdout=False, redirect_stderr=False
        )
        self._shown = 0.0

    def started(self, trial_id: str, number: Any) -> None:
        self.running[trial_id] = (number, 0, time.monotonic())
        self.refresh(force=True)

    def epoch(self, trial_id: str, epoch: int) -> None:
        if trial_id in self.running:
            number, _, started = self.running[trial_id]
            self.running[trial_id] = (number, epoch, started)
        self.refresh(force=True)

    def finished(self, trial_id: str) -> None:
        _, epoch, _ = self.running.pop(trial_id, (None, 0, 0.0))
        self.done += 1
        self.epochs_done += epoch
        self.refresh(force=True)

    def text(self) -> str:
        now = time.monotonic()
        elapsed = now - self.start
        shown = ", ".join(
            f"trial {number} epoch {min(epoch + 1, self.epochs)}/{self.epochs} ({_duration(now - started)})"
            for number, epoch, started in self.running.values()
        )
        trained = self.epochs_done + sum(epoch for _, epoch, _ in self.running.values())
        if trained:
            left = (self.total * self.epochs - trained) * elapsed / trained
            estimate = f"about {_duration(left)} left"
        else:
            estimate = "estimating the time left after the first epoch"
        return (
            f"running {len(self.running)}{': ' + shown if shown else ''} · {self.done} of {self.total} done · "
            f"{_duration(elapsed)} elapsed · {estimate}"
        )

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._shown >= 1.0:  # Tune's loop steps many times a second
            self._shown = now
            if not self._live.is_started:
                self._live.start()
            self._live.update(escape(self.text()), refresh=True)

    def stop(self) -> None:
        if self._live.is_started:
            self._live.stop()


def _duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _last_failure(trial: Any) -> str:
    """The first line of the last failure Ray Tune wrote to the trial's error file ('' when there is none)."""
    try:
        text = Path(trial.error_file).read_text(errors="replace") if trial.error_file else ""
    except OSError:
        return ""
    lines = text.rsplit("Failure #", 1)[-1].splitlines()[1:]  # after "Failure # n (occurred at ...)"
    return next((line.strip()[:300] for line in lines if line.strip()), "")
