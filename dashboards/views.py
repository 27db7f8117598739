"""The dashboard's tabs: Pareto front, hypervolume, trials, trial detail, comparison, export."""

from __future__ import annotations

import shlex
from typing import Any

import pandas as pd
import streamlit as st
import yaml

from searchspace.study import MAXIMIZE
from tuners.store.outcomes import Outcome

from . import importance, plots, study_views
from .data import COST_METRICS, LATENCY_DETAILS, StudyData, knobs_of
from .exporting import export_download
from .text import md

SELECTED = "selected"  # session key: the trials picked for comparison and export
VIEW = "view"  # session key: the open tab
DETAIL = "detail_trial"  # session key: the trial the Trial detail tab shows


def _add_to_selection(numbers: list[int]) -> None:
    current = list(st.session_state.get(SELECTED, []))
    st.session_state[SELECTED] = current + [n for n in numbers if n not in current]


def _chart_selected(key: str) -> None:
    """on_select callback of a chart: its selected points join the selection; one clicked point opens."""
    points = st.session_state[key].selection.get("points", [])
    numbers = list(dict.fromkeys(int(p["customdata"][0]) for p in points if p.get("customdata")))
    _add_to_selection(numbers)
    if len(numbers) == 1:
        open_trial(numbers[0])


def open_trial(number: int) -> None:
    """Show trial ``number`` in the Trial detail tab (from a callback, before the tabs are drawn)."""
    st.session_state[DETAIL] = number
    st.session_state[VIEW] = "Trial detail"


def _table_selected(key: str, numbers_key: str) -> None:
    """on_select callback of the trials table: selected rows join the selection."""
    rows = st.session_state[key].selection.get("rows", [])
    shown = st.session_state.get(numbers_key, [])
    _add_to_selection([shown[i] for i in rows if i < len(shown)])


@st.cache_data(ttl=600, max_entries=32, show_spinner=False)
def _front_figure(study_key: tuple, x: str, y: str, colour: str, symbol: str, reference: bool, _data: StudyData):
    return plots.front_figure(_data, x, y, colour, symbol, reference)


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _hypervolume_figure(study_key: tuple, _data: StudyData):
    return plots.hypervolume_figure(_data)


def front_tab(data: StudyData, key: tuple) -> None:
    if not data.candidates:
        counts = data.frame["outcome"].value_counts().to_dict()
        st.info(
            "No complete, feasible trial yet, so there is no Pareto front to draw "
            f"({', '.join(f'{n} {md(k)}' for k, n in counts.items()) or 'no trials'}). "
            "The Trials and Trial detail tabs show what happened to each trial."
        )
        return
    metrics, knobs = data.metrics, data.varying_knobs
    c1, c2, c3, c4 = st.columns(4)
    x = c1.selectbox("x axis", metrics, index=min(1, len(metrics) - 1), key="front_x")
    y = c2.selectbox("y axis", [m for m in metrics if m != x] or metrics, key="front_y")
    colour = c3.selectbox("Colour by", ["outcome", *knobs], key="front_colour")
    symbol = c4.selectbox("Symbol by", ["outcome", *knobs], key="front_symbol")
    reference = st.checkbox("Show the hypervolume reference point", key="front_reference")
    fig = _front_figure(key, x, y, colour, symbol, reference, data)
    st.plotly_chart(
        fig,
        key="front_chart",
        on_select=lambda: _chart_selected("front_chart"),
        selection_mode=("points", "box", "lasso"),
    )
    front = data.front([x, y])
    st.caption(
        f"{len(front)} non-dominated trials on {md(x)} × {md(y)} (red, connected). Pruned, failed and infeasible "
        "trials are never on the front; a trial never trained is drawn at the edge of the metric's axis. "
        "Click a point to open it in Trial detail; click, box- or lasso-select points to add them to the "
        "selection (sidebar). Front points are labelled with their trial numbers."
    )
    if data.parents:  # some points were trained with several seeds
        study_views.seed_front_section(data, x, y)
    if len(metrics) > 2:
        _more_objectives(data, metrics)


def _more_objectives(data: StudyData, metrics: list[str]) -> None:
    st.subheader("All objectives")
    chosen = st.multiselect(
        "3-D view: three objectives", metrics, default=metrics[:3], max_selections=3, key="front_3d"
    )
    if len(chosen) == 3:
        st.plotly_chart(plots.front_3d_figure(data, chosen), key="front_3d_chart")
    st.plotly_chart(plots.parallel_figure(data), key="parallel_chart")
    st.caption("Parallel coordinates of the complete, feasible trials; the Pareto front over all objectives in red.")


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _importances(study_key: tuple, url: str, _data: StudyData) -> pd.DataFrame:
    return importance.knob_importances(url, _data)


