"""Deployable exports: a model file that runs without lwnas (``torch.export`` ``.pt2``, or ONNX).

``lwnas export --format torch|onnx`` builds the model of a study's trial (initialised weights, seeded with the
trial's seed: a search trial keeps no weights) or of a ``lwnas train`` checkpoint (its trained weights), and
writes it in eval mode with a dynamic batch dimension. The artifact needs only torch (``torch.export.load``)
or onnxruntime; the configuration and the input names travel inside it as metadata (``lwnas.json``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from searchspace import ArchConfig
from searchspace.errors import LwnasError, shorten

FORMATS = ("yaml", "torch", "onnx")
SUFFIX = {"torch": ".pt2", "onnx": ".onnx"}
METADATA = "lwnas.json"  # extra file of the .pt2 and metadata key of the .onnx
ONNX_OPSET = 18
MAX_BATCH = 4096  # the dynamic batch dimension's upper bound (torch.export needs one to reason about shapes)

# The knob a module implements: a failure inside it is reported as that knob's (innermost module first).
_KNOB_OF_MODULE = {
    "CoupledAttention": "attention",
    "SketchPool": "pooling",
    "SketchCoder": "pooling",
    "AttentionPool": "pooling",
    "GroupedLinear": "groups",
    "FeedForward": "g_ffn",
    "MultiHeadAttention": "attention_sharing",
    "Embedding": "radix_base",
}


class DeployExportError(LwnasError, ValueError):
    """A model that cannot be written in the asked format (the message names the knob and why)."""


def _takes_region_mask(model) -> bool:
    """Region families take ``region_mask`` (True = a real region): byod region data pads images to R regions.

    The files pass it positionally after ``example_inputs``, so it must be ``forward``'s next argument."""
    params = list(inspect.signature(model.forward).parameters)
    if "region_mask" not in params:
        return False
    if params.index("region_mask") != len(model.example_inputs(batch=1)):
        raise DeployExportError(
            f"{type(model).__name__}.forward must take region_mask right after the inputs of "
            f"example_inputs to be exported, but its arguments are {params}"
        )
    return True


def export_inputs(model, batch: int) -> tuple:
    """``example_inputs`` plus, for region families, an all-real ``region_mask`` (B, R) bool.

    The mask is an input of the exported file, not a constant: a model trained on padded regions must see
    the same padding when deployed, or its outputs for those images silently differ."""
    import torch

    inputs = tuple(model.example_inputs(batch=batch))
    if not _takes_region_mask(model):
        return inputs
    regions = inputs[input_names(model, with_mask=False).index("regions")]
    return (*inputs, torch.ones(regions.shape[:2], dtype=torch.bool))


def input_names(model, with_mask: bool = True) -> list[str]:
    """The names of ``forward``'s tensor arguments that the export fills, in order (``region_mask`` last)."""
    params = list(inspect.signature(model.forward).parameters)
    names = params[: len(model.example_inputs(batch=1))]
    if with_mask and _takes_region_mask(model):
        names.append("region_mask")  # forward's last argument in every region family
    return names


def metadata(config: ArchConfig, model, provenance: dict[str, Any]) -> str:
    """What a user of the artifact needs without lwnas: inputs (name, shape, dtype), configuration, origin."""
    inputs = [
        {"name": n, "shape": ["batch", *t.shape[1:]], "dtype": str(t.dtype).removeprefix("torch.")}
        for n, t in zip(input_names(model), export_inputs(model, batch=1))
    ]
    return json.dumps(
        {"format": "lwnas-deploy/1", "inputs": inputs, "config": config.to_dict(), "provenance": provenance},
        default=str,
    )


def _dynamic_batch(model) -> dict[str, dict[int, Any]]:
    """Every input's first dimension is the batch: one shared symbol, 1 to MAX_BATCH."""
    import torch

    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    return {name: {0: batch} for name in input_names(model)}


class _ModuleStack:
    """The modules being run while an exporter traces (forward hooks): where a failure happened."""

    def __init__(self, model):
        self.stack: list = []
        self.failed_in: list = []
        self.handles = [
            h
            for m in model.modules()
            for h in (m.register_forward_pre_hook(self._enter), m.register_forward_hook(self._leave))
        ]

    def _enter(self, module, args) -> None:
        self.stack.append(module)

    def _leave(self, module, args, output) -> None:  # returns None: the output is left as it is
        self.stack.pop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.failed_in = list(self.stack)  # a module whose forward raised never ran its exit hook
        for h in self.handles:
            h.remove()
        return False


def _explain(exc: BaseException, config: ArchConfig, fmt: str, failed_in: list) -> DeployExportError:
    """A DeployExportError naming the knob whose module the exporter failed in, and the exporter's reason."""
    root = list(_chain(exc))[-1]
    reason = shorten(" ".join(str(root).split()) or type(root).__name__, 300)
    knobs = [
        (type(m).__name__, _KNOB_OF_MODULE[type(m).__name__])
        for m in reversed(failed_in)
        if type(m).__name__ in _KNOB_OF_MODULE
    ]
    if knobs and not (knobs[0][1] == "radix_base" and not config.radix_base):
        module, knob = knobs[0]
        value = "coupled" if knob == "attention" else getattr(config, knob, None)
        if knob == "attention_sharing":
            value = config.attention_sharing_of("encoder")
        where = f"the knob `{knob}: {value}` ({module})"
    else:
        where = f"this {config.family} configuration"
    return DeployExportError(
        f"{where} cannot be exported to {fmt}: {type(root).__name__}: {reason}; export it as yaml instead"
    )


