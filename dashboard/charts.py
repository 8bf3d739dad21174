"""Server-side SVG charts: a rating history line with axes, scaled in Python."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from flask import Flask


@dataclass(frozen=True)
class LineChart:
    """Everything the template needs to draw one line chart."""

    width: int
    height: int
    left: int
    bottom: int
    points: str
    y_ticks: list[tuple[float, str]] = field(default_factory=list)
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    last: tuple[float, float, str] | None = None


def _nice_step(span: float, ticks: int) -> float:
    raw = span / max(ticks, 1)
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def line_chart(
    xs: Sequence[float], ys: Sequence[float], width: int = 720, height: int = 240
) -> LineChart | None:
    """Scale (x, y) points into a width × height SVG with a left and a bottom axis."""
    if not ys:
        return None
    left, right, top, bottom = 48, 12, 10, 24
    lo, hi = min(ys), max(ys)
    step = _nice_step(max(hi - lo, 10.0), 4)
    lo = (lo // step) * step
    hi = (hi // step + 1) * step
    x0, x1 = min(xs), max(xs)
    xspan = (x1 - x0) or 1.0

    def sx(x: float) -> float:
        return left + (x - x0) / xspan * (width - left - right)

    def sy(y: float) -> float:
        return height - bottom - (y - lo) / (hi - lo) * (height - top - bottom)

    points = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys, strict=True))
    y_ticks = []
    value = lo
    while value <= hi + 1e-9:
        y_ticks.append((round(sy(value), 1), f"{value:.0f}"))
        value += step
    # Game numbers are whole: the middle tick is a whole number drawn where it belongs.
    middle = round((x0 + x1) / 2)
    marks = [x0, *([middle] if x0 < middle < x1 else []), x1] if x1 > x0 else []
    x_ticks = [(round(sx(x), 1), f"{x:.0f}") for x in marks]
    last = (round(sx(xs[-1]), 1), round(sy(ys[-1]), 1), f"{ys[-1]:.0f}")
    return LineChart(width, height, left, height - bottom, points, y_ticks, x_ticks, last)


def init_app(app: Flask) -> None:
    app.jinja_env.globals["line_chart"] = line_chart
