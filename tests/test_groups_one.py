"""`groups: 1` next to g_mha/g_ffn choices: k = 1 is "no grouping" (LW-Transformer's baseline).

The study is accepted; the points with k = 1 are exactly those with g_mha and g_ffn off (where the
grouping knobs are neutral), so no configuration is reachable twice and no backend suggests k = 1
with grouping on.
"""

from __future__ import annotations

import optuna
from helpers.procs import lwnas

from searchspace.convert import optuna_search_space, to_nni
from searchspace.space import SearchSpace
from searchspace.study import load_study
from tuners.planning.check import task_family

STUDY = """\
task: digits
objectives: [accuracy, params]
space:
  d_model: 32
  heads: 4
  groups: {choice: [1, 2, 4]}
  g_mha: {choice: [true, false]}
  g_ffn: {choice: [true, false]}
  weight_sharing: {choice: [true, false]}
"""


def test_groups_one_is_accepted_by_space_validate(tmp_path):
    (tmp_path / "study.yaml").write_text(STUDY)
    result = lwnas(tmp_path, "space", "validate", "study.yaml")
    assert result.returncode == 0, result.stderr
    # g_mha x g_ffn grouped (3) x k in {2, 4} x weight_sharing (2) = 12, plus the one ungrouped point
    assert "ok study.yaml: 4 searched knobs, 13 discrete combinations" in result.stdout + result.stderr
    shown = lwnas(tmp_path, "space", "show", "study.yaml")
    assert shown.returncode == 0 and "1: no grouping" in shown.stdout, shown.stdout + shown.stderr


def test_no_grouping_point_is_reached_once_and_only_ungrouped(tmp_path):
    (tmp_path / "study.yaml").write_text(STUDY)
    space = load_study(tmp_path / "study.yaml", task_family=task_family).space
    points = space.sample_points(300, seed=0)
    by_config: dict[str, set] = {}
    for point in points:
        config = point.config
        assert (config.groups == 1) == (not config.g_mha and not config.g_ffn), config
        by_config.setdefault(repr(config.to_dict()), set()).add(tuple(sorted(point.params.items())))
    assert all(len(params) == 1 for params in by_config.values()), "a configuration is reachable twice"
    assert len(by_config) == 13


def test_backends_never_suggest_groups_one(tmp_path):
    (tmp_path / "study.yaml").write_text(STUDY)
    space = load_study(tmp_path / "study.yaml", task_family=task_family).space
    distribution = optuna_search_space(space)["groups"]
    assert isinstance(distribution, optuna.distributions.CategoricalDistribution)
    assert 1 not in distribution.choices
    assert to_nni(space)  # converts without error
    assert SearchSpace.from_dict(space.to_dict(), "encoder") == space
    assert space.to_dict()["groups"] == {"choice": [1, 2, 4]}  # the study's own words round-trip


def test_groups_one_where_every_point_groups_is_refused(tmp_path):
    (tmp_path / "study.yaml").write_text(STUDY.replace("g_mha: {choice: [true, false]}", "g_mha: true"))
    result = lwnas(tmp_path, "space", "validate", "study.yaml")
    assert result.returncode == 2
    assert (
        "error study.yaml:6: space.groups: `groups: 1` means no grouping, but `groups` applies at every point here "
        "(g_mha = true or g_ffn = true always holds): remove it or set g_mha and g_ffn to false"
    ) in result.stderr, result.stderr


def test_seed_config_with_groups_one_says_how_to_write_it(tmp_path):
    (tmp_path / "study.yaml").write_text(
        STUDY.replace("space:\n", "seed_configs:\n  base: {g_mha: true, groups: 1}\nspace:\n")
    )
    result = lwnas(tmp_path, "space", "validate", "study.yaml")
    assert result.returncode == 2
    assert (
        "error study.yaml:4: seed_configs.base.groups: `groups: 1` means no grouping: leave `groups` out and "
        "set g_mha and g_ffn to false"
    ) in result.stderr, result.stderr
