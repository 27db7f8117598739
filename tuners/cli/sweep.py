"""``lwnas sweep | resume | status | export``: the sweep commands."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from tuners.cli.plugins import AllowPlugin, allow
from tuners.store.keys import DEFAULT_STORAGE

err = Console(stderr=True, soft_wrap=True)
STORAGE_HELP = (
    "SQL storage of the sweep's Optuna study: a SQLite file (sqlite:///lwnas.db, the default, in the "
    "working directory) or postgresql://user@host/db for clusters. lwnas never prints a password, but "
    "one given on the command line shows in `ps` to every user of the machine: put such a URL in "
    "the LWNAS_STORAGE environment variable instead."
)
VALIDATE_SAMPLES = 8  # points costed to check the constraints, as `lwnas space validate` does by default
Storage = Annotated[str, typer.Option("--storage", envvar="LWNAS_STORAGE", help=STORAGE_HELP)]


def _fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[red]error[/red] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def _load_ot_study(name: str, storage: str, read_only: bool = True):
    """The study ``name`` in an existing storage (a missing SQLite file or a database without Optuna's tables
    is an error, never set up); with ``read_only``, the storage refuses every write."""
    return _open_ot_study(name, storage, read_only)[0]


def _open_ot_study(name: str, storage: str, read_only: bool = True):
    """``(study, backend)``: the study ``name`` and the Optuna storage object it was loaded from."""
    import optuna

    from searchspace.errors import shorten, shown
    from tuners.store.connection import StorageError, open_storage
    from tuners.store.urls import masked

    backend = open_storage(storage, read_only=read_only)
    try:
        return optuna.load_study(study_name=name, storage=backend), backend
    except KeyError:
        names = [s.study_name for s in optuna.get_all_study_summaries(backend)]
        raise StorageError(
            f"no study {shown(name)} in {masked(storage)}; studies there: {shorten(', '.join(names), 500) or 'none'}"
        ) from None


def sweep(
    study_file: Annotated[Path, typer.Argument(help="Study file (see docs/studies.md), e.g. studies/quickstart.yaml.")],
    storage: Storage = DEFAULT_STORAGE,
    address: Annotated[
        str | None,
        typer.Option(
            "--address", help="Address of an existing Ray cluster (ray start --head); default: Ray on this machine."
        ),
    ] = None,
    trials: Annotated[
        int | None, typer.Option(help="Trials to train (overrides the study's budget.trials; recorded on the study).")
    ] = None,
    epochs: Annotated[
        int | None,
        typer.Option(help="Epochs per trial (overrides the study's budget.epochs; recorded on the study)."),
    ] = None,
    max_concurrent: Annotated[int | None, typer.Option(help="Trials running at once.")] = None,
    name: Annotated[
        str | None,
        typer.Option(
            help="Name of the study in storage (default: the study's): 1 to 100 letters, digits, -, _ or ., "
            "starting with a letter or digit."
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            help="Data of a task that reads yours (features, image-folder, cifar, vqa, captions, caption-retrieval): "
            "replaces the study's task_options.path."
        ),
    ] = None,
    allow_plugin: AllowPlugin = None,
) -> None:
    """Find the accuracy-vs-cost Pareto front of a study: Ray Tune runs the trials, Optuna proposes them.

    Every trial lands in the storage as a normal Optuna study. Points that break the study's constraints are
    recorded as infeasible and never trained. Ctrl-C stops cleanly; `lwnas resume NAME` continues.
    """
    allow(allow_plugin)
    from searchspace.study import StudyError, name_problem
    from tuners.driver.sweep import SweepOptions, run_sweep
    from tuners.planning.check import check_sweep

    if name is not None and name_problem(name):
        _fail(f"--name {name_problem(name)}", code=2)
    try:
        prepared = check_sweep(study_file, data, trials, epochs, not address, VALIDATE_SAMPLES)
    except StudyError as exc:
        for where, message in exc.problems:
            err.print(f"[red]error[/red] {escape(where)}: {escape(message)}", highlight=False)
        raise typer.Exit(2) from None
    study = prepared.study
    _warn_scheduler(study)
    options = SweepOptions(storage=storage, address=address, trials=trials, max_concurrent=max_concurrent, name=name)
    run_sweep(
        study, options, prepared=prepared
    )  # its errors (LwnasError) print as one line each, with their exit codes


def _warn_scheduler(study) -> None:
    """The scheduler's warnings for the study's budget (mo-asha rungs it is too small for), one line each."""
    from tuners.planning.check import scheduler_warnings

    for warning in scheduler_warnings(study):
        err.print(
            f"[yellow]warning[/yellow] {escape(study.where(('tuner', 'scheduler')))}: {escape(warning)}",
            highlight=False,
        )


def resume(
    name: Annotated[str, typer.Argument(help="Name of the study in storage.")],
    storage: Storage = DEFAULT_STORAGE,
    address: Annotated[str | None, typer.Option("--address", help="Address of an existing Ray cluster.")] = None,
    max_concurrent: Annotated[int | None, typer.Option(help="Trials running at once.")] = None,
    trials: Annotated[
        int | None,
        typer.Option(
            help="Raise the study's budget to this many trials in all (it never shrinks), recorded on the study; "
            "a finished sweep goes on from its stored trials."
        ),
    ] = None,
    allow_plugin: AllowPlugin = None,
) -> None:
    """Continue a sweep whose driver stopped (Ctrl-C, kill, restart): finished trials are kept, trials that
    were running are re-queued, and the rest of the budget runs. With --trials N, grow a finished sweep."""
    allow(allow_plugin)
    from tuners.store import keys

    if trials is not None and trials < 1:
        _fail(f"--trials must be an integer >= 1, got {trials}", code=2)
    ot_study = _load_ot_study(name, storage)  # before torch and Ray are imported: a wrong name fails in a second
    from searchspace.study import StudyError, study_from_dict
    from tuners.driver.sweep import SweepOptions, run_sweep
    from tuners.planning.check import device_problems, task_family

    spec = ot_study.user_attrs.get(keys.STUDY_SPEC)
    if not spec:
        _fail(f"study {name!r} was not created by lwnas sweep (it has no {keys.STUDY_SPEC} attribute)")
    try:
        study = study_from_dict(spec, task_family=task_family)
    except StudyError as exc:
        _fail("; ".join(f"{w}: {m}" for w, m in exc.problems))
    if not address:  # as `lwnas sweep` checks it: a cluster's nodes may have the GPU this machine lacks
        for _, message in device_problems(study):
            _fail(f"study {name!r}: training.device: {message}", code=2)
    run_sweep(
        study,
        SweepOptions(storage=storage, address=address, max_concurrent=max_concurrent, name=name, trials=trials),
        resume=True,
    )


def status(
    name: Annotated[
        str | None, typer.Argument(help="Name of the study in storage; without it, the studies there are listed.")
    ] = None,
    storage: Storage = DEFAULT_STORAGE,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (without NAME: a list of them, one per study).")
    ] = False,
) -> None:
    """Trials by state, the current Pareto front, hypervolume (with its reference point) and time per trial.

    Without NAME: every study in the storage, with its trials by outcome and its objectives."""
    import json

    from tuners.fronts.front_table import print_front
    from tuners.fronts.status import read_trials, study_status

    if name is None:
        from tuners.cli.study_list import print_studies

        print_studies(storage, as_json)
        return
    ot_study, backend = _open_ot_study(name, storage)
    trials = read_trials(ot_study, backend)  # in bulk: a few queries, one short read transaction
    s = study_status(ot_study, trials)
    stale = _mark_stale(s, name, storage)
    if as_json:
        sys.stdout.write(json.dumps(s, indent=2, default=str) + "\n")
        return
    out = Console(soft_wrap=True)
    out.print(
        f"[bold]{escape(name)}[/bold]: " + ", ".join(f"{k} {v}" for k, v in s["outcomes"].items()), highlight=False
    )
    if stale:
        from tuners.driver.sweep import resume_command

        out.print(
            f"[yellow]stale {stale}[/yellow]: trials left running by a driver that has stopped (no live driver holds "
            f"the study); continue with: {escape(resume_command(name, storage))}",
            highlight=False,
        )
    if s["rejected"]:
        out.print(
            f"constraints rejected {s['rejected']['rejected']} of {s['rejected']['checked']} proposed points "
            f"({', '.join(f'{k}: {v}' for k, v in s['rejected']['reasons'].items())})",
            highlight=False,
        )
    ref = ", ".join(f"{m} {v:g}" for m, v in zip(s["objectives"], s["reference_point"]))
    out.print(f"hypervolume {s['hypervolume']:.6g} (reference point: {ref})", highlight=False)
    out.print(
        f"budget {s['budget']} trials"
        + "".join(f"; raised from {c['from']} to {c['to']} at {c['at']}" for c in s["budget_changes"]),
        highlight=False,
    )
    if s["ended"]:
        out.print(f"ended ({s['ended']['reason']}, {s['ended']['at']}): {s['ended']['detail']}", highlight=False)
    if s["seconds_per_trial"] is not None:
        out.print(
            f"time per trained trial: {s['seconds_per_trial']:.1f} s (mean of {s['timed_trials']})", highlight=False
        )
    print_front(ot_study, None, out, trials)
    modes = sorted({str(f["latency_mode"]) for f in s["front"] if "latency_mode" in f})
    _print_latency_devices(s["latency_devices"], out, modes)


def _mark_stale(s: dict, name: str, storage: str) -> int:
    """Trials storage holds as running while no live driver holds the study's lease: counted as ``stale``
    in ``s["outcomes"]`` instead of ``running`` (a Ctrl-C or a killed driver leaves them so until a resume).
    Adds ``s["driver"]``: the live driver, or None. Reads only. Returns the stale count."""
    from tuners.driver.lease import live_driver, stale_outcomes

    s["outcomes"], holder = stale_outcomes(s["outcomes"], storage, name)
    if holder is None and not s["outcomes"].get("stale"):
        holder = live_driver(storage, name)  # a driver between trials, or one that has not started any
    s["driver"] = (
        None
        if holder is None
        else {"host": holder.host, "pid": holder.pid, "since": holder.since, "heartbeat": holder.heartbeat}
    )
    return s["outcomes"].get("stale", 0)


def _print_latency_devices(devices: dict[str, list[int]], out: Console, modes: list[str] | None = None) -> None:
    """Name the machine behind every latency (and how the front's were measured: eager, compile, cuda-graph);
    several machines are flagged, never compared silently."""
    how = f" ({', '.join(modes)})" if modes else ""
    if len(devices) == 1:
        out.print(f"latency measured on {escape(next(iter(devices)))}{how}", highlight=False)
    elif devices:
        out.print(
            f"[yellow]warning[/yellow] latencies of this study were measured on {len(devices)} different "
            f"devices or machines and are not comparable across them:",
            highlight=False,
        )
        for device, numbers in devices.items():
            out.print(f"  {escape(device)}: trials {', '.join(map(str, numbers))}", highlight=False)


def export(
    name: Annotated[str | None, typer.Argument(help="Name of the study in storage (or give --checkpoint).")] = None,
    trials: Annotated[str, typer.Option(help="`pareto` (the front) or trial numbers like 1,5,9.")] = "pareto",
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the exported files.")] = Path(
        "exported"
    ),
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="yaml: a configuration `lwnas train` accepts; torch: a torch.export .pt2 and onnx: an "
            ".onnx model, both of which run without lwnas (see docs/deploy.md).",
        ),
    ] = "yaml",
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint",
            help="Export this checkpoint.pt of `lwnas train` (its trained weights) instead of a study's "
            "trials; with --format torch or onnx.",
        ),
    ] = None,
    infeasible: Annotated[
        bool,
        typer.Option(
            "--infeasible",
            help="Allow --trials numbers that name infeasible trials (they broke the constraints and were "
            "never trained; `pareto` never holds one).",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="With --checkpoint: overwrite the model file already in the -o folder (refused otherwise)."
        ),
    ] = False,
    storage: Storage = DEFAULT_STORAGE,
    allow_plugin: AllowPlugin = None,
) -> None:
    """Write one file per trial: a YAML (configuration, task, training settings with the trial's seed, provenance)
    that `lwnas train` reproduces as it is, or with --format torch/onnx a model file that runs without lwnas.

    A study's trials keep no weights, so their model files hold initialised weights (drawn with the trial's seed);
    export a `lwnas train` checkpoint with --checkpoint for trained weights."""
    allow(allow_plugin)
    from tuners.export.deploy import FORMATS

    if fmt not in FORMATS:
        _fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}", code=2)
    if (name is None) == (checkpoint is None):
        _fail("give a study NAME or --checkpoint PATH (one of them)", code=2)
    if checkpoint is not None:
        _export_checkpoint(checkpoint, fmt, output, force)
        return
    from tuners.store.trial_store import TrialStore

    assert name is not None  # NAME or --checkpoint, checked above
    ot_study, backend = _open_ot_study(name, storage)  # before torch is imported: a wrong name fails in a second
    from tuners.export.configs import ExportError, export_trials

    try:
        paths = export_trials(ot_study, TrialStore.of(backend, name), trials, output, infeasible, fmt)
    except ExportError as exc:
        _fail(str(exc))
    if not paths:
        _fail(f"study {name!r} has no trial on its Pareto front yet")
    for p in paths:
        sys.stdout.write(f"{p}\n")
    if fmt == "yaml":
        err.print(
            f"wrote {len(paths)} files; retrain one (the same seed reproduces its values) with: "
            f"lwnas train {shlex.quote(str(paths[0]))}",
            highlight=False,
            markup=False,
        )
    else:
        err.print(
            f"wrote {len(paths)} {fmt} files with initialised weights (a search keeps none); train a YAML "
            f"export and use --checkpoint for trained weights",
            highlight=False,
            markup=False,
        )


def _export_checkpoint(checkpoint: Path, fmt: str, output: Path, force: bool) -> None:
    """``lwnas export --checkpoint PATH``: the trained model as one file in ``output``; a file already there (perhaps
    another checkpoint's) is kept unless ``force``."""
    from tuners.export.deploy import SUFFIX, checkpoint_model, write_model

    if fmt == "yaml":
        _fail(
            f"--checkpoint exports a model file: use --format torch or onnx (the configuration is already in "
            f"{checkpoint.parent / 'config.yaml'})",
            code=2,
        )
    if output.exists() and not output.is_dir():
        _fail(f"-o {output} is a file, not a folder: give a folder for the exported files")
    target = output / f"model{SUFFIX[fmt]}"
    if target.exists() and not force:
        _fail(
            f"{target} already exists (an earlier export, perhaps of another checkpoint): give another folder "
            f"with -o, or --force to overwrite it"
        )
    model, config, provenance = checkpoint_model(checkpoint)
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _fail(f"cannot create {output}: {exc.strerror or exc}; choose a folder you can write to with -o")
    path = write_model(model, config, fmt, target, provenance)
    sys.stdout.write(f"{path}\n")
    err.print(f"wrote {path} (trained weights of {checkpoint})", highlight=False, markup=False)
