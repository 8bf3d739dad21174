"""Jinja filters: times, percentages, ratings, ruleset labels and SVG sparkline points."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime
from urllib.parse import quote

from flask import Flask, request

SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RED_SUITS = frozenset("HD")


def when(value: str | datetime | None) -> str:
    """A stored time (UTC, naive or not) as 'YYYY-MM-DD HH:MM UTC'; '—' for none. The zone is
    written out: readers are anywhere, and a nightly run "at 02:00" means 02:00 UTC."""
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%d %H:%M UTC")


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
    """A stored ruleset: a name, or a custom one written as JSON parameters, shown as its name
    and the parameters it sets ("standard, max_hands 3"): two custom rulesets of one name must
    be told apart in a menu."""
    if not value.startswith("{"):
        return value
    try:
        params = json.loads(value)
    except ValueError:
        return "custom"
    if not isinstance(params, dict):
        return "custom"
    name = params.get("name", "custom")
    changed = [f"{k} {_parameter(v)}" for k, v in sorted(params.items()) if k != "name"]
    return ", ".join([str(name), *changed])


def _parameter(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


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


def points(value: float | None) -> str:
    """A score in points: 12 or 12.5."""
    if value is None:
        return "—"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def los_style(los: float | None) -> str:
    """A cell background shaded by the likelihood of superiority: green above 1/2, red below."""
    if los is None:
        return ""
    alpha = 0.08 + 0.6 * abs(los - 0.5) * 2
    rgb = "22, 163, 74" if los >= 0.5 else "220, 38, 38"
    return f"background-color: rgba({rgb}, {alpha:.2f})"


def los_class(los: float | None) -> str:
    """Significant at 95% either way (LOS at least 0.95 or at most 0.05)."""
    if los is None:
        return ""
    return "sig-better" if los >= 0.95 else "sig-worse" if los <= 0.05 else ""


def _segment(text: str) -> str:
    return quote(text, safe="")


def bot_url(bot: str, version: str | None = None) -> str:
    """/bots/NAME[/VERSION]: url_for is too slow for tables of hundreds of links."""
    tail = f"/{_segment(version)}" if version else ""
    return f"{request.script_root}/bots/{_segment(bot)}{tail}"


def game_url(game_id: str, tail: str = "") -> str:
    """/games/ID, /games/ID/replay, /games/ID/record.jsonl."""
    return f"{request.script_root}/games/{_segment(game_id)}{tail}"


def tournament_url(tournament_id: str) -> str:
    return f"{request.script_root}/tournaments/{_segment(tournament_id)}"


def init_app(app: Flask) -> None:
    filters = {
        "when": when,
        "pct": pct,
        "rating": rating,
        "ruleset_label": ruleset_label,
        "sparkline_points": sparkline_points,
        "card_rank": card_rank,
        "card_colour": card_colour,
        "los_style": los_style,
        "points": points,
        "los_class": los_class,
    }
    app.jinja_env.filters.update(filters)
    app.jinja_env.globals["SUIT_SYMBOLS"] = SUIT_SYMBOLS
    app.jinja_env.globals.update(
        card_suit=card_suit, bot_url=bot_url, game_url=game_url, tournament_url=tournament_url
    )
