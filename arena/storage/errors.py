"""Errors the storage layer raises on purpose, each naming the row it is about."""

from __future__ import annotations

from arena.errors import ArenaError


class StorageError(ArenaError):
    """Base of storage errors: a request the database cannot honour as asked."""


class NotFound(StorageError, LookupError):
    """A bot, bot version, tournament, game set or game that does not exist. `near`: the message
    names a row like it (or says how the name is miswritten), so the database looked in is not
    to blame."""

    def __init__(self, message: str, *, near: bool = False) -> None:
        super().__init__(message)
        self.near = near

    def __str__(self) -> str:  # LookupError would quote the whole message
        return str(self.args[0]) if self.args else "not found"


class VersionExists(StorageError):
    """A name@version that is already registered; versions are never overwritten."""


class AuthorMismatch(StorageError):
    """A new version of a bot submitted under another author's name."""


class BadResult(StorageError, ValueError):
    """A game set result that does not fit the set it is recorded for."""


class DamagedRecord(StorageError):
    """A stored game record that cannot be decompressed: the database was damaged."""


class SchemaTooNew(StorageError):
    """A database written by a newer arena than this one."""


class DatabaseUnavailable(StorageError, ConnectionError):
    """The configured database cannot be reached or used; the message says how to fix it."""


class RatedMeanwhile(StorageError):
    """Another rater updated the same ruleset's table at the same time; try the pass again."""
