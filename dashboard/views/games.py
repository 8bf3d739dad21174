"""Game pages: recent games, one game's summary, and its record exactly as stored."""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, Response, abort, jsonify, render_template, request
from flask.typing import ResponseReturnValue

from arena.gamemaster.policy import WORKER_FAULT_KINDS, FaultKind
from arena.storage import repo
from dashboard.db import session
from dashboard.queries.games import ANY_FAULT, bot_names, game_list, game_page
from dashboard.views.common import page, page_size

bp = Blueprint("games", __name__)

# What ?fault= takes: a stored fault's kind, or any of them.
FAULT_KINDS = (*(k.value for k in FaultKind), *WORKER_FAULT_KINDS, ANY_FAULT)

# A set played again opens its games on the game master as GAME_ID.2, .3, ... (an earlier
# attempt's game may still hold GAME_ID there) and stores them as GAME_ID: the game master's
# log names the first, the pages and records here answer to both.
_PLAYED_AGAIN = re.compile(r"^(?P<stored>.+-g\d+)\.\d+$")


@bp.app_url_value_preprocessor
def _stored_game_id(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    if values and (played := _PLAYED_AGAIN.match(str(values.get("game_id", "")))):
        values["game_id"] = played["stored"]


@bp.get("/games")
def index() -> ResponseReturnValue:
    # The form's choices: without it, the filters were reachable only from a bot's page.
    bots = bot_names(session())
    return render_template("games.html", bots=bots, fault_kinds=FAULT_KINDS, **_game_list())


@bp.get("/api/games")
def api_index() -> ResponseReturnValue:
    return jsonify(_game_list())


def _game_list() -> dict[str, Any]:
    """?bot=NAME (and &version=V) for one bot's games; &fault=KIND (or any) for those it
    faulted in."""
    bot, version = request.args.get("bot") or None, request.args.get("version") or None
    fault = request.args.get("fault") or None
    if version is not None and bot is None:  # it listed every game, as if asked for them
        abort(400, description=f"version {version!r} of which bot? add bot=NAME")
    if fault is not None and fault not in FAULT_KINDS:
        abort(400, description=f"fault {fault!r}: use {', '.join(FAULT_KINDS)}")
    return game_list(session(), page(), page_size(), bot=bot, version=version, fault=fault)


@bp.get("/games/<game_id>")
def show(game_id: str) -> ResponseReturnValue:
    return render_template("game.html", **game_page(session(), game_id))


@bp.get("/api/games/<game_id>")
def api(game_id: str) -> ResponseReturnValue:
    return jsonify(game_page(session(), game_id))


@bp.get("/games/<game_id>/record.jsonl")
@bp.get("/api/games/<game_id>/record.jsonl")
def record(game_id: str) -> ResponseReturnValue:
    """The record byte for byte as the worker stored it."""
    data = repo.get_game_record(session(), game_id)
    safe_name = "".join(c if c.isalnum() or c in "-_." else "_" for c in game_id)
    return Response(
        data,
        mimetype="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{safe_name}.jsonl"'},
    )
