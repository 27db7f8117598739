"""How fast is the static cost (parameters, MAdds, attention maps; no memory)? The fast path
(``trainers.cost_formula``: per-layer formulas over the meta-device model) against the fvcore trace
it replaced (``cost(..., counter="trace")``), measured in the same run, arms interleaved per repeat.

* Small models: ``--points`` random points of the quickstart space (``studies/quickstart.yaml``),
  adapted to the digits task's input sizes as the sweep driver adapts them, duplicates dropped (the
  driver caches one report per architecture, so a repeated architecture would cost nothing). Each
  repeat costs every distinct architecture once per arm: configurations/s. The driver's own path
  (a fresh ``tuners.planning.costs.StaticCosts`` evaluating the same points: adapt, cost, check the
  constraints) is timed too.
* The 44M MCAN (LW-Transformer Table II baseline, ``--config``): seconds per cost, per arm.

Both arms must give the same figures (checked on every point; ``same_figures``). Medians over
``--repeats``. Targets (issue 15): >= 100 configurations/s for small models, <= 0.1 s for the MCAN.

    python bench/static_cost.py
    python bench/static_cost.py --points 50 --repeats 1   # a quick look
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SMALL_TARGET_PER_S, MCAN_TARGET_S = 100, 0.1


def distinct_configs(study_path: Path, points: int, seed: int):
    """The distinct adapted architectures among ``points`` random points of the study, and the driver for them."""
    from searchspace.study import load_study
    from tuners.planning.check import make_task, task_family
    from tuners.planning.costs import StaticCosts

    study = load_study(study_path, task_family=task_family)
    task = make_task(study)
    sampled = study.space.sample_points(points, seed=seed)
    driver = StaticCosts(study, task)
    configs = {}
    for point in sampled:
        config = driver.adapt(point.config)
        configs.setdefault(json.dumps(config.to_dict(), sort_keys=True, default=str), (config, point.config))
    return study, task, list(configs.values())


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument(
        "--study", default=str(ROOT / "studies/quickstart.yaml"), help="study whose space gives the small points"
    )
    parser.add_argument("--points", type=int, default=200, help="random points drawn from the study's space")
    parser.add_argument(
        "--config",
        default=str(ROOT / "studies/papers/lw-transformer/table2-transformer.yaml"),
        help="the large configuration timed per cost",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per arm (medians reported)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random points")
    args = parser.parse_args()
    if args.points < 1 or args.repeats < 1:
        parser.error(f"--points and --repeats must be >= 1, got {args.points} and {args.repeats}")

    import torch

    from searchspace.files import load_config_file
    from trainers import cost
    from tuners.planning.costs import StaticCosts

    torch.set_num_threads(1)  # meta-device models compute nothing; one thread keeps the run steady
    monitor = LoadMonitor(threads=1)
    study, task, configs = distinct_configs(Path(args.study), args.points, args.seed)
    large = load_config_file(args.config).config
    log(f"{len(configs)} distinct architectures among {args.points} points; {args.repeats} repeats")

    same = all(
        cost(c, memory=False).to_dict() == cost(c, memory=False, counter="trace").to_dict() for c, _ in configs
    )  # also warms both arms (fvcore's first trace pays one-time set-up)
    same = same and cost(large, memory=False).to_dict() == cost(large, memory=False, counter="trace").to_dict()

    small = {"formula": [], "trace": [], "driver": []}
    mcan = {"formula": [], "trace": []}
    for repeat in range(args.repeats):  # interleaved, so drift in the machine's load hits every arm alike
        for counter in ("formula", "trace"):
            seconds = timed(lambda counter=counter: [cost(c, memory=False, counter=counter) for c, _ in configs])
            small[counter].append(len(configs) / seconds)
            mcan[counter].append(timed(lambda counter=counter: cost(large, memory=False, counter=counter)))
        driver = StaticCosts(study, task)  # fresh: nothing cached
        small["driver"].append(len(configs) / timed(lambda driver=driver: [driver.evaluate(raw) for _, raw in configs]))
        log(
            f"repeat {repeat + 1}: formula {small['formula'][-1]:.0f}/s, trace {small['trace'][-1]:.1f}/s, "
            f"MCAN {mcan['formula'][-1]:.3f} s vs {mcan['trace'][-1]:.3f} s"
        )

    med = statistics.median
    small_fast, mcan_fast = med(small["formula"]), med(mcan["formula"])
    print(
        json.dumps(
            {
                "same_figures": same,
                "small": {
                    "study": args.study,
                    "points": args.points,
                    "distinct_architectures": len(configs),
                    "configs_per_s_formula": round(small_fast, 1),
                    "configs_per_s_trace": round(med(small["trace"]), 1),
                    "configs_per_s_driver_static_costs": round(med(small["driver"]), 1),
                    "speedup": round(small_fast / med(small["trace"]), 1),
                    "target_configs_per_s": SMALL_TARGET_PER_S,
                    "target_met": small_fast >= SMALL_TARGET_PER_S,
                },
                "mcan": {
                    "config": args.config,
                    "params": cost(large, memory=False).params,
                    "params_layers": sum(cost(large, memory=False).params_breakdown[s] for s in ("encoder", "decoder")),
                    "seconds_formula": round(mcan_fast, 4),
                    "seconds_trace": round(med(mcan["trace"]), 4),
                    "speedup": round(med(mcan["trace"]) / mcan_fast, 1),
                    "target_s": MCAN_TARGET_S,
                    "target_met": mcan_fast <= MCAN_TARGET_S,
                },
                "repeats": args.repeats,
                "machine": monitor.report(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
