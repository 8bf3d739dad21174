"""Error pages and JSON errors: unknown ids get a 404 that says what was not found."""

from __future__ import annotations

from flask import Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from arena.storage import DamagedRecord, NotFound


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.path in ("/api", "/healthz")


def error_response(status: int, title: str, message: str) -> tuple[Response | str, int]:
    if wants_json():
        return jsonify({"error": title, "message": message, "status": status}), status
    return render_template("error.html", status=status, title=title, message=message), status


def init_app(app: Flask) -> None:
    @app.before_request
    def _no_nul() -> tuple[Response | str, int] | None:
        # No id, name or ruleset contains one; PostgreSQL refuses text with NUL in queries.
        if "\x00" in request.path or any("\x00" in v for v in request.args.values()):
            return error_response(400, "Bad Request", "the address contains a NUL character")
        return None

    @app.errorhandler(NotFound)
    def _not_found(exc: NotFound) -> tuple[Response | str, int]:
        return error_response(404, "Not found", str(exc))

    @app.errorhandler(DamagedRecord)
    def _damaged(exc: DamagedRecord) -> tuple[Response | str, int]:
        return error_response(500, "Damaged record", str(exc))

    @app.errorhandler(HTTPException)
    def _http(exc: HTTPException) -> tuple[Response | str, int]:
        status = exc.code or 500
        message = exc.description or ""
        if status == 404:
            message = f"there is no page at {request.path!r}; see /api for the routes"
        return error_response(status, exc.name, message)
