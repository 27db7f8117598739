"""Tasks, the training loop and the static cost model (parameters, MAdds, memory)."""

from .cost import CostReport, attention_map_bytes, cost, count_params, peak_memory
from .madds import count_madds

__all__ = ["CostReport", "attention_map_bytes", "cost", "count_madds", "count_params", "peak_memory"]
