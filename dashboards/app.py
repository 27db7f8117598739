"""lwnas dashboard: browse a sweep's Pareto fronts, compare trials, export configurations.

Run with ``lwnas dashboard --storage URL``: it serves this script on localhost with Streamlit's usage
statistics off (a bare ``streamlit run`` binds every interface and sends statistics). The URL reaches the
script in LWNAS_STORAGE. Reads storage, never writes it; text from storage is shown as text.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
from pathlib import Path

import streamlit as st

if __package__ in (None, ""):  # `streamlit run dashboards/app.py` runs this file as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy.exc import SQLAlchemyError  # noqa: E402

from dashboards import study_views, views  # noqa: E402
from dashboards.data import StudyData, TrialCache, list_studies  # noqa: E402
from dashboards.text import md  # noqa: E402
from searchspace.study import MAXIMIZE  # noqa: E402
from tuners.store.connection import StorageError
from tuners.store.keys import DEFAULT_STORAGE
from tuners.store.outcomes import Outcome  # noqa: E402
from tuners.store.urls import masked  # noqa: E402

REFRESH_S = 5  # how often a running study is checked for new trials
log = logging.getLogger("lwnas.dashboard")


def storage_url() -> str:
    """``--storage`` after ``--`` on the streamlit command line, else $LWNAS_STORAGE, else the default."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--storage")
    args, _ = parser.parse_known_args(sys.argv[1:])
    return args.storage or os.environ.get("LWNAS_STORAGE") or DEFAULT_STORAGE


@st.cache_data(ttl=10, show_spinner=False)
def studies(url: str):
    return list_studies(url)


@st.cache_resource(show_spinner=False)
def trial_cache(url: str, name: str) -> TrialCache:
    return TrialCache(url, name)


def pick_study(url: str) -> str | None:
    """Sidebar: the study picker, with each study's size, state, objectives and last update."""
    table = studies(url)
    st.sidebar.caption(f"storage {md(masked(url))}")
    if table.empty:
        st.info(f"No studies in {md(masked(url))} yet. Start one with the command below, then refresh.")
        st.code(f"lwnas sweep studies/quickstart.yaml --storage {shlex.quote(masked(url))}", language="bash")
        return None
    rows = table.set_index("study").to_dict("index")
    name = st.sidebar.selectbox(
        "Study", list(rows), key="study", format_func=lambda n: f"{n} · {rows[n]['trials']} trials · {rows[n]['state']}"
    )
    with st.sidebar.expander("All studies", expanded=False):
        st.dataframe(table, hide_index=True)
    return name


def refresh_controls(url: str, data: StudyData) -> None:
    """Sidebar: a refresh button and automatic refresh while the study has running trials."""
    if st.sidebar.button("Refresh now", key="refresh"):
        studies.clear()
    auto = st.sidebar.toggle(
        "Auto-refresh",
        value=data.running > 0 or not data.records,
        key=f"auto_refresh_{data.name}",
        help=f"Check for new trials every {REFRESH_S} s (on by default while trials run).",
    )
    if auto:
        watch(url, data.name, data.version)


@st.fragment(run_every=REFRESH_S)
def watch(url: str, name: str, version: int) -> None:
    """Reload the whole page when the study changed since it was drawn (a cheap incremental check)."""
    try:
        latest = trial_cache(url, name).load()
    except (StorageError, SQLAlchemyError, KeyError):
        return  # the next full run reports it
    if latest.version != version:
        studies.clear()
        st.rerun(scope="app")


def selection_controls(data: StudyData) -> None:
    """Sidebar: the trials selected for comparison and export."""
    exportable = [r.number for r in data.records if r.config]
    st.session_state[views.SELECTED] = [n for n in st.session_state.get(views.SELECTED, []) if n in exportable]
    c1, c2 = st.sidebar.columns(2)
    if c1.button("Select the front", key="select_front"):
        st.session_state[views.SELECTED] = [r.number for r in data.front()]
    if c2.button("Clear", key="clear_selection"):
        st.session_state[views.SELECTED] = []
    st.sidebar.multiselect(
        "Selected trials",
        exportable,
        key=views.SELECTED,
        help="For comparison and export; add trials from the front or the table too.",
    )


