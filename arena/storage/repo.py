"""Repository functions over a Session: the only queries the rest of the arena needs.

Functions that write commit before they return (or roll back and raise), so each is one
transaction; functions that only read leave the session as it was.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from arena.storage.errors import AuthorMismatch, BadResult, NotFound, StorageError, VersionExists
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
    utcnow,
)

# Seeds live in signed 64-bit columns on PostgreSQL.
MAX_SEED = 2**63 - 1
RECORD_COMPRESSION_LEVEL = 6

VersionKey = int | str  # a bot_versions.id or "name@version"


# --- values handed in by callers -------------------------------------------------------


@dataclass(frozen=True)
class PlannedSet:
    """One game set of a tournament plan, before it is stored."""

    bot_a: VersionKey
    bot_b: VersionKey
    seed: int
    first_dealer: int = 0


@dataclass(frozen=True)
class FaultInfo:
    """A fault the game master recorded for one seat."""

    seat: int
    kind: str
    hand: int | None = None
    detail: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class GameResult:
    """The outcome of one game of a set, as the worker hands it to storage.

    `record` is the JSONL record, uncompressed; it is stored compressed and given back
    byte for byte. `seed`, `first_dealer` and `ruleset` default to the set's and the
    tournament's.
    """

    game_index: int
    seats: Sequence[VersionKey]
    scores: tuple[int, int]
    winner: int | None
    reason: str
    hands: int
    record: bytes
    decisions: int = 0
    think_ms: Sequence[int] = (0, 0, 0, 0)
    forfeit_seat: int | None = None
    faults: Sequence[FaultInfo] = ()
    seed: int | None = None
    first_dealer: int | None = None
    ruleset: str | None = None
    finished: datetime | None = None


@dataclass(frozen=True)
class RatingRow:
    """One line of a rating table, as the rater computes it."""

    bot_version: VersionKey
    elo: float
    bt: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    games: int = 0
    score: float = 0.0
    forfeits: int = 0
    last_played: datetime | None = None


@dataclass(frozen=True)
class HistoryEntry:
    bot_version: VersionKey
    elo: float
    game_id: str | None = None


@dataclass(frozen=True)
class Progress:
    """How far a tournament has got, counted in game sets."""

    total: int
    done: int = 0
    failed: int = 0
    running: int = 0
    queued: int = 0
    by_state: Mapping[str, int] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.done + self.failed == self.total


# --- ids ---------------------------------------------------------------------------------


def new_tournament_id(now: datetime | None = None) -> str:
    """A fresh id like "t-20261129-3f9a"."""
    return f"t-{(now or utcnow()):%Y%m%d}-{secrets.token_hex(2)}"


def game_set_id(tournament_id: str, index: int) -> str:
    return f"{tournament_id}-set-{index:05d}"


def game_id(set_id: str, game_index: int) -> str:
    return f"{set_id}-g{game_index}"


def parse_ref(ref: str) -> tuple[str, str]:
    """Split "name@version"; the version may not be empty."""
    name, sep, version = ref.rpartition("@")
    if not sep or not name or not version:
        raise NotFound(f"{ref!r} is not a bot version: write it as name@version")
    return name, version


# --- bots --------------------------------------------------------------------------------


def get_bot(session: Session, name: str) -> Bot:
    bot = session.scalar(select(Bot).where(Bot.name == name).options(selectinload(Bot.versions)))
    if bot is None:
        raise NotFound(f"no bot named {name!r}")
    return bot


def find_bot(session: Session, name: str) -> Bot | None:
    return session.scalar(select(Bot).where(Bot.name == name))


def list_bots(session: Session, *, include_disabled: bool = True) -> list[Bot]:
    query = select(Bot).options(selectinload(Bot.versions)).order_by(Bot.name)
    if not include_disabled:
        query = query.where(Bot.disabled.is_(False))
    return list(session.scalars(query))


def get_version(session: Session, key: VersionKey) -> BotVersion:
    """A bot version by id or by "name@version"."""
    if isinstance(key, int):
        found = session.get(BotVersion, key)
        if found is None:
            raise NotFound(f"no bot version with id {key}")
        return found
    name, version = parse_ref(key)
    found = session.scalar(
        select(BotVersion).join(Bot).where(Bot.name == name, BotVersion.version == version)
    )
    if found is None:
        raise NotFound(f"no bot version {key!r}")
    return found


def active_versions(session: Session, *, latest_only: bool = True) -> list[BotVersion]:
    """Versions of enabled bots, by bot name: what a round robin is planned over."""
    out: list[BotVersion] = []
    for bot in list_bots(session, include_disabled=False):
        if latest_only:
            if bot.latest is not None:
                out.append(bot.latest)
        else:
            out.extend(bot.versions)
    return out


def add_bot_version(
    session: Session,
    *,
    name: str,
    version: str,
    author: str,
    language: str,
    manifest: Mapping[str, Any],
    directory: str,
    command: Sequence[str] | None = None,
    image: str | None = None,
) -> BotVersion:
    """Register name@version, creating the bot on its first version.

    A new version is always a new row with its own rating; an existing one is never
    overwritten (VersionExists), and only the bot's author may add versions (AuthorMismatch).
    """
    if (command is None) == (image is None):
        raise StorageError(f"{name}@{version}: give exactly one of command and image")
    bot = find_bot(session, name)
    if bot is None:
        bot = Bot(name=name, author=author)
        session.add(bot)
    elif bot.author != author:
        raise AuthorMismatch(
            f"bot {name!r} belongs to {bot.author!r}, not {author!r}: "
            "choose another name for your bot"
        )
    elif any(v.version == version for v in bot.versions):
        raise VersionExists(f"{name}@{version} is already registered: give this bot a new version")
    row = BotVersion(
        bot=bot,
        version=version,
        language=language,
        manifest=dict(manifest),
        command=list(command) if command is not None else None,
        image=image,
        directory=directory,
    )
    session.add(row)
    try:
        session.commit()
    except IntegrityError:
        # Someone registered the same name or name@version between our check and commit.
        session.rollback()
        raise VersionExists(
            f"{name}@{version} was registered concurrently: give this bot a new version"
        ) from None
    return row


def set_bot_disabled(session: Session, name: str, disabled: bool = True) -> Bot:
    """Disable (or re-enable) a bot: it keeps its games and ratings but is not scheduled."""
    bot = get_bot(session, name)
    bot.disabled = disabled
    session.commit()
    return bot


def disable_bot(session: Session, name: str) -> Bot:
    return set_bot_disabled(session, name, True)


# --- tournaments and sets ----------------------------------------------------------------


def _check_seed(seed: int, what: str) -> None:
    if not 0 <= seed <= MAX_SEED:
        raise StorageError(f"{what} seed {seed} is outside 0..2**63-1")


def create_tournament(
    session: Session,
    *,
    format: str,
    ruleset: str,
    seed: int,
    sets_per_pair: int,
    sets: Sequence[PlannedSet],
    limits: Mapping[str, Any] | None = None,
    nightly: bool = False,
    tournament_id: str | None = None,
    created: datetime | None = None,
) -> Tournament:
    """Store a tournament and all its game sets (state queued) in one transaction."""
    fmt = TournamentFormat(format)
    _check_seed(seed, "tournament")
    tid = tournament_id or new_tournament_id(created)
    tournament = Tournament(
        id=tid,
        format=fmt.value,
        ruleset=ruleset,
        seed=seed,
        sets_per_pair=sets_per_pair,
        limits=dict(limits or {}),
        state=TournamentState.QUEUED.value,
        created=created or utcnow(),
        planned_sets=len(sets),
        nightly=nightly,
    )
    session.add(tournament)
    for index, planned in enumerate(sets):
        _check_seed(planned.seed, f"set {index}")
        if not 0 <= planned.first_dealer <= 3:
            raise StorageError(f"set {index}: first dealer {planned.first_dealer} is not 0..3")
        session.add(
            GameSet(
                id=game_set_id(tid, index),
                tournament=tournament,
                index=index,
                bot_a_id=get_version(session, planned.bot_a).id,
                bot_b_id=get_version(session, planned.bot_b).id,
                seed=planned.seed,
                first_dealer=planned.first_dealer,
                state=SetState.QUEUED.value,
                attempts=0,
            )
        )
    try:
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise StorageError(f"tournament {tid!r} could not be stored: {exc.orig}") from None
    return tournament


def get_tournament(session: Session, tournament_id: str) -> Tournament:
    found = session.get(Tournament, tournament_id)
    if found is None:
        raise NotFound(f"no tournament {tournament_id!r}")
    return found


def list_tournaments(session: Session, *, limit: int = 100) -> list[Tournament]:
    query = select(Tournament).order_by(Tournament.created.desc(), Tournament.id).limit(limit)
    return list(session.scalars(query))


def set_tournament_state(
    session: Session, tournament_id: str, state: str, *, now: datetime | None = None
) -> Tournament:
    """Move a tournament to `state`, stamping started/finished the first time."""
    new = TournamentState(state)
    tournament = get_tournament(session, tournament_id)
    tournament.state = new.value
    stamp = now or utcnow()
    if new is TournamentState.RUNNING and tournament.started is None:
        tournament.started = stamp
    if new in (TournamentState.FINISHED, TournamentState.FAILED):
        tournament.finished = stamp
    session.commit()
    return tournament


def get_game_set(session: Session, set_id: str) -> GameSet:
    found = session.get(GameSet, set_id)
    if found is None:
        raise NotFound(f"no game set {set_id!r}")
    return found


def list_game_sets(
    session: Session, tournament_id: str, *, state: str | None = None
) -> list[GameSet]:
    query = select(GameSet).where(GameSet.tournament_id == tournament_id)
    if state is not None:
        query = query.where(GameSet.state == SetState(state).value)
    return list(session.scalars(query.order_by(GameSet.index)))


def mark_set_running(session: Session, set_id: str, *, now: datetime | None = None) -> bool:
    """Count an attempt at a set; False (and no change) if it is already done."""
    result = session.execute(
        update(GameSet)
        .where(GameSet.id == set_id, GameSet.state != SetState.DONE.value)
        .values(
            state=SetState.RUNNING.value,
            attempts=GameSet.attempts + 1,
            started=now or utcnow(),
            error=None,
        )
        .execution_options(synchronize_session=False)
    )
    session.commit()
    if _rowcount(result) == 0:
        get_game_set(session, set_id)  # raises NotFound for an unknown id
        return False
    return True


def mark_set_failed(session: Session, set_id: str, error: str = "") -> bool:
    """Mark a set failed; False (and no change) if it already has its result."""
    result = session.execute(
        update(GameSet)
        .where(GameSet.id == set_id, GameSet.state != SetState.DONE.value)
        .values(state=SetState.FAILED.value, error=error, finished=utcnow())
        .execution_options(synchronize_session=False)
    )
    session.commit()
    if _rowcount(result) == 0:
        get_game_set(session, set_id)
        return False
    return True


def tournament_progress(session: Session, tournament_id: str) -> Progress:
    tournament = get_tournament(session, tournament_id)
    rows = session.execute(
        select(GameSet.state, func.count())
        .where(GameSet.tournament_id == tournament_id)
        .group_by(GameSet.state)
    ).all()
    counts = {state: int(n) for state, n in rows}
    return Progress(
        total=tournament.planned_sets,
        done=counts.get(SetState.DONE.value, 0),
        failed=counts.get(SetState.FAILED.value, 0),
        running=counts.get(SetState.RUNNING.value, 0),
        queued=counts.get(SetState.QUEUED.value, 0),
        by_state=counts,
    )


# --- results -----------------------------------------------------------------------------


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def _team_of(version_id: int, seats: Sequence[int], game_index: int) -> int:
    teams = {seat % 2 for seat, v in enumerate(seats) if v == version_id}
    # A bot playing itself sits on both teams; by convention A holds team 0 in game 0.
    return teams.pop() if len(teams) == 1 else game_index % 2


def _check_game(result: GameResult, seats: Sequence[int], game_set: GameSet) -> None:
    where = f"set {game_set.id!r} game {result.game_index}"
    if result.game_index not in (0, 1):
        raise BadResult(f"{where}: game index must be 0 or 1")
    if len(seats) != 4:
        raise BadResult(f"{where}: {len(seats)} seats given, a game has 4")
    if set(seats) - {game_set.bot_a_id, game_set.bot_b_id}:
        raise BadResult(f"{where}: seats {list(result.seats)!r} are not the set's two bots")
    if len(result.scores) != 2:
        raise BadResult(f"{where}: scores must be [team0, team1]")
    if result.winner not in (0, 1, None):
        raise BadResult(f"{where}: winner {result.winner!r} is not a team (0, 1) or None")
    try:
        EndReason(result.reason)
    except ValueError:
        allowed = ", ".join(r.value for r in EndReason)
        raise BadResult(f"{where}: reason {result.reason!r} is not one of {allowed}") from None
    if result.forfeit_seat not in (None, 0, 1, 2, 3):
        raise BadResult(f"{where}: forfeit seat {result.forfeit_seat!r} is not 0..3")
    if len(result.think_ms) != 4:
        raise BadResult(f"{where}: think_ms needs one total per seat")
    for fault in result.faults:
        if fault.seat not in (0, 1, 2, 3):
            raise BadResult(f"{where}: fault seat {fault.seat!r} is not 0..3")


def record_game_set_result(session: Session, set_id: str, games: Sequence[GameResult]) -> bool:
    """Store the games of a set and mark it done, exactly once.

    Returns True if this call recorded the result, False if the set already had one (in
    which case nothing changes). Anything left uncommitted in `session` is rolled back.

    The claim is a conditional UPDATE of the set's state, which takes the row's write lock
    first on every backend; the unique (set, game index) constraint backs it up. A worker
    re-running a job after a crash can simply call this again.
    """
    game_set = get_game_set(session, set_id)
    if not games:
        raise BadResult(f"set {set_id!r}: no games given")
    indexes = [g.game_index for g in games]
    if len(set(indexes)) != len(indexes):
        raise BadResult(f"set {set_id!r}: game indexes {indexes} repeat")
    ruleset = game_set.tournament.ruleset
    resolved = [[_version_id(session, s) for s in g.seats] for g in games]
    for result, seats in zip(games, resolved, strict=True):
        _check_game(result, seats, game_set)
    a_id, set_seed, set_dealer = game_set.bot_a_id, game_set.seed, game_set.first_dealer
    session.rollback()  # end the read above so the claim below starts a fresh transaction

    score_a = 0.0
    for result, seats in zip(games, resolved, strict=True):
        if result.winner is None:
            score_a += 0.5
        elif result.winner == _team_of(a_id, seats, result.game_index):
            score_a += 1.0
    now = utcnow()
    try:
        claimed = session.execute(
            update(GameSet)
            .where(GameSet.id == set_id, GameSet.state != SetState.DONE.value)
            .values(state=SetState.DONE.value, score_a=score_a, finished=now, error=None)
            .execution_options(synchronize_session=False)
        )
        if _rowcount(claimed) == 0:
            session.rollback()
            return False
        for result, seats in zip(games, resolved, strict=True):
            gid = game_id(set_id, result.game_index)
            session.add(
                Game(
                    id=gid,
                    game_set_id=set_id,
                    game_index=result.game_index,
                    ruleset=result.ruleset or ruleset,
                    seed=set_seed if result.seed is None else result.seed,
                    first_dealer=(
                        set_dealer if result.first_dealer is None else result.first_dealer
                    ),
                    seat0_id=seats[0],
                    seat1_id=seats[1],
                    seat2_id=seats[2],
                    seat3_id=seats[3],
                    score0=result.scores[0],
                    score1=result.scores[1],
                    winner=result.winner,
                    reason=result.reason,
                    forfeit_seat=result.forfeit_seat,
                    hands=result.hands,
                    record_z=zlib.compress(result.record, RECORD_COMPRESSION_LEVEL),
                    decisions=result.decisions,
                    think_ms0=result.think_ms[0],
                    think_ms1=result.think_ms[1],
                    think_ms2=result.think_ms[2],
                    think_ms3=result.think_ms[3],
                    finished=result.finished or now,
                )
            )
            session.flush()  # games before their faults: faults reference them
            for fault in result.faults:
                session.add(
                    Fault(
                        game_id=gid,
                        seat=fault.seat,
                        bot_version_id=seats[fault.seat],
                        kind=fault.kind,
                        hand=fault.hand,
                        detail=fault.detail,
                        stderr=fault.stderr,
                    )
                )
        session.commit()
    except IntegrityError:
        # Only reachable if a game row got in without the set being done: treat as recorded.
        session.rollback()
        return False
    except BaseException:
        session.rollback()
        raise
    return True


def _version_id(session: Session, key: VersionKey) -> int:
    return key if isinstance(key, int) else get_version(session, key).id


# --- games and faults --------------------------------------------------------------------


def get_game(session: Session, game_id: str) -> Game:
    found = session.get(Game, game_id)
    if found is None:
        raise NotFound(f"no game {game_id!r}")
    return found


def get_game_record(session: Session, game_id: str) -> bytes:
    """The game's JSONL record, byte for byte as the worker handed it in."""
    blob = session.scalar(select(Game.record_z).where(Game.id == game_id))
    if blob is None:
        raise NotFound(f"no game {game_id!r}")
    return zlib.decompress(blob)


