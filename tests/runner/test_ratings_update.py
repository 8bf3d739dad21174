"""The rater on SQLite and PostgreSQL: each game rated once, in a stored order, incrementally
and exactly as a replay from scratch (and as the pure statistics) would rate it."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from sqlalchemy import select, text

from arena.ratings import bradley_terry, elo_ratings
from arena.storage import Database, open_database, repo
from arena.storage import database as database_module
from arena.storage.errors import RatedMeanwhile
from arena.storage.models import RATER_INDEXES, BotVersion, Game, Tournament
from arena.storage.repo import GameResult, PlannedSet
from runner.ratings_update import update_ratings

BOTS = ("alpha@1", "beta@1", "gamma@1")
RULESET = "standard"
# (winner of game 0, winner of game 1, how game 1 ended) for each set, in recording order.
OUTCOMES = [
    (0, 1, "target"),
    (None, 0, "target"),
    (1, 1, "forfeit"),
    (0, None, "max_hands"),
    (1, 0, "max_hands"),
    (0, 0, "target"),
]


def _setup(
    db: Database, ruleset: str = RULESET, tournament_id: str = "t-20261130-rate"
) -> list[tuple[str, str, str]]:
    """Three bots and a tournament with a set per outcome; returns (set id, a, b) per set."""
    with db.session() as s:
        for ref in BOTS:
            if repo.find_bot(s, ref.split("@")[0]) is not None:
                continue
            name, version = ref.split("@")
            repo.add_bot_version(
                s,
                name=name,
                version=version,
                author="tests",
                language="python",
                manifest={"name": name, "version": version},
                directory=f"/bots/{name}",
                command=["python3", "bot.py"],
            )
    pairs = list(itertools.islice(itertools.cycle(itertools.combinations(BOTS, 2)), len(OUTCOMES)))
    plan = [PlannedSet(a, b, seed=i, first_dealer=i % 4) for i, (a, b) in enumerate(pairs)]
    with db.session() as s:
        t = repo.create_tournament(
            s,
            format="round-robin",
            ruleset=ruleset,
            seed=1,
            sets_per_pair=2,
            sets=plan,
            limits={},
            tournament_id=tournament_id,
        )
    return [(repo.game_set_id(t.id, i), a, b) for i, (a, b) in enumerate(pairs)]


def _record(db: Database, set_id: str, a: str, b: str, outcome: tuple[Any, Any, str]) -> None:
    w0, w1, end = outcome
    games = [
        GameResult(0, (a, b, a, b), (255, 100), w0, "target", 10, b"{}"),
        GameResult(
            1,
            (b, a, b, a),
            (100, 100),
            w1,
            end,
            10,
            b"{}",
            forfeit_seat=2 if end == "forfeit" else None,  # b's partnership, seats 0 and 2
        ),
    ]
    with db.session() as s:
        repo.mark_set_running(s, set_id)
        assert repo.record_game_set_result(s, set_id, games)


def _table(db: Database) -> list[tuple[Any, ...]]:
    with db.session() as s:
        return sorted(
            (
                r.bot_version.ref,
                r.elo,
                r.bt,
                r.ci_low,
                r.ci_high,
                r.games,
                r.score,
                r.forfeits,
                r.last_played,
            )
            for r in repo.get_ratings(s, RULESET)
        )


def _history(db: Database) -> list[tuple[str, float, str | None]]:
    with db.session() as s:
        return [
            (ref, h.elo, h.game_id) for ref in BOTS for h in repo.rating_history(s, ref, RULESET)
        ]


def _results_in_order(db: Database) -> list[tuple[str, str, float, str]]:
    """(team 0's bot, team 1's bot, team 0's score, game id) of every counted game, in the
    order the games finished."""
    with db.session() as s:
        games = s.scalars(select(Game).order_by(Game.finished, Game.id)).all()
        refs = {v.id: v.ref for v in s.scalars(select(BotVersion))}
        return [
            (refs[g.seat0_id], refs[g.seat1_id], 0.5 if g.winner is None else 1.0 - g.winner, g.id)
            for g in games
        ]


def test_each_set_is_rated_incrementally_as_the_statistics_rate_all_games(
    database: Database,
) -> None:
    sets = _setup(database)
    seen: set[str] = set()
    for (set_id, a, b), outcome in zip(sets, OUTCOMES, strict=True):
        _record(database, set_id, a, b, outcome)
        seen |= {a, b}
        with database.session() as s:
            assert update_ratings(s, RULESET) == len(seen)  # rated versions so far
    incremental, history = _table(database), _history(database)

    results = _results_in_order(database)
    assert len(results) == 2 * len(OUTCOMES)
    elo = elo_ratings([r[:3] for r in results])
    fit = bradley_terry([r[:3] for r in results])
    rows = {row[0]: row for row in incremental}
    for ref in BOTS:
        _, stored_elo, bt, low, high, games, score, forfeits, last = rows[ref]
        assert stored_elo == elo.rating(ref)  # the same float operations in the same order
        fitted = fit.ratings[ref]
        assert (bt, low, high) == (fitted.rating, fitted.lower, fitted.upper)
        mine = [r for r in results if ref in r[:2]]
        assert games == len(mine)
        assert score == sum(r[2] if r[0] == ref else 1 - r[2] for r in mine) / len(mine)
        assert last is not None
    assert rows["beta@1"][7] + rows["gamma@1"][7] + rows["alpha@1"][7] == 1
    # One history point per version per counted game, each the Elo right after that game.
    assert len(history) == 2 * len(results)
    for ref in BOTS:
        points = [(elo_after, gid) for r, elo_after, gid in history if r == ref]
        expected = [(p.rating, results[p.game][3]) for p in elo.history[ref]]
        assert points == expected

    with database.session() as s:
        update_ratings(s, RULESET, from_scratch=True)
    assert _table(database) == incremental
    assert _history(database) == history  # a replay adds no points for games already rated


def test_a_set_left_unrated_by_a_dead_worker_is_rated_by_the_next_pass(
    database: Database,
) -> None:
    sets = _setup(database)
    _record(database, *sets[0], OUTCOMES[0])  # stored, then the worker died: no rating pass
    _record(database, *sets[1], OUTCOMES[1])
    with database.session() as s:
        update_ratings(s, RULESET)
        placed = s.scalars(select(Game.rated_seq).order_by(Game.finished, Game.id)).all()
    assert placed == [0, 1, 2, 3]
    assert sum(row[5] for row in _table(database)) == 2 * 4
    assert len(_history(database)) == 2 * 4


def test_aborted_games_that_older_arenas_stored_count_for_nothing(database: Database) -> None:
    # Before 2026-11-30 a game the game master aborted (shut down mid-game) was stored, with no
    # winner; it must not be rated as a draw, neither by pairs nor by Elo.
    sets = _setup(database)
    for (set_id, a, b), outcome in zip(sets[:2], OUTCOMES[:2], strict=True):
        _record(database, set_id, a, b, outcome)
    aborted = f"{sets[0][0]}-g1"
    with database.engine.begin() as conn:
        conn.execute(
            text("UPDATE games SET reason = 'aborted', winner = NULL WHERE id = :id"),
            {"id": aborted},
        )
    with database.session() as s:
        update_ratings(s, RULESET)
    results = [r for r in _results_in_order(database) if r[3] != aborted]
    fit = bradley_terry([r[:3] for r in results])
    rows = {row[0]: row for row in _table(database)}
    for ref, fitted in fit.ratings.items():
        assert rows[ref][2] == fitted.rating and rows[ref][5] == fitted.games
    assert sum(row[5] for row in rows.values()) == 2 * 3
    assert aborted not in {gid for _, _, gid in _history(database)}
    assert rows["alpha@1"][1] == elo_ratings([r[:3] for r in results]).rating("alpha@1")


def test_a_pass_with_nothing_new_changes_nothing(database: Database) -> None:
    sets = _setup(database)
    _record(database, *sets[0], OUTCOMES[0])
    with database.session() as s:
        update_ratings(s, RULESET)
        before, history = _table(database), _history(database)
        update_ratings(s, RULESET)
    assert (_table(database), _history(database)) == (before, history)


def test_games_placed_by_another_rater_are_not_placed_twice(database: Database) -> None:
    sets = _setup(database)
    _record(database, *sets[0], OUTCOMES[0])
    _record(database, *sets[1], OUTCOMES[1])
    g = [repo.game_id(set_id, i) for set_id, _, _ in sets[:2] for i in (0, 1)]
    with database.session() as s:
        repo.place_in_rating_order(s, RULESET, g[:2], 0)
        s.commit()
    with database.session() as s, pytest.raises(RatedMeanwhile, match="at the same time"):
        repo.place_in_rating_order(s, RULESET, g[1:], 2)  # g[1] is placed already
    with database.session() as s, pytest.raises(RatedMeanwhile, match="at the same time"):
        # A pass that began before the first one stored: its places (and table) are stale.
        repo.place_in_rating_order(s, RULESET, g[2:], 0)
    with database.session() as s:
        placed = dict(s.execute(select(Game.id, Game.rated_seq)).all())
    assert placed == {g[0]: 0, g[1]: 1, g[2]: None, g[3]: None}


def _one_set_rated_and_one_not(database: Database) -> None:
    sets = _setup(database)
    _record(database, *sets[0], OUTCOMES[0])
    with database.session() as s:
        update_ratings(s, RULESET)
    _record(database, *sets[1], OUTCOMES[1])


def test_a_pass_that_read_a_table_another_rater_then_replaced_starts_again(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    _one_set_rated_and_one_not(database)
    real_place = repo.place_in_rating_order
    raced: list[bool] = []

    def other_rater_first(session: Any, ruleset: str, ids: Any, start: int) -> None:
        if not raced:  # between this pass's reads and its writes, another pass stores
            raced.append(True)
            with database.session() as other:
                update_ratings(other, RULESET)
        real_place(session, ruleset, ids, start)

    monkeypatch.setattr(repo, "place_in_rating_order", other_rater_first)
    with database.session() as s:
        update_ratings(s, RULESET)  # the first try fails, the second rates nothing new
    monkeypatch.undo()
    table = _table(database)
    with database.session() as s:
        update_ratings(s, RULESET, from_scratch=True)
    assert _table(database) == table
    assert sum(row[5] for row in table) == 2 * 4
    assert len(_history(database)) == 2 * 4


def test_a_recompute_that_another_rater_overtakes_starts_again(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `arena ratings --recompute` places no game of its own (a worker rated them all), so the
    # check that placing does cannot tell it that a worker stored a pass meanwhile.
    import runner.ratings_update as rater

    _one_set_rated_and_one_not(database)
    real_games = rater.rated_games
    raced: list[bool] = []

    def worker_rates_now(session: Any, ruleset: str, *, rated: bool) -> Any:
        if not rated and not raced:  # the recompute has read the rated games
            raced.append(True)
            with database.session() as other:
                update_ratings(other, RULESET)
        return real_games(session, ruleset, rated=rated)

    monkeypatch.setattr(rater, "rated_games", worker_rates_now)
    with database.session() as s:
        update_ratings(s, RULESET, from_scratch=True)
    monkeypatch.undo()
    raced_table = _table(database)
    with database.session() as s:
        update_ratings(s, RULESET, from_scratch=True)
    assert raced and raced_table == _table(database)
    assert sum(row[5] for row in raced_table) == 2 * 4


def test_the_upgrade_places_games_a_stored_table_already_rated(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = open_database(database_url)
    sets = _setup(db)
    for (set_id, a, b), outcome in zip(sets[:3], OUTCOMES[:3], strict=True):
        _record(db, set_id, a, b, outcome)
    with db.session() as s:
        update_ratings(s, RULESET)
    table, history = _table(db), _history(db)
    # Back to schema version 1, as a database written before games had a place.
    with db.engine.begin() as conn:
        for index in RATER_INDEXES:
            index.drop(conn)
        conn.execute(text("ALTER TABLE games DROP COLUMN rated_seq"))
        conn.execute(text("ALTER TABLE game_sets DROP COLUMN beat"))  # version 3's
        conn.execute(text("UPDATE schema_version SET version = 1"))
    db.dispose()

    db = open_database(database_url)
    assert db.schema_version() == database_module.SCHEMA_VERSION
    upgraded = f"upgrading the database schema from version 1 to {db.schema_version()}"
    assert upgraded in caplog.text  # said: the older arena's processes must not run on
    with db.session() as s:
        placed = s.scalars(select(Game.rated_seq).order_by(Game.finished, Game.id)).all()
        assert placed == list(range(6))
        update_ratings(s, RULESET)
    assert (_table(db), _history(db)) == (table, history)
    _record(db, *sets[3], OUTCOMES[3])
    with db.session() as s:
        update_ratings(s, RULESET)
    assert len(_history(db)) == len(history) + 4  # the new set's two games, a point per bot
    db.dispose()


def _downgrade_to_3(db: Database) -> None:
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE schema_version SET version = 3"))


@pytest.mark.parametrize("both", [False, True], ids=["typed one way", "typed two ways"])
def test_the_upgrade_gives_custom_rulesets_one_spelling_and_one_pool(
    database_url: str, both: bool
) -> None:
    # Stored as typed before ruleset_key: the same rules in two rating pools.
    typed, key = '{"name": "standard", "max_hands": 2}', '{"max_hands":2,"name":"standard"}'
    db = open_database(database_url)
    sets = _setup(db, typed, "t-20261130-old")
    for (set_id, a, b), outcome in zip(sets[:2], OUTCOMES[:2], strict=True):
        _record(db, set_id, a, b, outcome)
    if both:
        sets = _setup(db, key, "t-20261201-new")
        _record(db, *sets[2], OUTCOMES[2])
    for ruleset in (typed, key):
        with db.session() as s:
            update_ratings(s, ruleset)
    with db.session() as s:
        before = [(r.bot_version.ref, r.elo, r.games) for r in repo.get_ratings(s, typed)]
    _downgrade_to_3(db)
    db.dispose()

    db = open_database(database_url)
    with db.session() as s:
        assert repo.get_ratings(s, typed) == []
        stored = {t.ruleset for t in s.scalars(select(Tournament))}
        assert stored == {key} and {g.ruleset for g in s.scalars(select(Game))} == {key}
        if not both:  # renamed: its table, history and order kept as they were
            after = [(r.bot_version.ref, r.elo, r.games) for r in repo.get_ratings(s, key)]
            assert after == before
        update_ratings(s, key)  # a pool of two spellings is rated again, from its first game
        rows = repo.get_ratings(s, key)
        games = s.scalars(select(Game).order_by(Game.finished, Game.id)).all()
        assert [g.rated_seq for g in games] == list(range(len(games)))
        assert sum(r.games for r in rows) == 2 * len(games)
        history = [h for ref in BOTS for h in repo.rating_history(s, ref, key)]
        assert len(history) == 2 * len(games)  # one point per version per game, none twice
    db.dispose()


def test_the_upgrade_rates_again_a_ruleset_that_counted_aborted_games(database_url: str) -> None:
    # Schema 2 and 3 placed the aborted games older arenas stored, and their raters counted
    # them as draws: Elo carried that on from the stored table. Version 5 rates them again.
    db = open_database(database_url)
    sets = _setup(db)
    for (set_id, a, b), outcome in zip(sets[:3], OUTCOMES[:3], strict=True):
        _record(db, set_id, a, b, outcome)
    with db.session() as s:  # the stored table counts every game (one will be aborted)
        update_ratings(s, RULESET)
    counted_it = _table(db)
    aborted = f"{sets[0][0]}-g1"
    with db.engine.begin() as conn:
        conn.execute(
            text("UPDATE games SET reason = 'aborted', winner = NULL WHERE id = :id"),
            {"id": aborted},
        )
        conn.execute(text("UPDATE schema_version SET version = 4"))
    db.dispose()

    db = open_database(database_url)
    with db.session() as s:
        assert repo.get_ratings(s, RULESET) == [] and _history(db) == []
        assert set(s.scalars(select(Game.rated_seq))) == {None}
        update_ratings(s, RULESET)
    results = [r for r in _results_in_order(db) if r[3] != aborted]
    elo = elo_ratings([r[:3] for r in results])
    table = {row[0]: row for row in _table(db)}
    assert {ref: row[1] for ref, row in table.items()} == {r: elo.rating(r) for r in table}
    assert sum(row[5] for row in table.values()) == 2 * len(results) == 10
    assert _table(db) != counted_it
    db.dispose()
