"""Small data sets written in the exact on-disk layouts the bring-your-own-data tasks read.

Each writer makes a few dozen items with a signal a model can pick up, in the files and keys the
communities' tools write (image folders, CIFAR python pickles, VQA v2 JSON, Karpathy caption JSON,
bottom-up-attention ``.npz`` region features with pixel boxes and the image size).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 40, 220)}
FEATURES = 8  # region feature size of the generated features


def image_folder(root: Path, per_class: int = 10, splits: bool = False) -> Path:
    """``root/<class>/<n>.png|jpg`` (or ``root/train|val/<class>/...`` with ``splits``), 16x16 images."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for name, rgb in COLOURS.items():
        for i in range(per_class):
            folder = root / (("train" if i < per_class - 3 else "val") if splits else "") / name
            folder.mkdir(parents=True, exist_ok=True)
            pixels = np.clip(np.array(rgb) + rng.normal(0, 40, (16, 16, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / f"{i}.{'png' if i % 2 else 'jpg'}")
    return root


def cifar(root: Path, per_batch: int = 20) -> Path:
    """CIFAR-10's python layout: ``data_batch_1``, ``data_batch_2`` and ``test_batch`` pickles with bytes keys."""
    rng = np.random.default_rng(1)
    root.mkdir(parents=True, exist_ok=True)
    for name, n in (("data_batch_1", per_batch), ("data_batch_2", per_batch), ("test_batch", per_batch // 2)):
        labels = [i % 3 for i in range(n)]
        images = np.stack(
            [
                np.clip(
                    np.array(list(COLOURS.values())[y])[:, None, None] + rng.normal(0, 40, (3, 32, 32)), 0, 255
                ).astype(np.uint8)
                for y in labels
            ]
        )
        batch = {
            b"batch_label": name.encode(),
            b"labels": labels,
            b"data": images.reshape(n, 3072),
            b"filenames": [f"{i}.png".encode() for i in range(n)],
        }
        # the released batches were pickled by Python 2 and numpy 1, which name numpy.core.multiarray
        (root / name).write_bytes(pickle.dumps(batch, protocol=2).replace(b"numpy._core.", b"numpy.core."))
    with (root / "batches.meta").open("wb") as fp:
        pickle.dump({b"label_names": [c.encode() for c in COLOURS]}, fp, protocol=2)
    return root


def region_features(folder: Path, image_ids: list[int], kind: np.ndarray, prefix: str = "COCO_train2014_") -> None:
    """One bottom-up-attention ``.npz`` per image: ``x`` (regions, 8), ``bbox`` in pixels, ``image_w``, ``image_h``;
    3 to 5 regions, the first carrying the image's ``kind`` in its features."""
    rng = np.random.default_rng(2)
    folder.mkdir(parents=True, exist_ok=True)
    for image, k in zip(image_ids, kind):
        r = 3 + image % 3
        x = rng.normal(0, 0.3, (r, FEATURES)).astype(np.float32)
        x[0, k] += 2.0
        corner = rng.uniform(0, 300, (r, 2))
        bbox = np.concatenate([corner, corner + rng.uniform(20, 100, (r, 2))], 1).astype(np.float32)
        np.savez(folder / f"{prefix}{image:012d}.jpg.npz", x=x, bbox=bbox, num_bbox=r, image_w=640, image_h=480)


def region_features_h5(path: Path, image_ids: list[int], kind: np.ndarray) -> None:
    """The same features as ``region_features`` in one HDF5 file: ``image_ids``, ``features`` (N, 5, 8) zero-padded,
    ``boxes`` in pixels, ``num_boxes``, ``image_w``, ``image_h``."""
    import h5py

    tmp = path.parent / "npz-for-h5"
    region_features(tmp, image_ids, kind)
    files = sorted(tmp.glob("*.npz"))
    feats = np.zeros((len(files), 5, FEATURES), dtype=np.float32)
    boxes = np.zeros((len(files), 5, 4), dtype=np.float32)
    counts, ids = [], []
    for i, f in enumerate(files):
        with np.load(f) as a:
            feats[i, : len(a["x"])], boxes[i, : len(a["x"])] = a["x"], a["bbox"]
            counts.append(len(a["x"]))
        ids.append(int(f.name.split("_")[-1].split(".")[0]))
        f.unlink()
    tmp.rmdir()
    with h5py.File(path, "w") as h:
        h["image_ids"], h["features"], h["boxes"], h["num_boxes"] = np.array(ids), feats, boxes, np.array(counts)
        h["image_w"], h["image_h"] = np.full(len(ids), 640), np.full(len(ids), 480)


ANSWERS = ("yes", "no", "two")


def vqa(root: Path, images: int = 12, hdf5: bool = False) -> Path:
    """VQA v2: train2014 and val2014 question and annotation JSON, ``features/`` per image (8 train, 4 val images),
    or with ``hdf5`` one ``features.h5``."""
    root.mkdir(parents=True, exist_ok=True)
    ids = list(range(1, images + 1))
    kind = np.array([i % 3 for i in ids])
    if hdf5:
        region_features_h5(root / "features.h5", ids, kind)
    else:
        region_features(root / "features", ids, kind)
    rng = np.random.default_rng(3)
    qid = 0
    for split, chosen in (("train", ids[: 2 * images // 3]), ("val", ids[2 * images // 3 :])):
        questions, annotations = [], []
        for image in chosen:
            for text in ("Is there a cat?", "What is on the table?", "How many dogs are there?"):
                qid += 1
                right = ANSWERS[kind[image - 1]]
                given = [right] * 7 + [str(rng.choice(ANSWERS)) for _ in range(3)]
                questions.append({"image_id": image, "question": text, "question_id": qid})
                annotations.append(
                    {
                        "question_id": qid,
                        "image_id": image,
                        "multiple_choice_answer": right,
                        "answers": [
                            {"answer": a, "answer_confidence": "yes", "answer_id": j + 1} for j, a in enumerate(given)
                        ],
                    }
                )
        (root / f"v2_OpenEnded_mscoco_{split}2014_questions.json").write_text(
            json.dumps(
                {
                    "info": {},
                    "task_type": "Open-Ended",
                    "data_type": "mscoco",
                    "data_subtype": f"{split}2014",
                    "questions": questions,
                }
            )
        )
        (root / f"v2_mscoco_{split}2014_annotations.json").write_text(
            json.dumps({"info": {}, "data_type": "mscoco", "data_subtype": f"{split}2014", "annotations": annotations})
        )
    return root


NOUNS = ("cat", "dog", "bird")


def captions(root: Path, images: int = 14) -> Path:
    """``dataset_coco.json`` in Karpathy's format (train, restval, val, test) and ``features/`` per image."""
    root.mkdir(parents=True, exist_ok=True)
    ids = [100 + i for i in range(images)]
    kind = np.array([i % 3 for i in range(images)])
    region_features(root / "features", ids, kind, prefix="COCO_val2014_")
    entries = []
    for i, (cocoid, k) in enumerate(zip(ids, kind)):
        split = "test" if i >= images - 3 else "val" if i >= images - 6 else "restval" if i == 0 else "train"
        noun = NOUNS[k]
        sentences = [
            f"A {noun} sitting on a bench.",
            f"a {noun} on the bench",
            f"There is a {noun} here.",
            f"a small {noun} in the park",
            f"The {noun} is looking at the camera",
        ]
        entries.append(
            {
                "filepath": "val2014",
                "filename": f"COCO_val2014_{cocoid:012d}.jpg",
                "imgid": i,
                "split": split,
                "cocoid": cocoid,
                "sentids": list(range(5 * i, 5 * i + 5)),
                "sentences": [
                    {"tokens": s.lower().replace(".", "").split(), "raw": s, "imgid": i, "sentid": 5 * i + j}
                    for j, s in enumerate(sentences)
                ],
            }
        )
    (root / "dataset_coco.json").write_text(json.dumps({"images": entries, "dataset": "coco"}))
    return root
