"""Helpers the views share: caches as callables, page sizes, the ruleset asked for."""

from __future__ import annotations

from flask import abort, current_app, request

from arena.errors import BadRuleset
from arena.rulesets import as_stored, ruleset_parameters
from dashboard.cache import app_cache
from dashboard.queries.common import Cache


def cached(name: str, size: int = 64) -> Cache:
    return app_cache(name, size).get_or_compute


def page() -> int:
    """?page= from 1; 400 for anything else (page=abc once showed page 1 as if asked for)."""
    raw = request.args.get("page") or "1"
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        abort(400, description=f"page {raw!r}: use a whole number from 1")
    return int(raw)


def page_size() -> int:
    size: int = current_app.config["PAGE_SIZE"]
    return size


def ruleset() -> str | None:
    """?ruleset= as tournaments store it, however it is written (as the CLI takes it); 400 for
    JSON parameters that do not parse."""
    text = request.args.get("ruleset") or ""
    if text.lstrip().startswith("{"):
        try:
            ruleset_parameters(text)
        except BadRuleset as exc:
            # as_stored takes it for a name, and the 404 "no ruleset '{bad'" hid the slip.
            abort(400, description=str(exc))
    return as_stored(text) or None
