"""Text from storage shown as text: study names, descriptions, failures, hosts and knob values are written
by whoever can write the storage, so nothing in them may become a link, an image or markup on the page."""

from __future__ import annotations

import html
import string
from typing import Any

_MD_SPECIAL = {c: "\\" + c for c in string.punctuation}  # CommonMark: any ASCII punctuation may be escaped


def md(value: Any) -> str:
    """``value`` as literal text inside Streamlit Markdown (titles, captions, alerts, widget labels): every
    ASCII punctuation character backslash-escaped, so no image, link, HTML, colour, math or directive forms."""
    return str(value).translate(str.maketrans(_MD_SPECIAL)).replace("\n", " ")


def plotly_text(value: Any) -> str:
    """``value`` as literal text in a plotly label or hover (plotly reads a subset of HTML tags in them)."""
    return html.escape(str(value), quote=False)
