"""`lwnas export` of a trial of a bring-your-own region study: the file takes `region_mask`, since byod
region data pads images with fewer regions than R (tests/test_deploy_export.py checks the masked outputs
of every registry configuration; this checks the path from a swept byod study)."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest
import yaml
from helpers import byod_data
from helpers.procs import lwnas, proc_env, run_proc


@pytest.mark.slow
def test_export_of_a_byod_vqa_trial_takes_the_region_mask(tmp_path):
    data = byod_data.vqa(tmp_path / "data")  # 3 to 5 regions per image: the shorter images are padded
    study = {
        "name": "byod-vqa",
        "task": "vqa",
        "objectives": ["vqa_accuracy", "params"],
        "budget": {"trials": 1, "epochs": 1},
        "tuner": {"sampler": "random", "scheduler": "none", "max_concurrent": 1, "seed": 0},
        "training": {"batch_size": 8, "threads": 1},
        "space": {"d_model": 16, "heads": 2, "layers": 1},
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    rc, out = run_proc(
        ["lwnas", "sweep", str(path), "--storage", url, "--data", str(data)],
        tmp_path,
        proc_env(tmp_path),
        tmp_path / "sweep.log",
    )
    assert rc == 0, out[-4000:]
    exported = lwnas(tmp_path, "export", "byod-vqa", "--storage", url, "--format", "onnx", "-o", tmp_path / "deploy")
    assert exported.returncode == 0, exported.stderr
    [onnx_file] = (tmp_path / "deploy").glob("*.onnx")
    session = onnxruntime.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    listed = json.loads(session.get_modelmeta().custom_metadata_map["lwnas.json"])["inputs"]
    assert listed[-1] == {"name": "region_mask", "shape": ["batch", 5], "dtype": "bool"}
    feeds = {
        i["name"]: np.zeros([2, *i["shape"][1:]], dtype=i["dtype"] if i["dtype"] != "float32" else np.float32)
        for i in listed
    }
    feeds["regions"] = np.random.default_rng(0).normal(size=feeds["regions"].shape).astype(np.float32)
    feeds["question"][:, 0] = 1
    feeds["region_mask"][:] = True
    full = session.run(None, feeds)[0]
    feeds["region_mask"][1, 3:] = False  # the second image has 3 real regions of 5
    masked = session.run(None, feeds)[0]
    assert np.allclose(full[0], masked[0]) and not np.allclose(full[1], masked[1])  # the mask reaches the graph
