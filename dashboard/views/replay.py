"""The replay viewer page and its frames, one perspective at a time."""

from __future__ import annotations

import gzip
import json
import threading

from flask import Blueprint, Response, abort, current_app, render_template, request
from flask.typing import ResponseReturnValue

from arena.storage import repo
from dashboard.db import session
from dashboard.errors import error_response
from dashboard.queries.games import game_page
from dashboard.replay import FULL, PERSPECTIVES, Replay, ReplayError, build_replay, hand_starts
from dashboard.views.common import cached

bp = Blueprint("replay", __name__)


class _Served:
    """A replay as served: each perspective's JSON, gzipped, all made at once. The frames
    are then dropped: a long game's took over 100 MB, its five JSON bodies gzipped under 1 MB
    (JSON repeats most of the table from one frame to the next)."""

    def __init__(self, replay: Replay) -> None:
        self._gzipped = {p: _gzipped_json(replay.for_perspective(p)) for p in PERSPECTIVES}

    def body(self, perspective: str, gzipped: bool) -> bytes:
        found = self._gzipped[perspective]
        return found if gzipped else gzip.decompress(found)


def _gzipped_json(value: object) -> bytes:
    return gzip.compress(
        json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(), 6, mtime=0
    )


# One replay built at a time: builds hold the GIL, so more at once finish no sooner, but
# each holds its frames (about 175 MB for a game of 8,700 decisions) until it is done.
_building = threading.Lock()


def _replay(game_id: str) -> _Served:
    """Records never change once stored, so a replay is cached by game id alone."""

    def build() -> _Served:
        record = repo.get_game_record(session(), game_id)  # NotFound (404) for an unknown id
        with _building:
            return _Served(build_replay(game_id, record))

    found: _Served = cached("replay", current_app.config["REPLAY_CACHE_SIZE"])(game_id, build)
    return found


@bp.get("/games/<game_id>/replay")
def page(game_id: str) -> ResponseReturnValue:
    game = game_page(session(), game_id)
    problem = None
    hands: list[dict[str, int]] = []
    try:  # the frames come from the API: the page needs only where the hands start
        hands = cached("hand-starts", 256)(
            game_id, lambda: hand_starts(repo.get_game_record(session(), game_id))
        )
    except ReplayError as exc:
        problem = str(exc)
    perspective = _perspective()
    return render_template(
        "replay.html", game=game, problem=problem, hands=hands, perspective=perspective
    )


@bp.get("/api/games/<game_id>/replay")
def api(game_id: str) -> ResponseReturnValue:
    """Frames for ?perspective=full (default) or 0..3: a seat's frames hold only what it knew."""
    perspective = _perspective()
    try:
        replay = _replay(game_id)
    except ReplayError as exc:
        return error_response(422, "Unplayable record", str(exc))
    # Frames repeat most of the state from one to the next: gzip makes them 30 times smaller.
    gzipped = request.accept_encodings.quality("gzip") > 0  # "gzip;q=0" means no gzip
    response = Response(replay.body(perspective, gzipped), mimetype="application/json")
    if gzipped:
        response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    return response


def _perspective() -> str:
    """?perspective=, checked: the page showed the full deal for seat 9, where the API said 400."""
    perspective = request.args.get("perspective", FULL)
    if perspective not in PERSPECTIVES:
        abort(400, description=f"perspective {perspective!r}: use full, 0, 1, 2 or 3")
    return perspective
