"""The replay viewer page and its frames, one perspective at a time."""

from __future__ import annotations

import gzip
import json

from flask import Blueprint, Response, abort, current_app, jsonify, render_template, request
from flask.typing import ResponseReturnValue

from arena.storage import repo
from dashboard.db import session
from dashboard.queries.games import game_page
from dashboard.replay import FULL, PERSPECTIVES, Replay, ReplayError, build_replay
from dashboard.views.common import cached

bp = Blueprint("replay", __name__)


class _Served:
    """A replay as served: each perspective's JSON (about a megabyte for a long game) encoded,
    and gzipped, once, when first asked for; the page itself needs only the hand starts."""

    def __init__(self, replay: Replay) -> None:
        self.hand_starts = replay.hand_starts
        self._replay = replay
        self._encoded: dict[tuple[str, bool], bytes] = {}  # (perspective, gzipped) -> bytes

    def body(self, perspective: str, gzipped: bool) -> bytes:
        found = self._encoded.get((perspective, gzipped))
        if found is None:  # two threads may both encode it: the same bytes
            frames = self._replay.for_perspective(perspective)
            found = json.dumps(frames, ensure_ascii=False, separators=(",", ":")).encode()
            if gzipped:
                found = gzip.compress(found, 6, mtime=0)
            self._encoded[(perspective, gzipped)] = found
        return found


def _replay(game_id: str) -> _Served:
    """Records never change once stored, so a replay is cached by game id alone."""
    record = repo.get_game_record(session(), game_id)  # NotFound (404) for an unknown id
    cache = cached("replay", current_app.config["REPLAY_CACHE_SIZE"])
    found: _Served = cache(game_id, lambda: _Served(build_replay(game_id, record)))
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
    # Frames repeat most of the state from one to the next: gzip makes them 30 times smaller.
    gzipped = request.accept_encodings.quality("gzip") > 0  # "gzip;q=0" means no gzip
    response = Response(replay.body(perspective, gzipped), mimetype="application/json")
    if gzipped:
        response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    return response
