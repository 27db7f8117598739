"""The Streamlit dashboard, run for real with streamlit.testing's AppTest over seeded SQLite studies."""

from __future__ import annotations

import io
import math
import os
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import optuna
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from helpers.figures import chart, values  # noqa: E402
from streamlit.runtime.media_file_manager import MediaFileManager  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from dashboards.data import TrialCache  # noqa: E402
from dashboards.plots import KNOB_COLOURS  # noqa: E402
from dashboards.sample import seed_study  # noqa: E402
from tuners.export.configs import export_file_name, export_text  # noqa: E402
from tuners.fronts.objectives import front_hypervolume, nondominated_records, pareto_front  # noqa: E402
from tuners.store.record import record_of  # noqa: E402

APP = Path(__file__).resolve().parent.parent / "dashboards" / "app.py"
TIMEOUT = 120  # the first run imports plotly, pandas and torch (through tuners.export.configs) on a busy machine

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(tmp_path_factory, label: str, **kwargs) -> tuple[str, optuna.Study]:
    url = f"sqlite:///{tmp_path_factory.mktemp(label) / 'lwnas.db'}"
    return url, seed_study(url, **kwargs)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    return _study(tmp_path_factory, "seeded", name="seeded", trials=60, seed=3)


def run_app(url: str, monkeypatch, view: str | None = None) -> AppTest:
    """The dashboard over ``url``, run once (on tab ``view``: only the open tab runs)."""
    monkeypatch.setenv("LWNAS_STORAGE", url)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    if view:
        at.session_state["view"] = view
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown(text: str) -> str:
    """Markdown source as the reader sees it (text from storage reaches the page backslash-escaped, and a word
    Markdown would turn into a link as inline code)."""
    parts = re.split(r"(?<!\\)(`+)( ?)(.*?)\2\1(?!`)", text)  # text, fence, pad, code, text, ...
    return "".join(re.sub(r"\\(.)", r"\1", p) if i % 4 == 0 else p if i % 4 == 3 else "" for i, p in enumerate(parts))


def trials_table(at: AppTest):
    return next(df for df in at.dataframe if df.key == "trials_table").value


def trace_numbers(trace: dict) -> list[int]:
    return [int(c[0]) for c in trace.get("customdata", [])]


def test_front_points_equal_best_trials(seeded, monkeypatch):
    url, study = seeded
    at = run_app(url, monkeypatch)
    assert [t.label for t in at.tabs] == [
        "Pareto front",
        "Hypervolume",
        "Knob importance",
        "Trials",
        "Trial detail",
        "Compare",
        "Export",
        "Confirmation",
        "Compare studies",
    ]
    assert len(at.get("plotly_chart")) == 1 and all(df.key != "trials_table" for df in at.dataframe)  # one tab ran
    fig = chart(at, "front_chart")
    traces = {t["name"]: t for t in fig["data"]}
    best = {t.number for t in study.best_trials}
    assert len(best) >= 3
    assert set(trace_numbers(traces["Pareto front"])) == best
    assert set(trace_numbers(traces["non-dominated"])) == best
    outcomes = {t.number: t.user_attrs["outcome"] for t in study.trials}
    for name in ("pruned", "failed", "infeasible"):
        numbers = trace_numbers(traces[name])
        assert numbers and {outcomes[n] for n in numbers} == {name}
        assert not best & set(numbers)
    # every trial is drawn once in the base layer; the front is connected in order of the x axis
    drawn = [n for name, t in traces.items() if name != "Pareto front" for n in trace_numbers(t)]
    assert sorted(drawn) == list(range(len(study.trials)))
    xs = values(traces["Pareto front"]["x"])
    assert traces["Pareto front"]["mode"] == "lines+markers+text" and xs == sorted(xs)
    # front points carry their trial numbers as labels
    assert traces["Pareto front"]["text"] == [str(n) for n in trace_numbers(traces["Pareto front"])]
    # hover shows the configuration: the template names each knob, customdata carries its value
    template, row = traces["Pareto front"]["hovertemplate"], traces["Pareto front"]["customdata"][0]
    config = record_of(study.trials[row[0]]).config
    for knob in ("d_model", "layers", "pooling"):
        assert f"{knob}=%{{customdata[" in template
        index = int(template.split(f"{knob}=%{{customdata[")[1].split("]")[0])
        assert row[index] == str(config[knob])


