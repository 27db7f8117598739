"""Built-in tasks and the plugin interface (``package.module:Class``)."""

from .base import Batch, Rows, Split, Task, adapt_config, batches, split_size
from .caption_tasks import CaptionRetrieval, Captions
from .digits import Digits
from .features import Features
from .images import Cifar, ImageFolder
from .registry import BUILTIN_TASKS, DATA_TASKS, resolve_task
from .scene_captions import SceneCaptions
from .scene_retrieval import SceneRetrieval
from .shapes_vqa import ShapesVQA
from .vqa import VQA

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
