"""A pack trains each member exactly as training it alone does: per family and per shape-changing knob.

Tolerance: a member's per-epoch train loss and validation metric equal solo ``fit`` with the same seed and
settings within 1e-9 (on CPU with the same thread count they are the same floating-point operations, so
in practice bitwise equal). Dropout is on in every case, so the per-member random streams are tested too.
"""

from __future__ import annotations

import pytest
import torch

from searchspace import ArchConfig
from trainers.loop import StopTraining, TrainSettings, fit
from trainers.pack import Member, fit_pack
from trainers.tasks import Task, adapt_config, resolve_task

TOLERANCE = 1e-9
SMALL = dict(d_model=32, heads=4, layers=2, dropout=0.1)
# per task: members that differ in the knobs that change shapes (each family's own among them)
CASES = {
    "digits": (
        "encoder",
        {},
        [
            dict(g_mha=True, g_ffn=True, groups=2, weight_sharing=True),
            dict(g_mha=True, groups=4, qk_expansion=2, g_lml=True),
            dict(attention="coupled", layer_sharing="(0x2)", pooling="sketch", sketch_n=2, sketch_k=4),
        ],
    ),
    "shapes-vqa": (
        "mcan",
        {"train_size": 128},
        [
            dict(g_mha=True, g_ffn=True, groups=2, g_il=True),
            dict(attention_sharing="kv", layer_sharing="(0x2)"),
            dict(attention_sharing="qk", g_mha=True, groups=2, qk_expansion=2),
        ],
    ),
    "scene-captions": (
        "ort",
        {"train_size": 128},
        [
            dict(radix_base=64),
            dict(radix_base=16, attention_sharing="kv", layer_sharing="(0,0)"),
            dict(g_mha=True, groups=2, weight_sharing=True),
        ],
    ),
    "scene-retrieval": (
        "retrieval",
        {"train_size": 128},
        [
            dict(pooling="sketch", sketch_n=2, sketch_k=4),
            dict(pooling="attention", g_ffn=True, groups=2),
            dict(pooling="mean", attention_sharing="qk"),
        ],
    ),
}


def _members(task: Task, family: str, variants: list[dict]) -> list[Member]:
    out = []
    for i, knobs in enumerate(variants):
        config = adapt_config(ArchConfig.from_dict(dict(family=family, **SMALL, **knobs)), task)
        # batch size and lr differ per member too: a pack's members are different trials
        settings = TrainSettings(epochs=2, batch_size=32 + 16 * i, lr=2e-3 + 1e-3 * i, seed=7 + i, threads=1)
        out.append(Member(config, settings))
    return out


def _small(data: dict) -> dict:
    """At most 256 training and 128 validation and test examples: a case (greedy captions too) takes seconds."""
    return {split: {k: v[: 256 if split == "train" else 128] for k, v in rows.items()} for split, rows in data.items()}


def _metrics(history: list[dict]) -> list[tuple[float, ...]]:
    return [tuple(v for k, v in sorted(r.items()) if k == "train_loss" or k.startswith("val_")) for r in history]


def _assert_close(packed: list[dict], alone: list[dict]) -> None:
    a, b = _metrics(packed), _metrics(alone)
    assert len(a) == len(b) and a
    for x, y in zip(a, b):
        assert x == pytest.approx(y, rel=0, abs=TOLERANCE), (x, y)


@pytest.mark.parametrize("name", CASES)
def test_each_member_trains_as_it_would_alone(name):
    family, options, variants = CASES[name]
    task = resolve_task(name, **options)
    data = _small(task.load(seed=0))
    members = _members(task, family, variants)
    outcomes = fit_pack(members, task, data=data)
    for member, outcome in zip(members, outcomes):
        assert outcome.failure is None and outcome.result is not None
        alone = fit(member.config, task, member.settings, progress=False, data=data)
        _assert_close(outcome.history, alone.history)
        assert outcome.result.test == pytest.approx(alone.test, rel=0, abs=TOLERANCE)
        assert {r["device"] for r in outcome.history} == {"cpu"}


class FailsForWideModels(Task):
    """digits, except that a model wider than 32 raises in its loss: a member's own error."""

    def __init__(self):
        self.inner = resolve_task("digits")
        self.name, self.family, self.metric, self.metrics = "digits", "encoder", "accuracy", self.inner.metrics

    def input_sizes(self):
        return self.inner.input_sizes()

    def load(self, seed=0):
        return self.inner.load(seed=seed)

    def loss(self, model, batch):
        if model.config.d_model > 32:
            raise ValueError("this member's forward broke")
        return self.inner.loss(model, batch)

    def evaluate(self, model, data, batch_size=256):
        return self.inner.evaluate(model, data, batch_size)


def test_a_failed_or_stopped_member_drops_out_and_the_rest_train_on():
    task = FailsForWideModels()
    data = task.load(seed=0)
    configs = [adapt_config(ArchConfig.from_dict({**SMALL, "family": "encoder", "d_model": d}), task) for d in (32, 64)]
    configs.append(configs[0])
    settings = [TrainSettings(epochs=3, batch_size=64, seed=s, threads=1) for s in (1, 2, 3)]
    members = [Member(c, s) for c, s in zip(configs, settings)]
    seen: list[tuple[int, int]] = []

    def callback(i: int, report: dict) -> None:
        seen.append((i, report["epoch"]))
        if i == 2 and report["epoch"] == 1:
            raise StopTraining  # a scheduler pruned it after its first epoch

    ok, failed, stopped = fit_pack(members, task, callback=callback, data=data)
    assert failed.failure is not None and failed.failure.epoch == 1 and "forward broke" in failed.failure.reason
    assert failed.result is None and failed.history == []
    assert stopped.stopped and [r["epoch"] for r in stopped.history] == [1] and stopped.result is not None
    assert [r["epoch"] for r in ok.history] == [1, 2, 3]
    assert seen == [(0, 1), (2, 1), (0, 2), (0, 3)]
    _assert_close(ok.history, fit(configs[0], task, settings[0], progress=False, data=data).history)


def test_members_on_different_devices_are_refused():
    task = resolve_task("digits")
    config = adapt_config(ArchConfig.from_dict(dict(family="encoder", **SMALL)), task)
    members = [Member(config, TrainSettings(device="cpu")), Member(config, TrainSettings(device="auto"))]
    with pytest.raises(ValueError, match="one device"):
        fit_pack(members, task)
    assert torch.get_num_threads() >= 1
