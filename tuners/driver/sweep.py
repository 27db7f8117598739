"""``lwnas sweep`` / ``lwnas resume``: Ray Tune runs the trials, Optuna proposes them, SQL keeps them.

The driver creates (or reopens) the Optuna study in storage, enqueues the seed configs once,
re-queues trials a killed driver left RUNNING, and runs the remaining budget with Ray Tune:
``StudySearcher`` (a Ray ``Searcher`` on Optuna's ask-and-tell) proposes, ``run_trial`` trains in Ray workers, and
the chosen scheduler (``none`` or ``mo-asha``) stops unpromising trials early.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from rich.console import Console

from searchspace.errors import LwnasError
from searchspace.study import Study, StudyError, path_component
from tuners.driver.ray_logs import drop_token_banner, quiet_ray_interrupts
from tuners.driver.samplers import make_sampler
from tuners.driver.trainable import NUMBER
from tuners.fronts.objectives import encoded_objectives
from tuners.planning.check import Prepared, prepare
from tuners.store import keys
from tuners.store.connection import StorageError, open_storage
from tuners.store.outcomes import TERMINAL_OUTCOMES, Outcome
from tuners.store.trial_store import TrialStore
from tuners.store.urls import first_line, masked, scrub, sqlite_path, storage_arg

if TYPE_CHECKING:
    from ray.tune.search import Searcher

    from tuners.store.budget import Ended

SAMPLERS_NEEDING_NNI = ("nni-tpe", "nni-evolution")


class SweepError(LwnasError, RuntimeError):
    pass


class SweepFailed(SweepError):
    """Every trial of the study failed: nothing was measured and the front is empty."""


class SweepIncomplete(SweepError):
    """The sweep stopped (Ctrl-C, its time budget) before its trial budget was spent."""

    exit_code = 4


@dataclass
class SweepOptions:
    storage: str = keys.DEFAULT_STORAGE
    address: str | None = None  # an existing Ray cluster; None starts Ray on this machine
    trials: int | None = None  # overrides the study's budget
    max_concurrent: int | None = None
    name: str | None = None  # overrides the study's name in storage
    quiet: bool = False


def open_study_storage(study: Study, options: SweepOptions, resume: bool, storage: Any) -> optuna.Study:
    """Create the Optuna study (or reopen it when resuming) in ``storage`` with lwnas's study attributes."""
    name = options.name or study.name
    existing = {s.study_name for s in optuna.get_all_study_summaries(storage)}
    directions = [o.direction for o in study.objectives]
    if resume:
        if name not in existing:
            raise SweepError(f"no study {name!r} in {masked(options.storage)}; start it with `lwnas sweep`")
        trials_so_far = len(storage.get_all_trials(storage.get_study_id_from_name(name), deepcopy=False))
        return optuna.load_study(study_name=name, storage=storage, sampler=make_sampler(study, trials_so_far))
    if name in existing:
        raise _exists(name, options.storage)
    try:
        ot_study = optuna.create_study(
            study_name=name, storage=storage, directions=directions, sampler=make_sampler(study)
        )
    except optuna.exceptions.DuplicatedStudyError:  # created a moment ago by a program that takes no lease
        raise _exists(name, options.storage) from None
    with warnings.catch_warnings():  # experimental in Optuna 5, and what optuna-dashboard reads
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        ot_study.set_metric_names([o.metric for o in study.objectives])
    ot_study.set_user_attr(keys.STUDY_SPEC, keys.plain({**study.source, "name": name}))
    ot_study.set_user_attr(keys.STUDY_OBJECTIVES, encoded_objectives(study.objectives))
    ot_study.set_user_attr(keys.STUDY_VERSION, _version())
    ot_study.set_user_attr(keys.STUDY_BUDGET, _first_budget(study, options.trials))  # `lwnas resume` keeps it
    ot_study.set_user_attr(keys.STUDY_SAMPLER_WINDOW, study.tuner.window())  # None: the sampler reads every trial
    for seed_name, params in study.seed_configs.items():
        ot_study.enqueue_trial(params, user_attrs={keys.SEED_CONFIG: seed_name}, skip_if_exists=True)
    return ot_study


