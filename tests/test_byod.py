"""Bring your own data (issue 19): each layout, written on disk as its community stores it, trains through
`lwnas train --data` for two epochs and runs a small sweep through `lwnas sweep`; preprocessing is
cached by fingerprint, columns are read lazily, and input sizes come from the data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import optuna
import pytest
import yaml
from helpers import byod_data
from helpers.procs import COUNTED, lwnas, outcome, proc_env, read_trials, run_proc

from searchspace.files import load_config_file
from trainers import cost
from trainers.tasks import resolve_task
from trainers.tasks.lazy import ArrayRows, PatchRows, RegionRows

# (task, family, layout writer, a small configuration of the family)
CASES = {
    "image-folder": (
        "encoder",
        byod_data.image_folder,
        {"d_model": 16, "heads": 2, "layers": 1, "attention": "coupled"},
    ),
    "cifar": ("encoder", byod_data.cifar, {"d_model": 16, "heads": 2, "layers": 1}),
    "vqa": ("mcan", byod_data.vqa, {"d_model": 16, "heads": 2, "layers": 1}),
    "captions": ("ort", byod_data.captions, {"d_model": 16, "heads": 2, "layers": 1, "radix_base": 4}),
    "caption-retrieval": (
        "retrieval",
        byod_data.captions,
        {"d_model": 16, "heads": 2, "layers": 1, "pooling": "sketch", "sketch_n": 2, "sketch_k": 4},
    ),
}
OPTIONS = {
    "image-folder": {"image_size": 16, "patch": 4},
    "captions": {"min_word_count": 2},
    "caption-retrieval": {"min_word_count": 2},
}


def write(tmp_path: Path, task: str) -> Path:
    return CASES[task][1](tmp_path / "data")


@pytest.mark.parametrize("task", list(CASES))
def test_lwnas_train_two_epochs_on_each_layout(tmp_path, task):
    family, writer, knobs = CASES[task]
    data = writer(tmp_path / "data")
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "family": family,
                **knobs,
                "task": task,
                "task_options": OPTIONS.get(task, {}),
                "training": {"batch_size": 8, "threads": 1},
            }
        )
    )
    done = lwnas(tmp_path, "train", config, "--data", data, "--epochs", "2", "--out", tmp_path / "run", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert [h["epoch"] for h in metrics["history"]] == [1, 2]
    metric = resolve_task(task, path=str(data), **OPTIONS.get(task, {})).metric
    assert np.isfinite(metrics["test"][metric]) and np.isfinite(metrics["history"][-1]["train_loss"])
    # the configuration that trained carries the sizes read from the data, and the cost model counted it
    trained = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    sizes = resolve_task(task, path=str(data), **OPTIONS.get(task, {})).input_sizes()
    assert {k: tuple(v) if isinstance(v, list) else v for k, v in trained.items() if k in sizes} == sizes
    assert cost(load_config_file(tmp_path / "run" / "config.yaml").config, memory=False).params == metrics["params"]
    if task == "vqa":  # re-evaluating the checkpoint finds the data where training recorded it
        again = lwnas(tmp_path, "evaluate", tmp_path / "run" / "checkpoint.pt", timeout=300)
        assert again.returncode == 0, again.stderr[-3000:]
        assert json.loads(again.stdout)["vqa_accuracy"] == pytest.approx(metrics["test"]["vqa_accuracy"])


def test_input_sizes_come_from_the_data(tmp_path):
    vqa = resolve_task("vqa", path=str(byod_data.vqa(tmp_path / "vqa")))
    # 3 to 5 regions per image of 8 features; "how many dogs are there" is the longest question (5 words);
    # 3 answers; the vocabulary: <pad>, <unk> and the 12 distinct question words
    assert vqa.input_sizes() == {
        "question_tokens": 5,
        "image_regions": 5,
        "region_features": 8,
        "vocab_size": 14,
        "num_answers": 3,
    }
    images = resolve_task("image-folder", path=str(byod_data.image_folder(tmp_path / "img")), image_size=16, patch=4)
    assert images.input_sizes() == {"grid": (4, 4), "patch_features": 48, "num_classes": 3}
    caps = resolve_task("captions", path=str(byod_data.captions(tmp_path / "caps")), min_word_count=2)
    # longest caption: "the <noun> is looking at the camera" (7 words) + EOS; words seen twice or more
    assert caps.input_sizes()["caption_tokens"] == 8
    assert caps.input_sizes()["vocab_size"] == 4 + len(
        {
            "a",
            "sitting",
            "on",
            "bench",
            "the",
            "there",
            "is",
            "here",
            "small",
            "in",
            "park",
            "looking",
            "at",
            "camera",
            *byod_data.NOUNS,
        }
    )


def test_columns_are_read_lazily_and_batches_see_the_right_rows(tmp_path):
    data = byod_data.vqa(tmp_path / "vqa")
    task = resolve_task("vqa", path=str(data))
    train = task.load()["train"]
    assert isinstance(train["regions"], RegionRows) and isinstance(train["question"], ArrayRows)
    assert isinstance(train["question"].array, np.memmap)  # the cached arrays are memory-mapped, not copied
    batch = train["regions"][np.array([0, 3])]
    assert batch.shape == (2, 5, 8)
    # row 3 is the first question of image 2: its features are that image's file, zero-padded past its regions
    with np.load(next((data / "features").glob("*000000000002.jpg.npz"))) as f:
        x = f["x"]
    assert np.allclose(batch[1, : len(x)].numpy(), x) and not batch[1, len(x) :].any()
    assert train["region_mask"][np.array([3])][0].tolist() == [True] * len(x) + [False] * (5 - len(x))
    cifar = resolve_task("cifar", path=str(byod_data.cifar(tmp_path / "cifar")))
    patches = cifar.load()["test"]["patches"]
    assert isinstance(patches, PatchRows) and patches[np.array([0])].shape == (1, 64, 48)


def test_preprocessing_is_cached_by_fingerprint_and_rebuilt_when_inputs_change(tmp_path):
    data = byod_data.vqa(tmp_path / "vqa")
    first = resolve_task("vqa", path=str(data))
    assert first.folder.parent == data / ".lwnas"  # next to the data
    stamp = (first.folder / "meta.json").stat().st_mtime_ns
    again = resolve_task("vqa", path=str(data))
    assert again.folder == first.folder and (again.folder / "meta.json").stat().st_mtime_ns == stamp  # not rebuilt
    assert resolve_task("vqa", path=str(data), answers=2).folder != first.folder  # another option, another list
    questions = data / "v2_OpenEnded_mscoco_train2014_questions.json"
    doc = json.loads(questions.read_text())
    doc["questions"][0]["question"] = "Is there a zebra?"
    questions.write_text(json.dumps(doc))
    changed = resolve_task("vqa", path=str(data))
    assert changed.folder != first.folder and "zebra" in changed.meta["vocab"]


def test_where_the_data_folder_takes_no_cache_it_goes_under_lwnas_cache(tmp_path, monkeypatch):
    data = byod_data.cifar(tmp_path / "cifar")
    monkeypatch.setenv("LWNAS_CACHE", str(tmp_path / "cache"))
    (data / ".lwnas").write_text(
        ""
    )  # no folder can be made there (as in a read-only data folder; root may write anywhere)
    task = resolve_task("cifar", path=str(data))
    assert task.folder.parent == tmp_path / "cache" / "prepared"
    # 40 training images of 3 classes (14, 13, 13): 10% of each, rounded, is validation
    assert [len(s["labels"]) for s in task.load().values()] == [37, 3, 10]


# ---- one small sweep per layout, through `lwnas sweep` on SQLite --------------------------------------------
# A sweep over a user's data differs by how the data is named (a task option in the study, or --data) and by the
# objective; each layout's reader and metric train in Ray's workers the same way as in `lwnas train`, which the
# test above runs on every layout. These three cover both ways and three families' metrics, one Ray each.
SWEPT = {
    "cifar": "accuracy",
    "vqa": "vqa_accuracy",
    "captions": "bleu4",
}


@pytest.mark.slow
@pytest.mark.parametrize("task", list(SWEPT))
def test_lwnas_sweep_runs_over_each_layout(tmp_path, task):
    family, writer, knobs = CASES[task]
    data = writer(tmp_path / "data")
    study = {
        "name": f"byod-{task}",
        "task": task,
        "objectives": [SWEPT[task], "params"],
        "budget": {"trials": 1, "epochs": 1},  # one trial: what is checked is the layout reaching a worker
        "tuner": {"sampler": "random", "scheduler": "none", "max_concurrent": 1, "seed": 0},
        "training": {"batch_size": 8, "threads": 1},
        "space": {**knobs, "d_model": {"choice": [8, 16]}, "lr": {"float": [1e-3, 5e-3], "log": True}},
    }
    options = dict(OPTIONS.get(task, {}))
    via_option = task in ("cifar", "captions")  # the data as a task option in the study, or as --data
    if via_option:
        options["path"] = "data"  # relative to the study file's folder
    if options:
        study["task_options"] = options
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    url = f"sqlite:///{tmp_path / 'lwnas.db'}"
    cmd = ["lwnas", "sweep", str(path), "--storage", url, *([] if via_option else ["--data", str(data)])]
    rc, out = run_proc(cmd, tmp_path, proc_env(tmp_path), tmp_path / "sweep.log")
    assert rc == 0, out[-4000:]
    trials = read_trials(url, f"byod-{task}")
    counted = [t for t in trials.values() if outcome(t) in COUNTED]
    assert len(counted) == 1 and all(t.state == optuna.trial.TrialState.COMPLETE for t in counted), out[-4000:]
    assert all(np.isfinite(t.values[0]) for t in counted)


def test_the_studies_docs_tasks_md_shows_are_the_shipped_ones():
    """Each ```yaml block of docs/tasks.md that starts `# studies/data/NAME.yaml` is that file, and every layout
    has one."""
    import re

    from helpers.procs import ROOT

    blocks = re.findall(r"```yaml\n# (studies/data/[\w-]+\.yaml)\n(.*?)```", (ROOT / "docs/tasks.md").read_text(), re.S)
    assert {path for path, _ in blocks} == {
        f"studies/data/{n}.yaml" for n in ("image-folder", "cifar", "vqa", "captions", "caption-retrieval")
    }
    for path, shown in blocks:
        assert yaml.safe_load(shown) == yaml.safe_load((ROOT / path).read_text()), path
    assert sorted(p.stem for p in (ROOT / "studies/data").glob("*.yaml")) == sorted(CASES)


def test_vqa_reads_one_hdf5_file_of_features_lazily_and_trains(tmp_path):
    from searchspace import ArchConfig
    from trainers.loop import TrainSettings, train
    from trainers.tasks.lazy import HDF5Rows

    npz = resolve_task("vqa", path=str(byod_data.vqa(tmp_path / "npz")))
    h5 = resolve_task("vqa", path=str(byod_data.vqa(tmp_path / "h5", hdf5=True)))
    assert h5.input_sizes() == npz.input_sizes()
    a, b = npz.load(), h5.load()
    assert isinstance(b["train"]["regions"], HDF5Rows)
    rows = np.array([5, 0, 5, 17])  # repeated and unordered rows, as a shuffled batch asks for them
    for column in ("regions", "region_mask", "question"):
        assert np.allclose(a["train"][column][rows].numpy(), b["train"][column][rows].numpy()), column
    assert np.allclose(npz.regions.boxes, h5.regions.boxes) and h5.regions.boxes.max() <= 1  # made relative
    result = train(
        ArchConfig.from_dict({"family": "mcan", "d_model": 16, "heads": 2, "layers": 1}),
        h5,
        TrainSettings(epochs=1, batch_size=8, threads=1),
        progress=False,
    )
    assert np.isfinite(result.test["vqa_accuracy"])


def test_an_hdf5_file_without_image_ids_is_refused(tmp_path):
    import h5py

    data = byod_data.vqa(tmp_path / "vqa", hdf5=True)
    with h5py.File(data / "features.h5", "a") as f:
        del f["image_ids"]
    with pytest.raises(ValueError) as info:
        resolve_task("vqa", path=str(data))
    assert str(info.value) == (
        f"{data / 'features.h5'}: holds no image ids (expected a dataset `image_ids` or `ids`; "
        f"found boxes, features, image_h, image_w, num_boxes)"
    )


@pytest.mark.parametrize("name", ["num_boxes", "image_w"])
def test_an_hdf5_file_whose_per_image_numbers_do_not_match_its_images_is_refused(tmp_path, name):
    import h5py

    data = byod_data.vqa(tmp_path / "vqa", hdf5=True)
    with h5py.File(data / "features.h5", "a") as f:
        del f[name]
        f[name] = np.full(3, 5)
    with pytest.raises(ValueError) as info:
        resolve_task("vqa", path=str(data))
    assert str(info.value) == (
        f"{data / 'features.h5'}: `{name}` must be 12 numbers (one per row of `features`), found shape (3,) of int64"
    )


def test_caption_json_with_non_ascii_text_reads_under_any_locale(tmp_path):
    import os
    import subprocess
    import sys

    data = byod_data.captions(tmp_path / "caps")
    path = data / "dataset_coco.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["images"][0]["sentences"][0]["raw"] = "A café cat sitting on a bench."
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")  # JSON is UTF-8
    # the C locale without UTF-8 mode: Path.read_text would decode as ASCII
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    code = f"from trainers.tasks import resolve_task; print(resolve_task('captions', path={str(data)!r}).name)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "captions", done.stderr[-2000:]
