"""Filling a database with real short games played by the engine, stored through the repository."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flask import Flask

from arena.game import Game
from arena.observation import observe
from arena.ratings import bradley_terry, elo_ratings
from arena.record import game_record
from arena.rulesets import STANDARD, Ruleset
from arena.storage import Database, repo
from arena.storage.repo import FaultInfo, GameResult, HistoryEntry, PlannedSet, RatingRow
from sample_agents.greedy_bot import GreedyPlayer
from sample_agents.random_bot import RandomPlayer

SHORT: Ruleset = dataclasses.replace(STANDARD, max_hands=3)
RULESET = "short-3"  # how the tournament stores its (custom) ruleset
XSS_NAME = "<img src=x onerror=alert(1)>"
XSS_NOTE = "<script>alert('note')</script> & <b>bold</b>"
XSS_STDERR = "Traceback: <script>alert('stderr')</script>\nValueError: boom"
TIMEOUT_DETAIL = "no reply within the decision time and what was left of the bank"


RUNNING_TOURNAMENT = "t-20261130-live"
FINISHED_TOURNAMENT = "t-20261129-test"


@dataclass
class Filled:
    """What a fill stored: tournament ids, game ids and each game's record bytes."""

    tournaments: list[str] = field(default_factory=list)
    records: dict[str, bytes] = field(default_factory=dict)
    bots: list[str] = field(default_factory=list)

    @property
    def game_ids(self) -> list[str]:
        return list(self.records)


@dataclass
class Site:
    """A filled database and an app over it."""

    url: str
    app: Flask
    filled: Filled


def add_bot(db: Database, name: str, version: str = "1.0") -> str:
    """Register name@version unless it already is; return its ref."""
    with db.session() as s:
        if repo.find_bot(s, name) is not None:
            return f"{name}@{version}"
        repo.add_bot_version(
            s,
            name=name,
            version=version,
            author="tests",
            language="python",
            manifest={"name": name, "version": version, "description": f"{name} <em>bot</em>"},
            directory=f"/bots/{name}",
            command=["python3", "bot.py"],
        )
    return f"{name}@{version}"


def _player(name: str, seed: int) -> Any:
    return GreedyPlayer(seed) if name.startswith("greedy") else RandomPlayer(seed)


def play(
    names: Sequence[str],
    seed: int,
    first_dealer: int,
    game_id: str,
    *,
    fault_seat: int | None,
    forfeit: str = "",
) -> tuple[Game, bytes, list[int], int]:
    """Play one game; action lines carry ms, bids a note, and one decision a timeout fault;
    with `forfeit`, the seat to act at the 12th decision forfeits, saying so."""
    players = [_player(n, seed * 10 + i) for i, n in enumerate(names)]
    game = Game(SHORT, seed, first_dealer)
    think = [0, 0, 0, 0]
    decisions = 0
    while not game.is_over:
        seat = game.to_act
        assert seat is not None
        if forfeit and decisions == 12:
            game.forfeit(seat, forfeit)
            break
        legal = game.legal()
        ms = 3 + (decisions * 7 + seat * 5) % 40
        extra: dict[str, Any] = {"ms": ms}
        if fault_seat == seat and decisions >= 10 and legal.choice is None:
            # What the game master does after a timeout: the first legal action, marked.
            action: Any = legal.all()[0]
            extra["fault"] = "timeout"
            extra["detail"] = TIMEOUT_DETAIL
            fault_seat = None
        else:
            action = players[seat].act(observe(game, seat), legal)
        if legal.phase.value == "auction":
            extra["note"] = XSS_NOTE if names[seat] == XSS_NAME else f"seat {seat} thinks"
        game.apply(action, seat, **extra)
        think[seat] += ms
        decisions += 1
    agents = list(names)
    return game, game_record(game, agents, game_id).encode(), think, decisions


