"""Replay frames: the full deal matches the engine; a seat's frames hold only what it knew."""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient

from arena.play import play_game
from arena.record import game_record
from arena.rulesets import STANDARD
from dashboard import records
from dashboard.replay import build_replay, hand_starts
from sample_agents.greedy_bot import GreedyPlayer
from sample_agents.random_bot import RandomPlayer
from tests.dashboard.fill import XSS_NOTE, Site
from tests.dashboard.oracle import cards_mentioned, hands_after_decisions


def _frames(client: FlaskClient, game_id: str, perspective: str) -> dict:
    response = client.get(f"/api/games/{game_id}/replay?perspective={perspective}")
    assert response.status_code == 200
    data: dict = response.get_json()
    return data


def _lines(record: bytes) -> list[dict]:
    return [json.loads(line) for line in record.splitlines()]


def test_full_frames_follow_the_engine_to_the_recorded_result(
    client: FlaskClient, site: Site
) -> None:
    for game_id, record in site.filled.records.items():
        lines = _lines(record)
        data = _frames(client, game_id, "full")
        frames = data["frames"]
        oracle = hands_after_decisions(record)
        decisions = [line for line in lines if line.get("event") == "action"]
        assert frames[-1]["kind"] == "game_end"
        assert frames[-1]["scores"] == lines[-1]["scores"]
        assert frames[-1]["result"]["game_end"] == {
            k: v for k, v in lines[-1].items() if k != "event"
        }
        assert data["end"]["scores"] == lines[-1]["scores"]
        assert frames[-1]["decisions"] == len(decisions)
        for frame in frames:
            if frame["kind"] in ("deal", "decision"):
                assert [set(h) for h in frame["hands"]] == oracle[frame["decisions"]]
            if frame["kind"] == "decision":
                line = decisions[frame["decisions"] - 1]
                assert frame["decision"]["action"] == line["action"]
                assert frame["decision"]["ms"] == line["ms"]
        hand_ends = [line for line in lines if line.get("event") == "hand_end"]
        ends = [f for f in frames if f["kind"] == "hand_end"]
        assert [f["scores"] for f in ends] == [h["scores"] for h in hand_ends]
        starts = [f["i"] for f in frames if f["kind"] == "deal"]
        assert [h["frame"] for h in data["hands"]] == starts
        assert [h["hand"] for h in data["hands"]] == list(range(1, len(hand_ends) + 1))
        # The page's hand links come from a re-play that describes no frame: the same starts.
        assert hand_starts(record) == data["hands"]
        page = client.get(f"/games/{game_id}/replay").get_data(as_text=True)
        assert all(f'<option value="{h["frame"]}">{h["hand"]}<' in page for h in data["hands"])


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
def test_a_seat_perspective_never_holds_another_hand(
    client: FlaskClient, site: Site, seat: int
) -> None:
    for game_id, record in site.filled.records.items():
        oracle = hands_after_decisions(record)
        seen = _frames(client, game_id, str(seat))
        frames = seen["frames"]
        full = _frames(client, game_id, "full")["frames"]
        assert "seed" not in seen  # it would re-deal every hand
        assert seen["end"] is None  # no seat knew the result before the last frame
        assert len(frames) == len(full)
        for frame, everything in zip(frames, full, strict=True):
            assert frame["stock"] is None
            # The cards it discarded and drew itself it knew: its log names them.
            own = (f"Seat {seat} discards ", f"Seat {seat} draws ")
            assert [line for line in everything["log"] if line.startswith(own)] == [
                line for line in frame["log"] if line.startswith(own)
            ]
            # Its own face-down cards it knows (it put them there); nobody else's.
            mine = everything["discards"][seat]
            assert frame["discards"] == [mine if s == seat else None for s in range(4)]
            aside = everything["aside"][seat]  # and the dirt it set aside on going out
            assert frame["aside"] == [aside if s == seat else None for s in range(4)]
            assert [h is None for h in frame["hands"]] == [s != seat for s in range(4)]
            if frame["kind"] not in ("deal", "decision"):
                continue  # at a hand's end every hand is empty
            others = set().union(*(oracle[frame["decisions"]][s] for s in range(4) if s != seat))
            leaked = others & set(cards_mentioned(frame))
            assert not leaked, (game_id, frame["i"], leaked)
            assert set(frame["hands"][seat]) == oracle[frame["decisions"]][seat]


