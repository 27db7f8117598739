"""The dashboard's views that look past one sweep: confirmation (sweep value against the value after
`lwnas confirm`'s longer training) and studies compared on one task with a fixed reference point."""

from __future__ import annotations

import shlex

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from tuners.fronts.seeds import pareto_front_groups

from .data import StudyData
from .study_compare import comparable_studies, hypervolume_table, shared_reference_point, study_fronts
from .text import md, plotly_text

ROLE_SYMBOLS = {"front": "circle", "dominated": "x"}
MAX_DEFAULT_STUDIES = 8  # the Compare studies tab starts with every comparable study, up to this many


def confirmation_frame(run: dict) -> pd.DataFrame:
    """One row per confirmed trial: role, then sweep and confirmed value of each task metric."""
    rows = []
    for number, t in sorted(run["trials"].items(), key=lambda kv: int(kv[0])):
        row = {"trial": int(number), "role": t["role"]}
        for metric, value in t["sweep"].items():
            row[f"{metric} (sweep)"] = value
            row[f"{metric} (confirmed)"] = (t["confirmed"] or {}).get(metric)
        row["failure"] = t.get("failure")
        rows.append(row)
    return pd.DataFrame(rows)


def confirmation_figure(run: dict, metric: str) -> go.Figure:
    fig = go.Figure()
    for role, symbol in ROLE_SYMBOLS.items():
        trials = [(int(n), t) for n, t in run["trials"].items() if t["role"] == role and t["confirmed"]]
        fig.add_trace(
            go.Scatter(
                x=[t["sweep"][metric] for _, t in trials],
                y=[t["confirmed"][metric] for _, t in trials],
                mode="markers+text",
                text=[str(n) for n, _ in trials],
                textposition="top center",
                name=role,
                marker={"symbol": symbol, "size": 10},
                customdata=[[n] for n, _ in trials],
                hovertemplate="trial %{customdata[0]}<br>sweep %{x:.4g}<br>confirmed %{y:.4g}<extra></extra>",
            )
        )
    fig.update_layout(
        title=f"{plotly_text(metric)}: sweep ({plotly_text(run.get('sweep_epochs'))} epochs) against confirmed "
        f"({plotly_text(run['epochs'])} epochs)",
        xaxis_title=f"{plotly_text(metric)} in the sweep",
        yaxis_title=f"{plotly_text(metric)} confirmed",
        height=450,
        margin={"t": 50},
    )
    return fig


def confirmation_tab(data: StudyData) -> None:
    if not data.confirmations:
        st.info("No confirmation yet: train the front at a longer budget with the command below, then refresh.")
        st.code(f"lwnas confirm {shlex.quote(data.name)} --epochs 30 --dominated 3", language="bash")
        return
    runs = data.confirmations
    index = st.selectbox(
        "Confirmation",
        list(range(len(runs)))[::-1],
        key="confirmation_run",
        format_func=lambda i: f"{runs[i]['at']} · {runs[i]['epochs']} epochs · {len(runs[i]['trials'])} trials",
    )
    run = runs[index]
    for metric, k in run["kendall"].items():
        st.plotly_chart(confirmation_figure(run, metric), key=f"confirmation_chart_{metric}")
        tau = "undefined" if k["tau"] is None else f"{k['tau']:.3f}"
        ci = (
            f", 95 % bootstrap interval [{k['ci95'][0]:.3f}, {k['ci95'][1]:.3f}]"
            if k["ci95"]
            else " (too few trials for an interval)"
        )
        st.markdown(f"Kendall τ of {md(metric)}, sweep against confirmed: **{tau}**{ci} over {md(k['n'])} trials")
    st.dataframe(confirmation_frame(run), hide_index=True)