def fill(
    db: Database,
    bots: Sequence[str] = ("greedy", "random", XSS_NAME),
    *,
    sets_per_pair: int = 1,
    rate: bool = True,
    pending_sets: int = 0,
    tournament_id: str = FINISHED_TOURNAMENT,
    forfeit: str = "",
    gauntlet: bool = False,
) -> Filled:
    """A finished round robin between `bots` (or a gauntlet of the first against the others;
    plus `pending_sets` queued ones), optionally rated; with `forfeit`, the first game ends as
    a forfeit with that detail."""
    out = Filled()
    refs = [add_bot(db, b) for b in bots]
    out.bots = list(bots)
    n = len(refs)
    pairs = (
        [(0, j) for j in range(1, n)]
        if gauntlet
        else [(i, j) for i in range(n) for j in range(i + 1, n)]
    )
    plan = [
        PlannedSet(refs[i], refs[j], seed=1000 + 10 * i + j + k, first_dealer=(i + j + k) % 4)
        for i, j in pairs
        for k in range(sets_per_pair)
    ]
    plan += [PlannedSet(refs[0], refs[1], seed=5000 + k) for k in range(pending_sets)]
    with db.session() as s:
        repo.create_tournament(
            s,
            format="gauntlet" if gauntlet else "round-robin",
            ruleset=RULESET,
            seed=7,
            sets_per_pair=sets_per_pair,
            sets=plan,
            tournament_id=tournament_id,
        )
        repo.set_tournament_state(s, tournament_id, "running")
    out.tournaments.append(tournament_id)
    results: list[tuple[str, str, float, str]] = []
    for index, planned in enumerate(plan[: len(plan) - pending_sets]):
        set_id = repo.game_set_id(tournament_id, index)
        a, b = str(planned.bot_a), str(planned.bot_b)
        games = []
        for game_index, seats in enumerate(((a, b, a, b), (b, a, b, a))):
            names = [s.rsplit("@", 1)[0] for s in seats]
            gid = repo.game_id(set_id, game_index)
            fault_seat = 1 if index == 0 and game_index == 0 else None
            game, record, think, decisions = play(
                names,
                planned.seed,
                planned.first_dealer,
                gid,
                fault_seat=fault_seat,
                forfeit=forfeit if index == 0 and game_index == 0 else "",
            )
            faults = (
                [FaultInfo(seat=1, kind="timeout", hand=1, detail="no reply", stderr=XSS_STDERR)]
                if fault_seat is not None
                else []
            )
            games.append(
                GameResult(
                    game_index=game_index,
                    seats=seats,
                    scores=(game.scores[0], game.scores[1]),
                    winner=game.winner,
                    reason=game.end_reason or "max_hands",
                    forfeit_seat=game.events[-1].get("forfeit_seat"),
                    hands=game.hand_number,
                    record=record,
                    decisions=decisions,
                    think_ms=think,
                    faults=faults,
                )
            )
            out.records[gid] = record
            score0 = 0.5 if game.winner is None else float(game.winner == 0)
            results.append((seats[0], seats[1], score0, gid))
        with db.session() as s:
            repo.mark_set_running(s, set_id)
            assert repo.record_game_set_result(s, set_id, games)
    if not pending_sets:
        with db.session() as s:
            repo.set_tournament_state(s, tournament_id, "finished")
    if rate:
        _rate(db, results)
    return out


def _rate(db: Database, results: list[tuple[str, str, float, str]]) -> None:
    triples = [(a, b, s) for a, b, s, _ in results]
    table = elo_ratings(triples)
    fit = bradley_terry(triples)
    games: dict[str, int] = {}
    score: dict[str, float] = {}
    for a, b, s in triples:
        games[a] = games.get(a, 0) + 1
        games[b] = games.get(b, 0) + 1
        score[a] = score.get(a, 0.0) + s
        score[b] = score.get(b, 0.0) + 1 - s
    rows = [
        RatingRow(
            ref,
            table.rating(ref),
            bt=fit.ratings[ref].rating,
            ci_low=fit.ratings[ref].lower,
            ci_high=fit.ratings[ref].upper,
            games=games[ref],
            score=score[ref] / games[ref],  # a fraction, as runner/ratings_update.py writes it
        )
        for ref in games
    ]
    history = []
    for index, (a, b, _s, gid) in enumerate(results):
        for ref in (a, b):
            point = next(p for p in table.history[ref] if p.game == index)
            history.append(HistoryEntry(ref, point.rating, gid))
    with db.session() as s:
        repo.replace_ratings(s, RULESET, rows)
        repo.append_history(s, RULESET, history)
