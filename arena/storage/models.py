"""The ORM tables: bots, versions, tournaments, game sets, games, faults and ratings."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from arena.rulesets import MAX_STORED_CHARS


class TournamentFormat(StrEnum):
    ROUND_ROBIN = "round-robin"
    GAUNTLET = "gauntlet"


class TournamentState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"


class SetState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class EndReason(StrEnum):
    # An aborted game has no result and record_game_set_result refuses it (its set is played
    # again, so set scores and the SPRT only see whole sets); the value stays in the schema.
    TARGET = "target"
    MAX_HANDS = "max_hands"
    FORFEIT = "forfeit"
    ABORTED = "aborted"


def utcnow() -> datetime:
    return datetime.now(UTC)


def _one_of(column: str, values: type[StrEnum]) -> str:
    return f"{column} IN ({', '.join(repr(v.value) for v in values)})"


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite would otherwise hand back naive ones)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass an aware UTC time")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON}


class SchemaVersion(Base):
    """One row: the schema version this database has been migrated to."""

    __tablename__ = "schema_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)


class Bot(Base):
    __tablename__ = "bots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    author: Mapped[str] = mapped_column(String(200))
    created: Mapped[datetime] = mapped_column(default=utcnow)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)

    versions: Mapped[list[BotVersion]] = relationship(
        back_populates="bot", order_by="BotVersion.id", cascade="all, delete-orphan"
    )

    @property
    def latest(self) -> BotVersion | None:
        """The most recently registered version, which nightly tournaments play."""
        return self.versions[-1] if self.versions else None


class BotVersion(Base):
    """One registered version of a bot; it has its own games and its own rating."""

    __tablename__ = "bot_versions"
    __table_args__ = (
        UniqueConstraint("bot_id", "version", name="uq_bot_versions_bot_version"),
        CheckConstraint(
            "(command IS NULL) <> (image IS NULL)", name="ck_bot_versions_command_or_image"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"))
    version: Mapped[str] = mapped_column(String(64))
    language: Mapped[str] = mapped_column(String(64))
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON)
    command: Mapped[list[str] | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    image: Mapped[str | None] = mapped_column(String(300), nullable=True)
    directory: Mapped[str] = mapped_column(Text)
    created: Mapped[datetime] = mapped_column(default=utcnow)

    bot: Mapped[Bot] = relationship(back_populates="versions", lazy="joined")

    @property
    def ref(self) -> str:
        """The "name@version" text by which the rest of the system names this version."""
        return f"{self.bot.name}@{self.version}"

    def __repr__(self) -> str:
        return f"<BotVersion {self.id} {self.ref}>"


class Tournament(Base):
    __tablename__ = "tournaments"
    __table_args__ = (
        CheckConstraint(_one_of("format", TournamentFormat), name="ck_tournaments_format"),
        CheckConstraint(_one_of("state", TournamentState), name="ck_tournaments_state"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    format: Mapped[str] = mapped_column(String(16))
    ruleset: Mapped[str] = mapped_column(Text)
    seed: Mapped[int] = mapped_column(BigInteger)
    sets_per_pair: Mapped[int] = mapped_column(Integer)
    limits: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default=TournamentState.QUEUED.value)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    started: Mapped[datetime | None]
    finished: Mapped[datetime | None]
    planned_sets: Mapped[int] = mapped_column(Integer)
    nightly: Mapped[bool] = mapped_column(Boolean, default=False)

    sets: Mapped[list[GameSet]] = relationship(
        back_populates="tournament", order_by="GameSet.index", cascade="all, delete-orphan"
    )


class GameSet(Base):
    """A duplicate pair of games: same deals, the two bots swapping partnerships."""

    __tablename__ = "game_sets"
    __table_args__ = (
        UniqueConstraint("tournament_id", "index", name="uq_game_sets_tournament_index"),
        CheckConstraint(_one_of("state", SetState), name="ck_game_sets_state"),
        CheckConstraint("first_dealer BETWEEN 0 AND 3", name="ck_game_sets_first_dealer"),
        Index("ix_game_sets_tournament_state", "tournament_id", "state"),
        # The bots a tournament plays, read off the index alone (the tournament list's).
        Index("ix_game_sets_pairs", "tournament_id", "bot_a_id", "bot_b_id"),
    )

    id: Mapped[str] = mapped_column(String(96), primary_key=True)
    tournament_id: Mapped[str] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"))
    index: Mapped[int] = mapped_column(Integer)
    bot_a_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    bot_b_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    seed: Mapped[int] = mapped_column(BigInteger)
    first_dealer: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16), default=SetState.QUEUED.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Bot A's points over the set: 1 per game won, 1/2 per game without a winner.
    score_a: Mapped[float | None] = mapped_column(Float, nullable=True)
    started: Mapped[datetime | None]
    finished: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The last sign of life of the run playing the set, every few seconds: a running set whose
    # job Redis lost is left to that run while this is fresh (runner/reconcile.py).
    beat: Mapped[datetime | None]

    tournament: Mapped[Tournament] = relationship(back_populates="sets")
    bot_a: Mapped[BotVersion] = relationship(foreign_keys=[bot_a_id], lazy="joined")
    bot_b: Mapped[BotVersion] = relationship(foreign_keys=[bot_b_id], lazy="joined")
    games: Mapped[list[Game]] = relationship(
        back_populates="game_set", order_by="Game.game_index", cascade="all, delete-orphan"
    )


# What the rater (runner/ratings_update.py) reads without touching the games' records: the
# next sequence number and the unrated games, and the per-pair results as an index-only scan.
# Unique, so two raters can never both take the same place in a ruleset's order.
RATER_INDEXES = (
    Index("uq_games_rated_seq", "ruleset", "rated_seq", unique=True),
    Index("ix_games_pairs", "ruleset", "seat0_id", "seat1_id", "winner", "reason", "rated_seq"),
)


class Game(Base):
    __tablename__ = "games"
    __table_args__ = (
        UniqueConstraint("game_set_id", "game_index", name="uq_games_set_index"),
        CheckConstraint("game_index IN (0, 1)", name="ck_games_game_index"),
        CheckConstraint(_one_of("reason", EndReason), name="ck_games_reason"),
        # Game lists are newest first, ties broken by id: a page is read off this index.
        Index("ix_games_finished", "finished", "id"),
        # One index per seat: "games of a version" is an OR over the four seats, newest first.
        *(Index(f"ix_games_seat{i}", f"seat{i}_id", "finished", "id") for i in range(4)),
        *RATER_INDEXES,
    )

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    game_set_id: Mapped[str] = mapped_column(ForeignKey("game_sets.id", ondelete="CASCADE"))
    game_index: Mapped[int] = mapped_column(Integer)
    ruleset: Mapped[str] = mapped_column(Text)
    seed: Mapped[int] = mapped_column(BigInteger)
    first_dealer: Mapped[int] = mapped_column(Integer)
    seat0_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    seat1_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    seat2_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    seat3_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    score0: Mapped[int] = mapped_column(Integer)
    score1: Mapped[int] = mapped_column(Integer)
    winner: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reason: Mapped[str] = mapped_column(String(16))
    forfeit_seat: Mapped[int | None] = mapped_column(Integer, nullable=True)
    hands: Mapped[int] = mapped_column(Integer)
    # Deferred: listings must not drag every record's bytes out of the database.
    record_z: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    decisions: Mapped[int] = mapped_column(Integer, default=0)
    think_ms0: Mapped[int] = mapped_column(BigInteger, default=0)
    think_ms1: Mapped[int] = mapped_column(BigInteger, default=0)
    think_ms2: Mapped[int] = mapped_column(BigInteger, default=0)
    think_ms3: Mapped[int] = mapped_column(BigInteger, default=0)
    finished: Mapped[datetime] = mapped_column(default=utcnow)
    # The order in which the rater took the game into its ruleset's table (None: not yet).
    rated_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)

    game_set: Mapped[GameSet] = relationship(back_populates="games")
    faults: Mapped[list[Fault]] = relationship(
        back_populates="game", order_by="Fault.id", cascade="all, delete-orphan"
    )

    @property
    def seat_ids(self) -> tuple[int, int, int, int]:
        return (self.seat0_id, self.seat1_id, self.seat2_id, self.seat3_id)

    @property
    def scores(self) -> tuple[int, int]:
        return (self.score0, self.score1)

    @property
    def think_ms(self) -> tuple[int, int, int, int]:
        return (self.think_ms0, self.think_ms1, self.think_ms2, self.think_ms3)


class Fault(Base):
    __tablename__ = "faults"
    __table_args__ = (
        Index("ix_faults_bot_version", "bot_version_id"),
        CheckConstraint("seat BETWEEN 0 AND 3", name="ck_faults_seat"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    game_id: Mapped[str] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"), index=True)
    seat: Mapped[int] = mapped_column(Integer)
    bot_version_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id"))
    kind: Mapped[str] = mapped_column(String(32))
    hand: Mapped[int | None] = mapped_column(Integer, nullable=True)
    detail: Mapped[str] = mapped_column(Text, default="")
    stderr: Mapped[str] = mapped_column(Text, default="")

    game: Mapped[Game] = relationship(back_populates="faults")


class Rating(Base):
    """The current rating of one version under one ruleset; rewritten whole by the rater."""

    __tablename__ = "ratings"

    bot_version_id: Mapped[int] = mapped_column(
        ForeignKey("bot_versions.id", ondelete="CASCADE"), primary_key=True
    )
    ruleset: Mapped[str] = mapped_column(String(MAX_STORED_CHARS), primary_key=True)
    elo: Mapped[float] = mapped_column(Float)
    bt: Mapped[float | None] = mapped_column(Float, nullable=True)
    ci_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    ci_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    games: Mapped[int] = mapped_column(Integer, default=0)
    score: Mapped[float] = mapped_column(Float, default=0.0)
    forfeits: Mapped[int] = mapped_column(Integer, default=0)
    last_played: Mapped[datetime | None]

    bot_version: Mapped[BotVersion] = relationship(lazy="joined")


class RatingHistory(Base):
    """Elo after each rated game, in the order appended (the id is the sequence)."""

    __tablename__ = "rating_history"
    __table_args__ = (Index("ix_rating_history_version", "bot_version_id", "ruleset", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_version_id: Mapped[int] = mapped_column(ForeignKey("bot_versions.id", ondelete="CASCADE"))
    ruleset: Mapped[str] = mapped_column(String(MAX_STORED_CHARS))
    game_id: Mapped[str | None] = mapped_column(
        ForeignKey("games.id", ondelete="SET NULL"), nullable=True
    )
    elo: Mapped[float] = mapped_column(Float)
    recorded: Mapped[datetime] = mapped_column(default=utcnow)