def seed_front_section(data: StudyData, x: str, y: str) -> None:
    """The front of the seed means (``budget.front_seeds``) with mean ± std error bars and a seeds column."""
    front = pareto_front_groups(data.seed_groups, data.objectives)
    ix, iy = data.metrics.index(x), data.metrics.index(y)
    fig = go.Figure(
        go.Scatter(
            x=[g.record.scores[ix] for g in front],
            y=[g.record.scores[iy] for g in front],
            mode="lines+markers+text",
            error_x={"type": "data", "array": [g.std[ix] or 0.0 for g in front]},
            error_y={"type": "data", "array": [g.std[iy] or 0.0 for g in front]},
            text=[str(g.number) for g in front],
            textposition="top center",
            customdata=[[g.number, g.seeds] for g in front],
            hovertemplate="trial %{customdata[0]} · %{customdata[1]} seeds<br>%{x:.4g}, %{y:.4g}<extra></extra>",
        )
    )
    fig.update_layout(
        title="Front of the seed means (bars: one standard deviation)",
        xaxis_title=plotly_text(x),
        yaxis_title=plotly_text(y),
        height=400,
        margin={"t": 50},
    )
    st.plotly_chart(fig, key="seed_front_chart")
    rows = []
    for g in front:
        row = {"trial": g.number, "seeds": g.seeds, "seed trials": ", ".join(str(m.number) for m in g.members)}
        for i, metric in enumerate(data.metrics):
            row[f"{metric} mean"], row[f"{metric} std"] = g.record.scores[i], g.std[i]
        rows.append(row)
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    st.caption(
        "Trials of one point retrained with other seeds (`budget: {front_seeds: N}`) are averaged; this front "
        "is the one `lwnas status` and `lwnas export --trials pareto` give."
    )


def _ref_key(data: StudyData) -> str:
    return f"compare_ref:{data.spec.get('task')}:{data.objectives}"


def _keep_typed_reference(key: str, n: int) -> None:
    """A typed reference point becomes the frozen one (it outlives the widgets when the tab closes)."""
    st.session_state[key] = [st.session_state[f"compare_ref_{i}"] for i in range(n)]


def compare_studies_tab(data: StudyData, url: str) -> None:
    task = data.spec.get("task")
    names = comparable_studies(url, str(task), data.objectives)
    st.caption(
        f"Studies of task {md(task)} with the objectives of {md(data.name)}: their fronts on one plot and "
        "each one's hypervolume measured from one reference point."
    )
    chosen = st.multiselect("Studies", names, default=names[:MAX_DEFAULT_STUDIES], key="compare_studies")
    key = _ref_key(data)
    if key not in st.session_state or st.button(
        "Reset the reference point from the studies' trials now", key="compare_ref_reset"
    ):
        # frozen: computed once from every comparable study, so picking studies or new trials leave it
        st.session_state[key] = shared_reference_point(study_fronts(url, names, data.objectives), data.objectives)
        for i, value in enumerate(st.session_state[key]):
            st.session_state[f"compare_ref_{i}"] = float(value)
    for i, value in enumerate(st.session_state[key]):  # Streamlit drops a widget's state while its tab is closed
        st.session_state.setdefault(f"compare_ref_{i}", float(value))
    cols = st.columns(len(data.metrics))
    ref = [
        cols[i].number_input(
            f"reference {md(m)}",
            key=f"compare_ref_{i}",
            format="%g",
            on_change=_keep_typed_reference,
            args=(key, len(data.metrics)),
        )
        for i, m in enumerate(data.metrics)
    ]
    if not chosen:
        st.info("Pick one or more studies.")
        return
    fronts = study_fronts(url, chosen, data.objectives)
    st.dataframe(pd.DataFrame(hypervolume_table(fronts, data.objectives, ref)), hide_index=True)
    x, y = data.metrics[0], data.metrics[1] if len(data.metrics) > 1 else data.metrics[0]
    fig = go.Figure()
    for f in fronts:
        fig.add_trace(
            go.Scatter(
                x=[r.scores[0] for r in f.front],
                y=[r.scores[data.metrics.index(y)] for r in f.front],
                mode="lines+markers",
                line={"shape": "hv"},
                name=plotly_text(f.name),
                customdata=[[r.number] for r in f.front],
                hovertemplate="trial %{customdata[0]}<br>%{x:.4g}, %{y:.4g}<extra></extra>",
            )
        )
    fig.update_layout(
        title="Pareto fronts", xaxis_title=plotly_text(x), yaxis_title=plotly_text(y), height=450, margin={"t": 50}
    )
    st.plotly_chart(fig, key="compare_chart")
