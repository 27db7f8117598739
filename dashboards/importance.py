"""Knob importance per objective: Optuna's PED-ANOVA evaluator on a study's complete, feasible trials."""

from __future__ import annotations

import math
import warnings

import optuna
import pandas as pd
import plotly.graph_objects as go
from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

from searchspace.study import Objective
from tuners.fronts.objectives import minimised_value

from .data import StudyData, connect
from .text import plotly_text

MIN_TRIALS = 10  # PED-ANOVA compares the best 10% with all: below this the best 10% is a single trial


class TooFewTrials(ValueError):
    """The study has fewer than MIN_TRIALS complete, feasible trials."""


def knob_importances(url: str, data: StudyData) -> pd.DataFrame:
    """One row per (objective, knob): its PED-ANOVA importance (each objective's importances sum to 1).

    Only the complete, feasible trials with finite values count (the dashboard's front candidates);
    every sampled knob is assessed, conditional ones included. Raises TooFewTrials with fewer than
    ``MIN_TRIALS`` such trials.
    """
    candidates = {r.number for r in data.candidates}
    if len(candidates) < MIN_TRIALS:
        raise TooFewTrials(
            f"knob importance needs at least {MIN_TRIALS} complete, feasible trials; "
            f"this study has {len(candidates)} so far"
        )
    study = optuna.load_study(study_name=data.name, storage=connect(url))
    rows = []
    for i, objective in enumerate(data.objectives):

        def target(t: optuna.trial.FrozenTrial, i: int = i, objective: Objective = objective) -> float:
            # PED-ANOVA treats lower targets as better; NaN: left out
            return minimised_value(t.values[i], objective) if t.number in candidates else math.nan

        with warnings.catch_warnings():  # "importances will be equal" when a knob never varies
            warnings.simplefilter("ignore")
            scores = get_param_importances(study, evaluator=PedAnovaImportanceEvaluator(), target=target)
        rows += [{"objective": objective.metric, "knob": k, "importance": float(v)} for k, v in scores.items()]
    return pd.DataFrame(rows, columns=["objective", "knob", "importance"])


def importance_figure(table: pd.DataFrame, metric: str) -> go.Figure:
    """Horizontal bars of one objective's knob importances, the most important on top."""
    rows = table[table["objective"] == metric].sort_values("importance")
    fig = go.Figure(
        go.Bar(
            x=rows["importance"],
            y=[plotly_text(k) for k in rows["knob"]],
            orientation="h",
            marker={"color": "#0072B2"},
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"{plotly_text(metric)}: which knobs matter",
        xaxis_title="importance (PED-ANOVA)",
        height=150 + 28 * len(rows),
        margin={"t": 70, "l": 10},
    )  # the title clears the toolbar
    return fig