def summary(data: StudyData, url: str) -> None:
    st.title(md(data.name), anchor=False)
    counts = data.frame["outcome"].value_counts().to_dict()
    objectives = ", ".join(f"{md(o.metric)} ({'max' if o.direction == MAXIMIZE else 'min'})" for o in data.objectives)
    st.caption(
        f"task {md(data.spec.get('task', '—'))} · objectives {objectives} · storage {md(masked(url))}"
        + (f" · {md(data.spec['description'])}" if data.spec.get("description") else "")
    )
    cols = st.columns(4)
    cols[0].metric("trials", len(data.records))
    cols[1].metric("complete", counts.get(Outcome.COMPLETE.value, 0))
    cols[2].metric("on the front", len(data.front()))
    cols[3].metric("running", data.running)
    st.caption(" · ".join(f"{md(k)} {v}" for k, v in counts.items()))
    if data.rejected:
        reasons = ", ".join(f"{md(k)}: {md(v)}" for k, v in data.rejected.get("reasons", {}).items())
        st.caption(
            f"constraints rejected {md(data.rejected.get('rejected'))} of {md(data.rejected.get('checked'))} "
            f"proposed points ({reasons})"
        )


def study_page(url: str, name: str) -> None:
    cache = trial_cache(url, name)
    try:
        if not cache.loaded:
            with st.spinner(f"Reading the trials of {md(name)} (once; later views and refreshes are incremental)…"):
                cache.load()
        data = cache.load()
    except KeyError:
        studies.clear()
        st.error(f"Study {md(repr(name))} is no longer in the storage (deleted or renamed): press “Refresh now”.")
        return
    listed = studies(url).set_index("study")["state"].get(name)
    if (
        listed is not None
        and (listed == "running") != (data.running > 0)
        and st.session_state.get("relabelled") != (name, data.version)
    ):
        # the sidebar's list is older than the trials just read (a sweep ended or started since): relist once
        st.session_state["relabelled"] = (name, data.version)
        studies.clear()
        st.rerun()
    refresh_controls(url, data)
    if not data.records:
        st.title(md(name), anchor=False)
        st.info(
            f"Study {md(repr(name))} has no trials yet. Its sweep may still be starting: this page refreshes "
            "itself while the study runs (or use “Refresh now”)."
        )
        return
    selection_controls(data)
    summary(data, url)
    key = (url, name, data.token)
    pages = {
        "Pareto front": lambda: views.front_tab(data, key),
        "Hypervolume": lambda: views.hypervolume_tab(data, key),
        "Knob importance": lambda: views.importance_tab(data, key, url),
        "Trials": lambda: views.trials_tab(data),
        "Trial detail": lambda: views.detail_tab(data),
        "Compare": lambda: views.compare_tab(data),
        "Export": lambda: views.export_tab(data, url),
        "Confirmation": lambda: study_views.confirmation_tab(data),
        "Compare studies": lambda: study_views.compare_studies_tab(data, url),
    }
    # only the open tab runs (and is sent to the browser): a large study stays quick on every rerun
    for tab, draw in zip(st.tabs(list(pages), key=views.VIEW, on_change="rerun"), pages.values()):
        if tab.open:
            with tab:
                draw()


def main() -> None:
    st.set_page_config(page_title="lwnas dashboard", layout="wide")
    url = storage_url()
    try:
        name = pick_study(url)
        if name is not None:
            study_page(url, name)
    except StorageError as exc:
        st.error(md(exc))
    except SQLAlchemyError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        st.error(
            f"Reading {md(masked(url))} failed: {md(reason.replace(url, masked(url)))}. Is the database still "
            "reachable? Press “Refresh now” to try again."
        )


main()
