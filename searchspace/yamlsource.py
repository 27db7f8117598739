"""Safe YAML reading that remembers where every key and value came from.

Study files are validated as a whole and every error names its file and line, so the loader keeps a
map from each value's path (``("space", "groups", "choice")``) to its line. Only YAML's safe tags are
accepted: ``!!python/object`` and friends are an error, never constructed. A key given twice in one
mapping is an error too (plain ``yaml.safe_load`` silently keeps the last one).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from .errors import LwnasError

Path_ = tuple[Any, ...]


class StudyLoader(yaml.SafeLoader):
    """SafeLoader that also reads ``5.0e6`` and ``1e-3`` as numbers (YAML 1.2; PyYAML needs ``5.0e+6``), and
    refuses YAML 1.1's base-60 numbers (``190:20:30`` would be the integer 685,230) instead of reading them."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        _refuse_sexagesimal(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        _refuse_sexagesimal(node)
        return super().construct_yaml_float(node)


def _refuse_sexagesimal(node: yaml.ScalarNode) -> None:
    if ":" in str(node.value):
        raise YamlProblem(
            node.start_mark.line + 1,
            f"{str(node.value)[:40]!r} is a base-60 number in YAML 1.1, not a plain number: write the number "
            f"itself (e.g. 190), or quote it if it is text",
        )


StudyLoader.add_constructor("tag:yaml.org,2002:int", StudyLoader.construct_yaml_int)
StudyLoader.add_constructor("tag:yaml.org,2002:float", StudyLoader.construct_yaml_float)


StudyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.\d*$|^[-+]?\.\d+$"),
    list("-+0123456789."),
)


class YamlProblem(LwnasError, ValueError):
    """The file cannot be read as YAML; ``line`` is 1-based (0 when unknown)."""

    def __init__(self, line: int, message: str):
        self.line, self.message = line, message
        super().__init__(f"line {line}: {message}" if line else message)


# Bounds on what reading one file may cost, whatever it holds. Study and configuration files are a
# few KiB; these stop hostile files (a "billion laughs" of nested aliases, thousands of `[`, a
# million-digit number) before they cost memory, recursion or time.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 64  # nested mappings and lists
MAX_VALUES = 100_000  # values in the document, each alias counted at its full expansion
MAX_NUMBER_CHARS = 64  # Python parses a long number in quadratic time

_COLLECTION_START = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_COLLECTION_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
# The plain values a study or configuration holds; every other tag (``!!binary``, ``!!set``, ``!!omap``,
# ``!!python/...``, a local ``!foo``) is refused before anything is constructed.
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "timestamp", "seq", "map", "merge")
)


