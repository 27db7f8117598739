"""The picture ``lwnas simulate --plot`` draws: hypervolume (a fraction of the true front's) against training
compute, the median of the replays as a line and their interquartile range as a band, one colour per
strategy. Drawn with Pillow (a dependency already), so no plotting library is needed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")
SIZE, MARGIN = (900, 560), (70, 30, 200, 50)  # (left, top, right, bottom): the legend sits on the right


def plot(summaries: Mapping[str, Mapping[str, Any]], path: str | Path, title: str = "") -> Path:
    """Draw each strategy's ``simulator.summary`` curve to the PNG file ``path``."""
    image = Image.new("RGB", SIZE, "white")
    draw = ImageDraw.Draw(image)
    left, top, right, bottom = MARGIN[0], MARGIN[1], SIZE[0] - MARGIN[2], SIZE[1] - MARGIN[3]
    top_x = max((p["compute_s"] for s in summaries.values() for p in s["hypervolume_fraction"]), default=1.0) or 1.0

    def at(x: float, y: float) -> tuple[float, float]:
        return left + (right - left) * x / top_x, bottom - (bottom - top) * max(0.0, min(1.0, y))

    draw.rectangle([left, top, right, bottom], outline="black")
    for i in range(6):  # grid and tick labels: fractions 0 .. 1, compute 0 .. the longest replay
        y = i / 5
        draw.line([at(0, y), at(top_x, y)], fill="#dddddd")
        draw.text((left - 40, at(0, y)[1] - 6), f"{y:.1f}", fill="black")
        x = top_x * i / 5
        draw.text((at(x, 0)[0] - 15, bottom + 8), f"{x:.0f}", fill="black")
    draw.line([at(0, 0.99), at(top_x, 0.99)], fill="#999999")  # the 99 % line compute_ratio is measured at
    draw.text((left, bottom + 28), "training compute (recorded seconds)", fill="black")
    draw.text((left, 8), title or "hypervolume / true front's, median and IQR over seeds", fill="black")
    for n, (name, summary) in enumerate(summaries.items()):
        colour = COLOURS[n % len(COLOURS)]
        curve: Sequence[Mapping[str, float]] = summary["hypervolume_fraction"]
        band = [at(p["compute_s"], p["q3"]) for p in curve] + [at(p["compute_s"], p["q1"]) for p in reversed(curve)]
        if len(band) > 2:
            overlay = Image.new("RGBA", SIZE, (0, 0, 0, 0))
            ImageDraw.Draw(overlay).polygon(band, fill=_rgba(colour, 50))
            image.paste(overlay, (0, 0), overlay)
            draw = ImageDraw.Draw(image)
        draw.line([at(p["compute_s"], p["median"]) for p in curve], fill=colour, width=2)
        draw.rectangle([right + 15, top + 20 * n + 4, right + 30, top + 20 * n + 14], fill=colour)
        draw.text((right + 36, top + 20 * n + 2), name, fill="black")
    path = Path(path)
    image.save(path, format="PNG")
    return path


def _rgba(colour: str, alpha: int) -> tuple[int, int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16), alpha