def importance_tab(data: StudyData, key: tuple, url: str) -> None:
    try:
        with st.spinner("Weighing the knobs (PED-ANOVA, once per load of the study)…"):
            table = _importances(key, url, data)
    except importance.TooFewTrials as exc:
        st.info(f"Not enough trials yet: {md(exc)}. This view fills in as the sweep completes trials.")
        return
    for col, metric in zip(st.columns(len(data.metrics)), data.metrics):
        col.plotly_chart(importance.importance_figure(table, metric), key=f"importance_chart_{metric}")
    st.caption(
        f"How much each sampled knob decides whether a trial is among the best 10% on each objective "
        f"(Optuna's PED-ANOVA evaluator over the {len(data.candidates)} complete, feasible trials; each "
        "objective's importances sum to 1; conditional knobs count where they are set)."
    )
    st.dataframe(
        table.pivot(index="knob", columns="objective", values="importance")[data.metrics].sort_values(
            data.metrics[0], ascending=False
        ),
        key="importance_table",
    )


def hypervolume_tab(data: StudyData, key: tuple) -> None:
    if not data.candidates:
        st.info("Hypervolume needs at least one complete, feasible trial.")
        return
    st.plotly_chart(_hypervolume_figure(key, data), key="hypervolume_chart")
    ref = ", ".join(f"{md(m)} {v:g}" for m, v in zip(data.metrics, data.reference_point))
    st.caption(
        f"Volume dominated by the complete, feasible trials up to each trial number, measured from the "
        f"reference point ({ref}): 0 for maximised metrics, 1.1 × the largest value for minimised costs "
        "(as `lwnas status`)."
    )


def trials_tab(data: StudyData) -> None:
    frame = data.frame
    outcomes = sorted(frame["outcome"].unique())
    c1, c2 = st.columns([1, 2])
    chosen = c1.multiselect("Outcome", outcomes, default=outcomes, key="filter_outcome")
    knobs = c2.multiselect("Filter on knobs", data.knobs, key="filter_knobs")
    mask = frame["outcome"].isin(chosen)
    for knob in knobs:
        values = sorted(frame[knob].unique(), key=str)
        picked = st.multiselect(f"{md(knob)} is one of", values, default=values, key=f"filter_value_{knob}")
        mask &= frame[knob].isin(picked)
    sortable = ["trial", *data.metrics, *[c for c in COST_METRICS if c in frame and c not in data.metrics]]
    c1, c2 = st.columns([2, 1])
    by = c1.selectbox("Sort by", sortable, key="sort_by")
    maximised = by in data.metrics and data.objectives[data.metrics.index(by)].direction == MAXIMIZE
    descending = c2.toggle("Descending", value=maximised, key=f"sort_descending_{by}")
    shown = frame[mask].sort_values(by, ascending=not descending, na_position="last", kind="stable")
    columns = [
        "trial",
        "outcome",
        *data.metrics,
        *[c for c in sortable[1:] if c not in data.metrics],
        *data.varying_knobs,
        "seeds",
        "epochs",
        "wall_time",
        "failure",
    ]
    st.session_state["table_numbers"] = shown["trial"].tolist()
    st.dataframe(
        shown[columns],
        hide_index=True,
        key="trials_table",
        selection_mode="multi-row",
        on_select=lambda: _table_selected("trials_table", "table_numbers"),
    )
    st.caption(f"{len(shown)} of {len(frame)} trials. Select rows to add them to the selection (sidebar).")


