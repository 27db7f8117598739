"""Malformed data of each bring-your-own-data layout is refused with the file, the entry and what is wrong."""

from __future__ import annotations

import json
import os
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import byod_data
from helpers.procs import lwnas, one_error

from searchspace import ConfigError
from trainers.tasks import resolve_task


def refused(task: str, path: Path, **options) -> str:
    with pytest.raises(ValueError) as info:
        resolve_task(task, path=str(path), **options)
    return str(info.value)


def test_a_class_folder_with_no_images(tmp_path):
    data = byod_data.image_folder(tmp_path / "img")
    for p in (data / "blue").iterdir():
        p.unlink()
    (data / "blue" / "notes.txt").write_text("not an image")
    assert (
        refused("image-folder", data) == f"image-folder: class folder {data / 'blue'} has no images (.png, .jpg, .jpeg)"
    )


def test_an_image_that_does_not_decode(tmp_path):
    data = byod_data.image_folder(tmp_path / "img")
    (data / "red" / "1.png").write_bytes(b"not a png")
    assert refused("image-folder", data).startswith(f"image-folder: {data / 'red' / '1.png'} is not a readable image")


def test_a_split_layout_without_val(tmp_path):
    data = byod_data.image_folder(tmp_path / "img", splits=True)
    (data / "val").rename(data / "test")
    assert refused("image-folder", data) == f"image-folder: {data} has `train` but no `val` folder beside it"


def test_image_options_are_checked():
    with pytest.raises(ConfigError) as info:
        resolve_task("image-folder", path=".", image_size=30, patch=4)
    assert info.value.problems == [("task_options.patch", "must divide the image size 30, got 4")]


@pytest.mark.parametrize("key", [b"data", b"labels"])
def test_a_cifar_batch_without_data_or_labels(tmp_path, key):
    data = byod_data.cifar(tmp_path / "cifar")
    batch = data / "data_batch_2"
    with batch.open("rb") as fp:
        content = pickle.load(fp, encoding="bytes")
    del content[key]
    with batch.open("wb") as fp:
        pickle.dump(content, fp, protocol=2)
    message = refused("cifar", data)
    assert message.startswith(f"cifar: {batch} lacks `{key.decode()}` (has: "), message


def test_a_cifar_pickle_never_runs_what_it_names(tmp_path):
    data = byod_data.cifar(tmp_path / "cifar")
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    with (data / "data_batch_1").open("wb") as fp:
        pickle.dump({b"data": Payload(), b"labels": [0]}, fp, protocol=2)
    message = refused("cifar", data)
    assert "refers to posix.system" in message and "holds only numpy arrays" in message, message
    assert not marker.exists()


def test_a_question_whose_image_has_no_features(tmp_path):
    data = byod_data.vqa(tmp_path / "vqa")
    next((data / "features").glob("*000000000007.jpg.npz")).unlink()
    questions = data / "v2_OpenEnded_mscoco_train2014_questions.json"
    qid = next(q["question_id"] for q in json.loads(questions.read_text())["questions"] if q["image_id"] == 7)
    assert refused("vqa", data) == (
        f"vqa: {questions}: question {qid} names image 7, which has no features in "
        f"{data / 'features'} (expected a file such as 7.npz)"
    )


def test_a_question_without_annotation_and_an_answer_that_is_not_text(tmp_path):
    data = byod_data.vqa(tmp_path / "vqa")
    annotations = data / "v2_mscoco_val2014_annotations.json"
    doc = json.loads(annotations.read_text())
    doc["annotations"][1]["answers"][2]["answer"] = 2
    annotations.write_text(json.dumps(doc))
    assert refused("vqa", data) == f"vqa: {annotations}: annotations[1].answers[2]: `answer` must be str, got 2"
    dropped = doc["annotations"].pop(1)
    annotations.write_text(json.dumps(doc))
    message = refused("vqa", data)
    assert re.fullmatch(
        rf"vqa: .*val2014_questions\.json: questions\[1\]: question {dropped['question_id']} has no "
        rf"annotation in {re.escape(str(annotations))}",
        message,
    ), message


def test_a_caption_json_without_splits(tmp_path):
    data = byod_data.captions(tmp_path / "caps")
    path = data / "dataset_coco.json"
    doc = json.loads(path.read_text())
    for image in doc["images"]:
        del image["split"]
    path.write_text(json.dumps(doc))
    assert refused("captions", data) == (
        f"captions: {path}: images[0] has no `split` (train, restval, val or test): "
        f"the file is not a Karpathy-split caption JSON"
    )


def test_a_caption_json_with_no_test_images(tmp_path):
    data = byod_data.captions(tmp_path / "caps")
    path = data / "dataset_coco.json"
    doc = json.loads(path.read_text())
    doc["images"] = [i for i in doc["images"] if i["split"] != "test"]
    path.write_text(json.dumps(doc))
    assert (
        refused("caption-retrieval", data) == f"caption-retrieval: {path} has no test images (each needs at least one)"
    )


