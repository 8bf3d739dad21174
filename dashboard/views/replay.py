"""The replay viewer page and its frames, one perspective at a time."""

from __future__ import annotations

from flask import Blueprint, abort, jsonify, render_template, request
from flask.typing import ResponseReturnValue

from arena.storage import repo
from dashboard.db import session
from dashboard.queries.games import game_page
from dashboard.replay import FULL, PERSPECTIVES, Replay, ReplayError, build_replay
from dashboard.views.common import cached

bp = Blueprint("replay", __name__)


def _replay(game_id: str) -> Replay:
    """Records never change once stored, so a replay is cached by game id alone."""
    record = repo.get_game_record(session(), game_id)  # NotFound (404) for an unknown id
    cache = cached("replay", 32)
    return cache(game_id, lambda: build_replay(game_id, record))  # type: ignore[no-any-return]


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
    return jsonify(replay.for_perspective(perspective))