def _cost_text(value: Any) -> str:
    """Counts with thousands separators; a latency (ms) or a CV keeps its digits; the device line as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:,.0f}" if isinstance(value, int) or abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def _costs_table(costs: dict[str, Any], constraints: dict[str, float]) -> pd.DataFrame:
    rows = [{"cost": k, "value": _cost_text(v)} for k, v in costs.items()]
    rows += [
        {"cost": f"constraint {k}", "value": f"{v:,.6g} ({'violated' if v > 0 else 'met'})"}
        for k, v in constraints.items()
    ]
    return pd.DataFrame(rows, columns=["cost", "value"])


def detail_tab(data: StudyData) -> None:
    numbers = [r.number for r in data.records]
    if st.session_state.get(DETAIL) not in data.by_number:  # first visit, or a trial of another study
        st.session_state[DETAIL] = (st.session_state.get(SELECTED) or [r.number for r in data.front()] or numbers)[0]
    number = st.selectbox("Trial", numbers, key=DETAIL)
    r = data.by_number[number]
    st.subheader(f"Trial {r.number}: {md(r.outcome)}", anchor=False)
    if r.failure:
        (st.warning if r.outcome == Outcome.INFEASIBLE else st.error)(f"{md(r.outcome)}: {md(r.failure)}")
    cols = st.columns(len(data.metrics) + 2)
    for col, (i, m) in zip(cols, enumerate(data.metrics)):
        value = r.values[i] if r.values is not None else None
        col.metric(md(m), "—" if value is None or value != value or abs(value) == float("inf") else f"{value:,.4g}")
    cols[-2].metric("epochs", len(r.epochs))
    cols[-1].metric("wall time", f"{r.wall_time:.1f} s" if r.wall_time is not None else "—")
    left, right = st.columns(2)
    left.markdown("**Configuration**")
    left.code(yaml.safe_dump(r.config, sort_keys=False), language="yaml")
    right.markdown("**Cost breakdown**")
    right.dataframe(_costs_table(r.costs, r.constraints), hide_index=True)
    right.markdown("**Sampled knobs and training**")
    right.code(yaml.safe_dump({"params": r.params, "training": r.training}, sort_keys=False), language="yaml")
    right.caption(
        f"state {md(r.state)} · host {md(r.host or '—')} · seed config {md(r.seed_config or '—')} · "
        f"started {md(r.datetime_start or '—')} · finished {md(r.datetime_complete or '—')}"
    )
    if r.epochs:
        st.markdown("**Learning curve**")
        st.plotly_chart(plots.learning_curve_figure({f"trial {r.number}": r.epochs}), key="detail_curve")
    else:
        st.info("No per-epoch metrics: this trial never trained an epoch.")


def compare_tab(data: StudyData) -> None:
    numbers = [r.number for r in data.records]
    default = [n for n in st.session_state.get(SELECTED, []) if n in data.by_number][:4]
    chosen = st.multiselect(
        "Trials to compare (2 to 4)", numbers, default=default, max_selections=4, key="compare_trials"
    )
    if len(chosen) < 2:
        st.info("Pick 2 to 4 trials to compare them side by side (or select them on the front or in the table).")
        return
    records = [data.by_number[n] for n in chosen]
    rows: dict[str, list[Any]] = {"outcome": [r.outcome for r in records]}
    for i, m in enumerate(data.metrics):
        rows[m] = [r.values[i] if r.values is not None else None for r in records]
    for c in (*COST_METRICS, *LATENCY_DETAILS):
        if any(c in r.costs for r in records) and c not in rows:
            rows[c] = [r.costs.get(c) for r in records]
    only_diff = st.toggle("Only knobs that differ", value=True, key="compare_diff")
    for k in data.knobs:
        values = [knobs_of(r).get(k) for r in records]
        if not only_diff or len({str(v) for v in values}) > 1:
            rows[k] = values
    table = pd.DataFrame(
        {f"trial {r.number}": [str(v[j]) for v in rows.values()] for j, r in enumerate(records)}, index=list(rows)
    )
    st.dataframe(table)
    curves = {f"trial {r.number}": r.epochs for r in records if r.epochs}
    if curves:
        st.plotly_chart(plots.learning_curve_figure(curves), key="compare_curves")


def export_tab(data: StudyData, url: str) -> None:
    chosen = [n for n in st.session_state.get(SELECTED, []) if n in data.by_number and data.by_number[n].config]
    # as `lwnas export`: a trial that broke the constraints was never trained, so it is not offered
    infeasible = [n for n in chosen if data.by_number[n].outcome == "infeasible" or not data.by_number[n].feasible]
    exportable = [n for n in chosen if n not in infeasible]
    if infeasible:
        st.warning(
            f"Not exported: trial(s) {', '.join(map(str, sorted(infeasible)))} broke the study's "
            "constraints and were never trained. `lwnas export NAME --trials N --infeasible` writes "
            "one anyway."
        )
    if not exportable:
        st.info(
            "Select trials to export: on the front, in the trials table, or in the sidebar "
            "(“Select the front” picks every non-dominated trial)."
        )
        return
    download = export_download(url, data.name, exportable)
    st.download_button(
        f"Download {md(download.file_name)}",
        data=download.data,
        file_name=download.file_name,
        mime=download.mime,
        key="export_download",
        on_click="ignore",
    )
    st.caption(
        f"{len(download.files)} configuration file(s), byte for byte what the first command below writes; "
        "train one with the second."
    )
    st.code(
        f"lwnas export {shlex.quote(data.name)} --trials {','.join(map(str, sorted(exportable)))}\nlwnas train FILE",
        language="bash",
    )
    first, text = next(iter(download.files.items()))
    st.markdown(f"**{md(first)}**")
    st.code(text, language="yaml")
