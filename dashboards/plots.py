"""Plotly figures of a study: Pareto front (2-D, 3-D), parallel coordinates, hypervolume, learning curves.

Every trial shows where it can: its objective values, else its static costs, else the metric at its
last trained epoch (pruned, failed). A trial that was never trained (infeasible, or failed before its
first epoch) has no task metric: it is drawn on that axis' worst edge, marked "never trained" on hover.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from searchspace.study import MAXIMIZE
from tuners.fronts.objectives import beyond_worst
from tuners.store.outcomes import Outcome

from .data import StudyData, plot_value
from .text import plotly_text

FRONT = "Pareto front"  # the connected, highlighted non-dominated trials (one trace)
CATEGORIES = ("non-dominated", "dominated", "infeasible", "pruned", "failed", "running")
CATEGORY_COLOURS = {
    "non-dominated": "#d62728",
    "dominated": "#7f9fbf",
    "infeasible": "#ff9f1c",
    "pruned": "#9e9e9e",
    "failed": "#222222",
    "running": "#2ca02c",
}
CATEGORY_SYMBOLS = {
    "non-dominated": "circle",
    "dominated": "circle",
    "infeasible": "x",
    "pruned": "circle-open",
    "failed": "x-thin-open",
    "running": "diamond",
}
# Okabe & Ito's colour-blind-safe palette for knob values: no two near-identical hues (Streamlit's own
# theme starts with two blues); red is left to the front
KNOB_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#999999")
WEBGL_ABOVE = 1500  # points: beyond this, WebGL traces keep the browser responsive


def category(outcome: str, state: str, on_front: bool) -> str:
    if on_front:
        return "non-dominated"
    if state in ("RUNNING", "WAITING"):
        return "running"
    shown: dict[str, str] = {Outcome.COMPLETE: "dominated", Outcome.INTERRUPTED: "failed"}
    return shown.get(outcome, str(outcome))


def _fmt(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def hover_columns(data: StudyData) -> list[str]:
    """Columns of ``points`` that hover shows, in ``customdata`` order (the template refers to them by index,
    so the figure carries each value once instead of a text per point)."""
    return ["trial", "outcome", *[f"hover:{m}" for m in data.metrics], *data.varying_knobs, "note"]


def hover_template(data: StudyData) -> str:
    """Trial number, outcome, objective values and the configuration (every knob that varies)."""
    columns = hover_columns(data)
    ref = {c: f"%{{customdata[{i}]}}" for i, c in enumerate(columns)}
    values = " · ".join(f"{plotly_text(m)} {ref['hover:' + m]}" for m in data.metrics)
    knobs = "<br>".join(f"{plotly_text(k)}={ref[k]}" for k in data.varying_knobs)
    return f"<b>trial {ref['trial']}</b> ({ref['outcome']})<br>{values}<br>{knobs}<i>{ref['note']}</i><extra></extra>"


def points(data: StudyData, metrics: list[str]) -> pd.DataFrame:
    """Plot coordinates per trial on ``metrics`` with its category and hover columns; never-trained values
    pinned to the axis edge."""
    front = {r.number for r in data.front(metrics)}
    frame = data.frame
    df = pd.DataFrame(
        {
            "trial": frame["trial"],
            # stored text: hover and the legend (a category is an outcome the plot does not know) read HTML
            "outcome": frame["outcome"].map(plotly_text),
            "category": [plotly_text(category(r.outcome, r.state, r.number in front)) for r in data.records],
        }
    )
    for i, m in enumerate(data.metrics):
        df[f"hover:{m}"] = [_fmt(plot_value(r, i, m)) for r in data.records]
    for k in data.varying_knobs:
        df[k] = frame[k].map(plotly_text)
    note = pd.Series([f"<br>{plotly_text(r.failure)}" if r.failure else "" for r in data.records], index=df.index)
    for m in metrics:
        i = data.metrics.index(m)
        values = np.array([plot_value(r, i, m) for r in data.records], dtype=float)
        missing = np.isnan(values)
        if missing.any() and (~missing).any():
            lo, hi = np.nanmin(values), np.nanmax(values)
            pad = 0.05 * (hi - lo or abs(hi) or 1.0)
            values[missing] = beyond_worst(lo, hi, pad, data.objectives[i])
            note[missing] = note[missing] + f"<br>{plotly_text(m)}: never trained (drawn at the axis edge)"
        df[m] = values
    df["note"] = note
    return df.dropna(subset=metrics)


def _encoding(data: StudyData, df: pd.DataFrame, by: str) -> str:
    """Column that colours or symbols points: the category, or a knob's values."""
    if by == "outcome":
        return "category"
    values = pd.Series(data.knob_values(by), index=data.frame.index).loc[df.index]
    df[by] = (
        values
        if values.map(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)).all() and values.nunique() > 8
        else values.map(plotly_text)
    )
    return by


