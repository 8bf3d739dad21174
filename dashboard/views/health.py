"""/healthz (is the database answering?), /api, the index of every JSON route, and the icon.

JSON API (every page has a twin; ids unknown to the database give a 404 with a message, and
parameters that do not parse, such as page=0, a 400 with one):

    GET /api                              this index
    GET /healthz                          {"status": "ok", ...} or 503 when the database fails
    GET /api/leaderboard?ruleset=R        rating table of ruleset R (default: the most used)
    GET /api/bots                         every bot with its versions
    GET /api/bots/NAME[/VERSION]          one version (default latest): manifest, ratings,
                                          Elo history, head-to-head, recent games, faults
    GET /api/tournaments?page=N           tournaments, newest first, with progress; kind is
                                          the format, or "match" for a gauntlet of two (what
                                          arena match plays); a gauntlet's champion is the
                                          bot that plays every other (not its winner), null
                                          for a round robin
    GET /api/tournaments/ID?page=N        one tournament: progress, standings (with faults),
                                          crosstable, games; a match (a gauntlet of two) its
                                          SPRT stopped has planned_sets < sets_per_pair; an
                                          `arena match` has sprt (its test, LLR and verdict)
    GET /api/tournaments/ID/status        state and progress only (what the live page polls),
                                          with elapsed_s and eta_s (at the pace so far; null
                                          while no set is being played) and them in words
    GET /api/games?page=N&bot=B&version=V&fault=K  games, newest first; of one bot (or
                                          version); K (timeout, crash, illegal, malformed,
                                          absent, contested or any): those with such a fault (the
                                          bot's, if one is named)
    GET /api/games/ID                     one game: header, hands, timings, faults
    GET /api/games/ID/record.jsonl        the record byte for byte as stored
    GET /api/games/ID/replay?perspective=P  replay frames; P is full (default) or a seat 0-3,
                                          whose frames hold only what that seat knew
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify
from flask.typing import ResponseReturnValue
from sqlalchemy import text

from dashboard.db import database, session

bp = Blueprint("health", __name__)


def _routes(doc: str) -> list[dict[str, str]]:
    """The route table of this module's docstring, continuation lines joined."""
    routes: list[dict[str, str]] = []
    for line in doc.split("JSON API", 1)[1].splitlines()[2:]:
        text_ = line.strip()
        if text_.startswith("GET "):
            route, _, about = text_[4:].partition("  ")
            routes.append({"route": f"GET {route.strip()}", "about": about.strip()})
        elif text_ and routes:
            routes[-1]["about"] += " " + text_
    return routes


ROUTES = _routes(__doc__ or "")


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    try:
        session().execute(text("SELECT 1"))
    except Exception as exc:  # any database failure means "unhealthy", said plainly
        return jsonify({"status": "error", "error": exc.__class__.__name__}), 503
    return jsonify({"status": "ok", "database": database().dialect})


@bp.get("/api")
def index() -> ResponseReturnValue:
    return jsonify({"routes": ROUTES})


@bp.get("/favicon.ico")
def favicon() -> ResponseReturnValue:
    # A page that is not HTML (every JSON route) names no icon: the browser asks for this one,
    # and a 404 put an error in its console.
    return current_app.send_static_file("favicon.svg")
