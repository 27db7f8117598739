"""Every registry configuration (tests/helpers/registry.py, 53 of them) exported to both deploy formats
(`.pt2`, `.onnx`) and run in a Python without lwnas, with the checks of tests/test_deploy_export.py: the
outputs match the lwnas model's within 1e-5 + 1e-4 * |lwnas|, and padded regions do not change them.

The test suite exports a set that runs every layer path (``EXPORT_SET``); this is the whole registry, too slow
for CI (~15 min on 2 busy cores). Prints one JSON object: per family the configurations, the export seconds,
and whether every check passed; exits 1 if any failed.

    python bench/deploy_export_registry.py
    python bench/deploy_export_registry.py --family ort   # one family
    python bench/deploy_export_registry.py --quick        # one configuration per family
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from _common import HelpFormatter, LoadMonitor, log

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--family", action="append", help="only these families (repeatable); default: all")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (tiny models: 1 is fastest)")
    parser.add_argument("--quick", action="store_true", help="one configuration per family (a smoke run)")
    args = parser.parse_args()

    import torch
    from helpers.deploy import check_outputs, export_configs, run_standalone
    from helpers.registry import REGISTRY

    from searchspace import FAMILIES

    torch.set_num_threads(args.threads)
    monitor = LoadMonitor(threads=args.threads)
    results, ok = {}, True
    for family in args.family or FAMILIES:
        configs = {n: c for n, c in REGISTRY.items() if c.family == family}
        if args.quick:
            configs = dict(list(configs.items())[:1])
        log(f"{family}: exporting {len(configs)} configurations")
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "artifacts"
            folder.mkdir()
            start = time.perf_counter()
            try:
                expected = export_configs(configs, folder)
                exported = time.perf_counter() - start
                run_standalone(folder, Path(tmp))
                check_outputs(folder, expected)
                error = None
            except Exception:  # noqa: BLE001 - reported in the JSON; the other families still run
                exported, error = time.perf_counter() - start, traceback.format_exc(limit=3)
        ok &= error is None
        results[family] = {
            "configs": sorted(configs),
            "export_s": round(exported, 1),
            "total_s": round(time.perf_counter() - start, 1),
            "passed": error is None,
            **({"error": error} if error else {}),
        }
    print(json.dumps({"families": results, "passed": ok, "machine": monitor.report()}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