def front_figure(
    data: StudyData, x: str, y: str, colour: str = "outcome", symbol: str = "outcome", show_reference: bool = False
) -> go.Figure:
    """Trials on two objectives, the non-dominated ones highlighted and connected."""
    df = points(data, [x, y])
    colour_col, symbol_col = _encoding(data, df, colour), _encoding(data, df, symbol)
    fig = px.scatter(
        df,
        x=x,
        y=y,
        color=colour_col,
        symbol=symbol_col,
        custom_data=hover_columns(data),
        category_orders={"category": list(CATEGORIES)},
        color_discrete_map=CATEGORY_COLOURS if colour_col == "category" else None,
        color_discrete_sequence=KNOB_COLOURS,
        color_continuous_scale="Viridis",
        symbol_map=CATEGORY_SYMBOLS if symbol_col == "category" else None,
        render_mode="webgl" if len(df) > WEBGL_ABOVE else "svg",
    )
    fig.update_traces(hovertemplate=hover_template(data), marker={"size": 8, "opacity": 0.8})
    front = df[df["trial"].isin([r.number for r in data.front([x, y])])].sort_values(x)
    fig.add_trace(
        go.Scatter(
            x=front[x],
            y=front[y],
            mode="lines+markers+text",
            name=FRONT,
            customdata=front[hover_columns(data)].values,
            text=[str(n) for n in front["trial"]],
            textposition="top center",
            textfont={"color": "#d62728", "size": 11},
            hovertemplate=hover_template(data),
            line={"color": "#d62728", "width": 2},
            marker={"size": 14, "symbol": "circle-open", "color": "#d62728", "line": {"width": 2}},
        )
    )
    if show_reference:
        ref = dict(zip(data.metrics, data.reference_point))
        fig.add_trace(
            go.Scatter(
                x=[ref[x]],
                y=[ref[y]],
                mode="markers",
                name="reference point",
                marker={"symbol": "x", "size": 12, "color": "#555"},
                hovertemplate=f"reference point<br>{plotly_text(x)} %{{x}}<br>{plotly_text(y)} %{{y}}<extra></extra>",
            )
        )
    fig.update_layout(
        xaxis_title=_axis_title(data, x),
        yaxis_title=_axis_title(data, y),
        legend_title_text="",
        margin={"t": 30},
        height=520,
    )
    return fig


def _axis_title(data: StudyData, metric: str) -> str:
    objective = data.objectives[data.metrics.index(metric)]
    return f"{plotly_text(metric)} ({'higher' if objective.direction == MAXIMIZE else 'lower'} is better)"


def front_3d_figure(data: StudyData, metrics: list[str], colour: str = "outcome") -> go.Figure:
    """Three objectives in 3-D; non-dominated trials (over the three) in red."""
    df = points(data, metrics)
    colour_col = _encoding(data, df, colour)
    fig = px.scatter_3d(
        df,
        x=metrics[0],
        y=metrics[1],
        z=metrics[2],
        color=colour_col,
        custom_data=hover_columns(data),
        category_orders={"category": list(CATEGORIES)},
        color_discrete_map=CATEGORY_COLOURS if colour_col == "category" else None,
        color_discrete_sequence=KNOB_COLOURS,
    )
    fig.update_traces(hovertemplate=hover_template(data), marker={"size": 4})
    titles = [_axis_title(data, m) for m in metrics]
    fig.update_layout(
        margin={"t": 30, "l": 0, "r": 0, "b": 0},
        height=600,
        legend_title_text="",
        scene={"xaxis_title": titles[0], "yaxis_title": titles[1], "zaxis_title": titles[2]},
    )
    return fig


def parallel_figure(data: StudyData) -> go.Figure:
    """Every objective of the complete, feasible trials as parallel axes; the front in red."""
    front = {r.number for r in data.front()}
    rows = data.candidates
    dims = [{"label": _axis_title(data, m), "values": [r.scores[i] for r in rows]} for i, m in enumerate(data.metrics)]
    colour = [1 if r.number in front else 0 for r in rows]
    fig = go.Figure(
        go.Parcoords(
            dimensions=dims,
            line={"color": colour, "colorscale": [[0, "#b0c4de"], [1, "#d62728"]], "cmin": 0, "cmax": 1},
        )
    )
    # plotly centres each axis title on its axis and clips what crosses the figure's edge: leave room for
    # half of the outermost titles (about 7 px per character at plotly's default 12 px font)
    side = [int(3.5 * len(_axis_title(data, m))) + 20 for m in (data.metrics[0], data.metrics[-1])]
    fig.update_layout(margin={"t": 60, "l": side[0], "r": side[1]}, height=450)
    return fig


def hypervolume_figure(data: StudyData) -> go.Figure:
    """Hypervolume of the trials up to each trial number, with the reference point in the title."""
    hv = data.hypervolume_over_trials
    ref = ", ".join(f"{plotly_text(m)} {_fmt(v)}" for m, v in zip(data.metrics, data.reference_point))
    fig = go.Figure(
        go.Scatter(
            x=hv["trial"],
            y=hv["hypervolume"],
            mode="lines",
            line={"shape": "hv"},
            name="hypervolume",
            hovertemplate="trial %{x}<br>hypervolume %{y:.6g}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Hypervolume over trials (reference point: {ref})",
        xaxis_title="trial",
        yaxis_title="hypervolume",
        height=400,
        margin={"t": 50},
    )
    return fig


def learning_curve_figure(curves: Mapping[str, Sequence[dict[str, Any]]]) -> go.Figure:
    """Per-epoch metrics of one or more trials (``{label: epochs}``), one panel per metric."""
    rows = [
        {"trial": label, "epoch": e.get("epoch"), "metric": k, "value": v}
        for label, epochs in curves.items()
        for e in epochs
        for k, v in e.items()
        if (k.startswith("val_") or k == "train_loss") and isinstance(v, (int, float))
    ]
    df = pd.DataFrame(rows, columns=["trial", "epoch", "metric", "value"])
    df["metric"] = df["metric"].map(plotly_text)  # stored keys: px writes them into panel titles and hover
    fig = px.line(
        df,
        x="epoch",
        y="value",
        color="trial",
        facet_col="metric",
        facet_col_wrap=3,
        markers=True,
        color_discrete_sequence=KNOB_COLOURS,
    )  # compared trials: distinct colours, as knob values
    fig.update_yaxes(matches=None, showticklabels=True)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))  # "metric=val_loss": the name
    fig.update_layout(
        height=320 * max(1, math.ceil(df["metric"].nunique() / 3)), margin={"t": 30}, legend_title_text=""
    )
    return fig
