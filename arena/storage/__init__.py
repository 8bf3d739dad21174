"""Persistent storage: SQLAlchemy over SQLite (default) or PostgreSQL, chosen by one URL."""

from __future__ import annotations

from arena.storage.database import SCHEMA_VERSION, Database, open_database
from arena.storage.errors import (
    AuthorMismatch,
    BadResult,
    DamagedRecord,
    DatabaseUnavailable,
    NotFound,
    SchemaTooNew,
    StorageError,
    VersionExists,
)
from arena.storage.models import (
    Bot,
    BotVersion,
    EndReason,
    Fault,
    Game,
    GameSet,
    Rating,
    RatingHistory,
    SetState,
    Tournament,
    TournamentFormat,
    TournamentState,
)
from arena.storage.values import (
    FaultInfo,
    GameResult,
    HistoryEntry,
    PlannedSet,
    Progress,
    RatingRow,
)

__all__ = [
    "SCHEMA_VERSION",
    "AuthorMismatch",
    "BadResult",
    "DamagedRecord",
    "Bot",
    "BotVersion",
    "Database",
    "EndReason",
    "Fault",
    "FaultInfo",
    "Game",
    "GameResult",
    "GameSet",
    "HistoryEntry",
    "DatabaseUnavailable",
    "NotFound",
    "PlannedSet",
    "Progress",
    "Rating",
    "RatingHistory",
    "RatingRow",
    "SchemaTooNew",
    "SetState",
    "StorageError",
    "Tournament",
    "TournamentFormat",
    "TournamentState",
    "VersionExists",
    "open_database",
]
