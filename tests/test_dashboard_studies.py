"""The dashboard's views past one sweep, run with streamlit.testing's AppTest over seeded SQLite studies:
the confirmation view (`lwnas confirm`'s record) and studies of one task compared from one reference point."""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from helpers.figures import chart, values  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboards.sample import seed_study  # noqa: E402
from searchspace.study import Objective  # noqa: E402
from tuners.export.confirm import Confirmed, agreement, record_confirmation  # noqa: E402
from tuners.fronts.objectives import front_candidates, front_hypervolume, pareto_front, reference_point  # noqa: E402
from tuners.store.record import record_of  # noqa: E402

APP = str(Path(__file__).resolve().parent.parent / "dashboards" / "app.py")
TIMEOUT = 120
OBJECTIVES = [Objective("accuracy", "maximize"), Objective("params", "minimize")]
optuna.logging.set_verbosity(optuna.logging.WARNING)


def run_app(url: str, monkeypatch, study: str, view: str) -> AppTest:
    monkeypatch.setenv("LWNAS_STORAGE", url)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["view"] = view
    at.session_state["study"] = study
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def table(at: AppTest, column: str):
    """The one table with ``column`` (the study picker's table of all studies aside)."""
    found = [df.value for df in at.dataframe if column in df.value.columns and "state" not in df.value.columns]
    assert len(found) == 1, [list(df.value.columns) for df in at.dataframe]
    return found[0]


def records(ot_study: optuna.Study):
    return [record_of(t) for t in ot_study.get_trials(deepcopy=False)]


