"""`budget: {front_seeds: N}`: front points retrained with more seeds as trials of their own, the front on
the seed means. The grouping and the repeat rule on hand-made Optuna studies; one real sweep end to end
through the `lwnas` command (real Ray, real training, SQLite)."""

from __future__ import annotations

import json
import statistics

import optuna
import pytest
import yaml
from helpers.front_studies import OBJECTIVES, study_with
from helpers.procs import COUNTED, TINY_STUDY, lwnas, outcome, proc_env, read_trials, run_proc

from tuners.fronts.seeds import pareto_front_groups, repeats_needed, seed_groups
from tuners.store import keys

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_groups_average_their_seeds_and_the_front_is_on_the_means():
    # trial 0 (params 10) scores 0.9 once, but its repeats bring its mean to 0.6: trial 1 (0.7, params 10) wins
    study = study_with([(0.9, 10, None), (0.7, 10, None), (0.5, 10, 0), (0.4, 10, 0), (0.3, 5, None)])
    groups = {g.number: g for g in seed_groups(study.get_trials())}
    assert {n: [m.number for m in g.members] for n, g in groups.items()} == {0: [0, 2, 3], 1: [1], 4: [4]}
    assert groups[0].record.values[0] == statistics.mean([0.9, 0.5, 0.4])
    assert groups[0].std[0] == statistics.stdev([0.9, 0.5, 0.4]) and groups[1].std == [None, None]
    assert [g.number for g in pareto_front_groups(list(groups.values()), OBJECTIVES)] == [4, 1]


def test_repeats_are_queued_for_the_front_until_each_point_has_its_seeds():
    study = study_with([(0.8, 10, None), (0.3, 20, None)])  # trial 1 is dominated by far
    assert repeats_needed(study, 3) == [(0, {"d_model": 10}), (0, {"d_model": 10})]
    study.enqueue_trial({"d_model": 10}, user_attrs={keys.SEED_OF: 0})
    assert repeats_needed(study, 3) == [(0, {"d_model": 10})]  # one is queued already
    assert repeats_needed(study, 1) == []


def test_a_point_within_the_noise_of_the_front_gets_seeds_too():
    # point 0 has 3 seeds with a spread of 0.1; point 3 (0.75, params 12) is dominated by 0's mean 0.8 at
    # params 10 on accuracy by less than that spread; point 4 (0.2, params 12) is far behind
    study = study_with([(0.9, 10, None), (0.8, 10, 0), (0.7, 10, 0), (0.75, 12, None), (0.2, 12, None)])
    parents = {parent for parent, _ in repeats_needed(study, 3)}
    assert parents == {3}


def test_confirm_chooses_the_points_of_the_seed_mean_front_as_status_does():
    # trial 0 scored 0.9 once but its repeats (2, 3) bring its mean to 0.6: on the front of single trials
    # it and its repeats were three entries; on the seed means, trial 1 wins and point 0 is one dominated entry
    from tuners.export.confirm import choose_trials

    study = study_with([(0.9, 10, None), (0.7, 10, None), (0.5, 10, 0), (0.4, 10, 0), (0.3, 5, None)])
    chosen = choose_trials(study, dominated=5, seed=0)
    assert [(g.number, role) for g, role in chosen] == [(4, "front"), (1, "front"), (0, "dominated")]
    assert chosen[2][0].record.values[0] == statistics.mean([0.9, 0.5, 0.4])  # the sweep value it is ranked by


# ---- one real sweep -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_sweep_with_front_seeds_confirms_every_front_trial_on_three_seeds(tmp_path):
    study = (
        TINY_STUDY.format(name="seeds", trials=10, epochs=1)
        .replace("d_model: {choice: [16, 32]}", "d_model: {choice: [8, 16, 32]}")
        .replace("budget: {trials: 10, epochs: 1}", "budget: {trials: 10, epochs: 1, front_seeds: 3}")
        .replace("max_concurrent: 2", "max_concurrent: 1")
    )  # one at a time: the same sweep every run
    (tmp_path / "seeds.yaml").write_text(study)
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    rc, out = run_proc(
        ["lwnas", "sweep", "seeds.yaml", "--storage", url], tmp_path, proc_env(tmp_path), tmp_path / "sweep.log"
    )
    assert rc == 0, out[-4000:]
    trials = read_trials(url, "seeds")
    assert sum(outcome(t) in COUNTED for t in trials.values()) == 10  # the repeats count toward the budget
    status = json.loads(lwnas(tmp_path, "status", "seeds", "--storage", url, "--json").stdout)
    assert status["front"]
    for entry in status["front"]:
        members = [trials[n] for n in entry["seed_trials"]]
        assert entry["seeds"] == len(members) == 3
        assert all(m.params == trials[entry["trial"]].params for m in members)  # one point
        assert all(m.user_attrs[keys.SEED_OF] == entry["trial"] for m in members[1:])
        accuracies = [m.values[0] for m in members]
        assert len(set(accuracies)) > 1  # different seeds, different results
        assert entry["mean"]["accuracy"] == statistics.mean(accuracies)
        assert abs(entry["std"]["accuracy"] - statistics.stdev(accuracies)) < 1e-12
    table = lwnas(tmp_path, "status", "seeds", "--storage", url).stdout
    assert "seeds" in table and "±" in table

    exported = lwnas(tmp_path, "export", "seeds", "--trials", "pareto", "--storage", url, "-o", "out")
    assert exported.returncode == 0, exported.stderr
    for path, entry in zip(sorted(exported.stdout.split()), sorted(status["front"], key=lambda e: e["trial"])):
        seeds = yaml.safe_load((tmp_path / path).read_text())["provenance"]["seeds"]
        assert (seeds["seeds"], seeds["seed_trials"], seeds["mean"]) == (3, entry["seed_trials"], entry["mean"])
