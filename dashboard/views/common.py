"""Helpers the views share: caches as callables, page sizes, the ruleset asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import current_app, request

from arena.rulesets import as_stored
from dashboard.cache import app_cache
from dashboard.queries.common import page_number


def cached(name: str, size: int = 64) -> Callable[[Any, Callable[[], Any]], Any]:
    return app_cache(name, size).get_or_compute


def page() -> int:
    return page_number(request.args.get("page"))


def page_size() -> int:
    size: int = current_app.config["PAGE_SIZE"]
    return size


def ruleset() -> str | None:
    """?ruleset= as tournaments store it, however it is written (as the CLI takes it)."""
    return as_stored(request.args.get("ruleset") or "") or None
