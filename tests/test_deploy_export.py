"""Deployable exports (`lwnas export --format torch|onnx`): every registry configuration exports to both
formats, and the files, run in a Python without lwnas, give the lwnas model's outputs.

Tolerance: |exported - lwnas| <= 1e-5 + 1e-4 * |lwnas| elementwise (float32; the same kernels up to the
order of sums; the largest difference seen on the registry is ~4e-7). Export is slow (~2 s per model and
format on an idle core), so one test per family exports all of that family's configurations and one
subprocess per family runs them all.
"""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sweep_procs import lwnas
from test_models_registry import REGISTRY

from searchspace import FAMILIES, ArchConfig, build_model
from tuners.export.deploy import DeployExportError, export_inputs, input_names, write_model

pytestmark = pytest.mark.usefixtures("one_thread")
RUNNER = Path(__file__).parent / "deploy" / "run_artifacts.py"
ATOL, RTOL = 1e-5, 1e-4
PADDED_REGIONS = 2  # trailing regions of the last image that are padding


def _inputs(model, batch: int = 3) -> dict[str, np.ndarray]:
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


def _repadded(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The same inputs with other features in the padded regions: the outputs must not change."""
    regions = inputs["regions"].copy()
    padded = ~inputs["region_mask"]
    regions[padded] = np.random.default_rng(2).normal(5.0, 3.0, size=regions[padded].shape).astype(regions.dtype)
    return {**inputs, "regions": regions}


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
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _expected(model, inputs: dict[str, np.ndarray]) -> np.ndarray:
    with torch.no_grad():
        return model(*(torch.from_numpy(inputs[n]) for n in input_names(model))).numpy()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_registry_config_exports_and_runs_without_lwnas(family, tmp_path):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    expected = {}
    for name, config in REGISTRY.items():
        if config.family != family:
            continue
        stem = name.replace("/", "__").replace("+", "_")
        torch.manual_seed(0)
        model = build_model(config).eval()
        for fmt, suffix in (("torch", ".pt2"), ("onnx", ".onnx")):
            write_model(model, config, fmt, folder / f"{stem}{suffix}", {"registry": name})
        inputs = _inputs(model)
        np.savez(folder / f"{stem}.inputs.npz", **inputs)
        expected[stem] = _expected(model, inputs)
        if "region_mask" in inputs:  # the same files, other features under the mask: the same outputs
            np.savez(folder / f"{stem}@repadded.inputs.npz", **_repadded(inputs))
    assert expected
    run_standalone(folder, tmp_path)
    for stem, want in expected.items():
        got = np.load(folder / f"{stem}.outputs.npz")
        for fmt in ("torch", "onnx"):
            assert got[fmt].shape == want.shape, (stem, fmt)
            np.testing.assert_allclose(got[fmt], want, atol=ATOL, rtol=RTOL, err_msg=f"{stem} ({fmt})")
        if (folder / f"{stem}@repadded.outputs.npz").exists():
            repadded = np.load(folder / f"{stem}@repadded.outputs.npz")
            for fmt in ("torch", "onnx"):
                np.testing.assert_allclose(
                    repadded[fmt],
                    got[fmt],
                    atol=ATOL,
                    rtol=RTOL,
                    err_msg=f"{stem} ({fmt}): padded regions changed the output",
                )


def test_export_failure_names_the_knob(tmp_path):
    """A module the exporter cannot trace is reported with the knob it implements, not a traceback.

    No registry knob fails today, so one coupled kernel is given a data-dependent branch (Python control flow
    on a tensor's value: what torch.export cannot capture)."""
    config = REGISTRY["encoder/coupled+g_mha+qk2"]
    model = build_model(config).eval()
    kernel = next(m for m in model.modules() if type(m).__name__ == "CoupledAttention")
    original = kernel.forward

    def data_dependent(q, *args, **kwargs):
        out = original(q, *args, **kwargs)
        return out if q.sum() > 0 else -out

    kernel.forward = data_dependent
    for fmt, suffix in (("torch", ".pt2"), ("onnx", ".onnx")):
        with pytest.raises(
            DeployExportError,
            match=rf"the knob `attention: coupled` \(CoupledAttention\) cannot be "
            rf"exported to {fmt}: ",
        ):
            write_model(model, config, fmt, tmp_path / f"m{suffix}", {})
    assert not list(model._forward_hooks.values()) and not any(m._forward_hooks for m in model.modules())


def test_checkpoint_export_carries_trained_weights(tmp_path):
    """`lwnas train` then `lwnas export --checkpoint`: the files give the trained model's outputs."""
    config = tmp_path / "tiny.yaml"
    config.write_text(
        "family: encoder\nd_model: 16\nheads: 2\nlayers: 1\nd_ff: 32\ntask: digits\n"
        "training: {epochs: 1, batch_size: 64, threads: 1}\n"
    )
    trained = lwnas(tmp_path, "train", config, "-o", tmp_path / "run")
    assert trained.returncode == 0, trained.stderr
    folder = tmp_path / "artifacts"
    for fmt in ("torch", "onnx"):
        out = lwnas(
            tmp_path, "export", "--checkpoint", tmp_path / "run" / "checkpoint.pt", "--format", fmt, "-o", folder
        )
        assert out.returncode == 0, out.stderr
        assert "trained weights" in out.stderr
    from trainers.checkpoint import load_model

    model, ckpt = load_model(tmp_path / "run" / "checkpoint.pt")
    fresh = build_model(ArchConfig.from_dict(ckpt["config"])).eval()
    inputs = _inputs(model, batch=4)
    np.savez(folder / "model.inputs.npz", **inputs)
    run_standalone(folder, tmp_path)
    got, want = np.load(folder / "model.outputs.npz"), _expected(model, inputs)
    assert not np.allclose(_expected(fresh, inputs), want, atol=1e-3)  # trained weights differ from fresh ones
    for fmt in ("torch", "onnx"):
        np.testing.assert_allclose(got[fmt], want, atol=ATOL, rtol=RTOL, err_msg=fmt)


def test_export_refuses_bad_requests(tmp_path):
    bad_format = lwnas(tmp_path, "export", "somestudy", "--format", "tflite")
    assert bad_format.returncode == 2 and "--format must be one of yaml, torch, onnx" in bad_format.stderr
    neither = lwnas(tmp_path, "export")
    assert neither.returncode == 2 and "give a study NAME or --checkpoint PATH" in neither.stderr
    missing = lwnas(tmp_path, "export", "--checkpoint", tmp_path / "nope.pt", "--format", "onnx")
    assert missing.returncode != 0 and "no such checkpoint" in missing.stderr
    yaml_ckpt = lwnas(tmp_path, "export", "--checkpoint", tmp_path / "nope.pt")
    assert yaml_ckpt.returncode == 2 and "use --format torch or onnx" in yaml_ckpt.stderr
