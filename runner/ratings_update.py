"""The stored rating tables, brought up to date as game sets are recorded.

Each game is rated once, by the first pass that finds it unrated, and takes the next place in
its ruleset's rating order (games.rated_seq). So a pass costs the new games plus one count of
results per pair of bots, read from an index, however many games are stored: Elo continues
from the stored table in that order, and the Bradley–Terry fit, games and scores come from the
pair counts. A game stored by a worker that died before rating it is rated by the next pass.
`from_scratch` replays every rated game in the stored order and gives the same table.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.ratings import EloTable, PairCounts, Score, bradley_terry_pairs, count_result
from arena.storage import repo
from arena.storage.errors import RatedMeanwhile
from arena.storage.models import Bot, BotVersion, EndReason, Game
from arena.storage.values import HistoryEntry, RatingRow

# Passes tried before giving up when other raters of the same ruleset keep getting in first
# (workers take turns through a lock; `arena ratings --recompute` does not).
_ATTEMPTS = 5


@dataclass(frozen=True)
class RatedGame:
    """One game as the rater sees it: team 0's bot against team 1's, from team 0's side.

    Aborted games and self-play take a place in the order but count for nothing.
    """

    game_id: str
    a: int
    b: int
    score_a: float
    forfeit_version: int | None
    finished: datetime
    counts: bool


@dataclass
class _Tally:
    """What a pass carries from game to game: Elo, and forfeits and last game per version."""

    elo: EloTable = field(default_factory=EloTable)
    forfeits: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    last: dict[int, datetime] = field(default_factory=dict)

    def add(self, game: RatedGame, refs: dict[int, str]) -> None:
        self.elo.add(refs[game.a], refs[game.b], game.score_a)
        for version in (game.a, game.b):
            self.last[version] = max(self.last.get(version, game.finished), game.finished)
        if game.forfeit_version is not None:
            self.forfeits[game.forfeit_version] += 1


def update_ratings(session: Session, ruleset: str, *, from_scratch: bool = False) -> int:
    """Rate the ruleset's unrated games, store its table, and return the rated bot versions.

    Appends each newly rated game's Elo points to the history. Callers take turns per ruleset
    (a Redis lock in workers); a pass that loses a race with another rater anyway is undone
    and tried again.
    """
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            return _rate(session, ruleset, from_scratch)
        except RatedMeanwhile:
            if attempt == _ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _rate(session: Session, ruleset: str, from_scratch: bool) -> int:
    # Read first: a rater that stores a pass after this takes this place, and so makes
    # placing this pass's games fail, rather than have the table read below go stale.
    start = repo.next_rated_seq(session, ruleset)
    refs = _refs(session)
    tally = _Tally()
    if from_scratch:
        for game in rated_games(session, ruleset, rated=True):
            if game.counts:
                tally.add(game, refs)
    elif start > 0:  # else no stored table counts any game
        for row in repo.get_ratings(session, ruleset):
            tally.elo.ratings[refs[row.bot_version_id]] = row.elo
            tally.forfeits[row.bot_version_id] = row.forfeits
            if row.last_played is not None:
                tally.last[row.bot_version_id] = row.last_played
    new = rated_games(session, ruleset, rated=False)
    # Placing them first makes this pass a write transaction: what it reads from here on is
    # consistent with what it writes.
    repo.place_in_rating_order(session, ruleset, [g.game_id for g in new], start)
    history = []
    for game in new:
        if game.counts:
            tally.add(game, refs)
            for version in (game.a, game.b):
                history.append(HistoryEntry(version, tally.elo.rating(refs[version]), game.game_id))

    pairs = _pair_counts(session, ruleset, refs)
    fit = bradley_terry_pairs(pairs) if pairs else None
    played: dict[str, int] = defaultdict(int)
    points: dict[str, float] = defaultdict(float)
    for (a, b), counts in pairs.items():
        played[a] += counts.games
        played[b] += counts.games
        points[a] += counts.score
        points[b] += counts.games - counts.score
    rows = []
    for version, ref in sorted(refs.items()):
        if not played[ref]:
            continue
        bt = fit.ratings[ref] if fit is not None else None
        rows.append(
            RatingRow(
                bot_version=version,
                elo=tally.elo.rating(ref),
                bt=bt.rating if bt else None,
                ci_low=bt.lower if bt else None,
                ci_high=bt.upper if bt else None,
                games=played[ref],
                score=points[ref] / played[ref],
                forfeits=tally.forfeits[version],
                last_played=tally.last.get(version),
            )
        )
    repo.store_rating_pass(session, ruleset, rows, history, start + len(new))
    return len(rows)


def rated_games(session: Session, ruleset: str, *, rated: bool) -> list[RatedGame]:
    """The ruleset's rated games in their rating order, or its unrated ones in the order they
    finished (the order they will be rated in)."""
    query = select(
        Game.id,
        Game.seat0_id,
        Game.seat1_id,
        Game.winner,
        Game.forfeit_seat,
        Game.finished,
        Game.reason,
    ).where(Game.ruleset == ruleset)
    if rated:
        query = query.where(Game.rated_seq.is_not(None)).order_by(Game.rated_seq)
    else:
        query = query.where(Game.rated_seq.is_(None)).order_by(Game.finished, Game.id)
    out = []
    for gid, s0, s1, winner, forfeit_seat, finished, reason in session.execute(query):
        score = _score_of_team0(winner)
        # Seats 2 and 3 are the partners of seats 0 and 1: the same versions.
        forfeit = None if forfeit_seat is None else (s0, s1)[forfeit_seat % 2]
        counts = s0 != s1 and reason != EndReason.ABORTED  # see repo.has_result
        out.append(RatedGame(gid, s0, s1, score, forfeit, finished, counts))
    return out


def _pair_counts(
    session: Session, ruleset: str, refs: dict[int, str]
) -> dict[tuple[str, str], PairCounts]:
    """Wins, draws and losses per pair of versions over the rated games, keyed (lower ref,
    higher ref) as arena.ratings counts them; an index-only scan (models.RATER_INDEXES)."""
    query = (
        select(Game.seat0_id, Game.seat1_id, Game.winner, func.count())
        .where(
            Game.ruleset == ruleset,
            Game.rated_seq.is_not(None),
            Game.seat0_id != Game.seat1_id,
            repo.has_result(),
        )
        .group_by(Game.seat0_id, Game.seat1_id, Game.winner)
    )
    pairs: dict[tuple[str, str], PairCounts] = {}
    for s0, s1, winner, count in session.execute(query):
        count_result(pairs, refs[s0], refs[s1], _score_of_team0(winner), count)
    return pairs


def _score_of_team0(winner: int | None) -> Score:
    """Team 0's score (seat 0's version): 1 a win, 0.5 a draw (no winner), 0 a loss."""
    return 0.5 if winner is None else (1.0 if winner == 0 else 0.0)


def _refs(session: Session) -> dict[int, str]:
    """Every bot version's "name@version", by id (a few hundred rows at most)."""
    query = select(BotVersion.id, Bot.name, BotVersion.version).join(Bot)
    return {version_id: f"{name}@{version}" for version_id, name, version in session.execute(query)}
