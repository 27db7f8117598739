"""docs/knobs.md, generated from the knob table (``searchspace/knobs.py``, read from the config classes' fields).

    python -m searchspace.knobs_doc > docs/knobs.md

``tests/test_knob_table.py`` fails when the committed file differs from what this prints.
"""

from __future__ import annotations

from typing import Any

from .knobs import ARCH, FAMILIES, FAMILY_HELP, RULES_TABLE, SECTIONS, TRAINING, ArchKnob, rules_of
from .sharing import MAX_LAYERS

COMMAND = "python -m searchspace.knobs_doc > docs/knobs.md"

INTRO = f"""# Knobs

<!-- Generated from the knob table: edit a field of ArchConfig (searchspace/config.py) or TrainSettings
(searchspace/training.py), then run `{COMMAND}`. -->

One architecture is a flat YAML mapping of these knobs (`searchspace.ArchConfig`). The same names
are used in study files, the CLI, storage, the dashboard and exports. Unset knobs take the
defaults below; family-dependent ones are filled per family, so `ArchConfig.to_dict()` always
returns the complete effective configuration and `ArchConfig.from_dict(cfg.to_dict()) == cfg`.
Every knob, its checks and this page come from one place: the knob's field in `ArchConfig`
(`searchspace/config.py`), whose metadata the knob table (`searchspace/knobs.py`) reads."""

LIMITS = """## Limits

Every integer knob is at least 1 and at most the limit below, far beyond any model of the four
papers. A larger value is refused when the configuration or study is read, with the knob, the value
and the limit (`d_model: must be at most 65,536 (the knob's limit), got 1,000,000,000`), so the cost
model never shapes, let alone allocates, a tensor whose size cannot fit (`searchspace/config.py`,
each field's `limit`). A searched range or choice that crosses a limit is one line per rule it
breaks: the first value checked that breaks it, then `(and N more of the values checked)`."""

MEMORY = """Peak memory is measured by running the model; a point whose fp32 weights, gradients and attention
maps alone need more than 8 GiB is refused instead (`trainers/cost.py`, `MEMORY_PROBE_LIMIT`)."""

TRAINING_INTRO = """## Training knobs

Set in a configuration's or study's `training:` section; those marked searchable may also be
searched in a study's `space` (docs/tasks.md describes the training loop)."""

METADATA = """## Metadata sections of a configuration file

Besides knobs a file may hold `reference` (published figures a paper row must reproduce, see
[paper-fidelity.md](paper-fidelity.md)), `training` and `provenance`; they are not part of the
architecture."""


def show(value: Any) -> str:
    """A value as a study file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"`{value}`"
    if isinstance(value, tuple):
        return f"`{list(value)}`"
    return "none" if value is None else str(value)


def default_text(knob: ArchKnob) -> str:
    """The default column: fixed, per family, or filled where the knob is active."""
    if knob.default_doc is not None:
        return knob.default_doc
    if knob.family_defaults:
        by_value: dict[str, list[str]] = {}
        for family, value in knob.family_defaults.items():
            by_value.setdefault(show(value), []).append(f"`{family}`")
        if len(by_value) == 1:
            return next(iter(by_value))
        return ", ".join(f"{value} ({', '.join(families)})" for value, families in by_value.items())
    if knob.activation is not None and knob.active_default is not None:
        return f"{show(knob.active_default)} when {knob.activation.describe()}"
    return show(knob.default)


def meaning_text(knob: ArchKnob) -> str:
    """The meaning column: the help, then where the knob applies and the rules it takes part in."""
    parts = [knob.help]
    if knob.families != FAMILIES:
        parts.append(f"{', '.join(f'`{f}`' for f in knob.families)} only")
    if knob.kind == "choice" and knob.name != "family":
        parts.append(f"one of {', '.join(f'`{c}`' for c in knob.choices)}")
    if knob.activation is not None:
        parts.append(f"applies only when {knob.activation.describe()} (elsewhere {show(knob.neutral)})")
    rules = rules_of(knob.name)
    if rules:
        parts.append(f"rules: {', '.join(f'`{r}`' for r in rules)}")
    return "; ".join(parts)


def section_table(section: str) -> list[str]:
    rows = ["| knob | default | meaning and rules |", "|---|---|---|"]
    rows += [f"| `{k.name}` | {default_text(k)} | {meaning_text(k)} |" for k in ARCH if k.section == section]
    return rows


def families_table() -> list[str]:
    rows = ["| `family` | model | inputs (forward) |", "|---|---|---|"]
    for family in FAMILIES:
        model, inputs = FAMILY_HELP[family]
        rows.append(f"| `{family}`{' (default)' if family == FAMILIES[0] else ''} | {model} | {inputs} |")
    return rows


def input_table() -> list[str]:
    rows = ["| knob | families | default | meaning |", "|---|---|---|---|"]
    rows += [f"| `{k.name}` | {', '.join(k.families)} | {default_text(k)} | {k.help} |" for k in ARCH if k.input_size]
    return rows


def limits_table() -> list[str]:
    by_limit: dict[int, list[str]] = {}
    for knob in ARCH:
        if knob.kind == "int" and knob.limit is not None:
            by_limit.setdefault(knob.limit, []).append(f"`{knob.name}`")
    rows = ["| knobs | at most |", "|---|---|"]
    for limit in sorted(by_limit):
        extra = "; entries of a sharing pattern" if limit == MAX_LAYERS else ""
        rows.append(f"| {', '.join(by_limit[limit])}{extra} | {limit:,} |")
    rows += [f"| `{k.name}` | {k.limit:,} per side |" for k in ARCH if k.kind == "grid" and k.limit is not None]
    return rows


def rules_table() -> list[str]:
    rows = [
        "## Rules between knobs",
        "",
        "Checked whenever a configuration is built and, over every combination a study can draw, when the",
        "study is read (`searchspace/space_check.py`). An *activation* rule is a knob's `applies only when`:",
        "in a study the knob is searched only where it applies.",
        "",
        "| rule | reads | checks |",
        "|---|---|---|",
    ]
    for r in RULES_TABLE:
        reads = ", ".join(f"`{k}`" for k in sorted(r.reads))
        kind = " (activation)" if r.activation else ""
        rows.append(f"| `{r.name}`{kind} | {reads} | {r.doc} |")
    return rows


def training_table() -> list[str]:
    rows = ["| knob | default | must be | searchable | meaning |", "|---|---|---|---|---|"]
    for k in TRAINING:
        rows.append(f"| `{k.name}` | {show(k.default)} | {k.rule} | {'yes' if k.searchable else 'no'} | {k.help} |")
    return rows


def render() -> str:
    """The whole page."""
    parts: list[str] = [INTRO, "## Families", "\n".join(families_table())]
    for section in SECTIONS[1:-1]:
        parts += [f"## {section}", "\n".join(section_table(section))]
    parts += [
        f"## {SECTIONS[-1]}",
        "\n".join(input_table()),
        "Setting a knob that does not apply to the family is an error that names the families it applies to.",
        "\n".join(rules_table()),
        LIMITS,
        "\n".join(limits_table()),
        MEMORY,
        TRAINING_INTRO,
        "\n".join(training_table()),
        METADATA,
    ]
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    print(render(), end="")
