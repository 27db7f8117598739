"""Dashboard responsiveness on a large study: loading N trials and drawing the Pareto front, cold vs cached,
measured in one run.

A synthetic study (dashboards.sample: the record a real sweep writes, nothing trained) is written to a
temporary SQLite file, then timed:

* app run: the whole dashboard script under streamlit.testing's AppTest (every tab, the front figure
  serialised as Streamlit sends it); "cold" is the first run of a fresh process (modules imported
  beforehand, so import time is left out), "cached" the median of the next runs (st.cache_resource
  keeps the trials, st.cache_data the figures);
* load: reading every trial into a TrialCache (cold) vs its incremental refresh when nothing changed (cached);
* front figure: building the plotly figure of the front and serialising it to JSON;
* with --browser, in Debian's headless Chromium against `lwnas dashboard` on localhost: seconds from
  opening the page until the Pareto plot has drawn its points, on the first visit after the server
  started (cold) and on a reload (cached).

Prints JSON.

    python bench/dashboard_load.py --trials 5000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

APP = Path(__file__).resolve().parent.parent / "dashboards" / "app.py"


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def app_runs(url: str, repeats: int) -> tuple[float, list[float]]:
    """Seconds of the first (cold) and of the following (cached) runs of the whole dashboard."""
    from streamlit.testing.v1 import AppTest

    os.environ["LWNAS_STORAGE"] = url
    at = AppTest.from_file(str(APP), default_timeout=600)
    cold, _ = timed(at.run)
    if at.exception or at.error:
        raise SystemExit(f"the dashboard failed: {[e.value for e in [*at.exception, *at.error]]}")
    cached = [timed(at.run)[0] for _ in range(repeats)]
    return cold, cached


def components(url: str, name: str, repeats: int) -> dict[str, float]:
    from dashboards import plots
    from dashboards.data import TrialCache

    cache = TrialCache(url, name)
    load_cold, data = timed(cache.load)
    front_cold, _ = timed(lambda: plots.front_figure(data, "params", "accuracy").to_json())
    load_cached = statistics.median(timed(cache.load)[0] for _ in range(repeats))
    front_again = statistics.median(
        timed(lambda: plots.front_figure(data, "params", "accuracy").to_json())[0] for _ in range(repeats)
    )
    return {
        "load_cold_s": load_cold,
        "load_cached_s": load_cached,
        "front_figure_first_s": front_cold,
        "front_figure_again_s": front_again,
        "front_trials": len(data.front()),
    }


PLOT_DRAWN = """
const plot = [...document.querySelectorAll('.js-plotly-plot')]
  .find(p => (p.data || []).some(t => t.name === 'Pareto front'));
return plot ? plot.querySelectorAll('.scatterlayer .point').length + plot.querySelectorAll('canvas').length : 0;
"""


def browser_runs(url: str) -> dict[str, float]:
    """Seconds until the Pareto plot is drawn in headless Chromium: first visit, then a reload."""
    import signal
    import socket
    import subprocess
    import sys
    import urllib.request

    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lwnas = str(Path(sys.executable).parent / "lwnas")  # the installed script, as a user starts it
    server = subprocess.Popen(
        [lwnas, "dashboard", "--storage", url, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        "--window-size=1500,1350",
    ):
        options.add_argument(arg)
    driver = None
    try:
        for _ in range(360):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit(f"lwnas dashboard exited with {server.returncode}") from None
                time.sleep(0.5)
        else:
            raise SystemExit("lwnas dashboard never answered on /_stcore/health")
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        out = {}
        for label in ("browser_first_visit_s", "browser_reload_s"):
            t0 = time.perf_counter()
            driver.get(f"http://127.0.0.1:{port}")
            while not driver.execute_script(PLOT_DRAWN):
                if time.perf_counter() - t0 > 300:
                    raise SystemExit("the Pareto plot never appeared in the browser")
                time.sleep(0.05)
            out[label] = time.perf_counter() - t0
        return out
    finally:
        if driver is not None:
            driver.quit()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--trials", type=int, default=5000, help="trials in the synthetic study")
    parser.add_argument("--repeats", type=int, default=5, help="cached runs (the median is reported)")
    parser.add_argument("--storage", help="reuse this storage (its study `bench-<trials>` is created once)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 300 trials, 1 cached run")
    parser.add_argument(
        "--browser",
        action="store_true",
        help="also time the page in headless Chromium (needs chromium, chromium-driver, selenium)",
    )
    args = parser.parse_args()
    if args.quick:
        args.trials, args.repeats = 300, 1

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if args.threads:
        import torch  # imported by tuners.export.configs anyway; nothing here trains

        torch.set_num_threads(args.threads)
    import dashboards.views  # noqa: F401  (imports are not what is measured)
    import tuners.export.configs  # noqa: F401
    from dashboards.sample import seed_study
    from tuners.store.connection import open_storage

    with tempfile.TemporaryDirectory() as tmp:
        url = args.storage or f"sqlite:///{Path(tmp) / 'bench.db'}"
        name = f"bench-{args.trials}"
        if name not in {s.study_name for s in open_storage(url, create=True).get_all_studies()}:
            log(f"writing {args.trials} synthetic trials to {name} (not timed)")
            seed_s, _ = timed(lambda: seed_study(url, name=name, trials=args.trials, seed=0))
        else:
            seed_s = None
        monitor = LoadMonitor(threads=args.threads or 1)
        log("whole dashboard under AppTest: first run, then cached runs")
        cold, cached = app_runs(url, args.repeats)
        log("load and front figure on their own")
        parts = components(url, name, args.repeats)
        if args.browser:
            log("the page in headless Chromium: first visit after the server started, then a reload")
            parts.update(browser_runs(url))
    app_cached = statistics.median(cached)
    print(
        json.dumps(
            {
                "trials": args.trials,
                "seed_study_s": round(seed_s, 1) if seed_s is not None else None,
                "app_run_cold_s": round(cold, 3),
                "app_run_cached_s": round(app_cached, 3),
                "app_run_cached_all_s": [round(c, 3) for c in cached],
                "ratio_cold_over_cached": round(cold / app_cached, 1),
                "cached_under_3s": app_cached < 3.0,
                **{k: round(v, 3) if isinstance(v, float) else v for k, v in parts.items()},
                "machine": monitor.report(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
