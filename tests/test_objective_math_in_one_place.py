"""Every sign flip to minimisation and every dominance test of the product lives in ``tuners/fronts/objectives.py``.

Read from the source with ``ast`` (nothing is imported), over ``searchspace``, ``trainers``, ``tuners`` and
``dashboards``. Anywhere but that module the scan fails on:

- a number that depends on a direction: a test of a direction (a comparison with ``"maximize"`` /
  ``"minimize"``, ``MAXIMIZE`` / ``MINIMIZE``, ``StudyDirection.MAXIMIZE``..., or a name holding such a
  comparison) that picks between numbers or arithmetic (``-v if d == "maximize" else v``,
  ``if d == MAXIMIZE: ref.append(0.0)``), a direction test inside arithmetic (``(d == "maximize") * 2 - 1``),
  or a table from directions to numbers (``{"maximize": -1.0, ...}``);
- a dominance test: every coordinate of one point compared with another's (``all(x <= y for x, y in zip(a, b))``,
  ``np.all(a <= b)``, ``(a <= b).all()``), or a function whose name says it tests dominance;
- moocore, or Optuna's private multi-objective helpers, imported.

A test of a direction that picks words (``"max"`` / ``"min"``, ``higher is better``), a sort order or a
validation message is not objective math: it stays where it is shown.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("searchspace", "trainers", "tuners", "dashboards")
THE_MODULE = Path("tuners/fronts/objectives.py")
DIRECTION_WORDS = {"maximize", "minimize", "maximise", "minimise"}
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
NUMERIC_NAMES = {"inf", "nan", "pi"}  # math.inf, np.inf, float("inf") is a call of a string: see _numeric
PRIVATE_MULTI_OBJECTIVE = ("optuna.study._multi_objective", "optuna._hypervolume", "moocore")


def _is_direction(node: ast.AST) -> bool:
    """A direction written out: a string, a constant or an enum member named after one (or a tuple of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower() in DIRECTION_WORDS
    if isinstance(node, ast.Name):
        return node.id.lower() in DIRECTION_WORDS
    if isinstance(node, ast.Attribute):
        return node.attr.lower() in DIRECTION_WORDS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_direction(e) for e in node.elts)
    return False


def _direction_tests(node: ast.AST, flags: set[str]) -> bool:
    """``node`` holds a test of a direction: a comparison with a direction, or a name bound to one."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Compare) and any(map(_is_direction, [sub.left, *sub.comparators])):
            return True
        if isinstance(sub, ast.Name) and sub.id in flags:
            return True
    return False


def _textual(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _numeric(node: ast.AST) -> bool:
    """``node`` computes a number: a numeric literal, infinity, a negation or arithmetic (not text joined with +)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, (int, float)) and not isinstance(sub.value, bool):
            return True
        if isinstance(sub, (ast.Name, ast.Attribute)) and (sub.id if isinstance(sub, ast.Name) else sub.attr) in (
            NUMERIC_NAMES
        ):
            return True
        if isinstance(sub, ast.UnaryOp) and isinstance(sub.op, (ast.USub, ast.UAdd)):
            return True
        if isinstance(sub, ast.BinOp) and not (_textual(sub.left) or _textual(sub.right)):
            return True
    return False


def _flag_names(tree: ast.AST) -> set[str]:
    """Names bound to a test of a direction anywhere in the module (``flip = d == "maximize"``)."""
    flags: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _direction_tests(node.value, set()):
                flags |= {t.id for t in targets if isinstance(t, ast.Name)}
    return flags