def test_seat_frames_hide_private_decisions_and_other_notes(
    client: FlaskClient, site: Site
) -> None:
    game_id = "t-20261129-test-set-00001-g0"  # greedy (seats 0, 2) against the XSS-named bot
    record = _lines(site.filled.records[game_id])
    keeps = [line for line in record if str(line.get("action", "")).startswith("keep ")]
    assert keeps, "every short game has a dealer's pick"
    full = _frames(client, game_id, "full")["frames"]
    for seat in range(4):
        frames = _frames(client, game_id, str(seat))["frames"]
        for mine, everything in zip(frames, full, strict=True):
            decision = mine["decision"]
            if decision is None:
                continue
            assert decision["ms"] == everything["decision"]["ms"]
            if decision["seat"] == seat:
                assert decision == everything["decision"]
            else:
                assert "note" not in decision
                if everything["decision"]["action"].startswith("keep "):
                    kept = len(everything["decision"]["action"].split()) - 1
                    counted = "1 card" if kept == 1 else f"{kept} cards"  # it said "1 cards"
                    assert decision["action"] == f"keep ({counted})"
                else:
                    assert decision["action"] == everything["decision"]["action"]
    notes = {f["decision"].get("note") for f in full if f["decision"]}
    assert XSS_NOTE in notes
    assert any(line["action"].count(" ") == 1 for line in keeps), "a dealer keeps one card"


def test_a_faulted_action_shows_its_detail_to_the_full_view_and_its_seat_only(
    site: Site,
) -> None:
    # The frames dropped the record's detail. An illegal action's detail quotes what the seat
    # sent, which may name a card of its hand: only the views that see its notes show it.
    game_id, record = next(iter(site.filled.records.items()))  # seat 1 has a timeout fault
    lines = _lines(record)
    faulted = next(line for line in lines if line.get("fault"))
    seat = faulted["seat"]
    deal = next(x for x in lines if x.get("event") == "deal" and x["hand"] == faulted["hand"])
    card = deal["hands"][seat][0]
    detail = f"illegal action 'play {card}' by seat {seat}: not a legal action here"
    faulted["detail"] = detail
    told = "\n".join(json.dumps(line) for line in lines).encode()
    frames = build_replay(game_id, told).frames
    for perspective, shown in (("full", True), *((str(s), s == seat) for s in range(4))):
        decision = next(
            f["decision"]
            for f in frames[perspective]
            if f["decision"] and f["decision"].get("fault")
        )
        if shown:
            assert decision["detail"] == detail, perspective
        else:
            assert "detail" not in decision and card not in json.dumps(decision), perspective


def test_hand_end_frames_show_the_dirt_each_seat_set_aside(site: Site) -> None:
    shown = 0
    for game_id, record in site.filled.records.items():
        lines = _lines(record)
        ends = [f for f in build_replay(game_id, record).frames["full"] if f["kind"] == "hand_end"]
        for frame in ends:
            outs = [x for x in lines if x.get("event") == "out" and x["hand"] == frame["hand"]]
            assert frame["aside"] == [
                next((x["cards"] for x in outs if x["seat"] == s), []) for s in range(4)
            ]
            shown += sum(map(len, frame["aside"]))
    assert shown, "some seat goes out holding dirt"


def test_hand_end_frames_show_the_last_trick_and_the_score(site: Site) -> None:
    game_id, record = next(iter(site.filled.records.items()))
    replay = build_replay(game_id, record)
    tricks = [line for line in _lines(record) if line.get("event") == "trick"]
    ends = [f for f in replay.frames["full"] if f["kind"] == "hand_end"]
    for frame in ends:
        last = [t for t in tricks if t["hand"] == frame["hand"]][-1]
        assert frame["last_trick"]["cards"] == last["cards"]
        assert frame["last_trick"]["winner"] == last["winner"]
        assert frame["counts"] == [0, 0, 0, 0] and frame["to_act"] is None
    for seat in "0123":
        assert [f["scores"] for f in replay.frames[seat]] == [
            f["scores"] for f in replay.frames["full"]
        ]