def test_feature_files_that_are_malformed(tmp_path):
    data = byod_data.captions(tmp_path / "caps")
    victim = sorted((data / "features").glob("*.npz"))[3]
    with np.load(victim) as f:
        x, bbox = f["x"], f["bbox"]
    np.savez(victim, x=x, bbox=bbox)  # pixel boxes, but no image size to make them relative
    assert refused("captions", data) == (
        f"{victim}: `bbox` is in pixels (up to {bbox.max():.0f}) but the "
        f"file has no `image_w` and `image_h` to make it relative"
    )
    np.savez(victim, feats=x, bbox=bbox / 1000)
    assert (
        refused("captions", data)
        == f"{victim}: holds no features: expected an array `x` or `features`, found bbox, feats"
    )


def test_a_data_task_without_data_says_how_to_give_it():
    with pytest.raises(ValueError) as info:
        resolve_task("captions")
    assert str(info.value) == (
        "task `captions` needs a data path: --data FOLDER on `lwnas train` or `lwnas sweep`, "
        "or task_options: {path: FOLDER} in the study or configuration file"
    )


def test_lwnas_train_prints_the_problem_in_one_line(tmp_path):
    data = byod_data.captions(tmp_path / "caps")
    doc = json.loads((data / "dataset_coco.json").read_text())
    doc["images"][2]["split"] = "training"
    (data / "dataset_coco.json").write_text(json.dumps(doc))
    config = tmp_path / "ort.yaml"
    config.write_text(yaml.safe_dump({"family": "ort", "d_model": 16, "heads": 2, "layers": 1, "task": "captions"}))
    done = lwnas(tmp_path, "train", config, "--data", data, "--out", tmp_path / "run")
    assert one_error(done) == (
        f"error captions: {data / 'dataset_coco.json'}: images[2]: `split` must be train, "
        f"restval, val or test, got 'training'"
    )


def test_lwnas_sweep_data_only_for_tasks_that_read_data(tmp_path):
    study = tmp_path / "s.yaml"
    study.write_text("task: digits\nobjectives: [accuracy, params]\nspace: {d_model: 16, heads: 2, layers: 1}\n")
    done = lwnas(tmp_path, "sweep", study, "--data", tmp_path, "--storage", f"sqlite:///{tmp_path / 'x.db'}")
    assert done.returncode == 2 and "error --data: task `digits` reads no data path" in done.stderr, done.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_feature_file_declaring_more_than_it_holds_is_refused_before_reading(tmp_path):
    data = byod_data.vqa(tmp_path / "vqa")
    victim = sorted((data / "features").glob("*.npz"))[0]
    with np.load(victim) as f:
        arrays = dict(f)
    np.savez(victim, **arrays)
    import zipfile

    with zipfile.ZipFile(victim) as z:
        members = {n: z.read(n) for n in z.namelist()}
    header = members["x.npy"]
    members["x.npy"] = header.replace(b"'shape': (", b"'shape': (1000000, ", 1)[: len(header)]  # a lying header
    with zipfile.ZipFile(victim, "w") as z:
        for name, body in members.items():
            z.writestr(name, body)
    message = refused("vqa", data)
    assert message.startswith(f"{victim}: `x` declares shape (1000000, ") and "but holds fewer" in message, message


def test_a_shipped_data_study_validates_without_its_data_but_does_not_sweep_without_it(tmp_path):
    from helpers.procs import ROOT

    study = ROOT / "studies/data/vqa.yaml"
    done = lwnas(tmp_path, "space", "validate", study, "--samples", "1")
    assert done.returncode == 0 and f"ok {study}" in done.stderr, done.stderr
    done = lwnas(tmp_path, "sweep", study, "--storage", f"sqlite:///{tmp_path / 'x.db'}")
    assert done.returncode == 2 and (
        "task `vqa` needs a data path: --data FOLDER on `lwnas train` or `lwnas sweep`" in done.stderr
    ), done.stderr


def test_a_question_without_words(tmp_path):
    data = byod_data.vqa(tmp_path / "vqa")
    questions = data / "v2_OpenEnded_mscoco_train2014_questions.json"
    doc = json.loads(questions.read_text())
    doc["questions"][2]["question"] = "?!"
    questions.write_text(json.dumps(doc))
    qid = doc["questions"][2]["question_id"]
    assert refused("vqa", data) == f"vqa: {questions}: questions[2]: question {qid} has no words"


