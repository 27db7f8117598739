"""Built-in tasks and the plugin interface (``package.module:Class``)."""

from .base import Batch, Rows, Split, Task, adapt_config, batches, resolve_task, split_size
from .caption_tasks import CaptionRetrieval, Captions
from .digits import Digits
from .features import Features
from .images import Cifar, ImageFolder
from .scene_captions import SceneCaptions
from .scene_retrieval import SceneRetrieval
from .shapes_vqa import ShapesVQA
from .vqa import VQA

BUILTIN_TASKS: dict[str, type[Task]] = {
    t.name: t
    for t in (
        Digits,
        ShapesVQA,
        SceneCaptions,
        SceneRetrieval,
        Features,
        ImageFolder,
        Cifar,
        VQA,
        Captions,
        CaptionRetrieval,
    )
}
# tasks that read the user's data from the `path` option (lwnas train --data, or task_options in a study)
DATA_TASKS = tuple(name for name, t in BUILTIN_TASKS.items() if "path" in t.path_options)

__all__ = [
    "BUILTIN_TASKS",
    "DATA_TASKS",
    "Batch",
    "CaptionRetrieval",
    "Captions",
    "Cifar",
    "Digits",
    "Features",
    "ImageFolder",
    "SceneCaptions",
    "SceneRetrieval",
    "ShapesVQA",
    "Rows",
    "Split",
    "Task",
    "VQA",
    "adapt_config",
    "batches",
    "resolve_task",
    "split_size",
]
