"""Configuration files: one architecture as a flat YAML mapping of knobs.

Besides the knobs, a file may carry metadata sections that are not part of the architecture:
``reference`` (the published figures a paper-table row should reproduce), ``task`` and
``task_options`` (the task an exported trial trained on), ``training`` (training hyperparameters)
and ``provenance`` (where an exported configuration came from).
YAML is read like a study file (``yamlsource``): safe tags only, duplicate keys refused, bounded size,
nesting and alias expansion, UTF-8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .config import ArchConfig, knob_names
from .errors import ConfigError, did_you_mean
from .training import training_problems
from .yamlsource import YamlProblem, line_of, load_located

METADATA_SECTIONS = ("reference", "task", "task_options", "training", "provenance")
STUDY_KEYS = ("space", "objectives")  # keys only a study file has


@dataclass(frozen=True)
class ConfigFile:
    """A parsed configuration file: the architecture plus its metadata sections."""

    path: Path
    config: ArchConfig
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def reference(self) -> dict[str, Any] | None:
        return self.metadata.get("reference")


class ConfigFileError(ConfigError):
    """A configuration file could not be read; messages carry the file name."""


def load_config_file(path: str | Path) -> ConfigFile:
    """Read and validate one configuration file; every problem is reported at once."""
    path = Path(path)
    try:
        data, lines = load_located(path)  # safe tags only, duplicate keys refused, size/depth/aliases bounded
    except FileNotFoundError:
        raise ConfigFileError([(str(path), "no such file")]) from None
    except YamlProblem as exc:
        raise ConfigFileError([(f"{path}:{exc.line}" if exc.line else str(path), exc.message)]) from None
    if not isinstance(data, dict):
        raise ConfigFileError([(str(path), f"expected a mapping of knobs, got {type(data).__name__}")])
    if any(k in data for k in STUDY_KEYS):
        raise ConfigFileError(
            [
                (
                    str(path),
                    "this is a study file (it has a search `space`), not one configuration; "
                    "use `lwnas sweep` to search it, or `lwnas space show|sample|validate`",
                )
            ]
        )
    # A bad training value would fail the run only after the data is loaded: refuse it here, with its line.
    training = [
        (f"{path}:{line_of(lines, where)}: {'.'.join(map(str, where))}", message)
        for where, message in training_problems(data.get("training"))
    ]
    metadata = {k: data.pop(k) for k in METADATA_SECTIONS if k in data}
    allowed = (*knob_names(), *METADATA_SECTIONS)
    unknown = [(f"{path}: {k}", f"unknown key{did_you_mean(k, allowed)}") for k in data if k not in allowed]
    try:
        config = ArchConfig.from_dict({k: v for k, v in data.items() if k in knob_names()})
    except ConfigError as exc:
        raise ConfigFileError(unknown + [(f"{path}: {k}", m) for k, m in exc.problems] + training) from None
    if unknown or training:
        raise ConfigFileError(unknown + training)
    return ConfigFile(path, config, metadata)


def dump_config(config: ArchConfig, metadata: dict[str, Any] | None = None) -> str:
    """YAML text of a configuration (knobs first, then metadata sections)."""
    data = config.to_dict()
    data.update(metadata or {})
    return yaml.safe_dump(data, sort_keys=False)


def find_config_files(paths: Sequence[str | Path]) -> list[Path]:
    """Expand directories into their ``*.yaml`` files (sorted, recursively); keep files as given."""
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.yaml")) if p.is_dir() else [p])
    return out
