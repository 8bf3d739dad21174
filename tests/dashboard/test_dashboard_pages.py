"""Every page and its JSON twin on a filled database, an empty one, and unknown ids."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient
from markupsafe import escape
from sqlalchemy.orm import Session

from arena.storage import Game, open_database, repo
from dashboard import create_app
from dashboard.queries.tournaments import NO_FREE_WORKER
from dashboard.replay import hand_starts
from tests.dashboard.fill import (
    FINISHED_TOURNAMENT,
    RULESET,
    RUNNING_TOURNAMENT,
    XSS_NAME,
    XSS_NOTE,
    XSS_STDERR,
    Site,
    fill,
)

FINISHED = FINISHED_TOURNAMENT
FIRST_GAME = f"{FINISHED}-set-00000-g0"  # the game with a timeout fault and captured stderr


def _bot(name: str) -> str:
    return quote(name, safe="")


def _html(client: FlaskClient, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, (path, response.data[:300])
    assert response.mimetype == "text/html"
    return response.get_data(as_text=True)


def _json(client: FlaskClient, path: str, status: int = 200) -> dict:
    response = client.get(path)
    assert response.status_code == status, (path, response.data[:300])
    assert response.mimetype == "application/json"
    data: dict = response.get_json()
    return data


def test_every_page_and_twin_answers(client: FlaskClient, site: Site) -> None:
    game = site.filled.game_ids[0]
    pairs = [
        ("/", "/api/leaderboard"),
        ("/bots", "/api/bots"),
        ("/bots/greedy", "/api/bots/greedy"),
        ("/bots/greedy/1.0", "/api/bots/greedy/1.0"),
        (f"/bots/{_bot(XSS_NAME)}", f"/api/bots/{_bot(XSS_NAME)}"),
        ("/tournaments", "/api/tournaments"),
        (f"/tournaments/{FINISHED}", f"/api/tournaments/{FINISHED}"),
        (f"/tournaments/{RUNNING_TOURNAMENT}", f"/api/tournaments/{RUNNING_TOURNAMENT}/status"),
        ("/games", "/api/games"),
        (f"/games/{game}", f"/api/games/{game}"),
        (f"/games/{game}/replay", f"/api/games/{game}/replay"),
    ]
    for page, twin in pairs:
        _html(client, page)
        _json(client, twin)
    assert _json(client, "/healthz") == {"status": "ok", "database": "sqlite"}
    routes = [r["route"] for r in _json(client, "/api")["routes"]]
    assert "GET /api/games/ID/replay?perspective=P" in routes


def test_leaderboard_uses_the_stored_ratings(client: FlaskClient) -> None:
    data = _json(client, "/api/leaderboard")
    assert data["ruleset"] == RULESET and data["source"] == "ratings"
    rows = data["rows"]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert {r["bot"] for r in rows} == {"greedy", "random", XSS_NAME}
    assert all(r["games"] == 4 for r in rows)  # 3 bots, one duplicate set per pair
    assert sum(r["points"] for r in rows) == pytest.approx(6.0)
    assert all(r["score_pct"] == pytest.approx(r["points"] / 4) for r in rows)
    bts = [r["bt"] for r in rows]
    assert bts == sorted(bts, reverse=True)
    assert all(r["ci_low"] < r["bt"] < r["ci_high"] for r in rows)
    assert all(len(r["history"]) == 4 for r in rows)
    html = _html(client, "/")
    assert html.count('<svg class="spark"') == 3


def test_a_ruleset_without_games_has_an_empty_leaderboard(client: FlaskClient) -> None:
    empty = _json(client, "/api/leaderboard?ruleset=inverness")  # named, never played here
    assert empty["rows"] == [] and empty["source"] == "computed"
    assert RULESET in empty["rulesets"] and "inverness" in empty["rulesets"]  # the menu shows it
    page = _html(client, "/?ruleset=inverness")
    assert 'class="empty"' in page
    assert "computed here from the games" not in page  # there are none


def test_a_ruleset_typed_another_way_is_the_one_stored(client: FlaskClient) -> None:
    # As the CLI does (arena.rulesets.as_stored): the menu's spelling is not the only one.
    typed = quote('{"name": "standard", "max_hands": 100}')  # standard's own max_hands
    assert _json(client, f"/api/leaderboard?ruleset={typed}")["ruleset"] == "standard"
    assert _json(client, f"/api/bots/greedy?ruleset={typed}")["ruleset"] == "standard"


@pytest.mark.parametrize("path", ["/?ruleset=nope", "/bots/greedy?ruleset=nope"])
def test_an_unknown_ruleset_is_a_404_naming_the_rulesets(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert "no ruleset &#39;nope&#39;; the rulesets are standard, wiki-2010" in response.get_data(
        as_text=True
    )


def test_aborted_games_older_arenas_stored_count_in_no_table(tmp_path: Path) -> None:
    from sqlalchemy import text

    from tests.dashboard.fill import fill

    url = f"sqlite:///{tmp_path / 'aborted.db'}"
    db = open_database(url)
    fill(db, rate=False)
    with db.session() as s:  # the games the page will call draws: the others with no winner
        games = repo.list_games(s, tournament_id=FINISHED, limit=None)
        html_draws = len([g for g in games if g.winner is None and g.id != FIRST_GAME])
    with db.engine.begin() as conn:  # as an arena before 2026-11-30 stored a shut-down game
        conn.execute(
            text("UPDATE games SET reason = 'aborted', winner = NULL WHERE id = :id"),
            {"id": FIRST_GAME},
        )
    db.dispose()
    client = create_app({"DATABASE_URL": url}).test_client()
    a, b = (s["bot"] for s in _json(client, f"/api/games/{FIRST_GAME}")["seats"][:2])
    rows = {r["bot"]: r for r in _json(client, "/api/leaderboard")["rows"]}
    assert rows[a]["games"] == rows[b]["games"] == 3  # 4 each, but for the aborted one
    tournament = _json(client, f"/api/tournaments/{FINISHED}")
    standings = {s["bot"]: s for s in tournament["standings"]}
    assert standings[a]["games"] == standings[b]["games"] == 3
    # Listed all the same, and counted by the pager: it is a stored game, with no result.
    assert tournament["games_page"]["total"] == len(tournament["games"]) == 6
    listed = _html(client, f"/tournaments/{FINISHED}")
    assert "no result ·" in listed and listed.count("draw ·") == html_draws
    assert '<dd id="result">no result ·' in _html(client, f"/games/{FIRST_GAME}")  # not "draw"
    for g in games:
        if g.winner is not None and g.id != FIRST_GAME:  # "-660 – 270" read as a range
            # The winner's score first: "team 1 wins · 12 to 17" read as if it had fewer.
            won = f"team {g.winner} wins {g.scores[g.winner]} to {g.scores[1 - g.winner]}"
            assert won in listed
            assert f'<dd id="result">{won}</dd>' in _html(client, f"/games/{g.id}")
    met = {h["opponent"]["bot"]: h for h in _json(client, f"/api/bots/{a}")["head_to_head"]}
    assert met[b]["games"] == 2 * met[b]["sets"] - 1


def test_a_bot_yet_to_play_has_no_rating_in_its_tournament(tmp_path: Path) -> None:
    from sqlalchemy import text

    from arena.ratings import bradley_terry

    url = f"sqlite:///{tmp_path / 'waiting.db'}"
    db = open_database(url)
    fill(db, rate=False)
    with db.session() as s:  # XSS_NAME's two sets are still to be played
        versions = {b.name: b.versions[0].id for b in repo.list_bots(s)}
        games = repo.list_games(s, tournament_id=FINISHED, limit=None)
        met = [g for g in games if versions[XSS_NAME] not in (g.seat0_id, g.seat1_id)]
        played = [(str(g.seat0_id), str(g.seat1_id), _score0(g)) for g in met]
    with db.engine.begin() as conn:
        waiting = {"v": versions[XSS_NAME]}
        where = "bot_a_id = :v OR bot_b_id = :v"
        sets = f"SELECT id FROM game_sets WHERE {where}"
        conn.execute(text(f"DELETE FROM games WHERE game_set_id IN ({sets})"), waiting)
        conn.execute(text(f"UPDATE game_sets SET state = 'queued' WHERE {where}"), waiting)
    db.dispose()
    client = create_app({"DATABASE_URL": url}).test_client()
    standings = {s["bot"]: s for s in _json(client, f"/api/tournaments/{FINISHED}")["standings"]}
    # It had the prior's 1500 with an interval some 1300 wide, as if it had played.
    assert standings[XSS_NAME]["games"] == 0
    assert standings[XSS_NAME]["bt"] is None and standings[XSS_NAME]["ci_low"] is None
    fit = bradley_terry(played)  # the two that played, rated as if no one else were entered
    for name in ("greedy", "random"):
        assert standings[name]["bt"] == pytest.approx(fit.ratings[str(versions[name])].rating)


def _score0(game: Game) -> float:
    return 0.5 if game.winner is None else float(game.winner == 0)


def test_tied_ratings_rank_alike_in_arena_ratings_and_the_leaderboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena import cli
    from arena.storage import RatingRow

    url = f"sqlite:///{tmp_path / 'tied.db'}"
    db = open_database(url)
    fill(db, rate=False)
    with db.session() as s:  # all draws: every bot the same; the CLI had them in stored order
        versions = [f"{b.name}@{b.versions[0].version}" for b in repo.list_bots(s)]
        tied = [RatingRow(v, 1500.0, bt=1500.0, ci_low=1400.0, ci_high=1600.0) for v in versions]
        repo.replace_ratings(s, RULESET, reversed(sorted(tied, key=lambda r: r.bot_version)))
    db.dispose()
    monkeypatch.setenv("ARENA_DATABASE_URL", url)
    assert cli.main(["ratings", "--ruleset", RULESET, "--json"]) == 0
    printed = [r["bot"] for r in json.loads(capsys.readouterr().out)]
    client = create_app({"DATABASE_URL": url}).test_client()
    rows = _json(client, f"/api/leaderboard?ruleset={quote(RULESET)}")["rows"]
    assert printed == [f"{r['bot']}@{r['version']}" for r in rows] == sorted(versions)


def test_leaderboard_fallback_matches_a_fresh_rating(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from arena.storage import open_database
    from dashboard import create_app
    from tests.dashboard.fill import fill

    url = f"sqlite:///{tmp_path / 'unrated.db'}"
    db = open_database(url)
    fill(db, rate=False)
    db.dispose()
    client = create_app({"DATABASE_URL": url}).test_client()
    data = _json(client, "/api/leaderboard")
    assert data["source"] == "computed" and data["ruleset"] == RULESET
    assert {r["bot"] for r in data["rows"]} == {"greedy", "random", XSS_NAME}
    assert all(r["games"] == 4 and r["last_played"] for r in data["rows"])
    assert sum(r["points"] for r in data["rows"]) == pytest.approx(6.0)
    assert all(r["bt"] is not None and len(r["history"]) == 4 for r in data["rows"])
    # Once the workers' rater writes its table, the page shows the same numbers from it.
    from runner.ratings_update import update_ratings

    db = open_database(url)
    with db.session() as s:
        update_ratings(s, RULESET)
    db.dispose()
    stored = _json(client, "/api/leaderboard")
    assert stored["source"] == "ratings"
    for mine, theirs in zip(data["rows"], stored["rows"], strict=True):
        assert mine["bot"] == theirs["bot"] and mine["games"] == theirs["games"]
        for key in ("elo", "bt", "ci_low", "ci_high", "score_pct", "points"):
            assert mine[key] == pytest.approx(theirs[key]), key
        assert mine["last_played"] == theirs["last_played"]


def test_bot_page_has_manifest_history_head_to_head_and_faults(client: FlaskClient) -> None:
    data = _json(client, "/api/bots/random")
    assert data["version"]["manifest"]["name"] == "random"
    # Where the bot lives on the workers' host is not shown (fill.py registers it at /bots/NAME).
    assert "/bots/random" not in client.get("/api/bots/random").get_data(as_text=True)
    assert len(data["history"]) == 4
    opponents = {h["opponent"]["bot"]: h for h in data["head_to_head"]}
    assert set(opponents) == {"greedy", XSS_NAME}
    for h in opponents.values():
        assert h["games"] == 4 and h["sets"] == 2  # one set each in two tournaments
        assert h["wins"] + h["draws"] + h["losses"] == h["games"]
        assert 0.0 <= h["los"] <= 1.0
    greedy = _json(client, "/api/bots/greedy")
    mirrored = {h["opponent"]["bot"]: h for h in greedy["head_to_head"]}["random"]
    assert mirrored["wins"] == opponents["greedy"]["losses"]
    assert len(data["recent_games"]) == 8
    # The first set's first game had seat 1 (the set's bot B, random) time out.
    assert data["faults"]["by_kind"] == [{"kind": "timeout", "count": 2}]
    assert data["faults"]["latest"][0]["stderr"] == XSS_STDERR
    # Its chart plots Elo, where "Rating" everywhere else is the Bradley–Terry rating.
    page = _html(client, "/bots/random")
    assert "<h2>Elo history" in page and "Rating history" not in page


def test_bot_versions_and_rulesets_select_what_is_shown(client: FlaskClient) -> None:
    assert _json(client, "/api/bots/greedy/1.0")["version"]["version"] == "1.0"
    chosen = _json(client, f"/api/bots/greedy?ruleset={RULESET}")
    assert chosen["ruleset"] == RULESET and chosen["head_to_head"] and chosen["recent_games"]
    other = _json(client, "/api/bots/greedy?ruleset=standard")  # no games of it here
    assert (other["history"], other["head_to_head"], other["recent_games"]) == ([], [], [])


def test_tournament_page_has_progress_crosstable_standings_and_games(client: FlaskClient) -> None:
    data = _json(client, f"/api/tournaments/{FINISHED}")
    listed = {t["id"]: t for t in _json(client, "/api/tournaments")["tournaments"]}
    standings = sorted(f"{s['bot']}@{s['version']}" for s in data["standings"])
    assert listed[FINISHED]["bots"] == standings  # the list names who plays
    assert all(name in _html(client, "/tournaments") for name in ("greedy@1.0",))
    assert data["state"] == "finished"
    assert data["progress"]["done"] == 3 and data["progress"]["fraction"] == 1.0
    assert len(data["standings"]) == 3 and len(data["crosstable"]) == 3
    assert sum(s["score"] for s in data["standings"]) == pytest.approx(6.0)
    # The one fault of the fill, seat 1's in the first game, is its bot's (as CLI status says).
    faulted = _json(client, f"/api/games/{FIRST_GAME}")["seats"][1]["bot"]
    assert {s["bot"]: s["faults"] for s in data["standings"] if s["faults"]} == {faulted: 1}
    assert '<td class="num bad">1</td>' in _html(client, f"/tournaments/{FINISHED}")
    for i, row in enumerate(data["crosstable"]):
        assert row["cells"][i] is None
        for j, cell in enumerate(row["cells"]):
            if i != j:
                other = data["crosstable"][j]["cells"][i]
                assert cell["games"] == 2 and cell["wins"] == other["losses"]
    assert len(data["games"]) == 6
    html = _html(client, f"/tournaments/{FINISHED}")
    for game in data["games"]:
        assert f'href="/games/{game["id"]}"' in html
    first, second = (escape(f"{r['bot']}@{r['version']}") for r in data["crosstable"][:2])
    assert f'title="{first} vs {second}: ' in html  # versions too: a bot meets its others
    assert "tournament.js" in html
    assert isinstance(data["seed"], int) and f'<span class="mono">{data["seed"]}</span>' in html


def _two_set_tournament_page(
    tmp_path: Path, tid: str, change: Callable[[Session, str, str], None]
) -> tuple[str, dict[str, Any]]:
    """The page and status of a new two-set tournament after `change(session, first, second)`
    on its sets."""
    from arena.storage.repo import PlannedSet
    from tests.dashboard.fill import add_bot

    url = f"sqlite:///{tmp_path / 'arena.db'}"
    with open_database(url) as db:
        a, b = add_bot(db, "greedy"), add_bot(db, "random")
        with db.session() as s:
            repo.create_tournament(
                s,
                format="round-robin",
                ruleset=RULESET,
                seed=7,
                sets_per_pair=2,
                sets=[PlannedSet(a, b, seed=1), PlannedSet(a, b, seed=2)],
                tournament_id=tid,
            )
            change(s, f"{tid}-set-00000", f"{tid}-set-00001")
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    try:
        client = app.test_client()
        return _html(client, f"/tournaments/{tid}"), _json(client, f"/api/tournaments/{tid}/status")
    finally:
        app.extensions["arena_database"].dispose()


def test_a_tournament_page_says_why_sets_wait_and_how_to_retry_failed_ones(
    tmp_path: Path,
) -> None:
    tid = "t-20261130-fail"
    why = "no game master at 127.0.0.1:50051 for 60 s; the set waits for one"

    def change(s: Session, first: str, second: str) -> None:
        assert repo.mark_set_running(s, first)
        assert repo.mark_set_failed(s, first, "gave up after 3 attempts")
        assert repo.note_waiting(s, second, why)

    html, status = _two_set_tournament_page(tmp_path, tid, change)
    assert f"{tid}-set-00000: gave up after 3 attempts" in html
    assert f"<code>arena tournament retry {tid}</code> queues them again" in html
    assert f'<p id="waiting" class="muted small">waiting: {why}</p>' in html
    assert status["waiting"] == why


def test_a_tournament_page_says_when_its_running_set_has_gone_silent(tmp_path: Path) -> None:
    # Its worker died mid-set, and none runs to play it again: not "1 running" and nothing else.
    from datetime import timedelta

    from arena.storage.models import GameSet, utcnow

    def change(s: Session, first: str, second: str) -> None:
        assert repo.mark_set_running(s, first)
        s.get(GameSet, first).beat = utcnow() - timedelta(minutes=5)
        s.commit()

    html, status = _two_set_tournament_page(tmp_path, "t-20261201-dead", change)
    why = (
        "1 running set with no sign of life for over 30 s: its worker may have died; a running "
        "worker plays it again within a minute (is `arena worker` running?)"
    )
    assert status["waiting"] == why
    assert (status["progress"]["running"], status["progress"]["silent"]) == (1, 1)
    assert f'<p id="waiting" class="muted small">waiting: {escape(why)}</p>' in html


def test_running_tournament_reports_partial_progress(client: FlaskClient) -> None:
    status = _json(client, f"/api/tournaments/{RUNNING_TOURNAMENT}/status")
    assert status["state"] == "running"
    progress = status["progress"]
    assert (progress["done"], progress["queued"], progress["total"]) == (3, 2, 5)
    # Sets queued, none played, no reason given: the CLI's "waiting for a free worker".
    assert status["waiting"] == NO_FREE_WORKER
    assert _json(client, f"/api/tournaments/{FINISHED}/status")["waiting"] is None
    listed = {t["id"]: t for t in _json(client, "/api/tournaments")["tournaments"]}
    assert listed[RUNNING_TOURNAMENT]["progress"]["done"] == 3
    # The seed derives the deals of the sets still to play: kept back until all are played.
    assert status["seed"] is None and listed[RUNNING_TOURNAMENT]["seed"] is None
    assert _json(client, f"/api/tournaments/{RUNNING_TOURNAMENT}")["seed"] is None
    assert "shown once every set is played" in _html(client, f"/tournaments/{RUNNING_TOURNAMENT}")


def test_game_page_summarises_hands_timings_and_faults(client: FlaskClient, site: Site) -> None:
    data = _json(client, f"/api/games/{FIRST_GAME}")
    record = [json.loads(line) for line in site.filled.records[FIRST_GAME].splitlines()]
    end = record[-1]
    assert data["scores"] == end["scores"] and data["end"]["scores"] == end["scores"]
    hand_ends = [line for line in record if line.get("event") == "hand_end"]
    assert [h["scores"] for h in data["hands_table"]] == [h["scores"] for h in hand_ends]
    deals = {line["hand"]: line["dealer"] for line in record if line.get("event") == "deal"}
    assert [h["dealer"] for h in data["hands_table"]] == [deals[h["hand"]] for h in hand_ends]
    actions = [line for line in record if line.get("event") == "action"]
    for t in data["timing"]:
        mine = [a["ms"] for a in actions if a["seat"] == t["seat"]]
        assert t["decisions"] == len(mine) and t["total_ms"] == sum(mine)
        assert t["max_ms"] == max(mine)
    assert [(d["seat"], d["action"], d["ms"]) for d in data["decision_log"]] == [
        (a["seat"], a["action"], a["ms"]) for a in actions
    ]
    assert [f["fault"] for f in data["decision_faults"]] == ["timeout"]
    assert data["faults"][0]["stderr"] == XSS_STDERR
    html = _html(client, f"/games/{FIRST_GAME}")
    assert "record.jsonl" in html and "/replay" in html
    # Its duplicate set's other game: the same deals with the partnerships swapped.
    mirror = FIRST_GAME.removesuffix("g0") + "g1"
    assert data["mirror_id"] == mirror and f'id="mirror" href="/games/{mirror}"' in html
    assert _json(client, f"/api/games/{mirror}")["mirror_id"] == FIRST_GAME


def test_a_forfeit_shows_why_on_the_game_page(tmp_path: Path) -> None:
    # A refused Hello, say: its words were only in the downloadable record.
    why = "seat 1 did not connect within 2000 ms; seat 1's Hello was refused: <pretend>"
    url = f"sqlite:///{tmp_path / 'forfeit.db'}"
    with open_database(url) as db:
        fill(db, bots=("greedy", "random"), forfeit=why)
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    try:
        client = app.test_client()
        data = _json(client, f"/api/games/{FIRST_GAME}")
        assert data["reason"] == "forfeit" and data["forfeit_detail"] == why
        from markupsafe import escape

        html = _html(client, f"/games/{FIRST_GAME}")
        assert f"forfeited: {escape(why)})" in html
        # The hand it ended in is counted but has no row; a decision asked then has no action.
        assert data["hands"] == 1 and "(the last one not finished: the game ended in it)" in html
        played = data["decisions"]
        assert f"({played} played" not in html
        with app.extensions["arena_database"].session() as session:
            session.get(Game, FIRST_GAME).decisions += 1
            session.commit()
        html = _html(client, f"/games/{FIRST_GAME}")
        assert f"({played} played: the game ended while the last was asked)" in html
    finally:
        app.extensions["arena_database"].dispose()


def test_record_download_is_byte_identical(client: FlaskClient, site: Site) -> None:
    for game_id, record in site.filled.records.items():
        for path in (f"/games/{game_id}/record.jsonl", f"/api/games/{game_id}/record.jsonl"):
            response = client.get(path)
            assert response.status_code == 200
            assert response.data == record
            assert "attachment" in response.headers["Content-Disposition"]


def test_a_bots_games_are_all_listed_from_its_page(site: Site) -> None:
    # The bot page shows its latest games only; /games?bot= ignored the bot and listed all.
    client = site.app.test_client()
    every = _json(client, "/api/games")["games"]
    greedys = {g["id"] for g in every if any(s["bot"] == "greedy" for s in g["seats"])}
    assert 0 < len(greedys) < len(every)
    listed = _json(client, "/api/games?bot=greedy")
    assert {g["id"] for g in listed["games"]} == greedys
    assert listed["page"]["total"] == len(greedys)
    assert _json(client, "/api/games?bot=greedy&version=1.0")["page"]["total"] == len(greedys)
    assert client.get("/api/games?bot=greedy&version=9").status_code == 404
    assert client.get("/api/games?bot=nobody").status_code == 404
    page = _html(client, "/games?bot=greedy")
    assert 'Games of <a href="/bots/greedy">greedy</a>' in page
    assert 'href="/games?bot=greedy&amp;version=1.0"' in _html(client, "/bots/greedy")


def test_the_games_a_bot_faulted_in_are_listed_from_its_page(site: Site) -> None:
    # The bot page counted faults by kind and showed the latest five: the games behind the
    # rest could not be found. Seat 1 (random) of each tournament's first game timed out.
    client = site.app.test_client()
    faulted = {f"{t}-set-00000-g0" for t in site.filled.tournaments}
    for query in ("fault=any", "fault=timeout", "bot=random&fault=any", "bot=random&fault=timeout"):
        listed = _json(client, f"/api/games?{query}")
        assert {g["id"] for g in listed["games"]} == faulted, query
        assert listed["page"]["total"] == len(faulted)
    nothing = ("fault=crash", "fault=absent", "fault=contested", "bot=greedy&fault=any")
    for query in (*nothing, "bot=random&version=1.0&fault=illegal"):
        assert _json(client, f"/api/games?{query}")["page"]["total"] == 0, query
    assert "No such games." in _html(client, "/games?bot=greedy&fault=any")
    alone = client.get("/api/games?version=1.0")
    assert alone.status_code == 400 and "add bot=NAME" in alone.get_json()["message"]
    wrong = client.get("/api/games?fault=timout")
    assert wrong.status_code == 400 and "use timeout, crash" in wrong.get_json()["message"]
    page = _html(client, "/games?bot=random&version=1.0&fault=timeout")
    assert 'Games in which <a href="/bots/random/1.0">random@1.0</a> faulted: timeout' in page
    assert "Games with a fault</h1>" in _html(client, "/games?fault=any")
    bot_page = _html(client, "/bots/random")
    assert 'href="/games?bot=random&amp;version=1.0&amp;fault=timeout"' in bot_page
    assert 'href="/games?bot=random&amp;version=1.0&amp;fault=any"' in bot_page


def test_the_games_list_has_a_form_for_its_filters(client: FlaskClient) -> None:
    # ?bot= and ?fault= were reachable only from a bot's page: /games had no way to them.
    page = _html(client, "/games")
    assert 'action="/games"' in page and 'name="bot"' in page and 'name="fault"' in page
    for name in ("greedy", "random", XSS_NAME):
        assert f'<option value="{escape(name)}" >{escape(name)}</option>' in page
    assert '<option value="timeout" >timeout</option>' in page
    assert '<option value="any" >a fault of any kind</option>' in page
    chosen = _html(client, "/games?bot=random&fault=timeout")
    assert '<option value="random" selected>random</option>' in chosen
    assert '<option value="timeout" selected>timeout</option>' in chosen
    # The form sends both fields, the ones left at their first choice empty: "any".
    assert _json(client, "/api/games?bot=&fault=") == _json(client, "/api/games")
    assert "<h1>Games</h1>" in _html(client, "/games?bot=&fault=")


def test_games_list_is_paged(site: Site) -> None:
    site.app.config["PAGE_SIZE"] = 5
    try:
        client = site.app.test_client()
        first = _json(client, "/api/games")
        assert first["page"] == {"page": 1, "pages": 3, "size": 5, "total": 12}
        second = _json(client, "/api/games?page=3")
        assert len(first["games"]) == 5 and len(second["games"]) == 2
        tournament = _json(client, f"/api/tournaments/{FINISHED}?page=2")
        assert len(tournament["games"]) == 1 and tournament["games_page"]["pages"] == 2
        assert "older" in _html(client, "/games")
        past = _html(client, "/games?page=99")  # 12 games, 3 pages
        assert "No games on this page." in past and "No games yet" not in past
        assert 'href="/games?page=3">← newer' in past  # back to the last page, not page 98
        assert 'href="/games?page=1">« newest' in past and "oldest »" not in past
        first = _html(client, "/games")
        assert 'href="/games?page=3">oldest »' in first and "« newest" not in first
        # Named, so that a screen reader tells it from the site's menu (both are navigation).
        assert '<nav class="pager" aria-label="Pages">' in first
        # Past the end as any page past the end, not "page 1000000000 of 3".
        huge = "9" * 23
        assert _json(client, f"/api/games?page={huge}")["page"]["page"] == int(huge)
        past = _html(client, f"/games?page={huge}")
        assert f"page {huge} of 3" in past and "No games on this page." in past
        assert 'href="/games?page=3">← newer' in past
        # A tournament lists its games in order of play, oldest first: its pager said
        # "older →" for the later games.
        games = _html(client, f"/tournaments/{FINISHED}")
        assert f'href="/tournaments/{FINISHED}?page=2">next →' in games and "older" not in games
        later = _html(client, f"/tournaments/{FINISHED}?page=2")
        assert f'href="/tournaments/{FINISHED}?page=1">← previous' in later
        assert "newer" not in later
        for wrong in ("abc", "0", "-1", "2.5", "%C2%B2"):  # "²" is a digit to str.isdigit
            for url in (f"/api/games?page={wrong}", f"/tournaments?page={wrong}"):
                answer = client.get(url)
                assert answer.status_code == 400, url
                assert "use a whole number from 1" in answer.get_data(as_text=True), url
        past = _html(client, "/tournaments?page=99")  # it said "No tournaments yet."
        assert "No tournaments on this page." in past and "No tournaments yet" not in past
        assert 'href="/tournaments?page=1">' in past
    finally:
        site.app.config["PAGE_SIZE"] = 50


def test_user_text_is_escaped_everywhere(client: FlaskClient, site: Site) -> None:
    pages = [
        "/",
        "/bots",
        f"/bots/{_bot(XSS_NAME)}",
        "/bots/random",
        f"/tournaments/{FINISHED}",
        f"/games/{FIRST_GAME}",
        f"/games/{FIRST_GAME}/replay",
        f"/games/{FINISHED}-set-00001-g0",
        "/games",
    ]
    for path in pages:
        html = _html(client, path)
        assert "<img src=x" not in html, path
        assert "<script>alert" not in html, path
        assert "<b>bold" not in html, path
    assert "&lt;img src=x onerror=alert(1)&gt;" in _html(client, "/")
    assert "&lt;script&gt;alert(&#39;stderr&#39;)" in _html(client, f"/games/{FIRST_GAME}")
    assert "&lt;em&gt;bot&lt;/em&gt;" in _html(client, "/bots/greedy")
    noted = _html(client, f"/games/{FINISHED}-set-00001-g0")
    from markupsafe import escape

    assert f"<bdi>{escape(XSS_NOTE)}</bdi>" in noted  # its direction controls stay inside
    # The JSON twins carry the text as data; the browser tests check it is shown as text.
    frames = _json(client, f"/api/games/{FINISHED}-set-00001-g0/replay")["frames"]
    assert any(f["decision"] and f["decision"].get("note") == XSS_NOTE for f in frames)


@pytest.mark.parametrize("suffix", ["", "/replay", "/record.jsonl"])
def test_a_game_played_again_answers_to_the_id_its_game_master_gave_it(
    client: FlaskClient, suffix: str
) -> None:
    # The game master's log names a set played again as GAME_ID.2; it is stored as GAME_ID.
    stored = client.get(f"/api/games/{FIRST_GAME}{suffix}")
    again = client.get(f"/api/games/{FIRST_GAME}.2{suffix}")
    assert stored.status_code == again.status_code == 200
    assert again.get_data() == stored.get_data()
    assert client.get(f"/games/{FIRST_GAME}.2{suffix}").status_code == 200


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/games/no-such-game", "no game 'no-such-game'"),
        ("/games/no-such-game/replay", "no game 'no-such-game'"),
        ("/games/no-such-game/record.jsonl", "no game 'no-such-game'"),
        ("/tournaments/t-nope", "no tournament 't-nope'"),
        ("/bots/nobody", "no bot named 'nobody'"),
        ("/bots/greedy/9.9", "has no version '9.9'"),
        ("/no/such/page", "there is no page at '/no/such/page'"),
    ],
)
def test_unknown_ids_give_helpful_404s(client: FlaskClient, path: str, message: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    assert message.replace("'", "&#39;") in response.get_data(as_text=True)
    if not path.startswith("/no/"):
        data = _json(client, "/api" + path, 404)
        assert data["status"] == 404 and message in data["message"]


def test_the_replay_page_replays_a_record_once(site: Site, monkeypatch: pytest.MonkeyPatch):
    # Where the hands start takes a pass over the record: 0.4-0.7 s for a 100-hand game, on
    # every visit, until it was cached (records never change).
    import importlib

    replay = importlib.import_module("dashboard.views.replay")  # the module, not its blueprint
    passes: list[str] = []

    def counted(record: bytes) -> list[dict[str, int]]:
        passes.append("pass")
        return hand_starts(record)

    monkeypatch.setattr(replay, "hand_starts", counted)
    app = create_app({"DATABASE_URL": site.url, "TESTING": True})  # a cache of its own
    try:
        client = app.test_client()
        pages = [_html(client, f"/games/{FIRST_GAME}/replay") for _ in range(3)]
    finally:
        app.extensions["arena_database"].dispose()
    assert passes == ["pass"] and all('<option value="0">1</option>' in page for page in pages)
    assert "<noscript>" in pages[0] and "The replay needs JavaScript" in pages[0]


@pytest.mark.parametrize("perspective", ["full", "2"])
def test_replay_frames_are_gzipped_for_clients_that_take_it(
    client: FlaskClient, perspective: str
) -> None:
    import gzip

    path = f"/api/games/{FIRST_GAME}/replay?perspective={perspective}"
    plain = client.get(path)
    packed = client.get(path, headers={"Accept-Encoding": "gzip, deflate"})
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip"
    assert (
        "Accept-Encoding" in packed.headers["Vary"] and "Accept-Encoding" in plain.headers["Vary"]
    )
    assert gzip.decompress(packed.get_data()) == plain.get_data()
    assert len(packed.get_data()) * 5 < len(plain.get_data())
    refused = client.get(path, headers={"Accept-Encoding": "gzip;q=0, deflate"})
    assert "Content-Encoding" not in refused.headers and refused.get_data() == plain.get_data()


def test_bad_perspective_is_a_400(client: FlaskClient) -> None:
    data = _json(client, f"/api/games/{FIRST_GAME}/replay?perspective=north", 400)
    assert "perspective 'north'" in data["message"]
    page = client.get(f"/games/{FIRST_GAME}/replay?perspective=9")  # it showed the full deal
    assert page.status_code == 400 and "perspective &#39;9&#39;" in page.text, page.text


def test_empty_database_pages(empty_client: FlaskClient) -> None:
    for path in ("/", "/bots", "/tournaments", "/games"):
        html = _html(empty_client, path)
        assert 'class="empty"' in html
    assert _json(empty_client, "/api/leaderboard")["rows"] == []
    assert _json(empty_client, "/api/bots") == {"bots": []}
    assert _json(empty_client, "/api/tournaments")["tournaments"] == []
    assert _json(empty_client, "/api/games")["games"] == []
    assert _json(empty_client, "/healthz")["status"] == "ok"
    assert _json(empty_client, "/api/games/x", 404)["message"] == "no game 'x'"


def test_chart_ticks_are_whole_games_drawn_where_they_are() -> None:
    from dashboard.charts import line_chart

    two = line_chart([1, 2], [1500.0, 1510.0])
    assert two is not None and [label for _, label in two.x_ticks] == ["1", "2"]
    four = line_chart([1, 2, 3, 4], [1500.0, 1510.0, 1490.0, 1520.0], width=720)
    assert four is not None
    left, right = 48, 12  # the chart's margins
    per_game = (720 - left - right) / 3
    assert four.x_ticks == [(48.0, "1"), (round(48 + per_game, 1), "2"), (708.0, "4")]


def test_a_gauntlet_names_its_champion_and_shows_its_row_alone(tmp_path: Path) -> None:
    # Among the bots sorted by name, a gauntlet's champion was lost: it read as a round robin,
    # with a crosstable of n x n cells of which only the champion's row and column were played.
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    with open_database(url) as db:
        fill(db, ("zeta", "greedy", "random"), gauntlet=True, rate=False, tournament_id="t-g")
        fill(db, ("zeta", "greedy"), rate=False, tournament_id="t-rr")
    client = create_app({"DATABASE_URL": url}).test_client()
    listed = _html(client, "/tournaments")
    assert "<strong>zeta@1.0</strong> against greedy@1.0, random@1.0" in listed
    page = _html(client, "/tournaments/t-g")
    assert "gauntlet of <strong>zeta@1.0</strong> against 2 opponents" in page
    assert page.count('class="rowhead"') == 1 and 'href="/bots/zeta/1.0"' in page
    data = _json(client, "/api/tournaments/t-g")
    assert data["champion"] == "zeta@1.0" and len(data["crosstable"]) == 3  # the data, whole
    assert _json(client, "/api/tournaments/t-rr")["champion"] is None
    assert [_json(client, f"/api/tournaments/{t}")["kind"] for t in ("t-g", "t-rr")] == [
        "gauntlet",
        "round-robin",
    ]


def test_a_match_is_called_one_and_says_it_stopped_early(tmp_path: Path) -> None:
    # `arena match` stores a gauntlet of two; the dashboard called it "gauntlet of A against 1
    # opponent · 40 sets per pair" beside "7 of 7 sets done".
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    with open_database(url) as db:
        fill(db, ("zeta", "greedy"), gauntlet=True, sets_per_pair=3, tournament_id="t-m")
        with db.session() as session:
            match = repo.get_tournament(session, "t-m")
            match.sets_per_pair = 40  # its SPRT stopped it at 3
            match.limits = {**match.limits, "in_process": True}  # played by `arena match` itself
            session.commit()
    client = create_app({"DATABASE_URL": url}).test_client()
    page = _html(client, "/tournaments/t-m")
    assert "match <strong>zeta@1.0</strong> vs greedy@1.0" in page, page
    assert "40 duplicate sets per pair (stopped early after 3: the rest unplayed)" in page
    # Called a match once: the list said "match match" of a match played in-process.
    listed = _html(client, "/tournaments")
    assert "<td>match <span" in listed and ">in-process</span>" in listed, listed
    assert listed.count(">match<") + listed.count(">match ") == 1, listed
    data = _json(client, "/api/tournaments/t-m")
    assert data["planned_sets"] == 3 and data["kind"] == "match"


def test_a_running_tournament_says_how_long_it_has_run_and_has_left(tmp_path: Path) -> None:
    # `tournament status` gave elapsed time and an ETA; the tournament page gave neither.
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    with open_database(url) as db:
        fill(db, ("zeta", "greedy"), sets_per_pair=1, pending_sets=3, tournament_id="t-run")
        with db.session() as session:
            t = repo.get_tournament(session, "t-run")
            t.started = datetime.now(UTC) - timedelta(hours=1)  # 1 of 4 sets in an hour
            repo.mark_set_running(session, repo.game_set_id("t-run", 1))
            session.commit()
    client = create_app({"DATABASE_URL": url}).test_client()
    status = _json(client, "/api/tournaments/t-run/status")
    assert 3600 <= status["elapsed_s"] < 3700 and 3 * 3600 <= status["eta_s"] < 3 * 3700
    assert status["pace"] == "elapsed 1h00m · ETA 3h00m", status
    page = _html(client, "/tournaments/t-run")
    assert '<span id="pace">· elapsed 1h00m · ETA 3h00m</span>' in page


def test_a_damaged_stored_record_is_said_to_be_damaged(tmp_path: Path) -> None:
    # Bytes that are no longer zlib: every page of the game was a bare 500, export a traceback.
    from sqlalchemy import update

    from arena.storage.models import Game
    from tests.dashboard.fill import fill

    url = f"sqlite:///{tmp_path / 'arena.db'}"
    with open_database(url) as db:
        fill(db, ("greedy", "random"))
        with db.session() as s:
            s.execute(update(Game).where(Game.id == FIRST_GAME).values(record_z=b"not zlib"))
            s.commit()
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    try:
        client = app.test_client()
        for path in (
            f"/games/{FIRST_GAME}",
            f"/games/{FIRST_GAME}/replay",
            f"/games/{FIRST_GAME}/record.jsonl",
            f"/api/games/{FIRST_GAME}/replay",
        ):
            response = client.get(path)
            assert response.status_code == 500, path
            assert f"the stored record of game {FIRST_GAME} is damaged" in response.get_data(
                as_text=True
            ), path
    finally:
        app.extensions["arena_database"].dispose()


NESTED_3000_DEEP = "{" + '"a":{' * 3000 + "}" * 3001


@pytest.mark.parametrize("path", ["/", "/api/leaderboard", "/bots/greedy", "/api/bots/greedy"])
@pytest.mark.parametrize("ruleset", ['{"points":null}', '{"points":[1,2]}', '{"max_hands":"x"}'])
def test_a_ruleset_that_is_no_ruleset_is_a_404_not_a_500(
    client: FlaskClient, path: str, ruleset: str
) -> None:
    # A TypeError (or RecursionError) in reading the ruleset was an HTTP 500.
    response = client.get(f"{path}?ruleset={quote(ruleset)}")
    assert response.status_code == 404, response.get_data(as_text=True)[:300]
    assert "the rulesets are standard, wiki-2010" in response.get_data(as_text=True)


@pytest.mark.parametrize(
    "path", ["/", "/api/leaderboard", "/bots/greedy/1.0", "/api/bots/greedy/1"]
)
@pytest.mark.parametrize(
    ("ruleset", "reason"),
    [("{bad", "Expecting property name"), (NESTED_3000_DEEP, "maximum recursion depth")],
)
def test_ruleset_json_that_does_not_parse_is_a_400_saying_why(
    client: FlaskClient, path: str, ruleset: str, reason: str
) -> None:
    # It was a 404 "no ruleset '{bad'", as if the JSON were a name.
    response = client.get(f"{path}?ruleset={quote(ruleset)}")
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    assert "is not valid JSON: " + reason in response.get_data(as_text=True)


def test_a_stored_record_nested_past_what_json_reads_is_unplayable_not_a_500(
    tmp_path: Path,
) -> None:
    import zlib

    from sqlalchemy import update

    from arena.storage.models import Game
    from tests.dashboard.fill import fill

    url = f"sqlite:///{tmp_path / 'arena.db'}"
    deep = zlib.compress(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    with open_database(url) as db:
        fill(db, ("greedy", "random"))
        with db.session() as s:
            s.execute(update(Game).where(Game.id == FIRST_GAME).values(record_z=deep))
            s.commit()
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    try:
        client = app.test_client()
        assert client.get(f"/games/{FIRST_GAME}").status_code == 200
        replay = client.get(f"/api/games/{FIRST_GAME}/replay")
        assert replay.status_code == 422 and replay.get_json()["error"] == "Unplayable record"
    finally:
        app.extensions["arena_database"].dispose()