def test_colour_by_knob_and_swapped_axes(seeded, monkeypatch):
    url, study = seeded
    at = run_app(url, monkeypatch)
    at.selectbox(key="front_colour").set_value("pooling")
    at.selectbox(key="front_x").set_value("accuracy").run()
    assert not at.exception
    fig = chart(at, "front_chart")
    names = {t["name"] for t in fig["data"]}
    assert any("mean" in n for n in names) and any("sketch" in n for n in names)
    front = next(t for t in fig["data"] if t["name"] == "Pareto front")
    assert set(trace_numbers(front)) == {t.number for t in study.best_trials}
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("accuracy")
    # knob values get clearly different colours (not Streamlit's two blues)
    colours = {t["name"].split(",")[0]: t["marker"]["color"] for t in fig["data"] if t["name"] != "Pareto front"}
    assert colours.keys() == {"mean", "sketch"} and set(colours.values()) <= set(KNOB_COLOURS)
    assert colours["mean"] != colours["sketch"]


def test_layer_sharing_reads_as_in_the_study_file_and_cli(seeded, monkeypatch):
    """The sampled value (``albert``), as ``lwnas status`` prints it, not the pattern it resolves to."""
    url, study = seeded
    at = run_app(url, monkeypatch, "Trials")
    table = trials_table(at)
    assert set(table["layer_sharing"]) == {"albert", "none"}
    for t in study.trials:
        assert table.set_index("trial").loc[t.number, "layer_sharing"] == t.params["layer_sharing"]


def test_filters_and_sorting_change_the_table(seeded, monkeypatch):
    url, study = seeded
    at = run_app(url, monkeypatch, "Trials")
    assert len(trials_table(at)) == len(study.trials)
    at.multiselect(key="filter_outcome").set_value(["complete"]).run()
    table = trials_table(at)
    complete = [t for t in study.trials if t.user_attrs["outcome"] == "complete"]
    assert len(table) == len(complete) and set(table["outcome"]) == {"complete"}
    at.multiselect(key="filter_knobs").set_value(["pooling"]).run()
    at.multiselect(key="filter_value_pooling").set_value(["mean"]).run()
    table = trials_table(at)
    expected = [t.number for t in complete if record_of(t).config["pooling"] == "mean"]
    assert 0 < len(table) < len(complete) and sorted(table["trial"]) == expected
    at.selectbox(key="sort_by").set_value("accuracy").run()
    accuracy = list(trials_table(at)["accuracy"])
    assert accuracy == sorted(accuracy, reverse=True)  # a maximised objective sorts best first
    at.toggle(key="sort_descending_accuracy").set_value(False).run()
    assert list(trials_table(at)["accuracy"]) == sorted(accuracy)


