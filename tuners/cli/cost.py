"""``lwnas cost``: evaluate configuration files and render the costs as a table, JSON or Markdown."""

from __future__ import annotations

import enum
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, JustifyMethod
from rich.table import Table

from searchspace.files import ConfigFile, find_config_files, load_config_file
from searchspace.latency_settings import LatencySettings
from tuners.cli.file_progress import FileProgress

if TYPE_CHECKING:  # the cost model needs torch; `lwnas --help` must not import it
    from searchspace import ArchConfig
    from trainers import CostReport
    from trainers.latency import Latency
    from trainers.reference import Comparison
    from trainers.tasks import Task


class CostFormat(enum.StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


@dataclass
class CostRow:
    path: Path
    file: ConfigFile
    report: CostReport
    comparisons: list[Comparison]
    latency: list[Latency] = field(default_factory=list)  # batch 1, then the asked batch size (--latency)


def cost_rows(
    paths: list[Path],
    memory: bool,
    device: str,
    progress: Console,
    task: str | None = None,
    latency: LatencySettings | None = None,
) -> list[CostRow]:
    """Load and cost every file (directories expand to their YAML files), with a progress bar.

    With a task (``task`` or the file's own `task` section) a configuration is costed at the task's
    input sizes, the same adaptation training applies, so the figures are the trained model's.
    """
    from trainers import cost
    from trainers.reference import compare
    from tuners.export.config_task import config_task

    files = [load_config_file(p) for p in find_config_files(paths)]  # validate all before any work
    tasks: dict = {}
    configs = []
    for f in files:
        the_task = config_task(f, task, tasks)
        configs.append(_at_task(f, the_task) if the_task else f.config)
    rows = []
    with FileProgress(progress, len(files), "costing") as bar:
        for f, config in zip(files, configs):
            bar.start(f.path)
            report = cost(config, memory=memory, device=device)
            measured = _latencies(config, latency) if latency else []
            rows.append(
                CostRow(f.path, f, report, compare(config, report, f.reference) if f.reference else [], measured)
            )
    return rows


def _latencies(config: ArchConfig, settings: LatencySettings) -> list[Latency]:
    """Forward latency at batch 1 and at the asked batch size (once when that is 1)."""
    from trainers.latency import config_latencies

    return config_latencies(config, sorted({1, settings.batch_size}), settings.device, settings.threads, settings.mode)


def _latency_text(lat: Latency) -> str:
    return f"{lat.ms:.3f} ms (CV {lat.cv:.1%}, n={lat.repeats}, {lat.mode})"


def _at_task(f: ConfigFile, task: Task) -> ArchConfig:
    """``f``'s configuration at the task's input sizes; a mismatch names the file (a folder has many)."""
    from searchspace.errors import ConfigError
    from trainers.tasks import adapt_config

    try:
        return adapt_config(f.config, task)
    except ConfigError as exc:
        raise ConfigError([(f"{f.path}: {where}", message) for where, message in exc.problems]) from None


def _human(n: int | None, unit: str = "") -> str:
    if n is None:
        return "-"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{n / scale:.3f}{suffix}{unit}"
    return f"{n}{unit}"


def render_cost(rows: list[CostRow], fmt: CostFormat) -> str:
    if fmt is CostFormat.json:
        payload = [_row_json(r) for r in rows]
        return json.dumps(payload[0] if len(payload) == 1 else payload, indent=2) + "\n"
    if fmt is CostFormat.markdown:
        return _markdown(rows)
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, force_terminal=False)
    console.print(_row_table(rows[0]) if len(rows) == 1 else _summary_table(rows))
    return buffer.getvalue()


def _row_json(row: CostRow) -> dict:
    out = {"config": str(row.path), **row.report.to_dict(), "knobs": row.file.config.to_dict()}
    if row.latency:
        out["latency"] = [lat.to_dict() for lat in row.latency]
    if row.comparisons:
        out["reference"] = [
            {
                "metric": c.metric,
                "scope": c.scope,
                "paper": c.paper.text,
                "ours": c.ours,
                "rel_error": round(c.rel_error, 5),
                "matches": c.matches,
                "asserted": c.asserted,
            }
            for c in row.comparisons
        ]
    return out


