"""Jinja filters: times, percentages, ratings, ruleset labels and SVG sparkline points."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime

from flask import Flask

SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RED_SUITS = frozenset("HD")


def when(value: str | datetime | None) -> str:
    """An ISO time as 'YYYY-MM-DD HH:MM' (UTC); '—' for none."""
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%d %H:%M")


def pct(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{100.0 * value:.{digits}f}%"


def rating(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "—"
    if math.isinf(value):
        return "+∞" if value > 0 else "−∞"
    return f"{value:.0f}"


def ruleset_label(value: str) -> str:
    """A stored ruleset: a name, or a custom one written as JSON parameters."""
    if not value.startswith("{"):
        return value
    try:
        params = json.loads(value)
    except ValueError:
        return "custom"
    base = params.get("name", "custom") if isinstance(params, dict) else "custom"
    return f"{base} (custom)"


def card_suit(card: str) -> str:
    return "" if card == "JO" else card[-1]


def card_rank(card: str) -> str:
    if card == "JO":
        return "★"
    rank = card[:-1]
    return "10" if rank == "T" else rank


def card_colour(card: str) -> str:
    return "red" if card_suit(card) in RED_SUITS else "black"


def sparkline_points(values: Sequence[float], width: float = 120, height: float = 28) -> str:
    """SVG polyline points for `values`, scaled to fill a width × height box (2px margin)."""
    if not values:
        return ""
    if len(values) == 1:
        values = [values[0], values[0]]
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    step = (width - 4) / (len(values) - 1)
    return " ".join(
        f"{2 + i * step:.1f},{height - 2 - (v - lo) / span * (height - 4):.1f}"
        for i, v in enumerate(values)
    )


def init_app(app: Flask) -> None:
    filters = {
        "when": when,
        "pct": pct,
        "rating": rating,
        "ruleset_label": ruleset_label,
        "sparkline_points": sparkline_points,
        "card_rank": card_rank,
        "card_colour": card_colour,
    }
    app.jinja_env.filters.update(filters)
    app.jinja_env.globals["SUIT_SYMBOLS"] = SUIT_SYMBOLS
    app.jinja_env.globals["card_suit"] = card_suit
