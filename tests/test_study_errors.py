"""Every error class of the study-file language: its message, the file and the line it points at.

Each test writes a small study with tmp_path, loads it the way ``lwnas`` does
(``load_study(path, task_family=...)``) and checks the key phrase of the message and that its location
(``file:LINE: dotted.path``) names the file, the right line and the right path. The task and constraint
checks go through ``tuners.planning.check`` and ``lwnas space validate``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchspace.study import StudyError, load_study, loads_study
from tuners.cli.main import app
from tuners.planning.check import (
    check_sweep,
    constraint_problems,
    cost_sample,
    make_task,
    open_study,
    task_family,
    task_problems,
    unmet_constraints,
)
from tuners.planning.costs import StaticCosts

REPO = Path(__file__).resolve().parents[1]
LOCATION = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?:: (?P<where>.+))?$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---- helpers -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    where: str | None  # dotted path inside the study; None for problems of the whole file
    message: str


def text_of(yaml: str) -> str:
    """Dedented study text; its first line is line 1."""
    return textwrap.dedent(yaml).lstrip("\n")


def line_with(text: str, needle: str) -> int:
    """1-based number of the one line of ``text`` that contains ``needle``."""
    found = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(found) == 1, f"{needle!r} must occur on exactly one line, found on {found}"
    return found[0]


def write(tmp_path: Path, yaml: str, name: str = "study.yaml") -> tuple[Path, str]:
    text = text_of(yaml)
    path = tmp_path / name
    path.write_text(text)
    return path, text


def parse(location: str, message: str) -> Problem:
    match = LOCATION.match(location)
    assert match, f"location {location!r} is not `file:LINE[: path]`"
    return Problem(match["file"], int(match["line"]), match["where"], message)


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(StudyError) as info:
        load_study(path, task_family=task_family)
    problems = info.value.problems
    assert problems, "a StudyError must carry at least one problem"
    for location, message in problems:  # str(err) lists every problem as `location: message`
        assert f"{location}: {message}" in str(info.value)
    return [parse(location, message) for location, message in problems]


def the_problem(problems: list[Problem], where: str | None) -> Problem:
    found = [p for p in problems if p.where == where]
    assert len(found) == 1, f"expected one problem at {where!r}, got {problems}"
    return found[0]


def check(tmp_path: Path, yaml: str, where: str | None, needle: str, *fragments: str, alone: bool = True) -> Problem:
    """Load ``yaml``; the problem at ``where`` is on the line containing ``needle`` and says ``fragments``."""
    path, text = write(tmp_path, yaml)
    problems = problems_of(path)
    if alone:
        assert len(problems) == 1, problems
    problem = the_problem(problems, where)
    assert problem.file == str(path)
    assert problem.line == line_with(text, needle), problem
    for fragment in fragments:
        assert fragment in problem.message, problem
    return problem


def validate(*args: str):
    result = CliRunner().invoke(app, ["space", "validate", *map(str, args)])
    return result, ANSI.sub("", result.output)


@dataclass(frozen=True)
class Case:
    id: str
    yaml: str
    where: str | None
    needle: str
    fragments: tuple[str, ...]
    alone: bool = True


def cases(*items: Case):
    return pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in items])


def run_case(tmp_path: Path, case: Case) -> None:
    check(tmp_path, case.yaml, case.where, case.needle, *case.fragments, alone=case.alone)


# ---- YAML itself ---------------------------------------------------------------------------------
def test_not_valid_yaml_names_the_line(tmp_path):
    path, text = write(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        space:
          d_model: 32
           heads: 4
        """,
    )
    [problem] = problems_of(path)
    assert problem.file == str(path) and problem.where is None
    assert problem.line == line_with(text, "heads: 4")
    assert problem.message.startswith("not valid YAML:")


def test_tab_indentation_is_not_valid_yaml(tmp_path):
    path, text = write(tmp_path, "task: digits\nobjectives: [accuracy]\nspace:\n\td_model: 32\n")
    [problem] = problems_of(path)
    assert (problem.line, problem.where) == (4, None)
    assert "not valid YAML" in problem.message and "'\\t'" in problem.message


def test_python_tag_is_refused_and_never_executed(tmp_path):
    marker = tmp_path / "executed"
    path, text = write(
        tmp_path,
        f"""
        task: digits
        objectives: [accuracy]
        space:
          d_model: !!python/object/apply:os.system ["touch {marker}"]
        """,
    )
    [problem] = problems_of(path)
    assert problem.file == str(path)
    assert problem.line == line_with(text, "python/object/apply")
    assert "tags like !!python/... are refused" in problem.message
    assert "os.system" in problem.message
    assert not marker.exists(), "the tag was constructed: os.system ran"


def test_python_name_tag_is_refused(tmp_path):
    path, text = write(
        tmp_path,
        """
        task: !!python/name:os.system
        objectives: [accuracy]
        space: {d_model: 32}
        """,
    )
    [problem] = problems_of(path)
    assert problem.line == 1 and "only plain YAML values are allowed" in problem.message


def test_duplicate_key_names_both_lines(tmp_path):
    path, text = write(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        space:
          d_model: {choice: [32, 64]}
          heads: 4
          d_model: 64
        """,
    )
    [problem] = problems_of(path)
    assert problem.file == str(path)
    assert problem.line == line_with(text, "d_model: 64")
    assert problem.message == "`d_model` is given twice in one mapping (first on line 4)"


def test_duplicate_top_level_key(tmp_path):
    path, text = write(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        task: shapes-vqa
        space: {d_model: 32}
        """,
    )
    [problem] = problems_of(path)
    assert problem.line == 3 and "`task` is given twice" in problem.message and "first on line 1" in problem.message


