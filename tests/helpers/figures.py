"""Reading the plotly figures a Streamlit AppTest sends to the browser (the dashboard tests)."""

from __future__ import annotations

import base64
import json

import numpy as np
from streamlit.testing.v1 import AppTest


def chart(at: AppTest, key: str) -> dict:
    """The plotly figure a chart sends to the browser."""
    matches = [el for el in at.get("plotly_chart") if el.proto.id and key in el.proto.id]
    assert len(matches) == 1, f"no single chart {key!r}"
    return json.loads(matches[0].proto.spec)


def values(array) -> list:
    """A figure's data array: plotly sends numpy arrays as base64 typed arrays ({"dtype", "bdata"})."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)
