"""Every family trains on its task (the loss falls), failures carry their reason, data plugs in."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from searchspace import ArchConfig, ConfigError
from trainers import cost
from trainers.loop import StopTraining, TrainingError, TrainSettings, train
from trainers.tasks import Task, adapt_config, registry, resolve_task, scene_captions, scenes

SMALL = dict(d_model=32, heads=4, layers=1, dropout=0.0)
QUICK = TrainSettings(epochs=3, batch_size=32, lr=3e-3, warmup_epochs=0.5, seed=0)
CASES = {
    "digits": (dict(family="encoder", **SMALL), {}),
    "shapes-vqa": (dict(family="mcan", **SMALL), {"train_size": 512}),
    "scene-captions": (dict(family="ort", **SMALL, radix_base=64), {"train_size": 512}),
    "scene-retrieval": (dict(family="retrieval", **SMALL, pooling="sketch"), {"train_size": 512}),
}


@pytest.mark.parametrize("name", CASES)
def test_family_trains_on_its_task_and_loss_falls(name):
    knobs, options = CASES[name]
    seen = []
    result = train(
        ArchConfig.from_dict(knobs), resolve_task(name, **options), QUICK, callback=seen.append, progress=False
    )
    losses = [r["train_loss"] for r in result.history]
    assert losses[-1] < losses[0], losses
    assert [r["epoch"] for r in seen] == [1, 2, 3]
    task = resolve_task(name, **options)
    assert all(f"val_{task.metric}" in r and r["samples_per_s"] > 0 for r in seen)
    # the model trained is exactly the one the cost model priced
    assert sum(p.numel() for p in result.model.parameters()) == cost(result.config, memory=False).params
    assert result.test[task.metric] == result.test[task.metric]  # measured, not NaN
    assert set(result.test) == set(task.metrics)  # every metric it declares, and no other


def test_radix_captions_decode_to_the_right_words():
    cfg = adapt_config(ArchConfig.from_dict(dict(family="ort", **SMALL, radix_base=64)), resolve_task("scene-captions"))
    from searchspace import build_model

    model = build_model(cfg)
    captions = scenes.generate(20, seed=5)["captions"]
    seq = scene_captions._targets(model, captions)
    assert seq[0, 0] == model.codec.bos and seq[0, -1] == model.codec.eos
    assert seq.shape[1] == 2 + captions.shape[1] * model.codec.digits
    assert scene_captions.tokens_to_words(model, seq[:, 1:]) == captions.tolist()


class NaNAfterFirstStep(Task):
    """Plugin task used by the tests: a real task whose loss turns NaN at the third step."""

    name, family, metric = "nan-task", "encoder", "accuracy"

    def __init__(self):
        self.inner, self.calls = resolve_task("digits"), 0

    def input_sizes(self):
        return self.inner.input_sizes()

    def load(self, seed=0):
        return self.inner.load(seed)

    def loss(self, model, batch):
        self.calls += 1
        loss = self.inner.loss(model, batch)
        return loss * float("nan") if self.calls >= 3 else loss

    def evaluate(self, model, data, batch_size=256):
        return self.inner.evaluate(model, data, batch_size)


@pytest.fixture
def allowed():
    """Allow ``module:Class`` plugins for one test, as ``--allow-plugin`` does for one command."""
    before = set(registry._allowed)
    yield registry.allow_plugins
    registry._allowed.clear()
    registry._allowed.update(before)


def test_nan_loss_fails_with_epoch_and_reason(allowed):
    allowed([f"{__name__}:NaNAfterFirstStep"])
    task = resolve_task(f"{__name__}:NaNAfterFirstStep")
    with pytest.raises(TrainingError) as info:
        train(ArchConfig.from_dict(dict(family="encoder", **SMALL)), task, QUICK, progress=False)
    assert info.value.epoch == 1 and "non-finite loss" in info.value.reason and "step 3" in info.value.reason


def test_a_plugin_loads_by_registration_or_when_allowed(allowed):
    # registered (tests/plugins): by its entry point's name or the module:Class it registers
    assert resolve_task("constant-digits").name == "constant-digits"
    assert registry.task_class("constant_task:ConstantDigits") is registry.task_class("constant-digits")
    # unregistered: refused without importing, until the command line allows it
    with pytest.raises(ValueError, match="is not registered.*--allow-plugin test_tasks:NaNAfterFirstStep"):
        resolve_task(f"{__name__}:NaNAfterFirstStep")
    allowed([f"{__name__}:NaNAfterFirstStep", "no_such_module:Task"])
    assert resolve_task(f"{__name__}:NaNAfterFirstStep").name == "nan-task"
    with pytest.raises(ValueError, match="cannot load task plugin"):
        resolve_task("no_such_module:Task")
    for never in ("tqdm.__main__:X", "__main__:X", "os:system"):
        with pytest.raises(ValueError, match="never imported|standard library"):
            allowed([never])
    with pytest.raises(ValueError, match="did you mean `digits`"):
        resolve_task("digit")


def test_callback_can_stop_training_early():
    def stop_after_first(report):
        raise StopTraining

    result = train(
        ArchConfig.from_dict(dict(family="encoder", **SMALL)),
        resolve_task("digits"),
        QUICK,
        callback=stop_after_first,
        progress=False,
    )
    assert len(result.history) == 1


@pytest.mark.parametrize("with_tokens", [False, True])
def test_features_task_loads_a_file_the_test_writes(tmp_path, with_tokens):
    rng = np.random.default_rng(0)
    n, r, f = 200, 5, 6
    labels = rng.integers(0, 3, n)
    regions = rng.normal(0, 1, (n, r, f)).astype(np.float32)
    regions[np.arange(n), 0, labels] += 3.0  # learnable signal
    arrays = {"regions": regions, "labels": labels}
    if with_tokens:
        arrays["tokens"] = rng.integers(1, 9, (n, 4))
    np.savez(tmp_path / "data.npz", **arrays)
    task = resolve_task("features", path=tmp_path / "data.npz")
    assert task.family == ("mcan" if with_tokens else "encoder")
    data = task.load()
    assert sum(len(s["labels"]) for s in data.values()) == n
    result = train(
        ArchConfig.from_dict(dict(family=task.family, **SMALL)),
        task,
        TrainSettings(epochs=2, batch_size=32, lr=3e-3),
        progress=False,
    )
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]


def test_features_task_errors_name_the_problem(tmp_path):
    np.savez(tmp_path / "bad.npz", regions=np.zeros((4, 2, 3)))
    with pytest.raises(ValueError, match="lacks `labels`"):
        resolve_task("features", path=tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="needs a data path"):
        resolve_task("features")


def test_task_sizes_fill_defaults_but_never_override_explicit_values():
    task = resolve_task("digits")
    assert adapt_config(ArchConfig(), task).grid == (4, 4)
    with pytest.raises(ConfigError, match="grid"):
        adapt_config(ArchConfig(grid=(2, 2)), task)
    with pytest.raises(ConfigError, match="trains family `encoder`"):
        adapt_config(ArchConfig(family="mcan"), task)


def test_generated_data_is_deterministic_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("LWNAS_CACHE", str(tmp_path))
    first = resolve_task("shapes-vqa", train_size=64).load()
    assert list(tmp_path.glob("shapes-vqa-v1-train-64.pt"))
    again = resolve_task("shapes-vqa", train_size=64).load()
    assert torch.equal(first["train"]["question"], again["train"]["question"])
    from trainers.tasks.shapes_vqa import generate

    assert torch.equal(generate(64, 1000)["regions"], first["train"]["regions"])


def test_divergence_and_bad_settings_are_reported():
    with pytest.raises(ConfigError, match="schedule"):
        TrainSettings(schedule="cosin")
    with pytest.raises(ConfigError, match="did you mean `epochs`"):
        TrainSettings.from_dict({"epoch": 3})


def test_digits_reads_scikit_learns_file_as_load_digits_does_without_importing_it():
    code = (
        "import sys; from trainers.tasks.digits import _digits; images, labels = _digits(); "
        "assert 'sklearn' not in sys.modules; "
        "from sklearn.datasets import load_digits; d = load_digits(); import numpy as np; "
        "assert images.dtype == d.images.dtype and np.array_equal(images, d.images); "
        "assert np.array_equal(labels, d.target) and labels.dtype.kind == d.target.dtype.kind"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
