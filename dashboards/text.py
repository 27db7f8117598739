"""Text from storage shown as text: study names, descriptions, failures, hosts and knob values are written
by whoever can write the storage, so nothing in them may become a link, an image or markup on the page."""

from __future__ import annotations

import html
import re
import string
from typing import Any

_MD_SPECIAL = {ord(c): "\\" + c for c in string.punctuation}  # CommonMark: any ASCII punctuation may be escaped
# Streamlit's Markdown (remark-gfm) links bare URLs and e-mail addresses by itself, and it does so on the text
# *after* escapes are read, so no escaping stops it: http(s)://..., www.... and a@b.c (mailto:, xmpp: hold an
# @). Streamlit also turns :shortcode: into an emoji or icon the same way. A word holding one of these is
# shown as inline code instead, which Markdown never reads into.
_READ_INTO = re.compile(r"://|www\.|@|:[\w+\-/]*[A-Za-z][\w+\-/]*:|:[+-]1:", re.IGNORECASE)
_BLANKS = re.compile(r"([ \t\r\n]+)")  # where remark-gfm ends a URL (what it finds never holds one of these)


def md(value: Any) -> str:
    """``value`` as literal text inside Streamlit Markdown (titles, captions, alerts, widget labels): every
    ASCII punctuation character backslash-escaped, so no image, link, HTML, colour, math or directive forms,
    and each word that Markdown would still turn into a link or an emoji shown as inline code."""
    words = _BLANKS.split(str(value).replace("\r", " ").replace("\n", " "))
    return "".join(code_span(w) if _READ_INTO.search(w) else w.translate(_MD_SPECIAL) for w in words)


def code_span(text: str) -> str:
    """``text`` as one Markdown inline code span, whatever backticks it holds."""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""  # CommonMark strips one space on each side
    return f"{fence}{pad}{text}{pad}{fence}"


def plotly_text(value: Any) -> str:
    """``value`` as literal text in a plotly label or hover (plotly reads a subset of HTML tags in them, and
    draws ``<a href>`` as a link; it never links bare URLs)."""
    return html.escape(str(value), quote=False)