# ---- confirmation -------------------------------------------------------------------------------------
def test_confirmation_view_plots_sweep_against_confirmed(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    ot_study = seed_study(url, name="conf", trials=40, seed=1)
    at = run_app(url, monkeypatch, "conf", "Confirmation")
    assert any("No confirmation yet" in i.value for i in at.info)

    recs = records(ot_study)
    front = pareto_front(recs, OBJECTIVES)
    dominated = [r for r in front_candidates(recs) if r not in front][:2]
    results = [
        Confirmed(r, role, {"accuracy": r.values[0]}, {"accuracy": r.values[0] * 1.1 - 0.01 * i})
        for i, (r, role) in enumerate([(r, "front") for r in front] + [(r, "dominated") for r in dominated])
    ]
    entry = record_confirmation(ot_study, 30, results, agreement(results))

    at = run_app(url, monkeypatch, "conf", "Confirmation")
    figure = chart(at, "confirmation_chart_accuracy")
    shown = {}
    for trace in figure["data"]:
        for n, x, y in zip([c[0] for c in trace["customdata"]], values(trace["x"]), values(trace["y"])):
            shown[n] = (trace["name"], x, y)
    assert shown == {
        int(n): (t["role"], t["sweep"]["accuracy"], t["confirmed"]["accuracy"]) for n, t in entry["trials"].items()
    }
    tau = entry["kendall"]["accuracy"]["tau"]
    assert any(f"**{tau:.3f}**" in m.value for m in at.markdown)
    assert len(table(at, "role")) == len(results)


# ---- studies compared ---------------------------------------------------------------------------------
def test_compare_studies_overlays_fronts_with_one_frozen_reference_point(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    a, b = seed_study(url, name="a", trials=40, seed=1), seed_study(url, name="b", trials=40, seed=2)
    seed_study(url, name="three", trials=10, seed=3, objectives=("accuracy", "params", "madds"))  # not comparable
    at = run_app(url, monkeypatch, "a", "Compare studies")
    picker = at.multiselect(key="compare_studies")
    assert picker.options == ["a", "b"] and picker.value == ["a", "b"]  # every comparable study at first
    at = picker.set_value(["a"]).run()
    assert [t["name"] for t in chart(at, "compare_chart")["data"]] == ["a"]
    at = at.multiselect(key="compare_studies").set_value(["a", "b"]).run()
    assert not at.exception, [e.value for e in at.exception]

    union = [r.values for s in (a, b) for r in front_candidates(records(s))]
    ref = reference_point(union, OBJECTIVES)
    assert [at.number_input(key=f"compare_ref_{i}").value for i in range(2)] == pytest.approx(ref)
    rows = table(at, "hypervolume").set_index("study")
    for name, s in (("a", a), ("b", b)):
        assert rows.loc[name, "hypervolume"] == pytest.approx(front_hypervolume(records(s), OBJECTIVES, ref))
        assert rows.loc[name, "on the front"] == len(pareto_front(records(s), OBJECTIVES))
    fronts = {t["name"]: sorted(int(c[0]) for c in t["customdata"]) for t in chart(at, "compare_chart")["data"]}
    assert fronts == {
        n: sorted(r.number for r in pareto_front(records(s), OBJECTIVES)) for n, s in (("a", a), ("b", b))
    }

    # a new study of the task leaves the reference point where it was, until the user resets it
    c = seed_study(url, name="c", trials=5, seed=11)
    c.add_trial(optuna.trial.create_trial(values=[0.3, 120_000.0], user_attrs={"outcome": "complete"}))  # larger
    union_c = union + [r.values for r in front_candidates(records(c))]
    moved = reference_point(union_c, OBJECTIVES)
    assert moved != ref  # otherwise this check would prove nothing
    at.run()
    assert [at.number_input(key=f"compare_ref_{i}").value for i in range(2)] == pytest.approx(ref)
    at = at.button(key="compare_ref_reset").click().run()
    assert [at.number_input(key=f"compare_ref_{i}").value for i in range(2)] == pytest.approx(moved)

    # a reference point the user types is the one every study is measured from
    at = at.number_input(key="compare_ref_1").set_value(50_000.0).run()
    rows = table(at, "hypervolume").set_index("study")
    assert rows.loc["a", "hypervolume"] == pytest.approx(front_hypervolume(records(a), OBJECTIVES, [0.0, 50_000.0]))
    assert not math.isclose(rows.loc["a", "hypervolume"], front_hypervolume(records(a), OBJECTIVES, moved))

    # it outlives the tab: another view and back keep it
    at.session_state["view"] = "Trials"
    at.run()
    at.session_state["view"] = "Compare studies"
    at.run()
    assert at.number_input(key="compare_ref_1").value == 50_000.0


# ---- seeds (budget.front_seeds) -----------------------------------------------------------------------
def test_front_of_seed_means_has_error_bars_and_a_seeds_column(tmp_path, monkeypatch):
    import statistics

    from tuners.store.keys import SEED_OF

    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    ot_study = seed_study(url, name="seeded", trials=30, seed=4)
    best = max(front_candidates(records(ot_study)), key=lambda r: r.values[0])
    parent = ot_study.get_trials()[best.number]
    for accuracy in (best.values[0] - 0.02, best.values[0] - 0.05):  # two more seeds of the best point
        ot_study.add_trial(
            optuna.trial.create_trial(
                params=parent.params,
                distributions=parent.distributions,
                values=[accuracy, best.values[1]],
                user_attrs={**parent.user_attrs, SEED_OF: best.number},
            )
        )
    accuracies = [best.values[0], best.values[0] - 0.02, best.values[0] - 0.05]

    at = run_app(url, monkeypatch, "seeded", "Pareto front")
    trace = chart(at, "seed_front_chart")["data"][0]
    shown = {
        c[0]: (c[1], y, e)
        for c, y, e in zip(trace["customdata"], values(trace["y"]), values(trace["error_y"]["array"]))
    }
    seeds, mean, std = shown[best.number]  # y: accuracy (the default axes are params × accuracy)
    assert seeds == 3 and mean == pytest.approx(statistics.mean(accuracies))
    assert std == pytest.approx(statistics.stdev(accuracies))
    assert table(at, "seed trials").set_index("trial").loc[best.number, "seeds"] == 3

    at = run_app(url, monkeypatch, "seeded", "Trials")
    trials = next(df.value for df in at.dataframe if "seeds" in df.value.columns and "outcome" in df.value.columns)
    assert set(trials.set_index("trial").loc[[best.number, 30, 31], "seeds"]) == {3}


def test_compared_fronts_and_hypervolumes_are_lwnas_status_own_on_seed_means(tmp_path):
    # a point retrained with worse seeds: on single trials its first trial stays on the front, on the
    # seed means (what `lwnas status` shows) it drops off
    from dashboards.study_compare import hypervolume_table, study_fronts
    from tuners.fronts.status import study_status
    from tuners.store.keys import SEED_OF

    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    ot_study = seed_study(url, name="seeded", trials=30, seed=4)
    best = max(front_candidates(records(ot_study)), key=lambda r: r.values[0])
    parent = ot_study.get_trials()[best.number]
    for accuracy in (0.0, 0.0):
        ot_study.add_trial(
            optuna.trial.create_trial(
                params=parent.params,
                distributions=parent.distributions,
                values=[accuracy, best.values[1]],
                user_attrs={**parent.user_attrs, SEED_OF: best.number},
            )
        )
    status = study_status(ot_study)
    front = study_fronts(url, ["seeded"], OBJECTIVES)[0]
    assert best.number not in [e["trial"] for e in status["front"]]  # otherwise this proves nothing
    assert [r.number for r in front.front] == [e["trial"] for e in status["front"]]
    (row,) = hypervolume_table([front], OBJECTIVES, status["reference_point"])
    assert row["hypervolume"] == pytest.approx(status["hypervolume"]) and row["trials"] == 32
