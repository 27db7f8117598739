"""The dashboard in a real browser: `lwnas dashboard` serves a seeded study on localhost, Debian's
headless Chromium (driven by its chromedriver through Selenium) loads it, and the test waits for the
Pareto plot to draw its points, then saves a screenshot under the test's output directory.

Set LWNAS_SCREENSHOT_DIR to also copy the screenshot there (docs/img/dashboard.png is made this way).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from pathlib import Path

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

PLOT_WAIT_S = 120


@pytest.fixture
def served(tmp_path):
    """`lwnas dashboard --storage URL --port P` (the installed script) over a seeded SQLite study."""
    import optuna

    from dashboards.sample import seed_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    seed_study(url, name="browser", trials=80, seed=5)
    proc, address = start_dashboard(url, tmp_path, proc_env(tmp_path), tmp_path / "server.log")
    try:
        yield address
    finally:
        kill_session(proc)  # the command and the streamlit server it started


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


# Points plotly drew in the Pareto chart's SVG (the seeded study is small enough for SVG, not WebGL)
# and the names of its traces.
COUNT_POINTS = """
const plots = [...document.querySelectorAll('.js-plotly-plot')];
const front = plots.find(p => (p.data || []).some(t => t.name === 'Pareto front'));
if (!front) return null;
return {points: front.querySelectorAll('.scatterlayer .point').length, traces: front.data.map(t => t.name)};
"""


def test_pareto_plot_renders_in_chromium(served, browser, tmp_path):
    browser.get(served)
    deadline, seen = time.monotonic() + PLOT_WAIT_S, None
    while time.monotonic() < deadline:
        seen = browser.execute_script(COUNT_POINTS)
        if seen and seen["points"] > 0:
            break
        time.sleep(0.5)
    shot = tmp_path / "dashboard.png"
    browser.save_screenshot(str(shot))
    assert seen and seen["points"] > 0, f"the Pareto plot never drew its points (last seen: {seen}); see {shot}"
    assert "Pareto front" in seen["traces"] and "dominated" in seen["traces"]
    time.sleep(1.0)  # let the last layout settle before the screenshot that is kept
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    text = browser.find_element("tag name", "body").text
    assert "browser" in text and "Traceback" not in text
    if os.environ.get("LWNAS_SCREENSHOT_DIR"):
        target = Path(os.environ["LWNAS_SCREENSHOT_DIR"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / "dashboard.png")


# ---- text from storage, and the views of issue 20 (each serves `lwnas dashboard`, the installed script) ----
@pytest.fixture
def trap():
    """An HTTP server on a free local port that records every request it gets (none should come)."""
    import http.server
    import threading

    seen: list[str] = []

    class Record(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            seen.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Record)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def lwnas_dashboard(tmp_path):
    """Start `lwnas dashboard --storage URL --port P` (as a user does); every one started is stopped after."""
    started = []

    def start(url: str) -> str:
        proc, address = start_dashboard(url, tmp_path, proc_env(tmp_path), tmp_path / f"server-{len(started)}.log")
        started.append(proc)
        return address

    yield start
    for proc in started:
        kill_session(proc)


def hostile_study(url: str, port: int) -> tuple[str, str]:
    """A study whose name, description, failure reasons, host and a knob value are Markdown and HTML that
    would fetch images from ``port`` if rendered; (name, failure)."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    from dashboards.sample import make_trial, seed_study
    from tuners.store import keys

    def image(tag: str) -> str:
        return f"![{tag}](http://127.0.0.1:{port}/{tag}.png)"

    name = f"x{image('name')}"
    failure = f'{image("failure")} <img src="http://127.0.0.1:{port}/failure-html.png"> :red[red] $x^2$'
    study = seed_study(url, name=name, trials=0)
    spec = study.user_attrs[keys.STUDY_SPEC]
    study.set_user_attr(
        keys.STUDY_SPEC,
        {**spec, "description": f"{image('description')} <img src='http://127.0.0.1:{port}/description-html.png'>"},
    )
    rng = np.random.default_rng(0)
    for number in range(3):
        t = make_trial(number, ("accuracy", "params"), rng, dt.datetime(2026, 1, 1), outcome="failed")
        note = image("knob")
        study.add_trial(
            optuna.trial.create_trial(
                state=t.state,
                params={**t.params, "note": note},
                distributions={**t.distributions, "note": CategoricalDistribution((note, "plain"))},
                user_attrs={**t.user_attrs, keys.FAILURE: failure, keys.HOST: image("host")},
                system_attrs=t.system_attrs,
            )
        )
    return name, failure


