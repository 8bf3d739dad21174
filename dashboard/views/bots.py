"""Bot pages: the list of bots and one bot version's page, with their twins."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from dashboard.db import session
from dashboard.queries.bots import bot_list, bot_page
from dashboard.views.common import cached, ruleset

bp = Blueprint("bots", __name__)


@bp.get("/bots")
def index() -> ResponseReturnValue:
    return render_template("bots.html", **bot_list(session()))


@bp.get("/api/bots")
def api_index() -> ResponseReturnValue:
    return jsonify(bot_list(session()))


def _data(name: str, version: str | None) -> dict[str, Any]:
    return bot_page(session(), name, version, ruleset(), cached("bot-games", 64))


@bp.get("/bots/<name>")
@bp.get("/bots/<name>/<version>")
def page(name: str, version: str | None = None) -> ResponseReturnValue:
    return render_template("bot.html", **_data(name, version))


@bp.get("/api/bots/<name>")
@bp.get("/api/bots/<name>/<version>")
def api(name: str, version: str | None = None) -> ResponseReturnValue:
    return jsonify(_data(name, version))
