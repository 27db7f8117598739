"""The ``lwnas`` command line."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from searchspace import ConfigError

from tuners.cli.confirm import confirm
from tuners.cli.cost import CostFormat, cost_rows, render_cost
from tuners.cli.dashboard import dashboard
from tuners.cli.plugins import AllowPlugin, allow
from tuners.cli.simulate import simulate
from tuners.cli.space import space_app
from tuners.cli.sweep import export, resume, status, sweep
from tuners.cli.table import table_app

app = typer.Typer(
    name="lwnas",
    help="Search the design space of lightweight Transformers (LW-Transformer, ACORT, T-EMDE, Couplformer) "
    "for the accuracy-vs-cost Pareto front.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(space_app, name="space")
app.add_typer(table_app, name="table")
for command in (sweep, resume, status, export, confirm, dashboard, simulate):
    app.command()(command)
err = Console(stderr=True, soft_wrap=True)


def _exit_on_config_error(exc: ConfigError) -> NoReturn:
    """Print every problem of a ConfigError (knob: message) and exit with status 2."""
    for knob, message in exc.problems:
        err.print(f"[red]error[/red] {escape(knob)}: {escape(message)}", highlight=False)
    raise typer.Exit(2) from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lwnas")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _print_version(asked: bool) -> None:
    if asked:
        sys.stdout.write(f"lwnas {_version()}\n")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print lwnas's version and exit."),
    ] = False,
) -> None:
    """lwnas: neural-architecture search and sweeps for lightweight Transformers."""


@app.command()
def cost(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Configuration files (flat YAML mappings of knobs) or directories of them, e.g. studies/papers."
        ),
    ],
    fmt: Annotated[
        CostFormat,
        typer.Option(
            "--format", "-f", help="table: human-readable; json: one object per file; markdown: paper-vs-ours table."
        ),
    ] = CostFormat.table,
    as_json: Annotated[bool, typer.Option("--json", help="Shorthand for --format json.")] = False,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory/--no-memory",
            help="Also measure peak memory of one forward + backward at batch 1 (slower: runs the model).",
        ),
    ] = True,
    device: Annotated[str, typer.Option(help="Device for the memory and latency measurements: cpu or cuda.")] = "cpu",
    latency: Annotated[
        bool,
        typer.Option(
            "--latency",
            help="Also measure forward latency (median ms and its CV) at batch 1 and --latency-batch, "
            "after warm-up, on --device (slower: runs the model many times).",
        ),
    ] = False,
    latency_batch: Annotated[int, typer.Option(help="The second batch size of --latency.", min=1, max=4096)] = 8,
    threads: Annotated[int, typer.Option(help="CPU threads torch uses for --latency.", min=1, max=256)] = 1,
    latency_mode: Annotated[
        str,
        typer.Option(
            help="How --latency runs the forward: eager (as written), compile (torch.compile; on cpu it needs a "
            "C compiler) or cuda-graph (a captured CUDA graph replayed; --device cuda only).",
        ),
    ] = "eager",
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            "-t",
            help="Cost at this task's input sizes (grid, vocabulary, regions, classes), as training "
            "builds the model; default: the file's `task`, else the family's defaults.",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check", help="Exit with status 1 if a published figure in a file's `reference` is not reproduced."
        ),
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report here instead of stdout.")
    ] = None,
    allow_plugin: AllowPlugin = None,
) -> None:
    """Static cost of configurations, before any training.

    Parameters (total and by section; shared weights count once), MAdds of every matrix multiply at the
    configured input sizes, and peak memory of one forward + backward at batch 1; with --latency, the measured
    forward time (median and CV) and the device that measured it. Files with a `reference`
    section (the paper-table rows under studies/papers) are compared with the published figures.
    """
    allow(allow_plugin)
    from searchspace import ConfigError
    from searchspace.latency_settings import LatencySettings

    fmt = CostFormat.json if as_json else fmt
    try:
        settings = (
            LatencySettings(device=device, batch_size=latency_batch, threads=threads, mode=latency_mode)
            if latency
            else None
        )
        if device not in ("cpu", "cuda"):
            err.print(f"[red]error[/red] --device: must be cpu or cuda, got {escape(repr(device))}", highlight=False)
            raise typer.Exit(2)
        if device == "cuda" and (memory or latency):
            from trainers.cost import check_memory_device

            check_memory_device(device)  # no GPU here: one line, before any file is costed
        if latency_mode != "eager" and not latency:
            err.print("[red]error[/red] --latency-mode: measures only with --latency", highlight=False)
            raise typer.Exit(2)
        if settings:
            from trainers.latency import check_device, check_mode

            check_mode(latency_mode, device)
            check_device(device)
        rows = cost_rows(paths, memory=memory, device=device, progress=err, task=task, latency=settings)
    except ConfigError as exc:
        _exit_on_config_error(exc)
    text = render_cost(rows, fmt)
    if output:
        output.write_text(text)
        err.print(f"wrote {output}")
    elif fmt is CostFormat.table:
        Console().print(text, highlight=False, soft_wrap=True)
    else:
        sys.stdout.write(text)
    failures = [(row.path, c) for row in rows for c in row.comparisons if c.asserted and not c.matches]
    for path, c in failures:
        err.print(
            f"[red]mismatch[/red] {escape(str(path))}: {c.metric} {c.scope} paper {c.paper.text}, ours {c.ours:,}"
        )
    if check and failures:
        raise typer.Exit(1)


@app.command()
def train(
    config: Annotated[
        Path,
        typer.Argument(
            help="Configuration file: knobs, optionally `task` and `training` sections (an exported trial has both)."
        ),
    ],
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            "-t",
            help="Built-in task (digits, shapes-vqa, scene-captions, scene-retrieval, features, "
            "image-folder, cifar, vqa, captions, caption-retrieval) or a "
            "registered plugin's name (docs/tasks.md); default: the file's `task`.",
        ),
    ] = None,
    epochs: Annotated[int | None, typer.Option(help="Override the number of epochs.")] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Output directory for checkpoint, metrics and config.")
    ] = Path("runs/latest"),
    data: Annotated[
        Path | None,
        typer.Option(
            help="Data of a task that reads yours: a `features` .npz or .npy folder, or the folder of "
            "`image-folder`, `cifar`, `vqa`, `captions`, `caption-retrieval`."
        ),
    ] = None,
    lr: Annotated[float | None, typer.Option(help="Override the learning rate.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Override the batch size.")] = None,
    seed: Annotated[int | None, typer.Option(help="Override the seed.")] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads for torch.")] = None,
    device: Annotated[str | None, typer.Option(help="auto, cpu or cuda.")] = None,
    allow_plugin: AllowPlugin = None,
) -> None:
    """Train a configuration in full (an exported or hand-written one) and write checkpoint.pt, metrics.json and
    the exact config.yaml used to --out."""
    allow(allow_plugin)
    from searchspace import ConfigError
    from trainers.loop import TrainingError
    from tuners.export.train_file import train_config_file

    try:
        overrides = {
            k: v
            for k, v in dict(
                epochs=epochs, lr=lr, batch_size=batch_size, seed=seed, threads=threads, device=device
            ).items()
            if v is not None
        }
        result, _ = train_config_file(config, task, data, overrides, out)
    except ConfigError as exc:
        _exit_on_config_error(exc)
    except (ValueError, TrainingError) as exc:
        err.print(f"[red]error[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    summary = ", ".join(f"{k} {v:.4f}" for k, v in result.test.items())
    err.print(f"trained {result.task} in {result.wall_time:.1f}s: test {summary}; params {result.params:,}")
    err.print(
        f"wrote {out}/checkpoint.pt, metrics.json, config.yaml; re-evaluate with: lwnas evaluate {out}/checkpoint.pt"
    )
    sys.stdout.write(json.dumps(result.summary(), indent=2) + "\n")


@app.command()
def evaluate(
    checkpoint: Annotated[Path, typer.Argument(help="checkpoint.pt written by `lwnas train`.")],
    split: Annotated[str, typer.Option(help="train, val or test.")] = "test",
    device: Annotated[str, typer.Option(help="auto, cpu or cuda.")] = "auto",
    data: Annotated[
        Path | None,
        typer.Option(
            help="Data of a task that reads yours (features, image-folder, cifar, vqa, captions, caption-retrieval), "
            "replacing the path the checkpoint recorded (needed when its data has moved, or on another "
            "machine)."
        ),
    ] = None,
    allow_plugin: AllowPlugin = None,
) -> None:
    """Re-compute a trained checkpoint's metrics on a split (prints JSON)."""
    allow(allow_plugin)
    from trainers.checkpoint import evaluate_checkpoint

    sys.stdout.write(json.dumps(evaluate_checkpoint(checkpoint, split, device, data), indent=2) + "\n")


