"""One blueprint per area; each serves its HTML pages and their JSON twins under /api/."""

from __future__ import annotations

from dashboard.views.bots import bp as bots
from dashboard.views.games import bp as games
from dashboard.views.health import bp as health
from dashboard.views.leaderboard import bp as leaderboard
from dashboard.views.replay import bp as replay
from dashboard.views.tournaments import bp as tournaments

BLUEPRINTS = [leaderboard, bots, tournaments, games, replay, health]