def test_yaml_alias_bomb_is_refused_quickly(tmp_path):
    """A 400-byte file of nested aliases ("billion laughs") is refused by its expanded size, at once.

    The line map walks each node once and the bound counts each alias at its expansion without
    building it, so six levels (a million values) end in a located error, not hours of walking.
    """
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(levels) + "\n")
    code = (
        "import sys; from searchspace.yamlsource import YamlProblem, load_located\n"
        "try: load_located(sys.argv[1])\nexcept YamlProblem as exc: print(exc)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], cwd=REPO, timeout=8, check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "line 5: holds more than 100,000 values once its aliases (*name) are expanded"


def test_empty_file_is_not_a_study(tmp_path):
    path, _ = write(tmp_path, "")
    with pytest.raises(StudyError) as info:
        load_study(path, task_family=task_family)
    [(location, message)] = info.value.problems
    assert location == str(path) and "a study is a mapping" in message


def test_a_list_is_not_a_study(tmp_path):
    path, _ = write(tmp_path, "- task: digits\n")
    [problem] = problems_of(path)
    assert problem.line == 1 and "a study is a mapping with `task` and `space`, got list" in problem.message


def test_missing_file(tmp_path):
    with pytest.raises(StudyError) as info:
        load_study(tmp_path / "nope.yaml")
    assert info.value.problems == [(str(tmp_path / "nope.yaml"), "no such file")]


def test_loads_study_names_the_given_name(tmp_path):
    with pytest.raises(StudyError) as info:
        loads_study(
            "task: digits\nobjectives: [accuracy]\nspace:\n  d_modle: 32\n", name="inline.yaml", task_family=task_family
        )
    assert info.value.problems == [("inline.yaml:4: space.d_modle", "unknown knob (did you mean `d_model`?)")]


# ---- top level -----------------------------------------------------------------------------------
@cases(
    Case(
        "unknown-key-objectivs",
        """
        task: digits
        objectivs: [accuracy]
        space: {d_model: 32}
        """,
        "objectivs",
        "objectivs",
        ("unknown key", "(did you mean `objectives`?)"),
        alone=False,
    ),
    Case(
        "unknown-key-tunr",
        """
        task: digits
        objectives: [accuracy]
        tunr: {seed: 1}
        space: {d_model: 32}
        """,
        "tunr",
        "tunr",
        ("unknown key (did you mean `tuner`?)",),
    ),
    Case(
        "missing-space",
        """
        task: digits
        objectives: [accuracy]
        """,
        None,
        "task:",
        ("`space` is missing",),
    ),
    Case(
        "missing-task",
        """
        family: encoder
        objectives: [accuracy]
        space: {d_model: 32}
        """,
        None,
        "family:",
        ("`task` is missing",),
        alone=False,
    ),
    Case(
        "missing-objectives",
        """
        task: digits
        space: {d_model: 32}
        """,
        None,
        "task:",
        ("`objectives` is missing",),
        alone=False,
    ),
    Case(
        "bad-name",
        """
        name: my study!
        task: digits
        objectives: [accuracy]
        space: {d_model: 32}
        """,
        "name",
        "name:",
        ("must be 1 to 100 letters, digits, `-`, `_` or `.`", "'my study!'"),
    ),
    Case(
        "task-not-text",
        """
        task: 3
        family: encoder
        objectives: [accuracy]
        space: {d_model: 32}
        """,
        "task",
        "task:",
        ("must be a built-in task name or `package.module:Class`, got 3",),
    ),
    Case(
        "unknown-family",
        """
        task: digits
        family: encodr
        objectives: [accuracy]
        space: {d_model: 32}
        """,
        "family",
        "family:",
        ("must be one of encoder, mcan, ort, retrieval, got 'encodr'", "(did you mean `encoder`?)"),
    ),
    Case(
        "family-needed-when-the-data-decides",
        """
        task: features
        objectives: [accuracy]
        space: {d_model: 32}
        """,
        "family",
        "task:",
        ("is needed for task 'features'",),
    ),
    Case(
        "plugin-not-registered",
        """
        task: my.module:Task
        objectives: [accuracy]
        space: {d_model: 32}
        """,
        "task",
        "task:",
        ("task plugin 'my.module:Task' is not registered", "entry point of group `lwnas.tasks`"),
    ),
    Case(
        "task-options-not-mapping",
        """
        task: digits
        task_options: [path]
        objectives: [accuracy]
        space: {d_model: 32}
        """,
        "task_options",
        "task_options",
        ("must be a mapping of keyword arguments",),
    ),
)
def test_top_level(tmp_path, case):
    run_case(tmp_path, case)


def test_missing_task_objectives_and_space_are_all_reported(tmp_path):
    path, _ = write(tmp_path, "name: empty\n")
    messages = [p.message for p in problems_of(path) if p.where is None]
    assert messages == ["`task` is missing", "`objectives` is missing", "`space` is missing"]


def test_missing_objectives_is_reported_once(tmp_path):
    """BUG: a missing `objectives` is reported twice, the second time at a path the file does not have.

    docs/studies.md shows the "real output" for a file with `objectivs:` without the extra line.
    """
    path, _ = write(tmp_path, "task: digits\nspace: {d_model: 32}\n")
    problems = problems_of(path)
    assert [(p.where, p.message) for p in problems] == [(None, "`objectives` is missing")]


def test_misspelled_task_says_unknown_task(tmp_path):
    """BUG: `task: digitz` is reported as "family is needed for task 'digitz'", not as an unknown task.

    With `family:` given, the same typo gets "unknown task 'digitz' (did you mean `digits`?)".
    """
    path, text = write(
        tmp_path,
        """
        task: digitz
        objectives: [accuracy]
        space: {d_model: 32}
        """,
    )
    result, output = validate(path, "--samples", "0")
    assert result.exit_code == 2
    assert re.search(rf"{re.escape(str(path))}:1: task: unknown task 'digitz'.*did you mean `digits`", output), output


# ---- objectives, constraints, budget, tuner, training ---------------------------------------------
@cases(
    Case(
        "empty",
        """
        task: digits
        objectives: []
        space: {d_model: 32}
        """,
        "objectives",
        "objectives:",
        ("needs at least one objective",),
    ),
    Case(
        "not-a-list",
        """
        task: digits
        objectives: accuracy
        space: {d_model: 32}
        """,
        "objectives",
        "objectives:",
        ("must be a list like [accuracy, params]", "got 'accuracy'"),
    ),
    Case(
        "unknown-key",
        """
        task: digits
        objectives:
          - {metric: accuracy, dirction: maximize}
        space: {d_model: 32}
        """,
        "objectives.0.dirction",
        "dirction",
        ("unknown key (did you mean `direction`?)",),
    ),
    Case(
        "cost-maximised",
        """
        task: digits
        objectives:
          - accuracy
          - {metric: params, direction: maximize}
        space: {d_model: 32}
        """,
        "objectives.1",
        "metric: params",
        ("`params` is a cost: it can only be minimised",),
    ),
    Case(
        "listed-twice",
        """
        task: digits
        objectives:
          - accuracy
          - {metric: accuracy}
        space: {d_model: 32}
        """,
        "objectives.1",
        "metric: accuracy",
        ("`accuracy` is listed twice",),
    ),
    Case(
        "bad-direction",
        """
        task: digits
        objectives:
          accuracy: maximise
        space: {d_model: 32}
        """,
        "objectives.accuracy",
        "maximise",
        ("direction must be maximize or minimize, got 'maximise'",),
    ),
    Case(
        "no-metric",
        """
        task: digits
        objectives:
          - {direction: maximize}
        space: {d_model: 32}
        """,
        "objectives.0",
        "direction: maximize",
        ("an objective is a metric name or {metric: NAME",),
    ),
)
def test_objectives(tmp_path, case):
    run_case(tmp_path, case)


@cases(
    Case(
        "unknown-metric",
        """
        task: digits
        objectives: [accuracy]
        constraints:
          parms: {max: 10000}
        space: {d_model: 32}
        """,
        "constraints.parms",
        "parms",
        ("constraints bound static costs: params, madds, memory", "(did you mean `params`?)"),
    ),
    Case(
        "min-above-max",
        """
        task: digits
        objectives: [accuracy]
        constraints:
          madds: {min: 100, max: 10}
        space: {d_model: 32}
        """,
        "constraints.madds",
        "madds",
        ("`min <= max` must hold, but got (min=100, max=10)",),
    ),
    Case(
        "negative-bound",
        """
        task: digits
        objectives: [accuracy]
        constraints:
          params: {max: -5}
        space: {d_model: 32}
        """,
        "constraints.params",
        "params:",
        ("bounds must be numbers >= 0", "'max': -5"),
    ),
    Case(
        "bound-not-a-number",
        """
        task: digits
        objectives: [accuracy]
        constraints:
          memory: {max: lots}
        space: {d_model: 32}
        """,
        "constraints.memory",
        "memory",
        ("bounds must be numbers >= 0", "'lots'"),
    ),
    Case(
        "bounds-a-list",
        """
        task: digits
        objectives: [accuracy]
        constraints:
          params: [1, 2]
        space: {d_model: 32}
        """,
        "constraints.params",
        "params:",
        ("bounds are {max: N} and/or {min: N}, got [1, 2]",),
    ),
    Case(
        "bounds-unknown-key",
        """
        task: digits
        objectives: [accuracy]
        constraints:
          params: {maximum: 2}
        space: {d_model: 32}
        """,
        "constraints.params",
        "params:",
        ("bounds are {max: N} and/or {min: N}", "'maximum'"),
    ),
    Case(
        "not-a-mapping",
        """
        task: digits
        objectives: [accuracy]
        constraints: [params]
        space: {d_model: 32}
        """,
        "constraints",
        "constraints:",
        ("must map a cost to bounds",),
    ),
)
def test_constraints(tmp_path, case):
    run_case(tmp_path, case)


def test_constraints_accept_bare_numbers_and_yaml12_floats(tmp_path):
    path, _ = write(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        constraints: {params: 5.0e6, madds: {min: 1e3, max: 2e9}}
        space: {d_model: 32}
        """,
    )
    study = load_study(path, task_family=task_family)
    assert [(c.metric, c.min, c.max) for c in study.constraints] == [("params", None, 5e6), ("madds", 1e3, 2e9)]


@cases(
    Case(
        "trials-zero",
        """
        task: digits
        objectives: [accuracy]
        budget:
          trials: 0
        space: {d_model: 32}
        """,
        "budget.trials",
        "trials",
        ("must be an integer >= 1, got 0",),
    ),
    Case(
        "epochs-not-integer",
        """
        task: digits
        objectives: [accuracy]
        budget:
          epochs: 1.5
        space: {d_model: 32}
        """,
        "budget.epochs",
        "epochs",
        ("must be an integer >= 1, got 1.5",),
    ),
    Case(
        "bad-time",
        """
        task: digits
        objectives: [accuracy]
        budget:
          time: 10 minutes
        space: {d_model: 32}
        """,
        "budget.time",
        "time:",
        ("must be seconds or a duration like 90s, 30m, 2h", "'10 minutes'"),
    ),
    Case(
        "zero-time",
        """
        task: digits
        objectives: [accuracy]
        budget:
          time: 0m
        space: {d_model: 32}
        """,
        "budget.time",
        "time:",
        ("must be seconds or a duration",),
    ),
    Case(
        "unknown-key",
        """
        task: digits
        objectives: [accuracy]
        budget:
          trails: 3
        space: {d_model: 32}
        """,
        "budget.trails",
        "trails",
        ("unknown key (did you mean `trials`?)",),
    ),
    Case(
        "not-a-mapping",
        """
        task: digits
        objectives: [accuracy]
        budget: 20
        space: {d_model: 32}
        """,
        "budget",
        "budget:",
        ("must be a mapping like {trials: 20",),
    ),
    Case(
        "stop-window-too-small",
        """
        task: digits
        objectives: [accuracy]
        budget:
          stop_when:
            window: 1
        space: {d_model: 32}
        """,
        "budget.stop_when.window",
        "window:",
        ("must be an integer >= 2, got 1",),
    ),
    Case(
        "stop-negative-tolerance",
        """
        task: digits
        objectives: [accuracy]
        budget:
          stop_when:
            tolerance: -0.1
        space: {d_model: 32}
        """,
        "budget.stop_when.tolerance",
        "tolerance:",
        ("must be a number >= 0",),
    ),
    Case(
        "stop-unknown-key",
        """
        task: digits
        objectives: [accuracy]
        budget:
          stop_when:
            windw: 5
        space: {d_model: 32}
        """,
        "budget.stop_when.windw",
        "windw",
        ("unknown key (did you mean `window`?)",),
    ),
    Case(
        "front-seeds-zero",
        """
        task: digits
        objectives: [accuracy]
        budget:
          front_seeds: 0
        space: {d_model: 32}
        """,
        "budget.front_seeds",
        "front_seeds:",
        ("must be an integer >= 1, got 0",),
    ),
    Case(
        "stop-not-a-mapping",
        """
        task: digits
        objectives: [accuracy]
        budget:
          stop_when: 20
        space: {d_model: 32}
        """,
        "budget.stop_when",
        "stop_when:",
        ("must be a mapping like {window: 20",),
    ),
)
def test_budget(tmp_path, case):
    run_case(tmp_path, case)


def test_budget_time_units(tmp_path):
    path, _ = write(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        budget: {trials: 4, epochs: 2, time: 1.5h}
        space: {d_model: 32}
        """,
    )
    budget = load_study(path, task_family=task_family).budget
    assert (budget.trials, budget.epochs, budget.time_s) == (4, 2, 5400.0)
    assert budget.stop_when is None


def test_budget_stop_when_defaults(tmp_path):
    path, _ = write(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        budget: {trials: 40, stop_when: {window: 5}}
        space: {d_model: 32}
        """,
    )
    stop = load_study(path, task_family=task_family).budget.stop_when
    assert (stop.window, stop.tolerance) == (5, 0.001)


@cases(
    Case(
        "unknown-sampler",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          sampler: nsga
        space: {d_model: 32}
        """,
        "tuner.sampler",
        "sampler",
        ("must be one of nsga2, tpe, gp, random", "got 'nsga'", "(did you mean `nsga2`?)"),
    ),
    Case(
        "unknown-scheduler",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          scheduler: asha
        space: {d_model: 32}
        """,
        "tuner.scheduler",
        "scheduler",
        ("must be one of none, mo-asha", "(did you mean `mo-asha`?)"),
    ),
    Case(
        "max-concurrent-zero",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          max_concurrent: 0
        space: {d_model: 32}
        """,
        "tuner.max_concurrent",
        "max_concurrent",
        ("must be an integer >= 1, got 0",),
    ),
    Case(
        "max-concurrent-bool",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          max_concurrent: true
        space: {d_model: 32}
        """,
        "tuner.max_concurrent",
        "max_concurrent",
        ("must be an integer >= 1, got True",),
    ),
    Case(
        "unknown-key",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          sead: 0
        space: {d_model: 32}
        """,
        "tuner.sead",
        "sead",
        ("unknown key (did you mean `seed`?)",),
    ),
    Case(
        "sampler-window-small",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          sampler: tpe
          sampler_window: 5
        space: {d_model: 32}
        """,
        "tuner.sampler_window",
        "sampler_window",
        ("must be an integer >= 10 or `all`, got 5",),
    ),
    Case(
        "sampler-window-not-tpe-or-gp",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          sampler: nsga2
          sampler_window: 500
        space: {d_model: 32}
        """,
        "tuner.sampler_window",
        "sampler_window",
        ("applies to the tpe and gp samplers only; this study's sampler is nsga2",),
    ),
    Case(
        "pack-zero",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          pack: 0
        space: {d_model: 32}
        """,
        "tuner.pack",
        "pack: 0",
        ("must be an integer from 1 to 256 or `auto`, got 0",),
    ),
    Case(
        "pack-with-an-nni-sampler",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          sampler: nni-tpe
          pack: 4
        space: {d_model: 32}
        """,
        "tuner.pack",
        "pack: 4",
        ("the nni-tpe sampler proposes one trial at a time",),
    ),
    Case(
        "strategy-beside-a-pack",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          pack: 4
        search: {strategy: sh-1}
        space: {d_model: 32}
        """,
        "search.strategy",
        "search: {strategy: sh-1}",
        ("sh-1 does not run in packs; use `tuner: {pack: 1}` with it",),
    ),
    Case(
        "sampler-typo-with-window",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          sampler: tpee
          sampler_window: 500
        space: {d_model: 32}
        """,
        "tuner.sampler",
        "sampler: tpee",
        ("got 'tpee'", "(did you mean `tpe`?)"),
    ),  # alone: no window error
    Case(
        "grid-with-a-float-range",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          sampler: grid
        space:
          d_model: {choice: [16, 32]}
          lr: {float: [1.0e-3, 1.0e-2]}
        """,
        "space.lr",
        "lr:",
        ("is a float range (float 0.001..0.01), which has no finite grid", "`choice` or an `int` range"),
    ),
    Case(
        "grid-seeds-without-grid",
        """
        task: digits
        objectives: [accuracy]
        tuner:
          sampler: random
          grid_seeds: 2
        space: {d_model: 32}
        """,
        "tuner.grid_seeds",
        "grid_seeds",
        ("applies to the grid sampler only; this study's sampler is random",),
    ),
    Case(
        "grid-with-constraints",
        """
        task: digits
        objectives: [accuracy]
        constraints: {params: {max: 10000}}
        tuner: {sampler: grid}
        space: {d_model: {choice: [16, 32]}}
        """,
        "constraints",
        "constraints:",
        ("a grid sweep trains every point of its space: narrow the space instead",),
    ),
)
def test_tuner(tmp_path, case):
    run_case(tmp_path, case)


@cases(
    Case(
        "epochs",
        """
        task: digits
        objectives: [accuracy]
        training:
          epochs: 3
        space: {d_model: 32}
        """,
        "training.epochs",
        "epochs",
        ("epochs per trial are set in `budget: {epochs: N}`",),
    ),
    Case(
        "seed",
        """
        task: digits
        objectives: [accuracy]
        training:
          seed: 3
        space: {d_model: 32}
        """,
        "training.seed",
        "seed",
        ("the seed is set in `tuner: {seed: N}`",),
    ),
    Case(
        "unknown-setting",
        """
        task: digits
        objectives: [accuracy]
        training:
          batchsize: 32
        space: {d_model: 32}
        """,
        "training.batchsize",
        "batchsize",
        ("unknown training setting (did you mean `batch_size`?)",),
    ),
    Case(
        "also-in-space",
        """
        task: digits
        objectives: [accuracy]
        training:
          lr: 0.001
        space:
          lr: {float: [1.0e-4, 1.0e-2]}
        """,
        "training.lr",
        "lr: 0.001",
        ("`lr` is also in `space`; set it in one place",),
    ),
    Case(
        "threads-not-a-number",
        """
        task: digits
        objectives: [accuracy]
        training:
          threads: many
        space: {d_model: 32}
        """,
        "training.threads",
        "threads: many",
        ("must be an integer >= 1 or null", "got 'many'"),
    ),
    Case(
        "grad-clip-negative",
        """
        task: digits
        objectives: [accuracy]
        training:
          grad_clip: -3
        space: {d_model: 32}
        """,
        "training.grad_clip",
        "grad_clip: -3",
        ("must be a finite number >= 0", "got -3"),
    ),
    Case(
        "batch-size-zero",
        """
        task: digits
        objectives: [accuracy]
        training:
          batch_size: 0
        space: {d_model: 32}
        """,
        "training.batch_size",
        "batch_size: 0",
        ("must be an integer >= 1", "got 0"),
    ),
    Case(
        "lr-nan",
        """
        task: digits
        objectives: [accuracy]
        training:
          lr: .nan
        space: {d_model: 32}
        """,
        "training.lr",
        "lr: .nan",
        ("must be a finite number > 0", "got nan"),
    ),
    Case(
        "schedule-unknown",
        """
        task: digits
        objectives: [accuracy]
        training:
          schedule: cosine-restarts
        space: {d_model: 32}
        """,
        "training.schedule",
        "schedule: cosine-restarts",
        ("must be one of cosine, step, noam, constant", "got 'cosine-restarts'"),
    ),
    Case(
        "batch-size-bool",
        """
        task: digits
        objectives: [accuracy]
        training:
          batch_size: true
        space: {d_model: 32}
        """,
        "training.batch_size",
        "batch_size: true",
        ("must be an integer >= 1", "got True"),
    ),
    Case(
        "device-unknown",
        """
        task: digits
        objectives: [accuracy]
        training:
          device: gpu
        space: {d_model: 32}
        """,
        "training.device",
        "device: gpu",
        ("must be one of auto, cpu, cuda", "got 'gpu'"),
    ),
    Case(
        "divergence-factor",
        """
        task: digits
        objectives: [accuracy]
        training:
          divergence_factor: 0.5
        space: {d_model: 32}
        """,
        "training.divergence_factor",
        "divergence_factor: 0.5",
        ("must be a finite number > 1", "got 0.5"),
    ),
    Case(
        "not-a-mapping-value",
        """
        task: digits
        objectives: [accuracy]
        training:
          amp: 'yes'
        space: {d_model: 32}
        """,
        "training.amp",
        "amp: 'yes'",
        ("must be true or false", "got 'yes'"),
    ),
)
def test_training(tmp_path, case):
    run_case(tmp_path, case)


# ---- space: knobs and domains ----------------------------------------------------------------------
SPACE_HEAD = """
    task: digits
    objectives: [accuracy]
    space:
"""


def space(body: str) -> str:
    return textwrap.dedent(SPACE_HEAD) + textwrap.indent(textwrap.dedent(body).lstrip("\n"), "  ")


@cases(
    Case(
        "unknown-knob",
        space("d_modle: {choice: [32, 64]}"),
        "space.d_modle",
        "d_modle",
        ("unknown knob (did you mean `d_model`?)",),
    ),
    Case(
        "family-in-space",
        space("family: encoder"),
        "space.family",
        "family:",
        ("the family is set at the top of the study (`family:`), not in `space`",),
    ),
    Case(
        "epochs-in-space",
        space("epochs: {int: [1, 3]}"),
        "space.epochs",
        "epochs:",
        ("epochs per trial are set in `budget: {epochs: N}`",),
    ),
    Case(
        "wrong-type-in-choice",
        space('heads: {choice: [4, "eight"]}'),
        "space.heads.choice",
        "heads",
        ("must be an integer, got 'eight'",),
    ),
    Case(
        "wrong-training-value",
        space("lr: {choice: [0.001, -1]}"),
        "space.lr.choice",
        "lr:",
        ("must be a finite number > 0, got -1",),
    ),
    Case(
        "float-end-point-outside-rule",
        space("dropout: {float: [0, 1]}"),
        "space.dropout.float",
        "dropout",
        ("must be a number in [0, 1), got 1.0",),
    ),
    Case(
        "empty-choice",
        space("d_model: {choice: []}"),
        "space.d_model.choice",
        "d_model",
        ("`choice` is empty: list at least one value",),
    ),
    Case(
        "repeated-choice",
        space("d_model: {choice: [32, 64, 32]}"),
        "space.d_model.choice",
        "d_model",
        ("choice lists 32 more than once",),
    ),
    Case(
        "choice-not-a-list",
        space("d_model: {choice: 32}"),
        "space.d_model.choice",
        "d_model",
        ("`choice` must be a list of values, got 32",),
    ),
    Case(
        "int-low-above-high",
        space("layers: {int: [4, 2]}"),
        "space.layers.int",
        "layers",
        ("`low <= high` must hold, but got (low=4, high=2)",),
    ),
    Case(
        "int-bounds-not-integers",
        space("layers: {int: [1, 2.5]}"),
        "space.layers.int",
        "layers",
        ("`int` bounds must be integers, got (1, 2.5)",),
    ),
    Case(
        "int-not-a-pair",
        space("layers: {int: [1, 2, 3]}"),
        "space.layers.int",
        "layers",
        ("`int` must be a list [low, high], got [1, 2, 3]",),
    ),
    Case(
        "float-low-above-high",
        space("lr: {float: [0.01, 0.001]}"),
        "space.lr.float",
        "lr:",
        ("`low <= high` must hold, but got (low=0.01, high=0.001)",),
    ),
    Case(
        "step-does-not-divide",
        space("d_model: {int: [32, 100], step: 32}"),
        "space.d_model.step",
        "d_model",
        ("`high - low` must be a multiple of `step`, but got (low=32, high=100, step=32)",),
    ),
    Case(
        "step-zero",
        space("layers: {int: [1, 4], step: 0}"),
        "space.layers.step",
        "layers",
        ("`step` must be an integer >= 1, got 0",),
    ),
    Case(
        "step-on-float",
        space("lr: {float: [0.001, 0.01], step: 0.001}"),
        "space.lr.step",
        "lr:",
        ("`step` does not apply to `float`",),
    ),
    Case(
        "float-log-low-zero",
        space("lr: {float: [0, 0.01], log: true}"),
        "space.lr.log",
        "lr:",
        ("a log range needs low > 0, got low=0",),
    ),
    Case(
        "int-log-low-zero",
        space("d_model: {int: [0, 64], log: true}"),
        "space.d_model.log",
        "d_model",
        ("a log integer range needs low >= 1 and step 1",),
    ),
    Case(
        "log-not-bool",
        space("lr: {float: [0.001, 0.01], log: yes please}"),
        "space.lr.log",
        "lr:",
        ("`log` must be true or false, got 'yes please'",),
    ),
    Case(
        "float-bounds-not-numbers",
        space("lr: {float: [small, 0.01]}"),
        "space.lr.float",
        "lr:",
        ("`float` bounds must be numbers, got ('small', 0.01)",),
    ),
    Case(
        "two-domain-kinds",
        space("d_model: {choice: [32, 64], int: [32, 64]}"),
        "space.d_model",
        "d_model",
        ("give exactly one of `choice`, `int`, `float` or `value`, got `choice`, `int`",),
    ),
    Case(
        "no-domain-kind",
        space("d_model: {when: {layers: 2}}"),
        "space.d_model",
        "d_model",
        ("give exactly one of `choice`, `int`, `float` or `value`, got none",),
    ),
    Case(
        "unknown-key-in-knob",
        space("d_model: {choise: [32, 64]}"),
        "space.d_model.choise",
        "choise",
        ("unknown key (did you mean `choice`?)", "a knob takes `choice`, `int`"),
    ),
    Case(
        "input-size-searched",
        space("num_classes: {choice: [10, 20]}"),
        "space.num_classes",
        "num_classes",
        ("is an input size the task fixes; it can be set to one value, not searched",),
    ),
    Case(
        "bad-pattern-in-choice",
        space("layer_sharing: {choice: [none, '(0x,1)']}"),
        "space.layer_sharing.choice",
        "layer_sharing",
        ("'(0x,1)' is neither a pattern family", "cannot read term '0x'"),
    ),
    Case(
        "bad-default",
        space("""
         pooling: {choice: [mean, sketch]}
         sketch_n: {int: [2, 8], when: {pooling: sketch}, default: -1}
         """),
        "space.sketch_n.default",
        "sketch_n",
        ("default: must be >= 1, got -1",),
    ),
)
def test_space_knobs_and_domains(tmp_path, case):
    run_case(tmp_path, case)


def test_space_not_a_mapping(tmp_path):
    check(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        space: [d_model, heads]
        """,
        "space",
        "space:",
        "must map knob names to domains, got list",
    )


def test_input_size_may_be_fixed(tmp_path):
    path, _ = write(tmp_path, space("grid: {value: [4, 4]}"))
    assert load_study(path, task_family=task_family).space.knob("grid").domain.value == [4, 4]


@pytest.mark.parametrize("spec", ["'(0x,1)'", "eight"], ids=["pattern", "type"])
def test_bad_fixed_value_location_has_no_none(tmp_path, spec):
    """BUG: a bad fixed value (no `choice:`/`int:` key) is located at `space.KNOB.None`.

    ``_parse_knob`` appends ``_domain_key(spec)``, which is None for a bare value, to the path.
    """
    knob = "layer_sharing" if spec.startswith("'") else "heads"
    problem = check(tmp_path, space(f"{knob}: {spec}"), f"space.{knob}", f"{knob}:")
    assert "None" not in problem.where


# ---- space: conditions ---------------------------------------------------------------------------
@cases(
    Case(
        "unknown-knob",
        space("sketch_n: {int: [2, 8], when: {pooing: sketch}}"),
        "space.sketch_n.when",
        "sketch_n",
        ("condition on unknown knob `pooing` (did you mean `pooling`?)",),
    ),
    Case(
        "knob-not-in-space",
        space("sketch_n: {int: [2, 8], when: {pooling: sketch}}"),
        "space.sketch_n.when",
        "sketch_n",
        ("condition on `pooling`, which the space does not set; add `pooling` to `space`",),
    ),
    Case(
        "reads-itself",
        space("sketch_n: {int: [2, 8], when: {sketch_n: 2}}"),
        "space.sketch_n.when",
        "sketch_n",
        ("a knob's condition cannot read the knob itself",),
    ),
    Case(
        "value-never-taken",
        space("""
         pooling: {choice: [mean, attention]}
         sketch_n: {int: [2, 8], when: {pooling: sketch}}
         """),
        "space.sketch_n.when",
        "sketch_n",
        ("`pooling` never takes 'sketch' (its domain is choice mean, attention)",),
    ),
    Case(
        "empty-when",
        space("sketch_n: {int: [2, 8], when: []}"),
        "space.sketch_n.when",
        "sketch_n",
        ("`when` is empty",),
    ),
    Case(
        "when-not-a-mapping",
        space("sketch_n: {int: [2, 8], when: sketch}"),
        "space.sketch_n.when",
        "sketch_n",
        ("`when` takes a mapping like {pooling: sketch} or a list of them, got 'sketch'",),
    ),
    Case(
        "cycle",
        space("""
         d_model: {choice: [32, 64], when: {heads: 4}}
         heads: {choice: [2, 4], when: {d_model: 32}}
         """),
        "space",
        "space:",
        ("conditions form a cycle among `d_model`, `heads`",),
    ),
    Case(
        "cycle-through-implied-condition",
        space("""
         g_mha: {choice: [true, false], when: {groups: 2}}
         groups: {choice: [2, 4]}
         """),
        "space",
        "space:",
        ("conditions form a cycle among `g_mha`, `groups`",),
    ),
    Case(
        "searched-never-active",
        space("""
         g_mha: false
         qk_expansion: {choice: [1, 2]}
         """),
        "space.qk_expansion",
        "qk_expansion",
        ("is searched but never active: it applies only when g_mha = true, which no point of the space meets",),
    ),
    Case(
        "user-condition-never-holds",
        space("""
         layers: 2
         heads: {choice: [2, 4], when: {layers: 3}}
         """),
        "space.heads.when",
        "heads",
        ("`layers` never takes 3 (its domain is = 2)",),
    ),
)
def test_space_conditions(tmp_path, case):
    run_case(tmp_path, case)


# ---- space: rules over the discrete part ------------------------------------------------------------
@cases(
    Case(
        "heads-groups",
        space("""
         d_model: 64
         heads: {choice: [2, 4]}
         groups: {choice: [2, 4]}
         g_mha: {choice: [true, false]}
         """),
        "space.heads",
        "heads",
        (
            "1 of 6 combinations break a rule: `heads` 2 must be divisible by `groups` (4)",
            "(e.g. heads: 2, g_mha: true, groups: 4)",
            "remove the values or separate them with `when:`",
        ),
    ),
    Case(
        "kv-with-qk-expansion",
        space("""
         d_model: 64
         heads: 4
         groups: 2
         g_mha: true
         attention_sharing: {choice: [none, kv]}
         qk_expansion: {choice: [1, 2]}
         """),
        "space.attention_sharing",
        "attention_sharing",
        ("1 of 4 combinations break a rule", "`kv` reuses the key as the value, which needs qk_expansion 1 (got 2)"),
    ),
    Case(
        "pattern-length",
        space("""
         layers: {int: [2, 3]}
         layer_sharing: {choice: [none, '(0,0)']}
         """),
        "space.layer_sharing",
        "layer_sharing",
        ("1 of 4 combinations break a rule", "(0x2) has 2 entries but the encoder has 3 layers (`layers`)"),
    ),
    Case(
        "fixed-pattern-length",
        space("""
         layers: 3
         layer_sharing: '(0,0)'
         """),
        "space.layer_sharing",
        "layer_sharing",
        ("1 of 1 combinations break a rule", "(e.g. as set)"),
    ),
    Case(
        "pattern-never-valid",
        space("""
         layers: {int: [1, 2]}
         layer_sharing: {choice: [none, '(0,0,0)']}
         """),
        "space.layer_sharing",
        "layer_sharing",
        ("`layer_sharing: (0,0,0)` can never be valid",),
    ),
    Case(
        "coupled-in-mcan",
        """
        task: shapes-vqa
        objectives: [accuracy]
        space:
          d_model: 64
          attention: {choice: [standard, coupled]}
        """,
        "space.attention",
        "attention:",
        (
            "`attention: coupled` can never be valid",
            "`coupled` needs a 2-D token grid, which only family `encoder` has",
        ),
    ),
)
def test_space_rules(tmp_path, case):
    run_case(tmp_path, case)


def test_rules_are_checked_only_once_the_file_parses(tmp_path):
    path, _ = write(
        tmp_path,
        space("""
        d_modle: 64
        heads: {choice: [2, 4]}
        groups: {choice: [2, 4]}
        g_mha: {choice: [true, false]}
        """),
    )
    assert [p.where for p in problems_of(path)] == ["space.d_modle"]


def test_value_that_can_never_be_valid_points_at_its_knob(tmp_path):
    """BUG: "`heads: 3` can never be valid" is located at `space.d_model` (the rule's knob), not `heads`.

    The message blames `heads: 3`, but the file:line is that of `d_model`, which may be fixed.
    """
    problem = check(
        tmp_path,
        space("""
        heads: {choice: [3, 4]}
        d_model: 64
        """),
        "space.heads",
        "heads",
        "`heads: 3` can never be valid",
    )
    assert "must be divisible by `heads` (3)" in problem.message


# ---- seed_configs ----------------------------------------------------------------------------------
SEEDED = """
    task: digits
    objectives: [accuracy]
    seed_configs:
      row: {seed}
    space:
      d_model: {{choice: [32, 64]}}
      heads: 4
      pooling: {{choice: [mean, sketch]}}
      sketch_n: {{int: [2, 8]}}
"""


@cases(
    Case(
        "unknown-knob",
        SEEDED.format(seed="{d_modle: 32}"),
        "seed_configs.row.d_modle",
        "row:",
        ("is not in the space (did you mean `d_model`?)",),
    ),
    Case(
        "outside-domain",
        SEEDED.format(seed="{d_model: 48}"),
        "seed_configs.row.d_model",
        "row:",
        ("48 is outside its domain (choice 32, 64)",),
    ),
    Case(
        "conflicts-with-fixed",
        SEEDED.format(seed="{heads: 8}"),
        "seed_configs.row.heads",
        "row:",
        ("is 8 but the space fixes it to 4",),
    ),
    Case(
        "not-active",
        SEEDED.format(seed="{pooling: mean, sketch_n: 4}"),
        "seed_configs.row.sketch_n",
        "row:",
        ("is not active here: it applies only when pooling = sketch",),
    ),
    Case("not-a-mapping", SEEDED.format(seed="3"), "seed_configs.row", "row:", ("must map knobs to values, got 3",)),
)
def test_seed_configs(tmp_path, case):
    run_case(tmp_path, case)


def test_seed_config_knob_is_located_on_its_own_line(tmp_path):
    check(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        seed_configs:
          row:
            d_model: 32
            heads: 2
        space:
          d_model: {choice: [32, 64]}
          heads: 4
        """,
        "seed_configs.row.heads",
        "heads: 2",
        "is 2 but the space fixes it to 4",
    )


def test_seed_config_not_active_through_implied_condition(tmp_path):
    check(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        seed_configs:
          row: {g_mha: false, groups: 2}
        space:
          d_model: 64
          g_mha: {choice: [true, false]}
          groups: {choice: [2, 4]}
        """,
        "seed_configs.row.groups",
        "row:",
        "is not active here: it applies only when g_mha = true or g_ffn = true",
    )


def test_numeric_seed_config_name_keeps_its_line(tmp_path):
    """BUG: keys that YAML reads as numbers lose their line (the line map is keyed by the key's text).

    Here the problem is located at `seed_configs:` (line 3) instead of `d_model: 48` (line 5).
    """
    check(
        tmp_path,
        """
        task: digits
        objectives: [accuracy]
        seed_configs:
          1:
            d_model: 48
        space:
          d_model: {choice: [32, 64]}
        """,
        "seed_configs.1.d_model",
        "d_model: 48",
        "48 is outside its domain",
    )


# ---- the task and the cost model (tuners.planning.check) ------------------------------------------------
def task_check(tmp_path: Path, yaml: str) -> tuple[str, list[Problem]]:
    path, text = write(tmp_path, yaml)
    study = open_study(path)
    problems = [parse(location, message) for location, message in task_problems(study, make_task(study))]
    for problem in problems:
        assert problem.file == str(path)
    return text, problems


def test_task_family_mismatch(tmp_path):
    text, [problem] = task_check(
        tmp_path,
        """
        task: digits
        family: mcan
        objectives: [accuracy]
        space: {d_model: 32}
        """,
    )
    assert (problem.where, problem.line) == ("family", line_with(text, "family:"))
    assert problem.message == "task `digits` trains family `encoder`, but the study says `mcan`"


def test_objective_metric_the_task_does_not_report(tmp_path):
    text, [problem] = task_check(
        tmp_path,
        """
        task: digits
        objectives:
          - accuracy
          - bleu4
        space: {d_model: 32}
        """,
    )
    assert (problem.where, problem.line) == ("objectives.1", line_with(text, "bleu4"))
    assert "task `digits` reports no metric `bleu4`; it reports accuracy, loss" in problem.message


def test_wrong_direction_for_a_task_metric(tmp_path):
    text, [problem] = task_check(
        tmp_path,
        """
        task: digits
        objectives:
          - accuracy
          - {metric: loss, direction: maximize}
        space: {d_model: 32}
        """,
    )
    assert (problem.where, problem.line) == ("objectives.1", line_with(text, "metric: loss"))
    assert problem.message == "`loss` should be minimized, not maximized"


def test_task_metric_of_mapping_objectives_points_at_its_line(tmp_path):
    """BUG: with objectives as a mapping, task problems point at `objectives:`, not at the metric's line.

    ``task_problems`` locates objective i as ("objectives", i), but a mapping's lines are keyed by the
    metric name (as ``study._objectives`` itself uses).
    """
    text, [problem] = task_check(
        tmp_path,
        """
        task: digits
        objectives:
          accuracy: maximize
          bleu4: maximize
        space: {d_model: 32}
        """,
    )
    assert "reports no metric `bleu4`" in problem.message
    assert problem.line == line_with(text, "bleu4")


def test_task_with_valid_objectives_has_no_problems(tmp_path):
    _, problems = task_check(
        tmp_path,
        """
        task: digits
        objectives: {accuracy: maximize, loss: minimize, params: minimize}
        space: {d_model: 32}
        """,
    )
    assert problems == []


UNSATISFIABLE = """
    task: digits
    objectives: [accuracy, params]
    constraints:
      params: {max: 10}
    space:
      d_model: {choice: [32, 64]}
      heads: 4
"""


def test_constraint_no_sampled_point_meets(tmp_path):
    path, text = write(tmp_path, UNSATISFIABLE)
    study = open_study(path)
    sample = cost_sample(study, StaticCosts(study, make_task(study)), 2)
    [problem] = [parse(location, message) for location, message in constraint_problems(study, sample)]
    assert (problem.file, problem.line, problem.where) == (
        str(path),
        line_with(text, "params: {max"),
        "constraints.params",
    )
    assert problem.message.startswith("no point meets params <= 10: across 2 sampled points")


def test_constraint_a_sampled_point_meets_is_fine(tmp_path):
    path, _ = write(tmp_path, UNSATISFIABLE.replace("max: 10}", "max: 1.0e9}"))
    study = open_study(path)
    sample = cost_sample(study, StaticCosts(study, make_task(study)), 2)
    assert constraint_problems(study, sample) == []


class CountedCosts(StaticCosts):
    """The real cost model, counting the points it costs."""

    costed = 0

    def verdict(self, config):
        self.costed += 1
        return super().verdict(config)


@pytest.mark.parametrize("limit", ["10", "1.0e9"])
def test_the_sweep_check_finds_what_the_whole_sample_finds(tmp_path, limit):
    # unsatisfiable (every point costed, the same located problem) and satisfiable (no problem)
    path, _ = write(tmp_path, UNSATISFIABLE.replace("max: 10}", f"max: {limit}}}"))
    study = open_study(path)
    whole = constraint_problems(study, cost_sample(study, StaticCosts(study, make_task(study)), 8))
    counted = CountedCosts(study, make_task(study))
    assert unmet_constraints(study, counted, 8) == whole
    assert bool(whole) == (limit == "10")
    # a point that meets every constraint settles it: the check stops costing there (the low corner, here)
    assert counted.costed == (8 if whole else 1)


def test_check_sweep_applies_the_overrides_and_refuses_what_no_point_meets(tmp_path):
    path, text = write(tmp_path, UNSATISFIABLE.replace("max: 10}", "max: 1.0e9}"))
    prepared = check_sweep(path, None, 3, 2, True, 8)
    assert (prepared.study.budget.trials, prepared.study.budget.epochs) == (3, 2)
    assert prepared.costs.study is prepared.study and prepared.costs.task is prepared.task  # the driver reuses them
    path, text = write(tmp_path, UNSATISFIABLE, name="tight.yaml")
    with pytest.raises(StudyError) as caught:
        check_sweep(path, None, None, None, True, 8)
    [problem] = [parse(location, message) for location, message in caught.value.problems]
    assert (problem.line, problem.where) == (line_with(text, "params: {max"), "constraints.params")
    assert problem.message.startswith("no point meets params <= 10: across 8 sampled points")


# ---- several problems at once, and the CLI -----------------------------------------------------------
BROKEN = """
    name: broken
    task: digits
    objectives:
      - accuracy
      - {metric: params, direction: maximize}
    budget:
      trials: 0
    tuner: {sampler: nsga}
    training:
      seed: 1
    space:
      d_modle: {choice: [32, 64]}
      layers: {int: [4, 2]}
      sketch_n: {int: [2, 8], when: {pooing: sketch}}
"""
BROKEN_EXPECTED = [  # (dotted path, needle of its line, key phrase)
    ("objectives.1", "metric: params", "can only be minimised"),
    ("budget.trials", "trials: 0", "must be an integer >= 1"),
    ("tuner.sampler", "sampler: nsga", "did you mean `nsga2`"),
    ("training.seed", "seed: 1", "the seed is set in `tuner"),
    ("space.d_modle", "d_modle", "did you mean `d_model`"),
    ("space.layers.int", "layers:", "`low <= high` must hold"),
    ("space.sketch_n.when", "pooing", "did you mean `pooling`"),
]


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    path, text = write(tmp_path, BROKEN)
    problems = problems_of(path)
    assert len(problems) == len(BROKEN_EXPECTED), problems
    for where, needle, phrase in BROKEN_EXPECTED:
        problem = the_problem(problems, where)
        assert (problem.file, problem.line) == (str(path), line_with(text, needle)), problem
        assert phrase in problem.message, problem


def test_cli_validate_reports_file_line_and_exits_2(tmp_path):
    path, text = write(tmp_path, BROKEN)
    result, output = validate(path, "--samples", "2")
    assert result.exit_code == 2, output
    for where, needle, phrase in BROKEN_EXPECTED:
        assert re.search(
            rf"error {re.escape(f'{path}:{line_with(text, needle)}: {where}: ')}.*{re.escape(phrase)}", output
        ), (where, output)
    assert "1 of 1 studies have problems" in output


def test_cli_validate_reports_task_problems(tmp_path):
    path, text = write(
        tmp_path,
        """
        task: digits
        family: mcan
        objectives: [accuracy]
        space: {d_model: 32}
        """,
    )
    result, output = validate(path, "--samples", "2")
    assert result.exit_code == 2
    assert f"{path}:2: family: task `digits` trains family `encoder`, but the study says `mcan`" in output, output


def test_cli_validate_reports_unsatisfiable_constraint(tmp_path):
    path, text = write(tmp_path, UNSATISFIABLE)
    result, output = validate(path, "--samples", "2")
    assert result.exit_code == 2
    assert f"{path}:{line_with(text, 'params: {max')}: constraints.params: no point meets params <= 10" in output


def test_cli_validate_directory_counts_bad_files(tmp_path):
    write(tmp_path, "task: digits\nobjectives: [accuracy]\nspace: {d_model: 32}\n", name="good.yaml")
    write(tmp_path, "task: digits\nobjectives: [accuracy]\nspace: {d_model: {choice: []}}\n", name="bad.yaml")
    write(tmp_path, "not: a study\n", name="other.yaml")  # no `space`: not a study file, skipped
    result, output = validate(tmp_path, "--samples", "0")
    assert result.exit_code == 2
    assert f"{tmp_path / 'bad.yaml'}:3: space.d_model.choice: `choice` is empty" in output
    assert f"ok {tmp_path / 'good.yaml'}" in output
    assert "1 of 2 studies have problems" in output


def test_cli_validate_without_study_files(tmp_path):
    result, output = validate(tmp_path)
    assert result.exit_code == 2 and "no study files found" in output


def test_cli_validate_not_valid_yaml(tmp_path):
    path, _ = write(tmp_path, "task: digits\nobjectives: [accuracy\nspace: {}\n")
    result, output = validate(tmp_path)
    assert result.exit_code == 2
    assert re.search(rf"error {re.escape(str(path))}:\d+: not valid YAML", output), output


# ---- happy path --------------------------------------------------------------------------------------
def test_quickstart_loads():
    study = open_study(REPO / "studies" / "quickstart.yaml")
    assert (study.name, study.task, study.family) == ("quickstart", "digits", "encoder")
    assert [(o.metric, o.direction) for o in study.objectives] == [("accuracy", "maximize"), ("params", "minimize")]
    assert list(study.seed_configs) == ["baseline"]
    assert (study.budget.trials, study.budget.epochs, study.budget.time_s) == (16, 10, 900.0)


def test_every_shipped_study_validates():
    result, output = validate(REPO / "studies", "--samples", "2")
    assert result.exit_code == 0, output
    assert "have problems" not in output and "error" not in output
    assert f"ok {REPO / 'studies' / 'quickstart.yaml'}" in output