def open_tab(browser, label: str) -> None:
    tabs = browser.find_elements("css selector", "[role='tab']")
    matching = [t for t in tabs if t.text.strip() == label]
    assert matching, f"no tab {label!r} among {[t.text for t in tabs]}"
    matching[0].click()


def wait_text(browser, text: str, timeout: float = PLOT_WAIT_S) -> str:
    """The page's text once it contains ``text`` (fails with what it shows otherwise)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = browser.find_element("tag name", "body").text
        if text in body:
            return body
        time.sleep(0.5)
    pytest.fail(f"the page never showed {text!r}; it shows:\n{body[-3000:]}")


# the study picker's shown value (Streamlit draws it in an input, outside the page's text)
PICKER = """
const box = document.querySelector('[data-testid="stSidebar"] [data-testid="stSelectbox"]');
if (!box) return null;
const input = box.querySelector('input');
return (input && input.value) || box.innerText;
"""


def test_text_from_storage_is_shown_as_text_and_fetches_nothing(trap, lwnas_dashboard, browser, tmp_path):
    port, requests = trap
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    name, failure = hostile_study(url, port)
    browser.get(lwnas_dashboard(url))
    body = wait_text(browser, "No complete, feasible trial yet")
    assert name in body  # the title, literally
    assert f"![description](http://127.0.0.1:{port}/description.png)" in body
    # the sidebar's picker may be drawn after the body
    picker = poll(browser, PICKER, lambda value: value.endswith(" · 3 trials · failed"), timeout=30)
    assert picker and picker.endswith(" · 3 trials · failed"), picker  # all trials failed: not "finished"
    assert picker.startswith(name)
    open_tab(browser, "Trial detail")
    body = wait_text(browser, "Trial 0: failed")
    assert f"failed: {failure}" in body and f"host ![host](http://127.0.0.1:{port}/host.png)" in body
    code = poll(
        browser,
        "return [...document.querySelectorAll('code')].map(c => c.textContent).join()",
        lambda text: "knob.png" in text,
        timeout=30,
    )  # code blocks may draw after the text
    assert f"![knob](http://127.0.0.1:{port}/knob.png)" in (code or "")  # the sampled knobs, in a code block
    assert not browser.find_elements("css selector", f"img[src*='127.0.0.1:{port}']")
    time.sleep(2.0)  # any image request would have been sent by now
    assert requests == [], f"the page fetched {requests} from a URL stored in the study"


# The Pareto chart's labelled front: trial numbers drawn as text, and the first front point's trial
FRONT_LABELS = """
const plot = [...document.querySelectorAll('.js-plotly-plot')].find(
    p => (p.data || []).some(t => t.name === 'Pareto front'));
if (!plot) return null;
const index = plot.data.findIndex(t => t.name === 'Pareto front');
const trace = plot.querySelectorAll('.scatterlayer .trace')[index];
if (!trace) return null;
return {labels: [...trace.querySelectorAll('.textpoint')].map(t => t.textContent),
        numbers: plot.data[index].customdata.map(c => c[0])};
"""

# Whether every axis title of the parallel-coordinates chart lies inside the chart
PARCOORDS_TITLES = """
const plot = [...document.querySelectorAll('.js-plotly-plot')]
  .find(p => (p.data || []).some(t => t.type === 'parcoords'));
