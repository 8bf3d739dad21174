"""Tournament pages: the list with progress and one tournament live, with their twins."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue
from markupsafe import Markup

from dashboard.db import session
from dashboard.queries.tournaments import tournament_list, tournament_page, tournament_status
from dashboard.views.common import cached, page, page_size

bp = Blueprint("tournaments", __name__)


@bp.get("/tournaments")
def index() -> ResponseReturnValue:
    return render_template("tournaments.html", **tournament_list(session(), page(), page_size()))


@bp.get("/api/tournaments")
def api_index() -> ResponseReturnValue:
    return jsonify(tournament_list(session(), page(), page_size()))


def _data(tournament_id: str) -> dict[str, Any]:
    return tournament_page(
        session(), tournament_id, page(), page_size(), cached("tournament-table", 32)
    )


@bp.get("/tournaments/<tournament_id>")
def show(tournament_id: str) -> ResponseReturnValue:
    data = _data(tournament_id)
    progress = data["progress"]
    # The tables change only when a set's result is recorded; a 30-bot crosstable is 900
    # cells, so its HTML (escaped as it is rendered) is kept with the same key as its data.
    key = ("tournament-html", tournament_id, progress["done"], progress["failed"])
    tables = cached("tournament-html", 16)(
        key, lambda: Markup(render_template("_tournament_tables.html", **data))
    )
    return render_template("tournament.html", tables=tables, **data)


@bp.get("/api/tournaments/<tournament_id>")
def api(tournament_id: str) -> ResponseReturnValue:
    return jsonify(_data(tournament_id))


@bp.get("/api/tournaments/<tournament_id>/status")
def api_status(tournament_id: str) -> ResponseReturnValue:
    return jsonify(tournament_status(session(), tournament_id))