def _chain(exc: BaseException | None):
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


def export_program(model, config: ArchConfig, fmt: str = "torch"):
    """The model (eval mode) as a ``torch.export.ExportedProgram`` with a dynamic batch dimension; both formats are
    written from it (``fmt``: the format a failure names)."""
    import torch

    model = model.eval()
    inputs = export_inputs(model, batch=2)  # batch 2: a size-1 example would be specialised to 1
    tracked = _ModuleStack(model)
    try:
        with torch.no_grad(), tracked:
            return torch.export.export(model, inputs, dynamic_shapes=_dynamic_batch(model), strict=False)
    except Exception as exc:  # noqa: BLE001 - torch.export raises many unrelated types; all mean "not exportable"
        raise _explain(exc, config, fmt, tracked.failed_in) from None


def write_torch(model, config: ArchConfig, path: Path, provenance: dict[str, Any], program=None) -> Path:
    """``path`` (.pt2): ``torch.export.load(path).module()(*inputs)`` runs it with torch alone."""
    import torch

    program = program if program is not None else export_program(model, config)
    torch.export.save(program, path, extra_files={METADATA: metadata(config, model, provenance)})
    return path


# the ONNX exporter's op registry logs a warning per torchvision op it cannot register when torchvision is absent
# (4 per export); lwnas models use no torchvision op, so the notes say nothing about the user's model
_ONNX_REGISTRY_LOG = "torch.onnx._internal.exporter._registration"


class _NoTorchvisionNotes(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("torchvision is not installed")


@contextlib.contextmanager
def _quiet_torchvision_notes() -> Iterator[None]:
    """Drop only the exporter's "torchvision is not installed" warnings for the block; its other records pass."""
    logger, rule = logging.getLogger(_ONNX_REGISTRY_LOG), _NoTorchvisionNotes()
    logger.addFilter(rule)
    try:
        yield
    finally:
        logger.removeFilter(rule)


def write_onnx(model, config: ArchConfig, path: Path, provenance: dict[str, Any], program=None) -> Path:
    """``path`` (.onnx): onnxruntime runs it; inputs are named as ``forward``'s arguments, output ``output``.

    Translated from the ``torch.export`` program (``export_program``, or ``program`` when one was traced for the
    other format already): the exporter would otherwise trace the model once more itself."""
    import torch

    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it (and onnxscript)
    except ImportError:
        raise DeployExportError(
            "--format onnx needs the onnx and onnxscript packages: pip install onnx onnxscript onnxruntime"
        ) from None
    model = model.eval()
    traced = program if program is not None else export_program(model, config, "onnx")
    try:
        with torch.no_grad(), warnings.catch_warnings(), _quiet_torchvision_notes():
            warnings.simplefilter("ignore")  # the exporter's progress notes are not the user's concern
            onnx_program = torch.onnx.export(
                traced,
                (),  # the program holds its example inputs and the dynamic batch dimension
                dynamo=True,
                input_names=input_names(model),
                output_names=["output"],
                opset_version=ONNX_OPSET,
                verbose=False,
                report=False,
            )
    except Exception as exc:  # noqa: BLE001 - as in export_program; the trace succeeded, so no module is named
        raise _explain(exc, config, "onnx", []) from None
    assert onnx_program is not None  # torch.onnx.export returns None only without dynamo=True
    proto = onnx_program.model_proto
    entry = proto.metadata_props.add()
    entry.key, entry.value = METADATA, metadata(config, model, provenance)
    path.write_bytes(proto.SerializeToString())  # protobuf's 2 GB limit: far above the families' sizes
    return path


WRITERS = {"torch": write_torch, "onnx": write_onnx}


def write_model(model, config: ArchConfig, fmt: str, path: Path, provenance: dict[str, Any]) -> Path:
    """Write ``model`` in ``fmt`` (``torch`` or ``onnx``) to ``path``."""
    return write_models(model, config, {fmt: path}, provenance)[0]


def write_models(model, config: ArchConfig, paths: dict[str, Path], provenance: dict[str, Any]) -> list[Path]:
    """Write ``model`` in each format of ``paths`` (``{fmt: path}``), all from one ``torch.export`` trace."""
    for fmt in paths:
        if fmt not in WRITERS:
            raise DeployExportError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    program = export_program(model, config, next(iter(paths))) if len(paths) > 1 else None
    written = []
    for fmt, path in paths.items():
        try:
            written.append(WRITERS[fmt](model, config, path, provenance, program))
        except OSError as exc:
            raise DeployExportError(
                f"cannot write {path}: {exc.strerror or exc}; choose a folder you can write to with -o"
            ) from None
    return written


def initialised_model(config: ArchConfig, seed: int):
    """A study trial's model: built with the trial's seed (a search keeps no weights)."""
    import torch

    from searchspace import build_model

    torch.manual_seed(seed)
    return build_model(config).eval()


def checkpoint_model(path: Path):
    """A ``lwnas train`` checkpoint's model with its trained weights, its configuration and provenance."""
    from trainers.checkpoint import load_model

    model, ckpt = load_model(path)  # the task's data is not needed to export
    provenance = {
        "checkpoint": str(path),
        "task": ckpt["task"],
        "weights": "trained",
        "metrics": {k: v for k, v in ckpt.get("metrics", {}).items() if k != "history"},
    }
    return model, ArchConfig.from_dict(ckpt["config"]), provenance