def test_a_forfeit_ends_the_replay(site: Site) -> None:
    game_id, record = next(iter(site.filled.records.items()))
    lines = record.decode().splitlines()
    first_action = next(i for i, line in enumerate(lines) if '"event":"action"' in line)
    why = "fault limit: 5 faults (the last: illegal: 'play KH' is not legal)"
    forfeit = json.dumps({"event": "forfeit", "hand": 1, "seat": 3, "detail": why})
    end = {"event": "game_end", "scores": [0, 0], "winner": 0, "reason": "forfeit"}
    cut = [*lines[: first_action + 2], forfeit, json.dumps(end | {"forfeit_seat": 3})]
    replay = build_replay(game_id, "\n".join(cut).encode())
    last = replay.frames["full"][-1]
    assert last["kind"] == "game_end" and last["result"]["game_end"]["reason"] == "forfeit"
    assert last["decisions"] == 2
    assert f"Seat 3 forfeits: {why}" in last["log"]  # why, in the full view
    for seat in "0123":  # not in a seat's: a fault's detail may quote the seat's cards
        assert "Seat 3 forfeits" in replay.frames[seat][-1]["log"]
        assert all("KH" not in line for line in replay.frames[seat][-1]["log"])


def test_an_unplayable_record_is_reported(client: FlaskClient, site: Site) -> None:
    from dashboard.replay import ReplayError

    game_id, record = next(iter(site.filled.records.items()))
    lines = record.decode().splitlines()
    lines[2] = json.dumps({"event": "action", "hand": 1, "seat": 0, "action": "bid 99"})
    for replay in (lambda r: build_replay(game_id, r), hand_starts):
        with pytest.raises(ReplayError, match="line 3"):
            replay("\n".join(lines).encode())


def test_a_damaged_deal_line_is_reported_not_a_server_error(
    client: FlaskClient, site: Site
) -> None:
    from dashboard.replay import ReplayError

    game_id, record = next(iter(site.filled.records.items()))
    lines = record.decode().splitlines()
    deal = next(i for i, raw in enumerate(lines) if json.loads(raw).get("event") == "deal")
    lines[deal] = json.dumps({"event": "deal", "hand": 1, "dealer": 9, "hands": [], "stock": []})
    with pytest.raises(ReplayError, match="the record cannot be re-played: IndexError"):
        build_replay(game_id, "\n".join(lines).encode())


def test_replays_are_built_one_at_a_time(
    client: FlaskClient, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Builds hold the GIL: four at once finished no sooner, and held four games' frames.
    import importlib
    import threading
    from concurrent.futures import ThreadPoolExecutor

    view = importlib.import_module("dashboard.views.replay")  # the module, not its blueprint

    client.application.extensions.get("arena_caches", {}).pop("replay", None)  # all uncached
    building, most, lock = 0, 0, threading.Lock()

    def counted(game_id: str, record: bytes) -> object:
        nonlocal building, most
        with lock:
            building += 1
            most = max(most, building)
        try:
            return build_replay(game_id, record)
        finally:
            with lock:
                building -= 1

    monkeypatch.setattr(view, "build_replay", counted)
    games = list(site.filled.records)[:4]
    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(lambda g: client.get(f"/api/games/{g}/replay").status_code, games))
    assert codes == [200] * len(games) and most == 1


def test_the_game_over_line_gives_the_winners_score_first() -> None:
    # "team 1 wins, 12 to 17" read as if the winner had fewer points.
    from dashboard.replay import _end_text

    assert _end_text({"scores": [12, 17], "winner": 1, "reason": "target"}) == (
        "Game over: team 1 wins, 17 to 12 (target)"
    )
    assert _end_text({"scores": [20, 3], "winner": 0, "reason": "max_hands"}) == (
        "Game over: team 0 wins, 20 to 3 (max_hands)"
    )
    assert _end_text({"scores": [5, 5], "winner": None, "reason": "max_hands"}) == (
        "Game over: a draw at 5 to 5 (max_hands)"
    )


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])
def test_a_note_holding_a_unicode_line_break_replays_and_shows(char: str) -> None:
    """JSON leaves U+2028, U+2029 and U+0085 unescaped in a string: still one line."""
    game = play_game(
        STANDARD, 5, [GreedyPlayer(), RandomPlayer(1), GreedyPlayer(), RandomPlayer(2)]
    )
    lines = [
        json.loads(line) for line in game_record(game, ["a", "b", "c", "d"], "g").split("\n")[:-1]
    ]
    first = next(line for line in lines if line.get("event") == "action")
    first["note"] = f"thinking{char}hard"
    record = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    assert char.encode() in record
    assert build_replay("g", record).end == {k: v for k, v in lines[-1].items() if k != "event"}
    parsed = records.parse(record)
    assert parsed.problem is None
    assert parsed.line_count == len(lines)
