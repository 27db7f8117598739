"""`tuner: {sampler: grid}`: the grid holds every distinct point once (inactive knobs do not multiply it), its
sampler hands each Optuna trial the next point no trial holds (so a second driver goes on where the first
stopped), and an infinite grid is refused naming the knob."""

from __future__ import annotations

import json
import textwrap

import optuna
import pytest

from searchspace.convert import optuna_suggest
from searchspace.grid import GRID_LIMIT, grid_points, grid_problems, grid_size
from searchspace.space import SearchSpace, SpaceError
from searchspace.space_check import checked_space, discrete_size
from searchspace.study import loads_study
from tuners.driver.grid import GridSampler, grid_trials, point_key

CONDITIONAL = {
    "d_model": {"choice": [16, 32]},
    "heads": 4,
    "layers": {"int": [1, 2]},
    "g_mha": {"choice": [True, False]},
    "g_ffn": {"choice": [True, False]},
    "groups": {"choice": [2, 4]},  # implied: only with g_mha or g_ffn
    "layer_sharing": {"choice": ["none", "albert"], "when": {"layers": 2}},
    "pooling": {"choice": ["mean", "sketch"]},
    "sketch_k": {"choice": [4, 8]},  # implied: only with pooling: sketch
}


def study_text(space: dict, tuner: str = "{sampler: grid, grid_seeds: 2}") -> str:
    return textwrap.dedent(
        f"""
        name: grid-test
        task: digits
        family: encoder
        objectives: [accuracy, params]
        tuner: {tuner}
        space: {json.dumps(space)}
        """
    )


def test_the_grid_is_every_distinct_point_once_and_inactive_knobs_do_not_multiply():
    space = checked_space(CONDITIONAL, "encoder")
    points = list(grid_points(space))
    # by hand: d_model 2 x (layers 1, or 2 with 2 sharings) x (3 grouped x 2 groups + ungrouped) x (mean + 2 sketch)
    assert len(points) == 2 * 3 * 7 * 3 == discrete_size(space)[0] == grid_size(space)
    assert len({point_key(p) for p in points}) == len(points)
    for p in points:
        assert space.resolve(p).params == p  # each is a valid point whose params are exactly its active knobs
    assert all("sketch_k" not in p for p in points if p["pooling"] == "mean")
    assert all("groups" not in p for p in points if not (p["g_mha"] or p["g_ffn"]))


def test_the_grid_holds_every_point_random_sampling_finds():
    space = checked_space(CONDITIONAL, "encoder")
    grid = {point_key(p) for p in grid_points(space)}
    drawn = {point_key(p.params) for p in space.sample_points(400, seed=0)}
    assert drawn <= grid and len(drawn) > len(grid) // 2


def test_a_float_range_has_no_grid_and_the_knob_is_named():
    space = SearchSpace.from_dict({"d_model": {"choice": [16, 32]}, "lr": {"float": [1e-3, 1e-2]}}, "encoder")
    assert [where for where, _ in grid_problems(space)] == [("space", "lr")]
    with pytest.raises(SpaceError, match="float range"):
        next(grid_points(space))


def test_a_grid_beyond_the_limit_is_refused_before_it_is_walked():
    wide = {
        "d_model": {"int": [8, 1024], "step": 8},
        "d_ff": {"int": [16, 4096], "step": 16},
        "layers": {"int": [1, 8]},
    }
    space = SearchSpace.from_dict(wide, "encoder")  # 128 x 256 x 8 points
    (problem,) = grid_problems(space)
    assert problem[0] == ("space",) and f"at most {GRID_LIMIT:,}" in problem[1]


def test_a_study_with_grid_seeds_budgets_the_grid_times_the_seeds():
    study = loads_study(study_text(CONDITIONAL))
    assert study.tuner.grid_seeds == 2
    assert grid_trials(study) == 2 * grid_size(study.space)


def ask_all(ot_study: optuna.Study, space: SearchSpace, n: int) -> list[dict]:
    suggest, out = optuna_suggest(space), []
    for _ in range(n):
        trial = ot_study.ask()
        out.append(suggest(trial))
        ot_study.tell(trial, [0.5, 1.0])
    return out


def test_the_sampler_proposes_the_grid_in_order_and_a_new_driver_goes_on_from_storage(tmp_path):
    small = {"d_model": {"choice": [16, 32]}, "pooling": {"choice": ["mean", "sketch"]}, "sketch_k": {"choice": [4, 8]}}
    study = loads_study(study_text(small))  # 2 x (mean + 2 sketch) = 6 points
    storage = f"sqlite:///{tmp_path / 'grid.db'}"
    first = GridSampler(study)
    ot_study = optuna.create_study(storage=storage, study_name="g", directions=["maximize", "minimize"], sampler=first)
    asked = ask_all(ot_study, study.space, 4)
    assert asked == list(grid_points(study.space))[:4]
    # a seed repeat waits with its point and keeps it; the sampler gives it no new one
    ot_study.enqueue_trial(asked[0])
    assert ask_all(ot_study, study.space, 1) == [asked[0]]
    # a resumed sweep: a fresh sampler on the same storage hands out only the points no trial holds
    second = GridSampler(study)
    reopened = optuna.load_study(study_name="g", storage=storage, sampler=second)
    rest = ask_all(reopened, study.space, second.size - 4)
    assert {point_key(p) for p in asked + rest} == {point_key(p) for p in grid_points(study.space)}
    assert not second.has_next(reopened)