@pytest.fixture
def downloads(monkeypatch):
    """What the app hands Streamlit's media manager for download (the bytes a browser receives)."""
    captured = []
    original = MediaFileManager.add

    def spy(self, path_or_data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        if is_for_static_download:
            captured.append((file_name, path_or_data))
        return original(self, path_or_data, mimetype, coordinates, file_name, is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", spy)
    return captured


def lwnas_export(url: str, name: str, numbers: list[int], out: Path) -> dict[str, bytes]:
    from tuners.cli.main import app

    result = CliRunner().invoke(
        app, ["export", name, "--trials", ",".join(map(str, numbers)), "--storage", url, "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    return {p.name: p.read_bytes() for p in out.iterdir()}


def test_export_of_the_front_equals_lwnas_export(seeded, monkeypatch, downloads, tmp_path):
    url, study = seeded
    at = run_app(url, monkeypatch, "Export")
    assert any("Select trials to export" in i.value for i in at.info) and not at.download_button
    at.button(key="select_front").click().run()
    best = sorted(t.number for t in study.best_trials)
    assert sorted(at.multiselect(key="selected").value) == best
    ((file_name, data),) = [d for d in downloads if d[0].endswith(".zip")][-1:]
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    assert members == lwnas_export(url, "seeded", best, tmp_path / "cli")
    for t in study.best_trials:
        record = record_of(t)
        assert members[export_file_name(study, record)] == export_text(study, record).encode()


def test_export_of_one_trial_is_its_yaml(seeded, monkeypatch, downloads, tmp_path):
    url, study = seeded
    at = run_app(url, monkeypatch, "Export")
    number = next(t.number for t in study.trials if t.user_attrs["outcome"] == "pruned")
    at.multiselect(key="selected").set_value([number]).run()
    assert not at.exception
    file_name, data = downloads[-1]
    assert file_name == f"seeded-trial-{number:04d}.yaml"
    assert {file_name: data} == lwnas_export(url, "seeded", [number], tmp_path / "cli")


def hypervolume_of_each_prefix(data) -> list[tuple[int, float]]:
    """(trial, hypervolume of the trials up to it), each measured afresh: what the incremental one must equal."""
    ordered = sorted(data.records, key=lambda r: r.number)
    ref = data.reference_point
    return [(r.number, front_hypervolume(ordered[: i + 1], data.objectives, ref)) for i, r in enumerate(ordered)]


def test_hypervolume_over_trials_with_reference_point(seeded, monkeypatch):
    url, study = seeded
    at = run_app(url, monkeypatch, "Hypervolume")
    fig = chart(at, "hypervolume_chart")
    data = TrialCache(url, "seeded").load()
    expected = hypervolume_of_each_prefix(data)
    assert values(fig["data"][0]["x"]) == [n for n, _ in expected]
    assert np.allclose(values(fig["data"][0]["y"]), [v for _, v in expected])
    assert "reference point: accuracy 0, params" in fig["layout"]["title"]["text"]


def importances_by_optuna(study: optuna.Study, index: int, maximize: bool) -> dict[str, float]:
    """Optuna's PED-ANOVA on the complete, feasible trials alone, one objective (lower is better)."""
    feasible = [t for t in study.trials if t.user_attrs["outcome"] == "complete"]
    alone = optuna.create_study(directions=study.directions)
    alone.add_trials(feasible)
    with warnings.catch_warnings():  # Optuna's reminder that lower targets count as better
        warnings.simplefilter("ignore")
        return optuna.importance.get_param_importances(
            alone,
            evaluator=optuna.importance.PedAnovaImportanceEvaluator(),
            target=lambda t: -t.values[index] if maximize else t.values[index],
        )


def test_knob_importance_per_objective_is_optunas_ped_anova(seeded, monkeypatch):
    url, study = seeded
    at = run_app(url, monkeypatch, "Knob importance")
    for index, (metric, maximize) in enumerate([("accuracy", True), ("params", False)]):
        bars = chart(at, f"importance_chart_{metric}")["data"][0]
        shown_importance = dict(zip(bars["y"], values(bars["x"])))
        expected = importances_by_optuna(study, index, maximize)
        assert shown_importance.keys() == expected.keys() and {"d_model", "pooling", "groups"} <= expected.keys()
        assert np.allclose([shown_importance[k] for k in expected], list(expected.values()))
        assert math.isclose(sum(shown_importance.values()), 1.0)
    (table,) = [df.value for df in at.dataframe if "study" not in df.value.columns]  # and a table of the figures
    accuracy = importances_by_optuna(study, 0, True)
    assert list(table.columns) == ["accuracy", "params"] and table.index[0] == max(accuracy, key=accuracy.get)


def test_knob_importance_with_too_few_trials_says_so(tmp_path_factory, monkeypatch):
    url, _ = _study(tmp_path_factory, "few", name="few", trials=4, outcome="complete")
    at = run_app(url, monkeypatch, "Knob importance")
    assert any("needs at least 10 complete, feasible trials" in shown(i.value) for i in at.info)
    assert not at.get("plotly_chart")


def test_trial_detail_shows_config_costs_curve_and_failure(seeded, monkeypatch):
    url, study = seeded
    at = run_app(url, monkeypatch, "Trial detail")
    failed = next(t for t in study.trials if t.user_attrs["outcome"] == "failed" and record_of(t).epochs)
    at.selectbox(key="detail_trial").set_value(failed.number).run()
    assert any(failed.user_attrs["failure"] in shown(e.value) for e in at.error)
    assert any(f"d_model: {record_of(failed).config['d_model']}" in c.value for c in at.code)
    curve = chart(at, "detail_curve")
    epochs = [e["epoch"] for e in record_of(failed).epochs]
    assert any(values(t["x"]) == epochs for t in curve["data"])
    costs = next(df.value for df in at.dataframe if list(df.value.columns) == ["cost", "value"])
    assert f"{record_of(failed).costs['params']:,}" in set(costs["value"])
    infeasible = next(t for t in study.trials if t.user_attrs["outcome"] == "infeasible")
    at.selectbox(key="detail_trial").set_value(infeasible.number).run()
    assert any("breaks params" in shown(w.value) for w in at.warning)
    assert any("never trained an epoch" in i.value for i in at.info)


def test_compare_trials_side_by_side(seeded, monkeypatch):
    url, study = seeded
    at = run_app(url, monkeypatch, "Compare")
    numbers = [t.number for t in study.best_trials][:3]
    at.multiselect(key="compare_trials").set_value(numbers).run()
    assert not at.exception
    table = next(df.value for df in at.dataframe if list(df.value.columns) == [f"trial {n}" for n in numbers])
    assert "accuracy" in table.index and "params" in table.index
    curves = chart(at, "compare_curves")["data"]
    assert len(curves) >= 3
    colours = {t["name"]: t["line"]["color"] for t in curves}
    assert len(set(colours.values())) == len(numbers) and set(colours.values()) <= set(KNOB_COLOURS)


def test_more_than_two_objectives_get_3d_and_parallel_views(tmp_path_factory, monkeypatch):
    url, study = _study(tmp_path_factory, "three", name="three", trials=40, objectives=("accuracy", "params", "madds"))
    at = run_app(url, monkeypatch)
    scene = chart(at, "front_3d_chart")
    assert scene["data"][0]["type"] == "scatter3d"
    parallel = chart(at, "parallel_chart")["data"][0]
    assert parallel["type"] == "parcoords" and len(parallel["dimensions"]) == 3
    assert sum(values(parallel["line"]["color"])) == len(study.best_trials)


def test_empty_study_says_so(tmp_path_factory, monkeypatch):
    url, _ = _study(tmp_path_factory, "empty", name="empty", trials=0)
    at = run_app(url, monkeypatch)
    assert any("has no trials yet" in i.value for i in at.info)


def test_only_failed_trials_says_so_and_lists_them(tmp_path_factory, monkeypatch):
    url, study = _study(tmp_path_factory, "failed", name="failed", trials=8, outcome="failed")
    at = run_app(url, monkeypatch)
    assert any("No complete, feasible trial yet" in i.value for i in at.info)
    studies = next(df.value for df in at.dataframe if "state" in df.value.columns)
    assert studies.set_index("study").loc["failed", "state"] == "failed"  # not "finished"
    assert at.selectbox(key="study").options == ["failed · 8 trials · failed"]
    at.session_state["view"] = "Trials"
    at.run()
    assert not at.exception
    assert set(trials_table(at)["outcome"]) == {"failed"} and len(trials_table(at)) == 8


def test_no_study_in_storage(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    optuna.storages.RDBStorage(url)  # the schema, no study
    at = run_app(url, monkeypatch)
    assert any("No studies" in i.value for i in at.info)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("postgresql://lwnas:s3cret@127.0.0.1:1/nowhere", "cannot open storage postgresql://lwnas:***@127.0.0.1:1"),
        ("mysql+nodriver://x@localhost/db", "cannot open storage"),
    ],
)
def test_unreachable_storage_is_a_clear_error(url, expected, monkeypatch):
    at = run_app(url, monkeypatch)
    messages = [e.value for e in at.error]
    assert len(messages) == 1 and expected in shown(messages[0]) and "s3cret" not in messages[0]


def test_missing_sqlite_file_is_an_error_and_is_not_created(tmp_path, monkeypatch):
    path = tmp_path / "missing.db"
    at = run_app(f"sqlite:///{path}", monkeypatch)
    assert any("no database at" in shown(e.value) for e in at.error)
    assert not path.exists()


# ---- the data layer against tuners' reference implementations -----------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_front_and_hypervolume_match_tuners(seed, tmp_path):
    url = f"sqlite:///{tmp_path / 'x.db'}"
    seed_study(url, name="x", trials=50, seed=seed, objectives=("accuracy", "params", "madds"))
    data = TrialCache(url, "x").load()
    assert [r.number for r in data.front()] == [r.number for r in pareto_front(data.records, data.objectives)]
    projected = [r.__class__(**{**r.__dict__, "values": [r.values[0], r.values[2]]}) for r in data.candidates]
    two_d = nondominated_records(data.candidates, data.objectives, [0, 2])
    assert [r.number for r in two_d] == [
        r.number for r in pareto_front(projected, [data.objectives[0], data.objectives[2]])
    ]
    reference = hypervolume_of_each_prefix(data)
    assert np.allclose(data.hypervolume_over_trials["hypervolume"], [v for _, v in reference])


def test_incremental_refresh_equals_a_full_reload(tmp_path):
    url = f"sqlite:///{tmp_path / 'live.db'}"
    study = seed_study(url, name="live", trials=10)
    cache = TrialCache(url, "live")
    first = cache.load()
    running = study.ask()  # a trial that starts, shows up, then finishes
    running.set_user_attr("outcome", "complete")
    assert cache.load().running == 1 and cache.load().version == first.version + 1
    study.tell(running, [0.5, 1000.0])
    study.add_trial(study.trials[3])  # and a trial written finished
    refreshed = cache.load()
    assert refreshed.version == first.version + 2
    assert refreshed.records == TrialCache(url, "live").load().records
    assert len(refreshed.records) == 12 and refreshed.running == 0
    assert cache.load() is refreshed  # nothing changed: the same data, no reload


def test_a_study_deleted_and_created_again_keeps_none_of_the_old_seed_repeats(tmp_path):
    from tuners.store import keys

    url = f"sqlite:///{tmp_path / 'again.db'}"
    study = seed_study(url, name="again", trials=4)
    repeat = study.trials[1]
    study.add_trial(
        optuna.trial.create_trial(
            params=repeat.params,
            distributions=repeat.distributions,
            values=repeat.values,
            user_attrs={**repeat.user_attrs, keys.SEED_OF: 1},
        )
    )
    cache = TrialCache(url, "again")
    assert cache.load().parents == {4: 1}
    optuna.delete_study(study_name="again", storage=url)
    # (SQLite gives a new study the freed id when it is the largest: another study takes it first, as a
    # storage with other studies would)
    seed_study(url, name="other", trials=1)
    seed_study(url, name="again", trials=6)  # trial 4 is now a point of its own
    assert cache.load().parents == {} == TrialCache(url, "again").load().parents


def test_dashboard_command_binds_localhost_and_keeps_the_url_out_of_argv():
    import typer

    from tuners.cli.dashboard import app_path, dashboard, streamlit_command

    command = streamlit_command(8501, "127.0.0.1")
    assert command[command.index("--server.address") + 1] == "127.0.0.1"
    assert str(app_path()) in command and app_path().is_file()
    assert not any("sqlite" in part or "postgresql" in part for part in command)
    app = typer.Typer()
    app.command()(dashboard)
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0 and "--storage" in result.output and "127.0.0.1" in result.output


def test_sample_metrics_are_finite_where_trained(seeded):
    _, study = seeded
    for t in study.trials:
        if t.user_attrs["outcome"] == "complete":
            assert all(math.isfinite(v) for v in t.values)
            assert t.values[0] == record_of(t).epochs[-1]["val_accuracy"]


def test_a_running_study_is_marked_and_refreshes_itself(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'live.db'}"
    study = seed_study(url, name="live", trials=6)
    trial = study.ask()  # a trial the sweep is training now
    trial.set_user_attr("epochs", [{"epoch": 1, "val_accuracy": 0.4, "train_loss": 2.0}])
    at = run_app(url, monkeypatch)
    studies = next(df.value for df in at.dataframe if "state" in df.value.columns)
    assert studies.set_index("study").loc["live", "state"] == "running"
    assert studies.set_index("study").loc["live", "trials"] == 7
    assert at.toggle(key="auto_refresh_live").value  # on while trials run
    assert any(m.value == "1" for m in at.metric if m.label == "running")
    study.tell(trial, [0.99, 1.0])  # finishes as the best trial: the next run shows it on the front
    at.run()  # what the auto-refresh does (no "Refresh now"): the sidebar's label follows the trials
    assert not at.exception
    studies = next(df.value for df in at.dataframe if "state" in df.value.columns)
    assert studies.set_index("study").loc["live", "state"] == "finished"
    assert at.selectbox(key="study").options == ["live · 7 trials · finished"]
    front = next(t for t in chart(at, "front_chart")["data"] if t["name"] == "Pareto front")
    assert trial.number in trace_numbers(front)


@pytest.mark.postgres
def test_browses_postgres_as_a_read_only_role(monkeypatch):
    """A cluster's database, read by a role that may only SELECT: browsing needs no write access."""
    import uuid

    import psycopg
    from helpers.procs import PG_URL, postgres_or_skip
    from sqlalchemy.engine import make_url

    postgres_or_skip()
    name, role = f"lwnas-test-dash-{uuid.uuid4().hex[:8]}", f"lwnas_reader_{uuid.uuid4().hex[:8]}"
    study = seed_study(PG_URL, name=name, trials=30, seed=4)
    admin = psycopg.connect(PG_URL, autocommit=True)
    database = make_url(PG_URL).database
    try:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT CONNECT ON DATABASE {database} TO {role}")
        admin.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        reader = make_url(PG_URL).set(username=role, password=None).render_as_string(hide_password=False)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the role really cannot write
            with psycopg.connect(reader, autocommit=True) as con:
                con.execute("UPDATE studies SET study_name = study_name")
        monkeypatch.setenv("LWNAS_STORAGE", reader)
        at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
        at.session_state["study"] = name
        at.run()
        assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
        traces = {t["name"]: t for t in chart(at, "front_chart")["data"]}
        assert set(trace_numbers(traces["Pareto front"])) == {t.number for t in study.best_trials}
    finally:
        optuna.delete_study(study_name=name, storage=PG_URL)
        admin.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
        admin.execute(f"REVOKE ALL ON SCHEMA public FROM {role}")
        admin.execute(f"REVOKE ALL ON DATABASE {database} FROM {role}")
        admin.execute(f"DROP ROLE {role}")
        admin.close()


def test_sigterm_to_lwnas_dashboard_stops_its_streamlit_server(tmp_path):
    """The installed command, stopped the way a service manager stops it: nothing it started survives.
    (An unreachable storage is refused before any server starts: tests/test_cli_safety.py, whose check that
    no command prints a storage password covers the dashboard too.)"""
    import signal
    import urllib.request

    from helpers.procs import kill_session, proc_env, session_pids, start_dashboard, tail, wait_for

    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    seed_study(url, name="served", trials=4)
    log = tmp_path / "dashboard.log"
    proc, address = start_dashboard(url, tmp_path, proc_env(tmp_path), log)
    try:
        server = [pid for pid in session_pids(proc.pid) if pid != proc.pid]
        assert server, "lwnas dashboard started no Streamlit server"
        os.kill(proc.pid, signal.SIGTERM)  # to `lwnas dashboard` alone, not its process group
        assert proc.wait(timeout=30) == 0, tail(log)
        wait_for(lambda: not session_pids(proc.pid), 15, "end of every process lwnas dashboard started")
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{address}/_stcore/health", timeout=2)
        assert f"over {url} (Ctrl-C stops it)" in log.read_text()
    finally:
        kill_session(proc)


@pytest.mark.postgres
def test_the_page_never_shows_the_storage_password(monkeypatch):
    """A PostgreSQL URL with a password (trust authentication ignores it): no element on the page has it."""
    import uuid

    from helpers.procs import PG_URL, postgres_or_skip
    from sqlalchemy.engine import make_url

    postgres_or_skip()
    name = f"lwnas-test-dash-{uuid.uuid4().hex[:8]}"
    seed_study(PG_URL, name=name, trials=12, seed=2)
    secret = "pw-" + uuid.uuid4().hex[:8]
    url = make_url(PG_URL).set(password=secret).render_as_string(hide_password=False)
    try:
        monkeypatch.setenv("LWNAS_STORAGE", url)
        at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
        at.session_state["study"] = name
        at.run()
        assert not at.exception and at.title[0].value == name.replace("-", "\\-")
        kinds = (
            "title",
            "caption",
            "markdown",
            "info",
            "error",
            "warning",
            "code",
            "selectbox",
            "metric",
            "plotly_chart",
            "dataframe",
        )
        page = "".join(str(el.proto) for kind in kinds for el in at.get(kind))
        assert secret not in page and ":***@" in shown(at.sidebar.caption[0].value)
    finally:
        optuna.delete_study(study_name=name, storage=PG_URL)


def test_export_leaves_out_infeasible_trials_as_lwnas_export_does(seeded, monkeypatch, downloads, tmp_path):
    url, study = seeded
    at = run_app(url, monkeypatch, "Export")
    infeasible = next(t.number for t in study.trials if t.user_attrs["outcome"] == "infeasible")
    pruned = next(t.number for t in study.trials if t.user_attrs["outcome"] == "pruned")
    at.multiselect(key="selected").set_value([infeasible]).run()
    assert not at.exception and not at.download_button
    assert any(f"trial(s) {infeasible} broke" in shown(w.value) for w in at.warning)
    at.multiselect(key="selected").set_value([infeasible, pruned]).run()
    file_name, data = downloads[-1]
    assert file_name == f"seeded-trial-{pruned:04d}.yaml"
    assert {file_name: data} == lwnas_export(url, "seeded", [pruned], tmp_path / "cli")
    assert any("lwnas train FILE" in c.value and "--task" not in c.value for c in at.code)
