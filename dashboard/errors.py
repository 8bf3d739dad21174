"""Error pages and JSON errors: unknown ids get a 404 that says what was not found."""

from __future__ import annotations

from flask import Flask, Response, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from arena.storage import NotFound


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.path in ("/api", "/healthz")


def error_response(status: int, title: str, message: str) -> tuple[Response | str, int]:
    if wants_json():
        return jsonify({"error": title, "message": message, "status": status}), status
    return render_template("error.html", status=status, title=title, message=message), status


def init_app(app: Flask) -> None:
    @app.errorhandler(NotFound)
    def _not_found(exc: NotFound) -> tuple[Response | str, int]:
        return error_response(404, "Not found", str(exc))

    @app.errorhandler(HTTPException)
    def _http(exc: HTTPException) -> tuple[Response | str, int]:
        status = exc.code or 500
        message = exc.description or ""
        if status == 404:
            message = f"there is no page at {request.path!r}; see /api for the routes"
        return error_response(status, exc.name, message)
