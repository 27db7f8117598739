"""Deployable exports (`lwnas export --format torch|onnx`): a set of registry configurations that runs every layer
path (tests/helpers/registry.py EXPORT_SET) exports to both formats, and the files, run in a Python without lwnas,
give the lwnas model's outputs (tolerances in tests/helpers/deploy.py).

Export is slow (~5-25 s per model and format on a busy core), so one test exports the whole set and one
subprocess runs it; every registry configuration to both formats is bench/deploy_export_registry.py (~15 min).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.deploy import ATOL, RTOL, check_outputs, expected_output, export_configs, inputs_for, run_standalone
from helpers.procs import lwnas
from helpers.registry import EXPORT_SET, REGISTRY

from searchspace import ArchConfig, build_model
from tuners.export.deploy import DeployExportError, write_model

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.slow
def test_configs_running_every_layer_path_export_and_run_without_lwnas(tmp_path):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    expected = export_configs({name: REGISTRY[name] for name in EXPORT_SET}, folder)
    run_standalone(folder, tmp_path)
    check_outputs(folder, expected)


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


@pytest.mark.slow
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
    inputs = inputs_for(model, batch=4)
    np.savez(folder / "model.inputs.npz", **inputs)
    run_standalone(folder, tmp_path)
    got, want = np.load(folder / "model.outputs.npz"), expected_output(model, inputs)
    assert not np.allclose(expected_output(fresh, inputs), want, atol=1e-3)  # trained weights differ from fresh ones
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