def _row_table(row: CostRow) -> Table:
    r = row.report
    table = Table(title=str(row.path), title_justify="left", show_edge=False)
    table.add_column("section")
    table.add_column("params", justify="right")
    table.add_column("MAdds", justify="right")
    for section in r.params_breakdown:
        label = "  of which attention" if section == "attention" else section
        table.add_row(label, f"{r.params_breakdown[section]:,}", f"{r.madds_breakdown.get(section, 0):,}")
    table.add_row("[b]total[/b]", f"[b]{r.params:,}[/b]", f"[b]{r.madds:,}[/b]", end_section=True)
    if r.memory_bytes is not None:
        table.add_row(f"peak memory fwd+bwd, batch 1 ({r.memory_device})", _human(r.memory_bytes, "B"), "")
    if r.attention_map_bytes is not None:
        table.add_row("attention maps (naive kernel)", _human(r.attention_map_bytes, "B"), "")
    for lat in row.latency:
        table.add_row(f"latency, batch {lat.batch} (median)", _latency_text(lat), lat.device)
    for c in row.comparisons:
        verdict = "ok" if c.matches else ("MISMATCH" if c.asserted else "paper inconsistent")
        table.add_row(
            f"paper {c.metric} ({c.scope})", c.paper.text, f"ours {_human(c.ours)} {c.rel_error:+.2%} {verdict}"
        )
    return table


def _verdict(comparisons: list[Comparison]) -> str:
    if not comparisons:
        return ""
    if any(c.asserted and not c.matches for c in comparisons):
        return "MISMATCH"
    return "paper inconsistent" if any(not c.matches for c in comparisons) else "reproduced"


def _summary_table(rows: list[CostRow]) -> Table:
    """One line per configuration: the overview for a directory of files."""
    table = Table(show_edge=False)
    batches = sorted({lat.batch for row in rows for lat in row.latency})
    columns: list[tuple[str, JustifyMethod]] = [
        ("configuration", "left"),
        ("params", "right"),
        ("MAdds", "right"),
        ("peak memory", "right"),
        *((f"latency b{b} (CV)", "right") for b in batches),
        ("paper", "left"),
    ]
    for name, justify in columns:
        table.add_column(name, justify=justify)
    for row in rows:
        r = row.report
        figures = ", ".join(f"{c.metric}/{c.scope} {c.paper.text}: {c.rel_error:+.2%}" for c in row.comparisons)
        paper = f"{_verdict(row.comparisons)} ({figures})" if figures else ""
        by_batch = {lat.batch: f"{lat.ms:.3f} ms ({lat.cv:.0%})" for lat in row.latency}
        table.add_row(
            str(row.path),
            _human(r.params),
            _human(r.madds),
            _human(r.memory_bytes, "B"),
            *(by_batch.get(b, "-") for b in batches),
            paper,
        )
    devices = sorted({f"{lat.device} ({lat.mode})" for row in rows for lat in row.latency})
    if devices:
        table.caption = "latency measured on " + "; ".join(devices)
    return table


def _markdown(rows: list[CostRow]) -> str:
    """The paper-vs-ours table; with the peak-memory column when memory was measured."""
    memory = any(r.report.memory_bytes is not None for r in rows)
    head = ["configuration", "table", "row", "metric", "scope", "paper", "ours", "difference", "verdict"]
    if memory:
        head.append(f"peak memory fwd+bwd, batch 1 ({rows[0].report.memory_device})")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        ref = row.file.reference or {}
        for c in row.comparisons:
            verdict = "reproduced" if c.matches else ("**not reproduced**" if c.asserted else "paper inconsistent")
            line = (
                f"| `{row.path}` | {ref.get('table', '')} | {ref.get('row', '')} | {c.metric} | {c.scope} | "
                f"{c.paper.text} | {c.ours:,} | {c.rel_error:+.2%} | {verdict} |"
            )
            lines.append(line + (f" {_human(row.report.memory_bytes, 'B')} |" if memory else ""))
    return "\n".join(lines) + "\n"
