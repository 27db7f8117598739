"""Safe YAML reading that remembers where every key and value came from.

Study files are validated as a whole and every error names its file and line, so the loader keeps a
map from each value's path (``("space", "groups", "choice")``) to its line. Only YAML's safe tags are
accepted: ``!!python/object`` and friends are an error, never constructed. A key given twice in one
mapping is an error too (plain ``yaml.safe_load`` silently keeps the last one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import re

import yaml

from .errors import LwnasError

Path_ = tuple[Any, ...]


class StudyLoader(yaml.SafeLoader):
    """SafeLoader that also reads ``5.0e6`` and ``1e-3`` as numbers (YAML 1.2; PyYAML needs ``5.0e+6``)."""


StudyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.\d*$|^[-+]?\.\d+$"),
    list("-+0123456789."))


class YamlProblem(LwnasError, ValueError):
    """The file cannot be read as YAML; ``line`` is 1-based (0 when unknown)."""

    def __init__(self, line: int, message: str):
        self.line, self.message = line, message
        super().__init__(f"line {line}: {message}" if line else message)


def load_located(path: str | Path) -> tuple[Any, dict[Path_, int]]:
    """Parse ``path`` safely; return the data and ``{path_in_document: line}``."""
    text = Path(path).read_text()
    return loads_located(text)


def loads_located(text: str) -> tuple[Any, dict[Path_, int]]:
    try:
        node = yaml.compose(text, Loader=StudyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise YamlProblem(mark.line + 1 if mark else 0, f"not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if node is None:
        return None, {}
    lines: dict[Path_, int] = {}
    _check_nodes(node, (), lines, set())
    try:
        data = StudyLoader(text).get_single_data()
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        raise YamlProblem(mark.line + 1 if mark else 0,
                          f"{exc.problem}: only plain YAML values are allowed (tags like !!python/... are refused)") from None
    return data, lines


def _check_nodes(node: yaml.Node, path: Path_, lines: dict[Path_, int], seen_nodes: set[int]) -> None:
    """Record lines and refuse duplicate keys, walking the composed node tree.

    An alias refers to a node already walked: it is not walked again, so nested aliases (a "billion
    laughs" file) cost nothing.
    """
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise YamlProblem(line, f"`{key}` is given twice in one mapping (first on line {seen[key]})")
            seen[key] = line
            lines[(*path, key)] = line
            _check_nodes(value_node, (*path, key), lines, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_nodes(item, (*path, i), lines, seen_nodes)


def line_of(lines: dict[Path_, int], path: Path_) -> int:
    """Line of ``path`` or of its nearest recorded ancestor (0 if none)."""
    path = tuple(path)
    while path:
        for candidate in (path, tuple(p if isinstance(p, int) and not isinstance(p, bool) else str(p) for p in path),
                          tuple(map(str, path))):
            if candidate in lines:  # keys are recorded as written: `1:` is "1", though YAML reads a number
                return lines[candidate]
        path = path[:-1]
    return lines.get((), 0)
