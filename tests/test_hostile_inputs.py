"""Hostile checkpoints, `lwnas train` configurations and data folders (issue 28): each is refused with one
line, nothing it names runs, nothing hangs.

Every case drives the installed ``lwnas`` in its own process and folder, bounded by a timeout, with the audit
hook of tests/hostile watching for writes and processes outside the folder (tests/helpers/hostile.py). A
plugin that would run writes a marker file: the marker must not exist afterwards. Study files with the same
kinds of values (tags, base-60 numbers, absurd tuner and training settings) are in tests/hostile/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from helpers.hostile import TIMEOUT_S, lwnas, refused
from helpers.procs import lwnas as sweep_lwnas

from searchspace import ArchConfig, build_model

TINY = {"family": "encoder", "d_model": 16, "heads": 2, "layers": 1}
CONFIG = "family: encoder\nd_model: 16\nheads: 2\nlayers: 1\n"
MARKER = "code-ran"
EVIL = f"open({MARKER!r}, 'w').write('the module ran')\n\nclass T:\n    pass\n"


def checkpoint(path: Path, **fields) -> Path:
    """A checkpoint as `lwnas train` writes it (a tiny digits model), with ``fields`` replacing its own."""
    config = ArchConfig.from_dict(TINY)
    content = {
        "config": config.to_dict(),
        "task": "digits",
        "task_options": {},
        "settings": {},
        "state_dict": build_model(config).state_dict(),
        "metrics": {},
    }
    torch.save({**content, **fields}, path)
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def run(work: Path, *args: str, pythonpath: tuple[str, ...] = (), expected_audit: tuple[str, ...] = ()) -> str:
    """The one error line of ``lwnas ARGS`` in ``work``; no code a file named has run."""
    line = refused(lwnas(work.parent, work, *args, pythonpath=pythonpath), expected_audit)
    assert not list(work.parent.rglob(MARKER)), f"code named in a file ran: {line}"
    return line


# ---- plugins: a file names a task; it never makes lwnas import a module --------------------------------------
def test_a_checkpoint_naming_a_module_of_the_working_directory_imports_nothing(work):
    (work / "evilmod.py").write_text(EVIL)
    checkpoint(work / "checkpoint.pt", task="evilmod:T")
    line = run(work, "evaluate", "checkpoint.pt")
    assert "task plugin 'evilmod:T' is not registered" in line and "--allow-plugin evilmod:T" in line, line


def test_a_train_configuration_naming_a_module_of_the_working_directory_imports_nothing(work):
    (work / "evilmod.py").write_text(EVIL)
    (work / "c.yaml").write_text(CONFIG + 'task: "evilmod:T"\n')
    line = run(work, "train", "c.yaml", "--epochs", "1", "-o", "run")
    assert "task plugin 'evilmod:T' is not registered" in line, line
    assert not (work / "run").exists()


MAIN = "a `__main__` module is a program, not a task, and is never imported"


@pytest.mark.parametrize("command", ["space validate", "train", "evaluate", "train --allow-plugin"])
def test_a_main_module_is_never_imported(work, command):
    """``tqdm.__main__`` runs tqdm's command-line tool when imported: a study, configuration or checkpoint naming
    it imports nothing. ``evilpkg.__main__`` (importable here) writes the marker: not imported even when the
    command line allows it."""
    evil = work / "evilpkg"
    evil.mkdir()
    (evil / "__init__.py").write_text("")
    (evil / "__main__.py").write_text(EVIL)
    reference = "evilpkg.__main__:T" if command.endswith("--allow-plugin") else "tqdm.__main__:X"
    if command == "space validate":
        study = f'task: "{reference}"\nfamily: encoder\nobjectives: [accuracy]\nspace: {{d_model: 16}}\n'
        (work / "s.yaml").write_text(study)
        args = ["space", "validate", "s.yaml"]
    elif command == "evaluate":
        args = ["evaluate", str(checkpoint(work / "checkpoint.pt", task=reference))]
    else:
        (work / "c.yaml").write_text(CONFIG + f'task: "{reference}"\n')
        args = ["train", "c.yaml", "--epochs", "1"]
        if command.endswith("--allow-plugin"):
            args += ["--allow-plugin", reference]
    line = run(work, *args, pythonpath=(str(work),))
    assert MAIN in line and reference in line, line


def test_an_allowed_plugin_is_imported_only_with_the_flag(work):
    """The flag is the user's explicit choice: the same class that a file alone cannot load trains with it."""
    (work / "mytask.py").write_text(
        "from trainers.tasks.digits import Digits\n\nclass MyTask(Digits):\n    name = 'my-task'\n"
    )
    (work / "c.yaml").write_text(CONFIG + "task: mytask:MyTask\ntraining: {batch_size: 64, threads: 1}\n")
    refused_line = run(work, "train", "c.yaml", "--epochs", "1", pythonpath=(str(work),))
    assert "is not registered" in refused_line, refused_line
    result = lwnas(
        work.parent, work, "train", "c.yaml", "--epochs", "1", "--allow-plugin", "mytask:MyTask", "-o", "run",
        pythonpath=(str(work),),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "trained my-task" in result.stderr, result.stderr
    evaluated = lwnas(work.parent, work, "evaluate", "run/checkpoint.pt", pythonpath=(str(work),))
    assert evaluated.returncode != 0 and "--allow-plugin mytask:MyTask" in evaluated.stderr, evaluated.stderr


# ---- checkpoints -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"task_options": ["path"]}, "`task_options` is a list, not a mapping"),
        ({"state_dict": [1, 2]}, "`state_dict` is a list, not a mapping of weights"),
        ({"task": 7}, "`task` is an int, not a task name"),
        (
            {"config": {**TINY, "d_model": 65536, "heads": 8, "layers": 256}, "state_dict": {}},
            "building the model of this configuration needs at least",
        ),
    ],
    ids=["task-options-list", "state-dict-list", "task-int", "d-model-65536-layers-256"],
)
def test_a_malformed_checkpoint_is_one_line(work, fields, expected):
    checkpoint(work / "checkpoint.pt", **fields)
    line = run(work, "evaluate", "checkpoint.pt")
    assert expected in line and "checkpoint.pt" in line, line


