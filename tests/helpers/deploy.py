"""Exports checked as a user without lwnas would run them: write `.pt2` and `.onnx` files, run them in a Python
that cannot import lwnas (``run_artifacts.py``), and compare their outputs with the lwnas model's.

Tolerance: |exported - lwnas| <= 1e-5 + 1e-4 * |lwnas| elementwise (float32; the same kernels up to the order of
sums; the largest difference seen on the registry is ~4e-7). Used by tests/test_deploy_export.py,
tests/test_latency.py and bench/deploy_export_registry.py.
"""

from __future__ import annotations

import site
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from searchspace import ArchConfig, build_model
from tuners.export.deploy import export_inputs, input_names, write_models

RUNNER = Path(__file__).parent / "run_artifacts.py"
ATOL, RTOL = 1e-5, 1e-4
PADDED_REGIONS = 2  # trailing regions of the last image that are padding
FORMATS = (("torch", ".pt2"), ("onnx", ".onnx"))


def inputs_for(model, batch: int = 3) -> dict[str, np.ndarray]:
    """Inputs at a batch size the export never saw, with padding in the first sample's tokens and, for region
    families, the last sample's trailing regions padded (``region_mask`` False: byod images with fewer regions)."""
    torch.manual_seed(1)
    tensors = list(export_inputs(model, batch=batch))
    for i, name in enumerate(input_names(model)):
        if tensors[i].dtype == torch.int64 and tensors[i].dim() == 2:
            tensors[i][0, -1] = 0  # a padding token: the masking paths run in the exported graph too
        if name == "region_mask":
            tensors[i][-1, -PADDED_REGIONS:] = False
    return {name: t.numpy() for name, t in zip(input_names(model), tensors)}


def repadded(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The same inputs with other features in the padded regions: the outputs must not change."""
    regions = inputs["regions"].copy()
    padded = ~inputs["region_mask"]
    regions[padded] = np.random.default_rng(2).normal(5.0, 3.0, size=regions[padded].shape).astype(regions.dtype)
    return {**inputs, "regions": regions}


def expected_output(model, inputs: dict[str, np.ndarray]) -> np.ndarray:
    with torch.no_grad():
        return model(*(torch.from_numpy(inputs[n]) for n in input_names(model))).numpy()


def run_standalone(folder: Path, tmp: Path) -> None:
    """Run every artifact in ``folder`` in ``python -I -S`` (no lwnas on its path) from an empty folder."""
    cwd = tmp / "elsewhere"
    cwd.mkdir(exist_ok=True)
    sites = [p for p in site.getsitepackages() if Path(p).is_dir()]
    result = subprocess.run(
        [sys.executable, "-I", "-S", str(RUNNER), str(folder), *sites],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def stem_of(name: str) -> str:
    return name.replace("/", "__").replace("+", "_")


def export_configs(configs: dict[str, ArchConfig], folder: Path) -> dict[str, np.ndarray]:
    """Export each config (fresh weights, seed 0) to both formats with its inputs (and a repadded input set for
    region families); returns stem -> the lwnas model's outputs."""
    expected = {}
    for name, config in configs.items():
        stem = stem_of(name)
        torch.manual_seed(0)
        model = build_model(config).eval()
        write_models(model, config, {fmt: folder / f"{stem}{suffix}" for fmt, suffix in FORMATS}, {"registry": name})
        inputs = inputs_for(model)
        np.savez(folder / f"{stem}.inputs.npz", **inputs)
        expected[stem] = expected_output(model, inputs)
        if "region_mask" in inputs:  # the same files, other features under the mask: the same outputs
            np.savez(folder / f"{stem}@repadded.inputs.npz", **repadded(inputs))
    return expected


def check_outputs(folder: Path, expected: dict[str, np.ndarray], stems: Iterable[str] | None = None) -> None:
    """The standalone outputs (``run_standalone``) match the lwnas outputs in both formats, and padded regions
    do not change them; raises AssertionError naming the config and format."""
    for stem in stems if stems is not None else expected:
        want = expected[stem]
        got = np.load(folder / f"{stem}.outputs.npz")
        for fmt, _ in FORMATS:
            assert got[fmt].shape == want.shape, (stem, fmt)
            np.testing.assert_allclose(got[fmt], want, atol=ATOL, rtol=RTOL, err_msg=f"{stem} ({fmt})")
        if (folder / f"{stem}@repadded.outputs.npz").exists():
            again = np.load(folder / f"{stem}@repadded.outputs.npz")
            for fmt, _ in FORMATS:
                np.testing.assert_allclose(
                    again[fmt],
                    got[fmt],
                    atol=ATOL,
                    rtol=RTOL,
                    err_msg=f"{stem} ({fmt}): padded regions changed the output",
                )
