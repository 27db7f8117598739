"""The dashboard in a real browser: `lwnas dashboard` serves a seeded study on localhost, Debian's
headless Chromium (driven by its chromedriver through Selenium) loads it, and the test waits for the
Pareto plot to draw its points, then saves a screenshot under the test's output directory.

Set LWNAS_SCREENSHOT_DIR to also copy the screenshot there (docs/img/dashboard.png is made this way).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from sweep_procs import kill_session, proc_env, start_dashboard

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip("needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
                allow_module_level=True)
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
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-dev-shm-usage", "--window-size=1500,1350", f"--user-data-dir={tmp_path / 'profile'}"):
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