# ---- lwnas train configurations ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "args", "expected"),
    [
        ("d_model: 65536\nheads: 8\nlayers: 256\n", (), "training this configuration needs at least"),
        ("training: {threads: 100000000}\n", (), "threads: must be an integer >= 1 or null (torch's default), at most"),
        ("", ("--threads", "100000000"), "threads: must be an integer >= 1 or null (torch's default), at most"),
    ],
    ids=["d-model-65536-layers-256", "threads-in-file", "threads-on-command-line"],
)
def test_an_absurd_train_configuration_is_refused_before_training(work, text, args, expected):
    # the file's own knobs come last: a repeated key would be refused as such
    base = "".join(line + "\n" for line in CONFIG.splitlines() if line.split(":")[0] + ":" not in text)
    (work / "c.yaml").write_text(base + text)
    line = run(work, "train", "c.yaml", "--task", "digits", "--epochs", "1", *args)
    assert expected in line, line


# ---- data paths --------------------------------------------------------------------------------------------------
def image_folder(root: Path) -> Path:
    """A data folder of two classes, one tiny PNG each."""
    from PIL import Image

    for name in ("cat", "dog"):
        (root / name).mkdir(parents=True)
        Image.new("RGB", (4, 4)).save(root / name / "a.png")
    return root


def test_a_fifo_as_features_data_is_refused_without_opening_it(work):
    os.mkfifo(work / "data.npz")
    (work / "c.yaml").write_text(CONFIG)
    line = run(work, "train", "c.yaml", "--task", "features", "--data", "data.npz", "--epochs", "1")
    assert "data.npz is not a regular file (a FIFO (named pipe))" in line, line


def test_a_fifo_as_a_study_file_reads_as_empty_instead_of_waiting_for_a_writer(work):
    os.mkfifo(work / "s.yaml")
    line = run(work, "space", "validate", "s.yaml")
    assert line == "error s.yaml: a study is a mapping with `task` and `space`, got NoneType", line


def test_a_fifo_named_by_a_checkpoint_is_refused_without_opening_it(work):
    os.mkfifo(work / "data.npz")
    checkpoint(work / "checkpoint.pt", task="features", task_options={"path": str(work / "data.npz")})
    line = run(work, "evaluate", "checkpoint.pt")
    assert "data.npz is not a regular file (a FIFO (named pipe))" in line, line


