"""``lwnas space validate | show | sample | export-nni``: validate, show and sample a study's search space,
or export it for NNI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from searchspace.domains import show_value
from tuners.cli.file_progress import FileProgress
from tuners.cli.plugins import AllowPlugin, allow

space_app = typer.Typer(
    help="Validate, show, sample and export the search space of a study file.", no_args_is_help=True
)
err = Console(stderr=True, soft_wrap=True)

SAMPLES_HELP = "Points costed to find the cost range and check the constraints (the smallest-width point included)."


def _report(problems: list[tuple[str, str]]) -> None:
    for where, message in problems:
        err.print(f"[red]error[/red] {escape(where)}: {escape(message)}", highlight=False)


def _study_files(paths: list[Path]) -> list[Path]:
    """Files as given; directories expand to the study files in them (files with a `space`)."""
    from searchspace.yamlsource import YamlProblem, load_located

    out = []
    for p in paths:
        if not p.is_dir():
            out.append(p)
            continue
        for f in sorted(p.rglob("*.yaml")):
            try:
                data, _ = load_located(f)
            except YamlProblem:
                out.append(f)  # let the loader report it with its line
                continue
            if isinstance(data, dict) and "space" in data:
                out.append(f)
    return out


def _load(
    path: Path, samples: int, seed: int, progress: bool = True, local: bool = False
) -> tuple[Any, list, list[tuple[str, str]]]:
    """The study, a costed sample and every problem (study file, task, constraints; with ``local``, a training
    device this machine lacks, as a sweep here would meet it)."""
    from searchspace.study import StudyError, load_study
    from searchspace.yamlsource import YamlProblem, load_located

    try:  # the file's bytes and YAML first: a file refused there is reported before torch and the tasks load
        load_located(path)
    except (YamlProblem, FileNotFoundError):
        try:
            load_study(path)
        except StudyError as exc:
            return None, [], list(exc.problems)
    from trainers.cost import CostError
    from tuners.planning.check import (
        constraint_problems,
        cost_sample,
        device_problems,
        open_study,
        task_for_checks,
        task_problems,
    )
    from tuners.planning.costs import StaticCosts

    with Progress(console=err, transient=True, disable=not (progress and err.is_terminal)) as bar:
        job = bar.add_task(f"checking {escape(path.name)}", total=None)  # the task may build its data first
        try:
            study = open_study(path)
            described, task = task_for_checks(study)
        except StudyError as exc:
            return None, [], list(exc.problems)
        problems = task_problems(study, described) + (device_problems(study) if local else [])
        if problems or samples <= 0:
            return study, [], problems
        static = StaticCosts(study, task)
        bar.update(job, description=f"costing {samples} points of {escape(path.name)}", total=samples)
        try:
            sample = cost_sample(study, static, samples, seed, step=lambda: bar.advance(job))
        except CostError as exc:
            constrained = any(c.metric == "memory" for c in study.constraints)
            where = ("constraints", "memory") if constrained else ("objectives",)
            return study, [], [(study.where(where), str(exc))]
    return study, sample, constraint_problems(study, sample)


@space_app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Study files or directories of them (e.g. studies/).")],
    samples: Annotated[int, typer.Option(help=SAMPLES_HELP)] = 8,
    allow_plugin: AllowPlugin = None,
) -> None:
    """Check study files and report every problem at once, each with its file, line and rule.

    Checks the language (unknown keys with did-you-mean, types, empty choices, low > high, conditions on
    unknown knobs), the architecture's rules over the whole discrete part (divisibility, sharing-pattern
    length, kv sharing), the task (family, metric names), and that some point meets the constraints.

    A study that trains on cuda (training: device cuda) needs a GPU on this machine.
    """
    allow(allow_plugin)
    files = _study_files(paths)
    if not files:
        err.print("[red]error[/red] no study files found (a study file has a `space` section)")
        raise typer.Exit(2)
    failed = 0
    with FileProgress(err, len(files), "checking", bar=False) as progress:  # _load shows a bar per file
        for path in files:
            progress.start(path)
            failed += not _validate_one(path, samples)
    if failed:
        err.print(f"{failed} of {len(files)} studies have problems")
        raise typer.Exit(2)


def _validate_one(path: Path, samples: int) -> bool:
    """Check one study file; prints `ok` with its size, or its problems. True when it has none."""
    from searchspace.space_check import discrete_size

    study, _, problems = _load(path, samples, seed=0, local=True)
    if problems:
        _report(problems)
        return False
    from tuners.cli.sweep import _warn_scheduler

    size, exact = discrete_size(study.space)
    err.print(
        f"[green]ok[/green] {escape(str(path))}: {len(study.space.searched)} searched knobs, "
        f"{'' if exact else 'about '}{size:,} discrete combinations",
        highlight=False,
    )
    _warn_scheduler(study)
    return True


@space_app.command()
def show(
    path: Annotated[Path, typer.Argument(help="A study file.")],
    samples: Annotated[int, typer.Option(help=SAMPLES_HELP)] = 16,
    seed: Annotated[int, typer.Option(help="Seed of the costed sample.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
    allow_plugin: AllowPlugin = None,
) -> None:
    """The knobs with their domains and conditions, the size of the discrete part, and the cost range."""
    allow(allow_plugin)
    from searchspace.space_check import discrete_size

    study, sample, problems = _load(path, samples, seed)
    if problems:
        _report(problems)
        raise typer.Exit(2)
    size, exact = discrete_size(study.space)
    summary = _summary(study, sample, size, exact)
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
        return
    _print_summary(study, summary)


def _summary(study, sample, size: int, exact: bool) -> dict[str, Any]:
    knobs = []
    for knob in study.space.knobs:
        domain = knob.domain.describe()
        if knob.written is not None:  # groups: 1 is "no grouping", the points with g_mha and g_ffn off
            left_out = [show_value(v) for v in knob.written.values() if not knob.domain.contains(v)]
            domain += f" ({', '.join(left_out)}: no grouping, where the condition does not hold)"
        knobs.append(
            {
                "knob": knob.name,
                "domain": domain,
                "searched": knob.searched,
                "when": knob.when.describe() if knob.when else None,
                "implied": knob.implied.describe() if knob.implied and knob.implied != knob.when else None,
            }
        )
    costs: dict[str, Any] = {}
    for metric in ("params", "madds", "memory"):
        values = [c.verdict.costs[metric] for c in sample if metric in c.verdict.costs]
        if values:
            costs[metric] = {"min": min(values), "max": max(values)}
    feasible = sum(c.verdict.feasible for c in sample)
    return {
        "study": study.name,
        "task": study.task,
        "family": study.family,
        "objectives": [f"{o.direction} {o.metric}" for o in study.objectives],
        "constraints": [c.describe() for c in study.constraints],
        "budget": {"trials": study.budget.trials, "epochs": study.budget.epochs, "time_s": study.budget.time_s},
        "tuner": {k: getattr(study.tuner, k) for k in ("sampler", "scheduler", "max_concurrent", "seed")},
        "seed_configs": list(study.seed_configs),
        "knobs": knobs,
        "discrete_size": size,
        "discrete_size_exact": exact,
        "sampled": len(sample),
        "feasible": feasible,
        "cost_range": costs,
    }


def _print_summary(study, s: dict[str, Any]) -> None:
    out = Console()
    out.print(
        f"[bold]{escape(study.name)}[/bold]  task {study.task} ({study.family})  "
        f"objectives: {', '.join(s['objectives'])}",
        highlight=False,
    )
    if s["constraints"]:
        out.print(f"constraints: {', '.join(s['constraints'])}", highlight=False)
    b = s["budget"]
    limit = f", at most {b['time_s']:g} s" if b["time_s"] else ""
    tuner = ", ".join(f"{k} {v}" for k, v in s["tuner"].items())
    out.print(f"budget: {b['trials']} trials x {b['epochs']} epochs{limit}; tuner: {tuner}", highlight=False)
    if s["seed_configs"]:
        out.print(f"seed configs: {', '.join(s['seed_configs'])}", highlight=False)
    table = Table("knob", "domain", "condition")
    for k in s["knobs"]:
        condition = " and ".join(filter(None, [k["when"], f"({k['implied']})" if k["implied"] else None]))
        table.add_row(
            k["knob"], escape(k["domain"]) if k["searched"] else f"[dim]{escape(k['domain'])}[/dim]", escape(condition)
        )
    out.print(table)
    out.print(
        f"discrete part: {'' if s['discrete_size_exact'] else 'about '}{s['discrete_size']:,} combinations"
        " (float knobs are continuous); conditions in parentheses are the architecture's own",
        highlight=False,
    )
    if s["cost_range"]:
        parts = [f"{m} {r['min']:,.0f} .. {r['max']:,.0f}" for m, r in s["cost_range"].items()]
        out.print(f"cost range over {s['sampled']} sampled points: {'; '.join(parts)}", highlight=False)
        if study.constraints:
            out.print(f"{s['feasible']} of {s['sampled']} sampled points meet the constraints", highlight=False)


@space_app.command()
def sample(
    path: Annotated[Path, typer.Argument(help="A study file.")],
    n: Annotated[int, typer.Option("-n", help="Number of configurations.")] = 5,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same configurations.")] = 0,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out-dir", "-o", help="Also write each configuration to its own file here (accepted by `lwnas train`)."
        ),
    ] = None,
    constraints: Annotated[
        bool,
        typer.Option("--constraints/--no-constraints", help="Reject points that break the study's static constraints."),
    ] = True,
    allow_plugin: AllowPlugin = None,
) -> None:
    """N valid configurations drawn from the space, as YAML (knobs, `training`, `provenance`).

    Points that break the study's constraints are rejected before they are printed; how many and why
    goes to stderr.
    """
    allow(allow_plugin)
    import numpy as np

    from searchspace.files import dump_config
    from trainers.tasks import adapt_config
    from tuners.planning.check import make_task
    from tuners.planning.costs import StaticCosts

    study, _, problems = _load(path, 0, seed)
    if problems:
        _report(problems)
        raise typer.Exit(2)
    task = make_task(study)
    static = StaticCosts(study, task) if constraints and study.constraints else None
    rng = np.random.default_rng(seed)
    docs: list[str] = []
    drawn, limit = 0, max(100, 50 * n)
    with Progress(console=err, transient=True, disable=static is None or not err.is_terminal) as bar:
        job = bar.add_task("sampling under the constraints", total=n)
        while len(docs) < n and drawn < limit:
            point = study.space.resolve(study.space.sample(rng))
            config = adapt_config(point.config, task)
            drawn += 1
            if static is not None and not static.evaluate(config).feasible:
                continue
            training = {**study.training, **point.training, "epochs": study.budget.epochs}
            provenance = {"study": study.name, "sample": len(docs), "seed": seed, "params": point.params}
            docs.append(dump_config(config, {"training": training, "provenance": provenance}))
            bar.advance(job)
    if static is not None:
        s = static.summary()
        reasons = ", ".join(f"{k}: {v}" for k, v in s["reasons"].items()) or "none"
        err.print(f"constraints: rejected {s['rejected']} of {s['checked']} drawn points ({reasons})", highlight=False)
    if len(docs) < n:
        err.print(f"[red]error[/red] only {len(docs)} of {n} points met the constraints after {drawn} draws")
        raise typer.Exit(1)
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
        for i, doc in enumerate(docs):
            (out_dir / f"{study.name}-{i:03d}.yaml").write_text(doc)
        err.print(f"wrote {len(docs)} files to {out_dir}")
    sys.stdout.write("---\n".join(docs))


@space_app.command("export-nni")
def export_nni(
    path: Annotated[Path, typer.Argument(help="A study file.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    allow_plugin: AllowPlugin = None,
) -> None:
    """NNI's search_space.json for the study (conditionals as nested choices with `_name`)."""
    allow(allow_plugin)
    from searchspace.convert import to_nni

    study, _, problems = _load(path, 0, 0)
    if problems:
        _report(problems)
        raise typer.Exit(2)
    text = json.dumps(to_nni(study.space), indent=2) + "\n"
    if output:
        output.write_text(text)
        err.print(f"wrote {output}")
    else:
        sys.stdout.write(text)