def _seat_filter(version_id: int) -> Any:
    return or_(
        Game.seat0_id == version_id,
        Game.seat1_id == version_id,
        Game.seat2_id == version_id,
        Game.seat3_id == version_id,
    )


def list_games(
    session: Session,
    *,
    bot_version: VersionKey | None = None,
    tournament_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[Game]:
    """Games, newest first, optionally only those of one version or one tournament."""
    query = select(Game)
    if bot_version is not None:
        query = query.where(_seat_filter(_version_id(session, bot_version)))
    if tournament_id is not None:
        query = query.join(GameSet).where(GameSet.tournament_id == tournament_id)
    query = query.order_by(Game.finished.desc(), Game.id).limit(limit).offset(offset)
    return list(session.scalars(query))


def list_games_for_version(
    session: Session, bot_version: VersionKey, *, limit: int = 100, offset: int = 0
) -> list[Game]:
    return list_games(session, bot_version=bot_version, limit=limit, offset=offset)


def list_faults_for_version(
    session: Session, bot_version: VersionKey, *, limit: int = 100
) -> list[Fault]:
    version_id = _version_id(session, bot_version)
    query = (
        select(Fault)
        .where(Fault.bot_version_id == version_id)
        .order_by(Fault.id.desc())
        .limit(limit)
    )
    return list(session.scalars(query))


# --- ratings -----------------------------------------------------------------------------


def replace_ratings(session: Session, ruleset: str, rows: Iterable[RatingRow]) -> int:
    """Replace the whole rating table of `ruleset` with `rows` in one transaction."""
    new = [
        Rating(
            bot_version_id=_version_id(session, row.bot_version),
            ruleset=ruleset,
            elo=row.elo,
            bt=row.bt,
            ci_low=row.ci_low,
            ci_high=row.ci_high,
            games=row.games,
            score=row.score,
            forfeits=row.forfeits,
            last_played=row.last_played,
        )
        for row in rows
    ]
    session.execute(delete(Rating).where(Rating.ruleset == ruleset))
    session.add_all(new)
    session.commit()
    return len(new)


def get_ratings(session: Session, ruleset: str) -> list[Rating]:
    """The rating table of `ruleset`, best Elo first."""
    query = select(Rating).where(Rating.ruleset == ruleset).order_by(Rating.elo.desc())
    return list(session.scalars(query))


def append_history(session: Session, ruleset: str, entries: Iterable[HistoryEntry]) -> int:
    """Append Elo points in order; the rows' ids keep that order."""
    rows = [
        RatingHistory(
            bot_version_id=_version_id(session, entry.bot_version),
            ruleset=ruleset,
            game_id=entry.game_id,
            elo=entry.elo,
        )
        for entry in entries
    ]
    session.add_all(rows)
    session.commit()
    return len(rows)


def clear_history(session: Session, ruleset: str) -> None:
    """Drop a ruleset's history, for a rater that recomputes it from the start."""
    session.execute(delete(RatingHistory).where(RatingHistory.ruleset == ruleset))
    session.commit()


def rating_history(session: Session, bot_version: VersionKey, ruleset: str) -> list[RatingHistory]:
    query = (
        select(RatingHistory)
        .where(
            RatingHistory.bot_version_id == _version_id(session, bot_version),
            RatingHistory.ruleset == ruleset,
        )
        .order_by(RatingHistory.id)
    )
    return list(session.scalars(query))