if (!plot) return null;
const box = plot.getBoundingClientRect();
const titles = [...plot.querySelectorAll('.axis-title')].map(t => t.getBoundingClientRect());
if (!titles.length) return null;
return {inside: titles.every(r => r.left >= box.left && r.right <= box.right), box: [box.left, box.right],
        titles: titles.map(r => [r.left, r.right])};
"""

# The bars of each knob-importance chart: {title: number of bars}
IMPORTANCE_BARS = """
const plots = [...document.querySelectorAll('.js-plotly-plot')]
  .filter(p => (p.data || []).some(t => t.type === 'bar'));
return Object.fromEntries(plots.map(p => [
  p.layout.title.text.replace(/<[^>]+>/g, ''), p.querySelectorAll('.barlayer .point').length]));
"""


def poll(browser, script: str, ready, timeout: float = PLOT_WAIT_S):
    """The script's result once ``ready(result)`` holds (the last result otherwise)."""
    deadline, seen = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        seen = browser.execute_script(script)
        if seen and ready(seen):
            break
        time.sleep(0.5)
    return seen


def test_front_labels_click_to_open_parallel_titles_and_knob_importance(lwnas_dashboard, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    from dashboards.sample import seed_study

    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    seed_study(url, name="three", trials=60, seed=5, objectives=("accuracy", "params", "madds"))
    browser.get(lwnas_dashboard(url))
    front = poll(browser, FRONT_LABELS, lambda s: s["labels"])
    assert front and front["labels"] == [str(n) for n in front["numbers"]], front  # each front point labelled
    titles = poll(browser, PARCOORDS_TITLES, lambda s: True)
    assert titles and titles["inside"], f"parallel-coordinates titles cross the chart's edge: {titles}"
    # one click on a front point opens that trial (the last one: Trial detail would open on the first)
    point = browser.execute_script("""
        const plot = [...document.querySelectorAll('.js-plotly-plot')].find(
            p => (p.data || []).some(t => t.name === 'Pareto front'));
        const index = plot.data.findIndex(t => t.name === 'Pareto front');
        return [...plot.querySelectorAll('.scatterlayer .trace')[index].querySelectorAll('.point')].pop();""")
    ActionChains(browser).move_to_element(point).click().perform()
    wait_text(browser, f"Trial {front['numbers'][-1]}: complete")
    open_tab(browser, "Knob importance")
    bars = poll(browser, IMPORTANCE_BARS, lambda s: len(s) == 3 and all(s.values()))
    assert bars and sorted(bars) == [f"{m}: which knobs matter" for m in ("accuracy", "madds", "params")], bars
    assert all(n >= 5 for n in bars.values()), bars
    assert "Traceback" not in browser.find_element("tag name", "body").text


COMPARE_FRONTS = """
const plot = [...document.querySelectorAll('.js-plotly-plot')].find(
    p => ((p.layout.title || {}).text || '').replace(/<[^>]+>/g, '') === 'Pareto fronts');
if (!plot) return null;
return Object.fromEntries(plot.data.map((t, i) => [t.name, plot.querySelectorAll('.scatterlayer .trace')[i]
    .querySelectorAll('.point').length]));
"""


def test_compare_studies_overlays_two_fronts(lwnas_dashboard, browser, tmp_path):
    from dashboards.sample import seed_study
    from searchspace.study import Objective
    from tuners.fronts.objectives import pareto_front
    from tuners.store.record import record_of

    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    fronts = {}
    for name, seed in (("lw", 1), ("acort", 2)):
        study = seed_study(url, name=name, trials=40, seed=seed)
        objectives = [Objective("accuracy", "maximize"), Objective("params", "minimize")]
        fronts[name] = len(pareto_front([record_of(t) for t in study.get_trials()], objectives))
    browser.get(lwnas_dashboard(url))
    wait_text(browser, "Pareto front")
    open_tab(browser, "Compare studies")
    wait_text(browser, "reference params")
    both = poll(browser, COMPARE_FRONTS, lambda s: len(s) == 2)
    assert both == fronts, both  # every study of the task at first; each one's whole front drawn, one trace each
    assert "Traceback" not in browser.find_element("tag name", "body").text