def _first_budget(study: Study, trials: int | None) -> int:
    """The trial budget a new sweep stores: ``--trials`` or the study's; a grid sweep's is its whole grid
    x ``grid_seeds`` unless one of those is smaller."""
    if study.tuner.sampler != "grid":
        return trials or study.budget.trials
    from tuners.driver.grid import grid_trials

    budget = study.source.get("budget")
    given = trials or (study.budget.trials if isinstance(budget, dict) and "trials" in budget else None)
    return min(given, grid_trials(study)) if given else grid_trials(study)


def requeue_interrupted(ot_study: optuna.Study, storage: Any) -> list[int]:
    """Trials a killed driver left RUNNING: mark each interrupted (FAIL) and enqueue its params again.

    A driver killed between Optuna's ask and its last suggestion leaves a trial with part of its params:
    the re-queued trial keeps those and the sampler draws the rest.

    ``storage`` is the Optuna storage lwnas opened for ``ot_study``; the trials are written through its store.
    """
    requeued = []
    store = TrialStore.of(storage, ot_study.study_name)
    for trial in ot_study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        store.interrupt(trial.number, "the sweep's driver stopped while it ran; re-queued")
        attrs = {keys.REQUEUED_FROM: trial.number}
        for key in (keys.SEED_CONFIG, keys.SEED_OF):  # what the trial evaluates: a seed config, a seed repeat
            if key in trial.user_attrs:
                attrs[key] = trial.user_attrs[key]
        ot_study.enqueue_trial(trial.params, user_attrs=attrs)
        requeued.append(trial.number)
    return requeued


def counted_trials(ot_study: optuna.Study) -> int:
    """Trials that used their place in the budget (trained to an outcome)."""
    return sum(t.user_attrs.get(keys.OUTCOME) in TERMINAL_OUTCOMES for t in ot_study.get_trials(deepcopy=False))


def failed_trials(ot_study: optuna.Study) -> int:
    """Trials that used their place in the budget and failed."""
    return sum(t.user_attrs.get(keys.OUTCOME) == Outcome.FAILED for t in ot_study.get_trials(deepcopy=False))


