"""The web dashboard: a Flask app factory serving pages and their JSON twins from the database."""

from __future__ import annotations

from typing import Any

from flask import Flask

from dashboard import charts, db, errors, formatting
from dashboard.views import BLUEPRINTS


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """Build the app; the database URL comes from `test_config` or ARENA_DATABASE_URL."""
    app = Flask(__name__)
    app.config.from_mapping(DATABASE_URL=None, REPLAY_CACHE_SIZE=32, PAGE_SIZE=50)
    if test_config:
        app.config.from_mapping(test_config)
    if not app.config["DATABASE_URL"]:
        from arena.config import database_url

        app.config["DATABASE_URL"] = database_url()
    app.json.sort_keys = False  # type: ignore[attr-defined]
    db.init_app(app)
    errors.init_app(app)
    formatting.init_app(app)
    charts.init_app(app)
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    return app