def _all_of_comparison(node: ast.AST) -> bool:
    """A comparison of two points coordinate by coordinate: no side of it is a literal."""
    return (
        isinstance(node, ast.Compare)
        and any(isinstance(op, ORDERING) for op in node.ops)
        and not any(isinstance(side, ast.Constant) for side in [node.left, *node.comparators])
    )


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def findings(source: str, where: str = "<snippet>") -> Iterator[str]:
    """Each sign flip, dominance test or forbidden import in ``source``, as ``where:line: what``."""
    tree = ast.parse(source)
    flags = _flag_names(tree)
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.IfExp) and _direction_tests(node.test, flags):
            if _numeric(node.body) or _numeric(node.orelse):
                yield f"{line}: a number chosen by a direction (sign flip)"
        elif isinstance(node, ast.If) and _direction_tests(node.test, flags):
            if any(_numeric(statement) for statement in [*node.body, *node.orelse]):
                yield f"{line}: a number chosen by a direction (sign flip)"
        elif isinstance(node, (ast.BinOp, ast.UnaryOp)) and not isinstance(node.op, ast.Not):
            operands = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.operand]
            direct = [o for o in operands if not isinstance(o, ast.IfExp)]  # an IfExp is judged on its own
            if not any(map(_textual, operands)) and any(_direction_tests(o, flags) for o in direct):
                yield f"{line}: arithmetic on a direction (sign flip)"
        elif isinstance(node, ast.Dict):
            if any(k is not None and _is_direction(k) for k in node.keys) and any(map(_numeric, node.values)):
                yield f"{line}: a table from directions to numbers (sign flip)"
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            if name == "all" and node.args and isinstance(node.args[0], ast.GeneratorExp):
                if _all_of_comparison(node.args[0].elt):
                    yield f"{line}: every coordinate of one point compared with another's (dominance test)"
            elif name == "all" and node.args and _all_of_comparison(node.args[0]):
                yield f"{line}: every coordinate of one point compared with another's (dominance test)"
            elif name == "all" and isinstance(node.func, ast.Attribute) and _all_of_comparison(node.func.value):
                yield f"{line}: every coordinate of one point compared with another's (dominance test)"
            elif name in ("where", "select", "choose") and any(_direction_tests(a, flags) for a in node.args):
                yield f"{line}: a number chosen by a direction (sign flip)"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "dominat" in node.name.lower():
            yield f"{line}: function {node.name} (dominance test)"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.startswith(PRIVATE_MULTI_OBJECTIVE):
                    yield f"{line}: imports {name} (objective math)"


def product_findings(root: Path = ROOT) -> list[str]:
    """``findings`` of every product module but ``tuners/fronts/objectives.py`` under ``root``."""
    out: list[str] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if path.relative_to(root) != THE_MODULE:
                out += findings(path.read_text(), str(path.relative_to(root)))
    return out


def test_objective_math_lives_in_one_module():
    assert product_findings() == []


def decoding_findings(source: str, where: str = "<snippet>") -> Iterator[str]:
    """Reads of a study's objectives past ``decoded_objectives``: the ``lwnas:objectives`` key anywhere but as
    the key ``set_user_attr`` writes, Optuna's metric names anywhere but in a function handed to
    ``decoded_objectives``, ``StudyDirection`` anywhere (the windowed sampler's mirror study aside)."""
    tree = ast.parse(source)
    allowed: set[int] = set()  # ids of nodes where a read is the one decoder's business or a write
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) == "set_user_attr" and node.args:
            allowed |= {id(sub) for sub in ast.walk(node.args[0])}
        if isinstance(node, ast.Call) and _call_name(node) == "decoded_objectives":
            allowed |= {id(sub) for arg in node.args if isinstance(arg, ast.Lambda) for sub in ast.walk(arg)}
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name == "STUDY_OBJECTIVES" and id(node) not in allowed:
            yield f"{line}: reads the stored objectives (decoded_objectives does)"
        elif name == "metric_names" and id(node) not in allowed:
            yield f"{line}: reads Optuna's metric names (decoded_objectives does)"
        elif name == "StudyDirection" and not where.endswith("windowed_sampler.py"):
            yield f"{line}: names StudyDirection (lwnas's objectives are searchspace.study.Objective)"


