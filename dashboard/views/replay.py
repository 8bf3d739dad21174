"""The replay viewer page and its frames, one perspective at a time."""

from __future__ import annotations

import json
from dataclasses import dataclass

from flask import Blueprint, Response, abort, current_app, jsonify, render_template, request
from flask.typing import ResponseReturnValue

from arena.storage import repo
from dashboard.db import session
from dashboard.queries.games import game_page
from dashboard.replay import FULL, PERSPECTIVES, ReplayError, build_replay
from dashboard.views.common import cached

bp = Blueprint("replay", __name__)


@dataclass(frozen=True)
class _Served:
    """A replay as served: each perspective's JSON, encoded once (a few hundred kB each)."""

    hand_starts: list[dict[str, int]]
    json: dict[str, bytes]


def _build(game_id: str, record: bytes) -> _Served:
    replay = build_replay(game_id, record)
    encoded = {
        p: json.dumps(replay.for_perspective(p), ensure_ascii=False, separators=(",", ":")).encode()
        for p in PERSPECTIVES
    }
    return _Served(replay.hand_starts, encoded)


def _replay(game_id: str) -> _Served:
    """Records never change once stored, so a replay is cached by game id alone."""
    record = repo.get_game_record(session(), game_id)  # NotFound (404) for an unknown id
    cache = cached("replay", current_app.config["REPLAY_CACHE_SIZE"])
    found: _Served = cache(game_id, lambda: _build(game_id, record))
    return found


@bp.get("/games/<game_id>/replay")
def page(game_id: str) -> ResponseReturnValue:
    game = game_page(session(), game_id)
    problem = None
    hands: list[dict[str, int]] = []
    try:
        hands = _replay(game_id).hand_starts
    except ReplayError as exc:
        problem = str(exc)
    perspective = request.args.get("perspective", FULL)
    if perspective not in PERSPECTIVES:
        perspective = FULL
    return render_template(
        "replay.html", game=game, problem=problem, hands=hands, perspective=perspective
    )


@bp.get("/api/games/<game_id>/replay")
def api(game_id: str) -> ResponseReturnValue:
    """Frames for ?perspective=full (default) or 0..3: a seat's frames hold only what it knew."""
    perspective = request.args.get("perspective", FULL)
    if perspective not in PERSPECTIVES:
        abort(400, description=f"perspective {perspective!r}: use full, 0, 1, 2 or 3")
    try:
        replay = _replay(game_id)
    except ReplayError as exc:
        return jsonify({"error": "Unplayable record", "message": str(exc), "status": 422}), 422
    return Response(replay.json[perspective], mimetype="application/json")