def run_sweep(
    study: Study, options: SweepOptions, resume: bool = False, prepared: Prepared | None = None
) -> optuna.Study:
    """Run (or resume) a sweep as the study's one driver; returns the Optuna study.

    ``prepared`` is the task and cost model the caller already built for ``study`` (``lwnas sweep`` checks
    the study with them); without it they are built once there is a budget left to run.
    Raises SweepIncomplete when the driver stopped before the budget was spent (the CLI exits non-zero).
    """
    from tuners.driver.lease import StudyLease

    out = Console(stderr=True, soft_wrap=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if options.address:  # a cluster: every node must see the task's data before anything is stored
        check_paths_on_nodes(study, options.address, out)
    else:  # Ray on this machine: a trial needing more CPUs than it has is refused before anything is stored
        _check_a_trial_fits_this_machine(study)
    storage = open_storage(options.storage, create=not resume, flush_each_commit=False)  # see engine_kwargs
    # the lease comes before anything touches the trials: re-queueing RUNNING trials would steal a live driver's
    if resume:
        ot_study = open_study_storage(study, options, resume, storage)
        lease = StudyLease(options.storage, ot_study.study_name)
        lease.acquire()
    else:
        ot_study, lease = _create_as_driver(study, options, storage)
    try:
        if lease.taken_over:
            out.print(
                f"took the study over from a driver that is gone ({lease.taken_over.describe()})", highlight=False
            )
        return _drive(study, options, ot_study, storage, lease, resume, out, prepared)
    finally:
        lease.release()


def _create_as_driver(study: Study, options: SweepOptions, storage: Any) -> tuple[optuna.Study, Any]:
    """A new sweep's study, created by this driver holding its lease: ``(study, lease)``.

    The lease is taken before the study is created, so another ``lwnas sweep`` of the name, started now or
    at the same moment, is refused with the live driver named (LeaseHeld, exit 3) rather than told to resume
    a study whose driver runs; a study that exists with no live driver is for ``lwnas resume``.
    """
    from tuners.driver.lease import StudyLease

    name = options.name or study.name
    watch = f"lwnas status {shlex.quote(name)} --storage {storage_arg(options.storage)}"
    lease = StudyLease(options.storage, name, advice=f"watch it with `{watch}`, or give this sweep another --name")
    if name in {s.study_name for s in optuna.get_all_study_summaries(storage)}:
        lease.raise_if_held()
        raise _exists(name, options.storage)
    lease.acquire()
    try:
        return open_study_storage(study, options, False, storage), lease
    except BaseException:
        lease.release()
        raise


def _exists(name: str, url: str) -> SweepError:
    return SweepError(
        f"study {name!r} already exists in {masked(url)}: continue it with "
        f"`lwnas resume {name}`, or give this sweep another --name"
    )


def _drive(
    study: Study,
    options: SweepOptions,
    ot_study: optuna.Study,
    storage: Any,
    lease,
    resume: bool,
    out: Console,
    prepared: Prepared | None,
) -> optuna.Study:
    """The sweep itself, run while this driver holds the study's lease."""
    from ray import tune

    from tuners.driver.front_stop import StopWhenFrontStalls, stalled_in_storage
    from tuners.driver.lease_stopper import LeaseStopper
    from tuners.driver.mo_asha import MOASHA
    from tuners.driver.pack_searcher import pack_samples
    from tuners.driver.pack_trainable import run_pack
    from tuners.driver.progress import SweepProgress, ray_logs_to
    from tuners.driver.searcher import StudySearcher
    from tuners.driver.strategies import scheduler_of, strategy_of
    from tuners.driver.trainable import run_trial
    from tuners.store.budget import Ended, budget_in_force, counted_at_last_raise, raise_budget, record_end

    if resume:  # the window of the driver now in force (the study file may have changed it)
        ot_study.set_user_attr(keys.STUDY_SAMPLER_WINDOW, study.tuner.window())
    requeued = requeue_interrupted(ot_study, storage) if resume else []
    if requeued:
        out.print(f"re-queued trials interrupted by the last driver: {requeued}")
    if resume and options.trials is not None:
        change = raise_budget(ot_study, study, options.trials, counted_trials(ot_study))
        if change:
            out.print(f"budget raised from {change['from']} to {change['to']} trials")
    budget = budget_in_force(ot_study, study)
    if study.tuner.sampler == "grid":  # `lwnas resume --trials` beyond the grid: the grid is all there is
        from tuners.driver.grid import grid_trials

        budget = min(budget, grid_trials(study))
    remaining = budget - counted_trials(ot_study)
    if remaining <= 0:
        out.print(
            f"study {ot_study.study_name!r} already has its {budget} trials; grow it with: "
            f"lwnas resume {shlex.quote(ot_study.study_name)} --trials N"
        )
        return ot_study
    rule, since = study.budget.stop_when, counted_at_last_raise(ot_study)
    store = TrialStore.of(storage, ot_study.study_name)
    stalled = stalled_in_storage(ot_study, store, rule, since) if rule is not None else None
    if stalled:  # a resumed sweep whose front had already stopped moving stays ended
        record_end(ot_study, Ended.FRONT_STALLED, stalled, counted_trials(ot_study))
        out.print(
            f"study {ot_study.study_name!r} ended: {stalled}; grow it with: "
            f"lwnas resume {shlex.quote(ot_study.study_name)} --trials N"
        )
        return ot_study
    static = (prepared or prepare(study)).costs
    run_id = int(time.time())
    searcher: Searcher
    if study.tuner.sampler in SAMPLERS_NEEDING_NNI:
        from tuners.driver.nni_searcher import NNISearcher

        try:
            searcher = NNISearcher(study, ot_study, static, storage, store)
        except ImportError as exc:
            raise SweepError(str(exc)) from None
    elif study.tuner.pack != 1:
        from tuners.driver.pack_searcher import PackSearcher

        pruner = f"lwnas-pack-pruner-{run_id}" if study.tuner.scheduler == "mo-asha" else None
        searcher = PackSearcher(study, ot_study, static, storage, remaining, pruner, store)
    else:
        searcher = StudySearcher(study, ot_study, static, storage, store)
    recorder = searcher  # the searcher that writes the trial records (the wrappers below pass them on)
    if study.budget.front_seeds > 1:
        from tuners.driver.seed_repeats import SeedRepeats

        searcher = SeedRepeats(searcher, ot_study, study.budget.front_seeds)
    if study.tuner.sampler == "grid":
        from tuners.driver.grid import GridSampler, GridSeeds

        assert isinstance(ot_study.sampler, GridSampler)  # make_sampler's for a grid study
        searcher = GridSeeds(searcher, ot_study, ot_study.sampler, study.tuner.grid_seeds)
    if rule is not None:
        searcher = StopWhenFrontStalls(searcher, ot_study, store, rule, since)
    packed = study.tuner.pack != 1
    # the search strategy's scheduler (mo-asha as `tuner: {scheduler}` sets it, or another); a pack's members are
    # judged one by one by a PackPruner actor instead (Ray's scheduler stops whole trials)
    scheduler = scheduler_of(study) if not packed else None
    prune_reasons = scheduler.reasons if scheduler is not None else {}
    recorder.prune_reasons = prune_reasons  # the trial's record says which rung stopped it and what dominated it
    concurrent = options.max_concurrent or study.tuner.max_concurrent
    _init_ray(options.address, study)
    _check_a_trial_fits(study)
    pruner_actor = None  # held for the run: an actor whose handles are all dropped is ended by Ray
    if packed and study.tuner.scheduler == "mo-asha":
        pruner_actor = _start_pack_pruner(f"lwnas-pack-pruner-{run_id}", MOASHA.for_study(study))
    # the trial's record travels in its config: the workers never see the study file
    trainable = tune.with_resources(
        run_pack if packed else run_trial, {"cpu": study.tuner.cpus_per_trial, "gpu": study.tuner.gpus_per_trial}
    )
    samples = pack_samples(study, remaining) if packed else remaining
    run_name = f"{path_component(ot_study.study_name)}-{run_id}"
    log_path = _ray_results_dir() / run_name / "sweep.log"
    progress = SweepProgress(
        ot_study,
        study,
        remaining,
        out,
        quiet=options.quiet,
        log_path=log_path,
        on_retry=recorder.record_retry,
        prune_reasons=prune_reasons,
    )
    tuner = tune.Tuner(
        trainable,
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=samples,
            max_concurrent_trials=concurrent,
            reuse_actors=True,
            trial_dirname_creator=trial_dirname,
            time_budget_s=study.budget.time_s,
        ),
        run_config=tune.RunConfig(
            name=run_name,
            storage_path=str(_ray_results_dir()),
            verbose=0,
            callbacks=[progress],
            stop=LeaseStopper(lease),
            failure_config=tune.FailureConfig(max_failures=study.tuner.max_failures),
        ),
    )
    out.print(
        f"sweep {ot_study.study_name!r}: {remaining} trials, up to {concurrent} at a time"
        f"{f' in packs of {study.tuner.pack}' if packed else ''}, "
        f"{study.tuner.sampler} sampler, strategy {study.search.strategy}, scheduler "
        f"{strategy_of(study).scheduler if study.search.strategy != 'full' else study.tuner.scheduler}; "
        f"storage {masked(options.storage)}"
    )
    started = time.monotonic()
    try:
        # Ray prints its banners to stdout (keep stdout for results), failed trials' tracebacks go to the log
        # file, and its interrupt advice that contradicts `lwnas resume` is dropped
        with contextlib.redirect_stdout(sys.stderr), quiet_ray_interrupts(), ray_logs_to(log_path):
            try:
                tuner.fit()
            finally:
                progress.close()  # the live line goes before anything else is printed
                if pruner_actor is not None:
                    import ray

                    ray.kill(pruner_actor)
        if lease.lost is None:
            lease.renew()  # a storage that broke while the last trials ran
        if lease.lost is not None:
            fix = (
                _storage_fix(options.storage, ot_study)
                if lease.storage_failed
                else "Let the driver that holds it now finish, or stop it and resume from here"
            )
            raise StorageError(f"the sweep stopped: {lease.lost}. {fix}")
        done = counted_trials(ot_study)
        stalled = searcher.reason if isinstance(searcher, StopWhenFrontStalls) and done < budget else None
        if done < budget and getattr(recorder, "exhausted", None):  # the strategy's screen found nothing left
            stalled = recorder.exhausted
        if stalled:
            out.print(f"the sweep ended before its budget: {stalled}", highlight=False)
        progress.finish(interrupted=done < budget and not stalled, storage=options.storage)
        record_end(ot_study, *_why_ended(done, budget, stalled, study, time.monotonic() - started), done)
    except Exception as exc:  # noqa: BLE001 - sorted below: a user's problem is one line, a bug keeps its traceback
        reported = _user_error(exc, options.storage, ot_study)
        if reported is exc:
            raise
        raise reported from None
    if done < budget and not stalled:
        raise SweepIncomplete(f"{done} of {budget} trials done: the sweep stopped before its budget was spent")
    failed = failed_trials(ot_study)
    if failed and failed == done:  # the budget is spent and nothing was measured: not a success
        raise SweepFailed(
            f"all {failed} trials failed, so the study has no front: the reasons are above and in {log_path}"
        )
    return ot_study


