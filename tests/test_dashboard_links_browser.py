"""No text from storage becomes a link on the dashboard (issue 28), checked in a real browser.

Markdown escaping keeps a stored ``[text](url)`` or ``<img>`` as text, but Streamlit's Markdown still links
every bare ``http://...``, ``www....`` and e-mail address it finds in the text; plotly draws ``<a href>`` in
titles, legends and hovers as a link. A study whose name, task, description, metric name, outcome, host,
seed config, failures, learning-curve keys and confirmation record hold all of these is served by the
installed ``lwnas dashboard`` to Debian's headless Chromium; on every tab the page shows the text, and no
``<a>`` element (HTML or SVG) points at the stored host, and no chart carries an unescaped ``<a``. The
database is left as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import time

import numpy as np
import pytest
from helpers.procs import kill_session, proc_env, start_dashboard

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip(
        "needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
        allow_module_level=True,
    )
pytest.importorskip("streamlit")
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install -e '.[test]')")

WAIT_S = 180  # the first page imports streamlit, plotly and torch on a busy 2-core machine
HOST = "links.example.com"  # never contacted: nothing on the page may even point at it


def linky(label: str) -> str:
    """Every form a Markdown renderer or plotly could make a link of, around ``label``."""
    return (
        f"{label} http://{HOST}/{label} www.{HOST}/{label} {label}@{HOST} "
        f"<a href='http://{HOST}/{label}-a'>{label}-a</a> [{label}-md](http://{HOST}/{label}-md)"
    )


METRIC = linky("metric")


def linky_study(url: str) -> None:
    """Two studies of one task (the Compare studies tab) whose stored text is all ``linky``."""
    import optuna

    from dashboards.sample import make_trial, seed_study
    from tuners.store import keys
    from tuners.store.connection import open_storage

    storage = open_storage(url, create=True)
    names = (f"s1 {linky('name')}", f"s2 {linky('other')}")
    for n, name in enumerate(names):
        study = seed_study(storage, name=name, trials=0)
        spec = study.user_attrs[keys.STUDY_SPEC]
        study.set_user_attr(keys.STUDY_SPEC, {**spec, "task": linky("task"), "description": linky("description")})
        study.set_user_attr(keys.STUDY_OBJECTIVES, [[METRIC, "maximize"], ["params", "minimize"]])
        rng = np.random.default_rng(5 + n)
        for number in range(30):
            t = make_trial(
                number, ("accuracy", "params"), rng, dt.datetime(2026, 1, 1, 9) + dt.timedelta(minutes=number)
            )
            attrs = {
                **t.user_attrs,
                keys.HOST: linky("host"),
                keys.FAILURE: linky("failure"),  # shown for any trial that has one, complete or not
                keys.SEED_CONFIG: linky("seed-config"),
            }
            for key, epoch in t.user_attrs.items():
                if key.startswith(keys.EPOCH_PREFIX) and isinstance(epoch, dict):
                    attrs[key] = {**epoch, f"val_{linky('curve')}": epoch.get("val_loss", 1.0)}
            if attrs[keys.OUTCOME] == "failed":
                attrs[keys.OUTCOME] = linky("outcome")  # an outcome the dashboard does not know: its legend
            study.add_trial(
                optuna.trial.create_trial(
                    state=t.state,
                    values=t.values,
                    params=t.params,
                    distributions=t.distributions,
                    user_attrs=attrs,
                    system_attrs=t.system_attrs,
                )
            )
        front = [f.number for f in study.best_trials][:2]
        study.set_user_attr(
            keys.STUDY_CONFIRMATIONS,
            [
                {
                    "epochs": linky("epochs"),
                    "at": linky("at"),
                    "sweep_epochs": linky("sweep-epochs"),
                    "kendall": {METRIC: {"tau": 0.5, "ci95": [0.1, 0.9], "n": linky("n")}},
                    "trials": {
                        str(number): {
                            "role": "front",
                            "sweep": {METRIC: 0.8 + 0.01 * i},
                            "confirmed": {METRIC: 0.82 + 0.01 * i},
                            "test": None,
                            "wall_time": 1.0,
                            "failure": linky("confirm-failure"),
                        }
                        for i, number in enumerate(front)
                    },
                }
            ],
        )
    storage.engine.dispose()  # as a sweep that ended leaves it


@pytest.fixture
def browser(tmp_path):
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        "--window-size=1500,1350",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


# every <a> of the page (HTML and SVG) that points at or shows the stored host, and every chart whose
# figure holds an unescaped <a (plotly draws it as a link)
LINKS = f"""
const host = {json.dumps(HOST)};
const anchors = [...document.querySelectorAll('a')].map(a => [
    a.getAttribute('href') || a.getAttribute('xlink:href') || a.href?.baseVal || '', a.textContent]);
