"""Game set results (recorded exactly once), games, records and faults."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.storage.bots import resolve_version_id
from arena.storage.errors import BadResult, DamagedRecord, NotFound
from arena.storage.models import EndReason, Fault, Game, GameSet, SetState, utcnow
from arena.storage.tournaments import get_game_set, rowcount
from arena.storage.values import RECORD_COMPRESSION_LEVEL, GameResult, VersionKey, game_id


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
    if result.reason == "aborted":
        raise BadResult(f"{where}: an aborted game has no result to store: play the set again")
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
    resolved = [[resolve_version_id(session, s) for s in g.seats] for g in games]
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
        if rowcount(claimed) == 0:
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
    return _decompressed(game_id, blob)


def tournament_records(
    session: Session, tournament_id: str
) -> Iterator[tuple[str, bytes | DamagedRecord]]:
    """(game id, JSONL record) of every stored game of the tournament, by game id; one
    record in memory at a time. A record that cannot be decompressed comes as the
    DamagedRecord saying so, in its place, so that one does not cost the others."""
    query = (
        select(Game.id, Game.record_z)
        .join(GameSet, Game.game_set_id == GameSet.id)
        .where(GameSet.tournament_id == tournament_id)
        .order_by(Game.id)
        .execution_options(yield_per=20)
    )
    for gid, blob in session.execute(query):
        try:
            yield gid, _decompressed(gid, blob)
        except DamagedRecord as damaged:
            yield gid, damaged


def _decompressed(game_id: str, blob: bytes) -> bytes:
    try:
        return zlib.decompress(blob)
    except zlib.error as exc:
        raise DamagedRecord(
            f"the stored record of game {game_id} is damaged ({exc}); restore the database "
            "from a backup (docs/running.md, Backups)"
        ) from None


def has_result() -> Any:
    """Games with a result. Arenas before 2026-11-30 stored games the game master aborted
    (shut down mid-game): they have no winner and are no draws."""
    return Game.reason != EndReason.ABORTED


# Game lists' order: ix_games_finished (finished, id) read backwards, no sort.
NEWEST_FIRST = (Game.finished.desc(), Game.id.desc())


def seat_filter(version_id: int) -> Any:
    """Games in which this bot version holds any of the four seats."""
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
    limit: int | None = 100,
    offset: int = 0,
) -> list[Game]:
    """Games, newest first, optionally only those of one version or one tournament (no
    limit with None)."""
    query = select(Game)
    if bot_version is not None:
        query = query.where(seat_filter(resolve_version_id(session, bot_version)))
    if tournament_id is not None:
        query = query.join(GameSet).where(GameSet.tournament_id == tournament_id)
    query = query.order_by(*NEWEST_FIRST).limit(limit).offset(offset)
    return list(session.scalars(query))


def fault_counts(session: Session, tournament_id: str) -> dict[int, int]:
    """Faults in a tournament's games, by bot version id (versions with none left out)."""
    query = (
        select(Fault.bot_version_id, func.count())
        .join(Game, Game.id == Fault.game_id)
        .join(GameSet, GameSet.id == Game.game_set_id)
        .where(GameSet.tournament_id == tournament_id)
        .group_by(Fault.bot_version_id)
    )
    return {version_id: int(count) for version_id, count in session.execute(query)}


def fault_kinds(session: Session, bot_version: VersionKey) -> list[tuple[str, int]]:
    """(kind, count) of a version's faults, the most frequent first."""
    query = (
        select(Fault.kind, func.count())
        .where(Fault.bot_version_id == resolve_version_id(session, bot_version))
        .group_by(Fault.kind)
        .order_by(func.count().desc(), Fault.kind)
    )
    return [(kind, int(count)) for kind, count in session.execute(query)]


def list_faults_for_version(
    session: Session, bot_version: VersionKey, *, limit: int = 100
) -> list[Fault]:
    version_id = resolve_version_id(session, bot_version)
    query = (
        select(Fault)
        .where(Fault.bot_version_id == version_id)
        .order_by(Fault.id.desc())
        .limit(limit)
    )
    return list(session.scalars(query))