def check_paths_on_nodes(study: Study, address: str, out: Console) -> None:
    """Refuse a sweep on the cluster at ``address`` whose task reads a path that an alive node cannot see
    (``tuners/driver/nodes.py``); connects to the cluster when the task reads any path."""
    from trainers.tasks.registry import task_class
    from tuners.driver.nodes import PROBE_TIMEOUT_S, paths_unseen_on_nodes

    options = {
        key: value
        for key in getattr(task_class(study.task), "path_options", ())
        if isinstance(value := study.task_options.get(key), str)
    }
    if not options:
        return
    _init_ray(address, study)
    unseen, unanswered = paths_unseen_on_nodes(list(options.values()))
    if unanswered:
        out.print(
            f"[yellow]warning[/yellow] Ray nodes {', '.join(unanswered)} did not say within {PROBE_TIMEOUT_S:.0f} s "
            f"whether they see the task's data; their trials fail if they do not",
            highlight=False,
        )
    problems = [
        (
            study.where(("task_options", key)),
            f"{path} does not exist on Ray node{'s' if len(unseen[path]) > 1 else ''} {', '.join(unseen[path])}: "
            f"each trial reads it at this path on the node that runs it; put it on a file system every node "
            f"mounts, or copy it to the same path on each node (docs/cluster.md)",
        )
        for key, path in options.items()
        if path in unseen
    ]
    if problems:
        raise StudyError(problems)


