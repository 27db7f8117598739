"""Built-in tasks and the plugin interface (``package.module:Class``)."""

from .base import Split, Task, adapt_config, batches, resolve_task, split_size
from .digits import Digits
from .features import Features
from .scene_captions import SceneCaptions
from .scene_retrieval import SceneRetrieval
from .shapes_vqa import ShapesVQA

BUILTIN_TASKS: dict[str, type[Task]] = {
    t.name: t for t in (Digits, ShapesVQA, SceneCaptions, SceneRetrieval, Features)
}

__all__ = ["BUILTIN_TASKS", "Digits", "Features", "SceneCaptions", "SceneRetrieval", "ShapesVQA", "Split", "Task",
           "adapt_config", "batches", "resolve_task", "split_size"]
