"""The leaderboard (home page) and its twin."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, render_template
from flask.typing import ResponseReturnValue

from dashboard.db import session
from dashboard.queries.leaderboard import leaderboard
from dashboard.views.common import cached, ruleset

bp = Blueprint("leaderboard", __name__)


def _data() -> dict[str, Any]:
    return leaderboard(session(), ruleset(), cached("leaderboard", 8))


@bp.get("/")
def page() -> ResponseReturnValue:
    return render_template("leaderboard.html", **_data())


@bp.get("/api/leaderboard")
def api() -> ResponseReturnValue:
    return jsonify(_data())