def read_text(path: str | Path) -> str:
    """The file's text: at most ``MAX_FILE_BYTES``, UTF-8 (FileNotFoundError passes through)."""
    try:
        # non-blocking open: a FIFO nobody writes to would block a plain open forever; it reads as empty instead,
        # while a pipe with a writer (/dev/stdin) still reads what it is sent once blocking is restored
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)  # never more, whatever the file (or device) holds
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise YamlProblem(0, f"cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise YamlProblem(0, f"is larger than {MAX_FILE_BYTES:,} bytes, the limit for a study or configuration file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        raise YamlProblem(
            raw.count(b"\n", 0, exc.start) + 1,
            f"not UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start - line_start + 1} (save the file as UTF-8)",
        ) from None


def load_located(path: str | Path) -> tuple[Any, dict[Path_, int]]:
    """Parse ``path`` safely; return the data and ``{path_in_document: line}``."""
    return loads_located(read_text(path))


def loads_located(text: str) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML text within the bounds above; return the data and ``{path_in_document: line}``."""
    if len(text) > MAX_FILE_BYTES:
        raise YamlProblem(
            0, f"is larger than {MAX_FILE_BYTES:,} characters, the limit for a study or configuration file"
        )
    try:
        _check_bounds(text)
        node = yaml.compose(text, Loader=StudyLoader)
    except yaml.reader.ReaderError as exc:  # a control character: located by position, not by mark
        raise YamlProblem(
            text.count("\n", 0, exc.position) + 1,
            f"not valid YAML: control character U+{int(exc.character):04X} is not allowed",
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise YamlProblem(
            mark.line + 1 if mark else 0, f"not valid YAML: {getattr(exc, 'problem', None) or exc}"
        ) from None
    if node is None:
        return None, {}
    lines: dict[Path_, int] = {}
    _check_nodes(node, (), lines, set())
    try:
        data = StudyLoader(text).get_single_data()
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        raise YamlProblem(
            mark.line + 1 if mark else 0,
            f"{exc.problem}: only plain YAML values are allowed (tags like !!python/... are refused)",
        ) from None
    return data, lines


def _check_bounds(text: str) -> None:
    """Refuse deep nesting, alias expansion beyond ``MAX_VALUES`` and overlong numbers, from the event
    stream (PyYAML's parser is iterative; its composer recurses, so this runs first)."""
    resolver = StudyLoader("")
    open_counts: list[list] = []  # per open collection: [anchor, values so far]
    expanded: dict[str, int] = {}  # anchor -> values its node expands to
    total = 0
    for event in yaml.parse(text, Loader=StudyLoader):
        line = event.start_mark.line + 1 if event.start_mark else 0  # every parsed event has its mark
        if isinstance(event, _COLLECTION_START):
            if len(open_counts) >= MAX_DEPTH:
                raise YamlProblem(line, f"nested more than {MAX_DEPTH} levels deep")
            open_counts.append([event.anchor, 1])
            continue
        if isinstance(event, _COLLECTION_END):
            anchor, n = open_counts.pop()
        elif isinstance(event, yaml.AliasEvent):
            anchor, n = None, expanded.get(event.anchor or "", 1)  # an alias always names its anchor
        elif isinstance(event, yaml.ScalarEvent):
            anchor, n = event.anchor, 1
            _check_number(resolver, event, line)
        else:
            continue
        if anchor is not None:
            expanded[anchor] = n
        if open_counts:
            open_counts[-1][1] += n
        else:
            total += n
        if total > MAX_VALUES or (open_counts and open_counts[-1][1] > MAX_VALUES):
            raise YamlProblem(line, f"holds more than {MAX_VALUES:,} values once its aliases (*name) are expanded")


def _check_number(resolver: yaml.SafeLoader, event: yaml.ScalarEvent, line: int) -> None:
    if len(event.value) <= MAX_NUMBER_CHARS:
        return
    tag = event.tag if event.tag not in (None, "!") else resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag in _NUMBER_TAGS:
        raise YamlProblem(line, f"a number written with {len(event.value):,} characters (at most {MAX_NUMBER_CHARS})")


def _check_nodes(node: yaml.Node, path: Path_, lines: dict[Path_, int], seen_nodes: set[int]) -> None:
    """Record lines and refuse duplicate keys, walking the composed node tree.

    An alias refers to a node already walked: it is not walked again, so nested aliases (a "billion
    laughs" file) cost nothing.
    """
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    _check_tag(node)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            _check_tag(key_node)
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


def _check_tag(node: yaml.Node) -> None:
    """Refuse a node whose tag is not a plain value's (the constructor's line for a tag it has none for)."""
    if node.tag not in _PLAIN_TAGS:
        raise YamlProblem(
            node.start_mark.line + 1,
            f"could not determine a constructor for the tag {node.tag[:80]!r}: only plain YAML values are allowed "
            f"(tags like !!python/... are refused)",
        )


def line_of(lines: dict[Path_, int], path: Path_) -> int:
    """Line of ``path`` or of its nearest recorded ancestor (0 if none)."""
    path = tuple(path)
    while path:
        for candidate in (
            path,
            tuple(p if isinstance(p, int) and not isinstance(p, bool) else str(p) for p in path),
            tuple(map(str, path)),
        ):
            if candidate in lines:  # keys are recorded as written: `1:` is "1", though YAML reads a number
                return lines[candidate]
        path = path[:-1]
    return lines.get((), 0)