@pytest.mark.parametrize("hostile", ["fifo", "symlink-loop", "class-folder-outside", "image-outside"])
def test_an_image_folder_reads_regular_files_inside_it_only(work, hostile):
    data = image_folder(work / "data")
    if hostile == "fifo":
        os.mkfifo(data / "cat" / "b.png")
        expected = f"{data / 'cat' / 'b.png'} is not a regular file (a FIFO (named pipe))"
    elif hostile == "symlink-loop":
        (data / "cat" / "b.png").symlink_to("b.png")
        expected = f"{data / 'cat' / 'b.png'} is a loop of symbolic links"
    else:
        outside = image_folder(work / "elsewhere")
        if hostile == "class-folder-outside":
            (data / "bird").symlink_to(outside / "cat")
            expected = f"{data / 'bird'} is a symbolic link to {outside / 'cat'}, outside the data folder"
        else:
            (data / "dog" / "b.png").symlink_to(outside / "dog" / "a.png")
            expected = f"{data / 'dog' / 'b.png'} is a symbolic link to {outside / 'dog' / 'a.png'}, outside"
    (work / "c.yaml").write_text(CONFIG)
    line = run(work, "train", "c.yaml", "--task", "image-folder", "--data", "data", "--epochs", "1")
    assert "image-folder: " in line and expected in line, line


def vqa_folder(root: Path, questions: str | None = None) -> Path:
    """A VQA folder of one question per split (image 1) with ``questions`` as the training questions' text."""
    root.mkdir()
    one = {"questions": [{"question_id": 1, "image_id": 1, "question": "what colour?"}]}
    answers = {"annotations": [{"question_id": 1, "answers": [{"answer": "red"}]}]}
    for split in ("train", "val"):
        (root / f"v2_OpenEnded_mscoco_{split}2014_questions.json").write_text(json.dumps(one))
        (root / f"v2_mscoco_{split}2014_annotations.json").write_text(json.dumps(answers))
    if questions is not None:
        (root / "v2_OpenEnded_mscoco_train2014_questions.json").write_text(questions)
    return root


def test_questions_nested_200000_deep_are_one_line(work):
    data = vqa_folder(work / "vqa", "[" * 200_000 + "]" * 200_000)
    (data / "features").mkdir()
    (work / "c.yaml").write_text("family: mcan\nd_model: 16\nheads: 2\nlayers: 1\n")
    line = run(work, "train", "c.yaml", "--task", "vqa", "--data", "vqa", "--epochs", "1")
    assert "v2_OpenEnded_mscoco_train2014_questions.json nests its arrays or objects too deeply" in line, line


def test_hdf5_features_declaring_ten_billion_images_are_refused_before_reading(work):
    import h5py

    data = vqa_folder(work / "vqa")
    with h5py.File(data / "features.h5", "w") as f:  # chunked and never written: the file stays tiny
        f.create_dataset("features", shape=(10**10, 36, 2048), dtype="f4", chunks=(1, 36, 2048))
        f.create_dataset("image_ids", shape=(10**10,), dtype="i8", chunks=(1024,))
    assert (data / "features.h5").stat().st_size < 1 << 20
    (work / "c.yaml").write_text("family: mcan\nd_model: 16\nheads: 2\nlayers: 1\n")
    # h5py's import asks the platform for its processor (`uname -p`): its own doing, whatever the file holds
    uname = ("AUDIT subprocess.Popen: ('uname', ['uname', '-p']",)
    line = run(work, "train", "c.yaml", "--task", "vqa", "--data", "vqa", "--epochs", "1", expected_audit=uname)
    assert "declares 10,000,000,000 images x 36 regions x 2,048 features" in line, line


# ---- sweeps ------------------------------------------------------------------------------------------------------
def test_a_trial_larger_than_the_machine_is_refused_before_anything_is_stored(work):
    """`cpus_per_trial` within its rule but beyond this machine: Tune would wait for such a node forever.
    (A sweep may start Ray, which starts processes and writes under /tmp: this one runs without the audit hook.)"""
    cpus = min(1024, (os.cpu_count() or 1) * 4)
    (work / "s.yaml").write_text(
        "name: big-trials\ntask: digits\nobjectives: [accuracy]\nbudget: {trials: 1, epochs: 1}\n"
        f"tuner: {{cpus_per_trial: {cpus}}}\nspace: {{d_model: 16, heads: 2, layers: 1}}\n"
    )
    result = sweep_lwnas(work, "sweep", "s.yaml", "--storage", f"sqlite:///{work / 'lwnas.db'}", timeout=TIMEOUT_S)
    line = refused(result)
    assert f"tuner.cpus_per_trial is {cpus}, but this machine has {os.cpu_count()} CPUs" in line, line
    assert not (work / "lwnas.db").exists(), "the refused sweep created its storage"