def test_a_study_s_objectives_are_decoded_in_one_place():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.relative_to(ROOT) not in (THE_MODULE, Path("tuners/store/keys.py")):
                found += decoding_findings(path.read_text(), str(path.relative_to(ROOT)))
    assert found == []
    old_ways = [  # as tuners/fronts/status.py, tuners/driver/front_stop.py and dashboards/data.py decoded them
        "names = ot_study.metric_names or [f'objective_{i}' for i in range(len(ot_study.directions))]\n",
        "stored = user_attrs.get(keys.STUDY_OBJECTIVES)\n",
        "signs = [1 if d == optuna.study.StudyDirection.MINIMIZE else -1 for d in study.directions]\n",
    ]
    assert all(list(decoding_findings(source)) for source in old_ways)
    written = "ot_study.set_user_attr(keys.STUDY_OBJECTIVES, encoded_objectives(study.objectives))\n"
    assert list(decoding_findings(written)) == []


def test_the_module_says_so():
    assert "no other\nmodule writes a sign flip or a dominance test" in (ROOT / THE_MODULE).read_text()


# The copies this scan was written against, as they stood before they moved into tuners/fronts/objectives.py
# (main at 9a2aab3: tuners/driver/windowed_sampler.py, tuners/fronts/seeds.py, dashboards/plots.py,
# dashboards/data.py, dashboards/importance.py), and other spellings of the same thing.
COPIES = {
    "windowed sampler: minimised": (
        "def _minimised(values, directions):\n"
        "    return tuple(v if d == StudyDirection.MINIMIZE else -v for v, d in zip(values, directions))\n"
    ),
    "windowed sampler: dominance": "def _weakly_dominates(a, b):\n    return all(x <= y for x, y in zip(a, b))\n",
    "seeds: moved in its favour": (
        "moved = [v + (s or 0) * (1 if d == MAXIMIZE else -1) for v, s, d in zip(values, noise, directions)]\n"
    ),
    "plots: never-trained points at the worse edge": (
        'values[missing] = lo - pad if data.directions[i] == "maximize" else hi + pad\n'
    ),
    "data: incremental front": (
        "if not any(np.all(point(f) <= p) for f in front):\n"
        "    front = [f for f in front if not np.all(p <= point(f))]\n"
    ),
    "objectives: sign": 'signs = np.array([-1.0 if d == "maximize" else 1.0 for d in directions])\n',
    "objectives: worst value": "worst = -math.inf if direction == MAXIMIZE else math.inf\n",
    "objectives: reference point": (
        "for i, direction in enumerate(directions):\n"
        "    if direction == MAXIMIZE:\n        ref.append(0.0)\n    else:\n        ref.append(1.1 * worst[i])\n"
    ),
    "a flag, then arithmetic": "flip = direction == 'maximize'\nv = -v if flip else v\n",
    "a bool in arithmetic": "sign = (d == StudyDirection.MAXIMIZE) * -2 + 1\n",
    "a table": "SIGN = {'maximize': -1.0, 'minimize': 1.0}\n",
    "numpy's where": "s = np.where(np.array(directions) == 'maximize', -1, 1)\n",
    "a method all": "keep = (a <= b).all()\n",
    "moocore": "import moocore\n",
    "optuna's private helpers": "from optuna.study._multi_objective import _dominates\n",
}
# Direction tests that are not math: words, a sort order, a check of the study file.
NOT_MATH = {
    "a label": "table.add_column(f\"{n} ({'max' if d == 'maximize' else 'min'})\", justify='right')\n",
    "a sentence": "title = f\"{m} ({'higher' if o.direction == MAXIMIZE else 'lower'} is better)\"\n",
    "a sort order": "maximised = o.direction == MAXIMIZE\ndescending = st.toggle('Descending', value=maximised)\n",
    "a study-file check": (
        "if metric in COST_METRICS and direction != 'minimize':\n"
        "    problems.append((where, f'`{metric}` is a cost: it can only be minimised'))\n"
    ),
    "a default": "default = 'minimize' if metric in COST_METRICS else 'maximize'\n",
    "a bound, not a point": "ok = all(v <= 0 for v in constraints)\n",
}


def test_the_scan_catches_every_copy_it_replaced():
    caught = {name: list(findings(source)) for name, source in COPIES.items()}
    assert [name for name, found in caught.items() if not found] == []


def test_the_scan_leaves_words_and_checks_alone():
    assert {name: list(findings(source)) for name, source in NOT_MATH.items()} == {name: [] for name in NOT_MATH}