@pytest.mark.parametrize("sentence", [{"raw": "..."}, {"tokens": []}])
def test_a_caption_without_words(tmp_path, sentence):
    data = byod_data.captions(tmp_path / "caps")
    path = data / "dataset_coco.json"
    doc = json.loads(path.read_text())
    val = next(i for i, image in enumerate(doc["images"]) if image["split"] == "val")
    doc["images"][val]["sentences"][1] = sentence
    path.write_text(json.dumps(doc))
    assert refused("captions", data) == f"captions: {path}: images[{val}].sentences[1] has no words"


def test_image_data_too_small_to_split(tmp_path):
    # 4 images a class: the 80/10/10 split of each class gives val none
    data = byod_data.image_folder(tmp_path / "img", per_class=4)
    assert refused("image-folder", data, image_size=16) == (
        f"image-folder: {data}: the val split is empty (9 train, 0 val, 3 test images); each class is split "
        f"80/10/10, so a class needs 8 images to give val and test one each"
    )
    # train/ and val/ without test/: one val image a class cannot be halved into val and test
    data = byod_data.image_folder(tmp_path / "split", splits=True)
    for folder in (data / "val").iterdir():
        for image in sorted(folder.iterdir())[1:]:
            image.unlink()
    assert refused("image-folder", data, image_size=16) == (
        f"image-folder: {data}: the val split is empty (21 train, 0 val, 3 test images); without a test folder "
        f"each class of val is halved into val and test, so it needs 2 images"
    )
    # CIFAR batches with 2 training images a class: 10% of each class gives val none
    data = byod_data.cifar(tmp_path / "cifar", per_batch=2)
    assert refused("cifar", data) == (
        f"cifar: {data}: the val split is empty (4 train, 0 val, 1 test images); 10% of each class of the "
        f"training batches is validation, so a class needs 5 training images to give it one"
    )


def test_lwnas_train_names_the_file_of_a_task_option_it_refuses(tmp_path):
    data = byod_data.image_folder(tmp_path / "img")
    config = tmp_path / "enc.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "family": "encoder",
                "d_model": 16,
                "heads": 2,
                "layers": 1,
                "task": "image-folder",
                "task_options": {"image_size": 16, "patch": 5},
            }
        )
    )
    done = lwnas(tmp_path, "train", config, "--data", data, "--out", tmp_path / "run")
    assert done.returncode == 2
    assert one_error(done) == f"error {config}: task_options.patch: must divide the image size 16, got 5"


def test_a_question_id_used_twice_and_a_question_annotated_twice(tmp_path):
    data = byod_data.vqa(tmp_path / "vqa")
    questions = data / "v2_OpenEnded_mscoco_train2014_questions.json"
    original = questions.read_text()
    doc = json.loads(original)
    repeated = doc["questions"][0]["question_id"]
    doc["questions"][4]["question_id"] = repeated
    questions.write_text(json.dumps(doc))
    assert refused("vqa", data) == (
        f"vqa: {questions}: questions[4]: question id {repeated} is used twice (first at questions[0])"
    )
    questions.write_text(original)
    annotations = data / "v2_mscoco_val2014_annotations.json"
    doc = json.loads(annotations.read_text())
    doc["annotations"].append(dict(doc["annotations"][2]))
    annotations.write_text(json.dumps(doc))
    last = len(doc["annotations"]) - 1
    assert refused("vqa", data) == (
        f"vqa: {annotations}: annotations[{last}]: question "
        f"{doc['annotations'][2]['question_id']} is annotated twice (first at annotations[2])"
    )


def test_two_feature_files_for_one_image_and_a_zero_image_size(tmp_path):
    data = byod_data.captions(tmp_path / "caps")
    files = sorted((data / "features").glob("*.npz"))
    twin = data / "features" / f"{int(files[0].name.split('_')[-1].split('.')[0])}.npz"
    twin.write_bytes(files[0].read_bytes())  # the same image under its short name
    assert refused("captions", data) == (
        f"{data / 'features'}: {twin.name} and {files[0].name} both hold the features of image {twin.stem}"
    )
    twin.unlink()
    with np.load(files[3]) as f:
        arrays = dict(f)
    np.savez(files[3], **{**arrays, "image_w": 0})
    assert refused("captions", data) == (
        f"{files[3]}: `image_w` and `image_h` must be positive sizes in pixels, got 0 and 480"
    )


def test_an_hdf5_file_that_names_an_image_twice_or_sizes_it_zero(tmp_path):
    import h5py

    data = byod_data.vqa(tmp_path / "vqa", hdf5=True)
    path = data / "features.h5"
    with h5py.File(path, "r+") as h:
        ids = h["image_ids"][:]
        h["image_h"][5] = 0
    assert refused("vqa", data) == (
        f"{path}: `image_w` and `image_h` must be positive sizes in pixels, got 640 and 0 for image {ids[5]} (row 5)"
    )
    with h5py.File(path, "r+") as h:
        h["image_ids"][3] = ids[1]
    assert refused("vqa", data) == f"{path}: `image_ids` names image {ids[1]} twice (rows 1 and 3)"