def trial_dirname(trial: Any) -> str:
    """A Ray trial's folder: its Optuna number (Ray's default name lists the whole config, record included)."""
    return f"trial-{trial.config.get(NUMBER, 'x')}-{trial.trial_id}"


def _why_ended(done: int, budget: int, stalled: str | None, study: Study, seconds: float) -> tuple[Ended, str]:
    """(reason, detail) of a driver whose Tune run returned."""
    from tuners.store.budget import Ended

    if done >= budget:
        return Ended.BUDGET, f"{done} of {budget} trials done"
    if stalled:
        return Ended.FRONT_STALLED, stalled
    if study.budget.time_s is not None and seconds >= study.budget.time_s:
        return Ended.TIME, f"budget.time ({study.budget.time_s:g} s) ran out after {done} of {budget} trials"
    return Ended.STOPPED, f"stopped after {done} of {budget} trials"


def _user_error(exc: Exception, url: str, ot_study: optuna.Study) -> Exception:
    """What to report for an error that escaped Ray's fit (Ray may wrap it): lwnas's own error, a
    storage failure as one line with the fix, or ``exc`` itself (a bug, which keeps its traceback)."""
    from sqlalchemy.exc import SQLAlchemyError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, LwnasError):
            return seen
        if isinstance(seen, (SQLAlchemyError, optuna.exceptions.StorageInternalError)):
            return StorageError(
                f"the storage {masked(url)} failed mid-sweep: {scrub(first_line(seen), url)}. "
                f"{_storage_fix(url, ot_study)}"
            )
        seen = seen.__cause__ or seen.__context__
    return exc