const charts = [...document.querySelectorAll('.js-plotly-plot')].map(p => JSON.stringify([p.data, p.layout]));
return {{anchors: anchors.filter(([href, text]) => (href + ' ' + text).includes(host)),
        charts: charts.filter(c => /<a[\\s>]/i.test(c)).map(c => c.slice(0, 300)),
        plots: charts.length}};
"""


def wait_text(browser, text: str) -> str:
    deadline = time.monotonic() + WAIT_S
    body = ""
    while time.monotonic() < deadline:
        body = page_text(browser)
        if text in body:
            return body
        time.sleep(0.5)
    pytest.fail(f"the page never showed {text!r}; it shows:\n{body[-3000:]}")


def page_text(browser) -> str:
    """The page's text (read in one script: an element found first may be redrawn before it is read)."""
    return browser.execute_script("return document.body.innerText")


def click(browser, selector: str, label: str) -> None:
    """Click the element matching ``selector`` whose text is ``label`` (found and clicked in one script)."""
    clicked = browser.execute_script(
        "const el = [...document.querySelectorAll(arguments[0])].find(e => e.innerText.trim() === arguments[1]);"
        "if (el) el.click(); return !!el;",
        selector,
        label,
    )
    assert clicked, f"nothing {selector!r} reads {label!r}"


def open_tab(browser, label: str) -> None:
    click(browser, "[role='tab']", label)


def no_links(browser, where: str, charts: int = 0) -> None:
    """No stored text links anywhere on the page (after ``charts`` charts have drawn)."""
    deadline, seen = time.monotonic() + WAIT_S, None
    while time.monotonic() < deadline:
        seen = browser.execute_script(LINKS)
        if seen["plots"] >= charts:
            break
        time.sleep(0.5)
    assert seen and seen["plots"] >= charts, f"{where}: {seen}"
    assert seen["anchors"] == [] and seen["charts"] == [], f"{where}: stored text became a link: {seen}"
    assert "Traceback" not in page_text(browser), where


def test_no_stored_text_becomes_a_link_on_any_tab(browser, tmp_path):
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    linky_study(url)
    db = tmp_path / "lwnas.db"
    before = (db.stat().st_mtime_ns, hashlib.sha256(db.read_bytes()).hexdigest())
    proc, address = start_dashboard(url, tmp_path, proc_env(tmp_path), tmp_path / "server.log")
    try:
        browser.get(address)
        body = wait_text(browser, f"http://{HOST}/description")  # the caption: shown, as text
        for label in ("name", "task", "metric"):
            assert f"http://{HOST}/{label}" in body and f"{label}@{HOST}" in body, label
        no_links(browser, "Pareto front", charts=1)
        tabs = {
            "Hypervolume": ("Volume dominated by", 1),
            "Knob importance": ("How much each sampled knob", 2),
            "Trials": ("Select rows to add them", 0),
            "Trial detail": ("Learning curve", 1),
            "Confirmation": ("Kendall τ of", 1),
            "Compare studies": ("Studies of task", 1),
        }
        for tab, (shown, charts) in tabs.items():
            open_tab(browser, tab)
            body = wait_text(browser, shown)
            no_links(browser, tab, charts)
            if tab == "Trial detail":
                for label in ("failure", "host", "seed-config"):
                    assert f"http://{HOST}/{label}" in body, (label, body[-2000:])
            if tab == "Confirmation":
                assert f"http://{HOST}/n" in body
        # the chips of the sidebar's "Selected trials" (Streamlit 1.67 draws each as a `data-tag` element)
        chips = (
            "return document.querySelectorAll("
            "'[data-testid=stSidebar] [data-testid=stMultiSelectTagsContainer] [data-tag]').length"
        )
        deadline = time.monotonic() + WAIT_S
        while not browser.execute_script(chips) and time.monotonic() < deadline:  # a click during a rerun is lost
            click(browser, "button", "Select the front")
            time.sleep(3)
        assert browser.execute_script(chips), "Select the front selected nothing"
        open_tab(browser, "Compare")
        wait_text(browser, "Only knobs that differ")
        no_links(browser, "Compare", 1)
    finally:
        kill_session(proc)
    assert (db.stat().st_mtime_ns, hashlib.sha256(db.read_bytes()).hexdigest()) == before, "the dashboard wrote"