def _unwrap(text: str) -> str:
    """Each paragraph of a docstring on one line (the terminal wraps it)."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _unwrap_help(typer_app: typer.Typer) -> None:
    """Give every command its docstring unwrapped as help: Typer keeps the source's line breaks after the
    first paragraph, which then break sentences in the middle on any terminal wider or narrower than the code."""
    for info in typer_app.registered_commands:
        doc = info.help or inspect.getdoc(info.callback)
        if doc:
            info.help = _unwrap(doc)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _unwrap_help(group.typer_instance)


class _PlainFlags:
    """Help that shows a flag as `--json`, not `--json <bool>`: Typer 0.29 prints the Python type of every
    option, flags included, where a flag takes no value. An empty metavar makes Typer print none."""

    def get_params(self, ctx):
        params = super().get_params(ctx)  # a mixin: TyperCommand or TyperGroup follows it
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        return params


class PlainFlagsCommand(_PlainFlags, TyperCommand):
    pass


class PlainFlagsGroup(_PlainFlags, TyperGroup):
    pass


def _plain_flags(typer_app: typer.Typer) -> None:
    """Every command and group of ``typer_app`` shows its flags (--help among them) without a type."""
    typer_app.info.cls = PlainFlagsGroup
    for info in typer_app.registered_commands:
        info.cls = PlainFlagsCommand
    for group in typer_app.registered_groups:
        group.cls = PlainFlagsGroup
        if group.typer_instance is not None:
            _plain_flags(group.typer_instance)


_unwrap_help(app)
_plain_flags(app)


def run() -> None:
    """The ``lwnas`` console script: the Typer app, with every LwnasError caught here, once.

    A user's mistake (a bad study, an unreachable storage, a missing file) prints one line per
    problem and exits non-zero; only a bug in lwnas itself shows a traceback.
    """
    from searchspace.errors import LwnasError

    try:
        app()
    except LwnasError as exc:
        for line in exc.lines():
            err.print(f"[red]error[/red] {escape(line)}", highlight=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    run()