def _storage_fix(url: str, ot_study: optuna.Study) -> str:
    """What to do when the storage broke mid-sweep."""
    resume = resume_command(ot_study.study_name, url)
    path = sqlite_path(url)
    if path is not None:
        return f"Make {shlex.quote(str(path))} writable again (or put it back), then continue with: {resume}"
    return f"Once the database accepts writes again, continue with: {resume}"


def resume_command(name: str, url: str) -> str:
    """``lwnas resume NAME --storage URL``, shell-quoted, with a password-bearing URL left to LWNAS_STORAGE."""
    return f"lwnas resume {shlex.quote(name)} --storage {storage_arg(url)}"


def _init_ray(address: str | None, study: Study) -> None:
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    # Tune's own progress tables and banners repeat what SweepProgress prints one line per trial
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    # failure reports and the memory objective (a static cost the searcher records) carry no metric
    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    drop_token_banner()  # Ray's notice, on every local sweep, that it turned token authentication on
    if address:
        # the trial code and the study travel with the job (runtime_env py_modules)
        ray.init(address=address, runtime_env={"py_modules": _own_packages()}, log_to_driver=False)
    else:
        # workers find what the driver finds on PYTHONPATH (an --allow-plugin module): Tune runs each trial in a
        # directory of its own, so a relative entry is made absolute. The working directory itself is never
        # added: a task is registered (entry points) or allowed on the command line, not found next to a file.
        paths = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if paths:
            os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)


def _start_pack_pruner(name: str, moasha: Any) -> Any:
    """The sweep's PackPruner actor (mo-asha's rungs for every member of every pack); it ends with the driver."""
    import ray

    from tuners.driver.pack_trainable import PackPruner

    actor = ray.remote(PackPruner).options(name=name, num_cpus=0).remote(moasha)
    # named and running before the first pack asks for it
    ray.get(actor.__ray_ready__.remote())  # type: ignore[union-attr]
    return actor


def _check_a_trial_fits(study: Study) -> None:
    """Refuse a trial that no Ray node can hold (Tune would wait for one forever, saying nothing)."""
    import ray

    alive = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
    for resource, asked, key in (
        ("CPU", study.tuner.cpus_per_trial, "cpus_per_trial"),
        ("GPU", study.tuner.gpus_per_trial, "gpus_per_trial"),
    ):
        most = max((float(r.get(resource, 0)) for r in alive), default=0.0)
        if asked > most:
            raise _too_large(key, asked, "the largest Ray node", most, resource)


def _check_a_trial_fits_this_machine(study: Study) -> None:
    """Refuse, before Ray starts, a trial asking more CPUs than this machine has (Ray counts no more)."""
    cpus = os.cpu_count() or 1
    if study.tuner.cpus_per_trial > cpus:
        raise _too_large("cpus_per_trial", study.tuner.cpus_per_trial, "this machine", cpus, "CPU")


def _too_large(key: str, asked: float, where: str, most: float, resource: str) -> SweepError:
    return SweepError(
        f"tuner.{key} is {asked:g}, but {where} has {most:g} {resource}s: no trial could start (a trial runs on "
        f"one node); lower tuner.{key} to at most {most:g}"
    )


def _own_packages() -> list[str]:
    import searchspace
    import trainers
    import tuners

    return [str(Path(m.__file__).parent) for m in (searchspace, trainers, tuners) if m.__file__]


def _ray_results_dir() -> Path:
    base = Path(os.environ.get("LWNAS_CACHE", Path.home() / ".cache" / "lwnas"))
    path = base / "ray_results"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lwnas")
    except PackageNotFoundError:
        return "unknown"


def trials_summary(ot_study: optuna.Study) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for t in ot_study.get_trials(deepcopy=False):
        outcome = t.user_attrs.get(keys.OUTCOME, t.state.name.lower())
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts
