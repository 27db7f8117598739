"""The knob table: every knob of the vocabulary, read back from the fields of the config classes.

A knob is written once, as a field of ``ArchConfig`` (``config.py``: ``d_model: int = knob(128, "model
width d", section=WIDTHS, limit=SIZE)``) or of ``TrainSettings`` (``training.py``: ``lr: float =
setting(1e-3, ...)``). This module gathers what those fields give: ``ARCH`` (one ``ArchKnob`` per
``ArchConfig`` field, in field order), ``TRAINING`` (one ``TrainingKnob`` per ``TrainSettings`` field)
and ``RULES_TABLE`` (an activation rule per knob with ``active_when``, then the rules between knobs
written at the end of ``config.py``). Everything that repeats a knob reads it here or from the
classes: validation and defaults (``config.py``), the search space's activation and the study
language's checks (``space.py``, ``space_check.py``), docs/knobs.md (``python -m searchspace.knobs_doc
> docs/knobs.md``), the model registry's coverage test and the dashboard's sample space
(``dashboards/sample.py``).
Adding a knob is one field in ``ArchConfig`` (plus the layer that reads it, if it changes the model);
docs/architecture.md shows the diff.

Torch-free: the CLI and the study checker import this without torch.
"""

from __future__ import annotations

from .config import ARCH, BY_NAME, RULES_TABLE
from .knob_fields import FAMILIES, KINDS, SECTIONS, STACKED, ArchKnob, Rule, TrainingKnob
from .training import DEVICES, SCHEDULES, TRAINING

FAMILY_HELP = {
    "encoder": (
        "ViT-style classifier over an h×w grid of patch features, pre-LN, pooled head (no CLS token, so "
        "coupled attention sees the whole grid)",
        "patches `(B, h·w, patch_features)`",
    ),
    "mcan": (
        "LW-Transformer's VQA baseline: post-LN self-attention encoder over question tokens; decoder of "
        "self-attention + guided attention + FFN over image regions; both pooled, summed, classified",
        "question ids `(B, Tq)` (0 = pad), regions `(B, R, F)`",
    ),
    "ort": (
        "ACORT's captioning baseline (Object Relation Transformer): regions `Linear(F, d)`+ReLU, pre-LN encoder "
        "with the box-relation term, pre-LN decoder (masked self- + cross-attention), embeddings ×√d + "
        "sinusoidal positions, untied output layer with bias",
        "regions, boxes `(B, R, 4)` as (x0, y0, x1, y1) in 0–1 image coordinates (the box-relation embedding "
        "follows the authors' code, which adds 1.0 to widths and heights: docs/paper-fidelity.md), tokens "
        "`(B, T)`",
    ),
    "retrieval": (
        "image and text towers whose global vectors come from `pooling`; T-EMDE's concatenation head "
        "(Linear + ReLU + Linear) scores every image-text pair",
        "regions, caption ids `(B, T)`",
    ),
}  # what each family builds, and its forward inputs (docs/knobs.md)

ACTIVATION_RULES = frozenset(r.name for r in RULES_TABLE if r.activation)  # derived from `active_when`
VOCABULARY: tuple[str, ...] = (*(k.name for k in ARCH), *(k.name for k in TRAINING))  # every knob, by name


def rules_of(knob: str) -> tuple[str, ...]:
    """The names of the rules that read ``knob``."""
    return tuple(r.name for r in RULES_TABLE if knob in r.reads)


__all__ = [
    "ACTIVATION_RULES",
    "ARCH",
    "BY_NAME",
    "DEVICES",
    "FAMILIES",
    "FAMILY_HELP",
    "KINDS",
    "RULES_TABLE",
    "SCHEDULES",
    "SECTIONS",
    "STACKED",
    "TRAINING",
    "VOCABULARY",
    "ArchKnob",
    "Rule",
    "TrainingKnob",
    "rules_of",
]
