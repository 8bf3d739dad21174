"""`arena verify`: records that re-play pass; every mismatch is named and located."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arena.cli import main
from arena.errors import RecordError
from arena.game import Game
from arena.play import play_game
from arena.record import game_record
from arena.rulesets import RULESETS, STANDARD
from arena.summary import result_line
from arena.verify import verify_text
from sample_agents.greedy_bot import GreedyPlayer
from sample_agents.random_bot import RandomPlayer

AGENTS = ["greedy", "random", "greedy", "random"]


def _record(ruleset_name: str = "standard", seed: int = 11) -> str:
    players = [GreedyPlayer(), RandomPlayer(seed), GreedyPlayer(), RandomPlayer(seed + 1)]
    game = play_game(RULESETS[ruleset_name], seed, players)
    return game_record(game, AGENTS, f"verify-{seed}")


@pytest.mark.parametrize("name", list(RULESETS))
def test_a_played_game_verifies_with_its_result(name: str) -> None:
    text = _record(name)
    end = json.loads(text.splitlines()[-1])
    verified = verify_text(text)
    assert list(verified.scores) == end["scores"]
    assert verified.winner == end["winner"]
    assert verified.reason == end["reason"]
    assert verified.decisions == text.count('"event":"action"')


def test_faults_count_those_between_decisions_too() -> None:
    lines = _record().splitlines()
    between = {"event": "fault", "hand": 1, "seat": 2, "fault": "malformed", "detail": "x"}
    lines.insert(3, json.dumps(between))
    assert verify_text("\n".join(lines) + "\n").faults == 1


def _tamper(text: str, event: str, change: Callable[[dict[str, Any]], None], nth: int = 0) -> str:
    lines = text.splitlines()
    seen = 0
    for i, raw in enumerate(lines):
        line = json.loads(raw)
        if line.get("event") == event:
            if seen == nth:
                change(line)
                lines[i] = json.dumps(line)
                return "\n".join(lines) + "\n"
            seen += 1
    raise AssertionError(f"no {event} line {nth}")


def _bump_points(line: dict[str, Any]) -> None:
    line["points"][0] += 1


def _bump_score(line: dict[str, Any]) -> None:
    line["scores"][1] += 5


def _swap_deal_card(line: dict[str, Any]) -> None:
    line["hands"][0][0] = line["hands"][1][0]  # one card twice, another missing


def _wrong_dealer(line: dict[str, Any]) -> None:
    line["dealer"] = (line["dealer"] + 1) % 4


def _trick_winner(line: dict[str, Any]) -> None:
    line["winner"] = (line["winner"] + 1) % 4


def _hide_a_discard(line: dict[str, Any]) -> None:
    line["cards"] = line["cards"][1:] if line["cards"] else ["AS"]


@pytest.mark.parametrize(
    ("event", "change", "expected"),
    [
        ("hand_end", _bump_points, "§3.6"),
        ("game_end", _bump_score, "§4"),
        ("deal", _swap_deal_card, "one full pack"),
        ("deal", _wrong_dealer, "passes clockwise"),
        ("trick", _trick_winner, "trick event: winner"),
        ("trick", _trick_winner, "(RULES.md §3.5: play)"),
        ("discard", _hide_a_discard, "discard event: cards is"),
        ("discard", _hide_a_discard, "(RULES.md §3.4: the re-deal)"),
    ],
)
def test_a_tampered_record_is_refused_naming_hand_line_and_rule(
    event: str, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    bad = _tamper(_record(), event, change)
    with pytest.raises(RecordError) as exc:
        verify_text(bad, "game.jsonl")
    message = str(exc.value)
    assert message.startswith("game.jsonl: ")
    assert "line " in message and expected in message


def test_an_illegal_decision_is_refused_with_the_rule() -> None:
    text = _record()
    lines = [json.loads(raw) for raw in text.splitlines()]
    deal = next(line for line in lines if line.get("event") == "deal")
    i, play = next(
        (i, line)
        for i, line in enumerate(lines)
        if line.get("event") == "action" and line["action"].startswith("play ")
    )
    # A card an opponent was dealt never reaches this seat's hand (only partners give cards).
    play["action"] = "play " + deal["hands"][(play["seat"] + 1) % 4][0]
    bad = "\n".join(json.dumps(line) for line in lines)
    with pytest.raises(RecordError, match=rf"hand 1, line {i + 1}: illegal action .*not in seat"):
        verify_text(bad, "game.jsonl")


def test_a_record_cut_short_is_refused() -> None:
    lines = _record().splitlines()
    with pytest.raises(RecordError, match="ends before the game does"):
        verify_text("\n".join(lines[: len(lines) // 2]), "cut.jsonl")


def test_a_record_cut_at_a_hands_end_is_refused_as_cut_short() -> None:
    lines = _finished_record()
    cut = lines.index(_first(lines, "hand_end")) + 1
    assert lines[cut]["event"] == "deal", "the game goes on to hand 2"
    with pytest.raises(RecordError, match=r"ends before the game does \(hand 2\)"):
        verify_text(_text(lines[:cut]), "cut.jsonl")


def test_not_json_is_refused_with_its_line() -> None:
    lines = _record().splitlines()
    lines[3] = "{not json"
    with pytest.raises(RecordError, match=r"cut.jsonl: line 4, column 2: not JSON \(Expecting"):
        verify_text("\n".join(lines), "cut.jsonl")


def test_an_aborted_game_is_refused_as_no_record() -> None:
    # RECORD.md's results are target, max_hands and forfeit: an aborted game has none, and
    # everything before its game_end line must still check (the refusal names that line).
    game = Game(STANDARD, 3)
    for _ in range(30):
        game.apply(game.legal().first())
    game.abort("the game master shut down")
    text = game_record(game, AGENTS, "aborted")
    with pytest.raises(
        RecordError,
        match=rf"line {len(text.splitlines())}: game_end reason "
        r"'aborted'.*an aborted game has no result, so no record",
    ):
        verify_text(text)


def _finished_record() -> list[dict[str, Any]]:
    return [json.loads(line) for line in _record().splitlines()]


def _text(lines: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(line) for line in lines)


def test_a_forfeit_after_the_game_ended_is_refused() -> None:
    lines = _finished_record()
    end = lines[-1]
    assert end["reason"] in ("target", "max_hands")
    loser = end["winner"] if end["winner"] is not None else 0  # a seat of the winning team
    lines.append({"event": "forfeit", "hand": lines[-2]["hand"], "seat": loser})
    lines.append({**end, "winner": 1 - loser, "reason": "forfeit", "forfeit_seat": loser})
    with pytest.raises(RecordError, match="line after the game_end line"):
        verify_text(_text(lines))


@pytest.mark.parametrize("extra", [{"event": "made-up"}, {"note": "no event"}, "game_end"])
def test_no_line_may_follow_the_result(extra: Any) -> None:
    # RECORD.md: game_end is the last line; even a kind verify does not know may not follow.
    lines = _finished_record()
    lines.append(lines[-1] if extra == "game_end" else extra)
    with pytest.raises(RecordError, match=f"line {len(lines)}: a line after the game_end line"):
        verify_text(_text(lines))


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("header", "line 3: a second header"),
        ({"note": "no event"}, 'line 3: a line with no "event"'),
        ({"event": 7, "hand": 1}, 'line 3: a line with no "event"'),
    ],
)
def test_every_line_after_the_header_is_an_event(line: Any, said: str) -> None:
    # RECORD.md: one header, first; a second one (say, of another game) is no line to pass over.
    lines = _finished_record()
    lines.insert(2, lines[0] if line == "header" else line)
    with pytest.raises(RecordError, match=said):
        verify_text(_text(lines))
    lines[2] = {"event": "made-up", "hand": 1}  # an event of a kind verify does not know is fine
    assert verify_text(_text(lines)).reason == lines[-1]["reason"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda ls: ls[0].update(first_dealer=5), "first_dealer 5 is not a seat"),
        (lambda ls: ls[0]["seats"][1].update(team=0), "teams 0, 1, 0, 1"),
        (lambda ls: ls[0].pop("seats"), 'no "seats"'),
        (
            lambda ls: next(x for x in ls if x.get("event") == "action").pop("seat"),
            "needs the seat",
        ),
        (lambda ls: ls.insert(3, {"event": "forfeit", "hand": 1, "seat": "x"}), "no seat 'x'"),
        (lambda ls: ls.insert(3, {"event": "forfeit", "hand": 1, "seat": 9}), "no seat 9"),
        (
            lambda ls: [x for x in ls if x.get("event") == "deal"][-1].update(hand=[2]),
            r"a deal line's hand must be a whole number, not \[2\]",
        ),
        (
            lambda ls: [x for x in ls if x.get("event") == "deal"][-1].update(hand={"n": 2}),
            "a deal line's hand must be a whole number",
        ),
    ],
)
def test_missing_or_impossible_fields_are_refused_not_crashed_on(
    change: Callable[[list[dict[str, Any]]], object], message: str
) -> None:
    lines = _finished_record()
    change(lines)
    with pytest.raises(RecordError, match=message):
        verify_text(_text(lines))


def _first(lines: list[dict[str, Any]], event: str) -> dict[str, Any]:
    return next(line for line in lines if line.get("event") == event)


def _no_dirt_follow(lines: list[dict[str, Any]]) -> None:
    custom = STANDARD.parameters()
    del custom["dirt_follow"]
    lines[0]["ruleset"] = custom


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda ls: ls[0].pop("game_id"), 'bad header: no "game_id"'),
        (lambda ls: ls[0].update(game_id=7), "game_id must be a string"),
        (lambda ls: ls[0]["seats"][2].pop("agent"), "seat 2 names no agent"),
        (lambda ls: ls[0].update(first_dealer=str(ls[0]["first_dealer"])), "is not a seat"),
        (lambda ls: ls[0]["seats"][1].update(team=True), "teams 0, 1, 0, 1"),
        (_no_dirt_follow, r"gives every parameter; missing \['dirt_follow'\]"),
        (lambda ls: _first(ls, "action").update(fault="bogus"), "fault is 'bogus'; RECORD.md"),
        (lambda ls: _first(ls, "action").update(fault=None), "fault is None"),
        (
            lambda ls: ls.insert(3, {"event": "fault", "hand": 1, "seat": 2, "fault": "slow"}),
            "fault is 'slow'",
        ),
        (lambda ls: _first(ls, "action").update(hand="1"), "action in hand '1' but hand 1"),
        (
            lambda ls: _first(ls, "hand_end").update(made=int(_first(ls, "hand_end")["made"])),
            "made is",
        ),
        (
            lambda ls: _first(ls, "hand_end").update(
                scores=[float(x) for x in _first(ls, "hand_end")["scores"]]
            ),
            "scores is",
        ),
        (lambda ls: ls[-1].update(winner=bool(ls[-1]["winner"])), "winner is"),
    ],
)
def test_what_record_md_rules_out_is_refused_types_included(
    change: Callable[[list[dict[str, Any]]], object], message: str
) -> None:
    lines = _finished_record()
    assert lines[-1]["winner"] in (0, 1)  # so that a bool stands for it
    change(lines)
    with pytest.raises(RecordError, match=message):
        verify_text(_text(lines))


def test_a_blank_line_or_a_key_given_twice_is_refused() -> None:
    lines = _record().splitlines()
    with pytest.raises(RecordError, match="line 4: blank"):
        verify_text("\n".join([*lines[:3], "", *lines[3:]]))
    twice = lines[2].replace('"action":', '"action":"pass","action":', 1)
    assert twice != lines[2]
    with pytest.raises(RecordError, match="line 3: the key 'action' appears twice"):
        verify_text("\n".join([*lines[:2], twice, *lines[3:]]))


def test_derived_events_may_be_left_out_of_any_hand_but_not_made_up() -> None:
    lines = _finished_record()
    derived = ("discard", "give", "draw", "out", "trick", "dead")
    first_hand_bare = [x for x in lines if not (x.get("event") in derived and x["hand"] == 1)]
    assert len(first_hand_bare) < len(lines)
    assert verify_text(_text(first_hand_bare)).hands == verify_text(_text(lines)).hands
    some = [x for i, x in enumerate(lines) if not (x.get("event") in derived and i % 3)]
    verify_text(_text(some))
    trick = _first(lines, "trick")
    doubled = list(lines)
    doubled.insert(lines.index(trick) + 1, trick)
    with pytest.raises(RecordError, match="trick event where re-playing gives none"):
        verify_text(_text(doubled))


def test_a_missing_decision_is_named_as_one() -> None:
    lines = _finished_record()
    end = lines.index(_first(lines, "hand_end"))
    last_play = max(i for i in range(end) if lines[i].get("event") == "action")
    seat = lines[last_play]["seat"]
    del lines[last_play]
    with pytest.raises(RecordError, match=rf"the rules still wait for seat {seat} \(play\)"):
        verify_text(_text(lines))


def test_a_missing_deal_is_said_once() -> None:
    lines = [x for x in _finished_record() if not (x.get("event") == "deal" and x["hand"] == 2)]
    with pytest.raises(RecordError) as exc:
        verify_text(_text(lines), "game.jsonl")
    assert str(exc.value).count("game.jsonl") == 1 and "no deal line for hand 2" in str(exc.value)


def test_a_custom_ruleset_under_a_standard_name_is_reported_as_custom() -> None:
    lines = _finished_record()
    lines[0]["ruleset"] = STANDARD.parameters()
    assert verify_text(_text(lines)).ruleset == "standard"
    lines[0]["ruleset"] = dict(STANDARD.parameters(), max_hands=99)  # the game had fewer
    assert verify_text(_text(lines)).ruleset == "standard (custom parameters)"


def test_cli_refuses_an_aborted_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    game = Game(STANDARD, 3)
    for _ in range(30):
        game.apply(game.legal().first())
    game.abort("the game master shut down")
    path = tmp_path / "aborted.jsonl"
    path.write_text(game_record(game, AGENTS, "aborted"))
    assert main(["verify", str(path)]) == 1
    assert "an aborted game has no result, so no record" in capsys.readouterr().err


def test_a_forfeit_verifies_and_names_the_losing_team() -> None:
    game = Game(STANDARD, 5)
    for _ in range(12):
        game.apply(game.legal().first())
    game.forfeit(1, "crash")
    record = game_record(game, AGENTS, "forfeit")
    verified = verify_text(record)
    assert verified.reason == "forfeit" and verified.winner == 0
    # The forfeit line is the arena's own: game_end's reason and forfeit_seat tell it all
    # (RECORD.md). A record without it was refused: "game_end line where the rules produce
    # nothing (the rules still wait for seat ...)".
    lines = [json.loads(line) for line in record.splitlines()]
    kept = [line for line in lines if line.get("event") != "forfeit"]
    assert len(kept) == len(lines) - 1
    assert verify_text(_text(kept)) == verified
    kept[-1]["forfeit_seat"] = 2  # its team won, says the record
    with pytest.raises(RecordError, match="winner is 0 but re-playing gives 1"):
        verify_text(_text(kept))


def test_cli_exit_status_and_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    text = _record()
    good.write_text(text)
    bad.write_text(_tamper(text, "hand_end", _bump_points))
    assert main(["verify", str(good)]) == 0
    v = verify_text(text)
    # Scores read "A to B": with a negative score, "262--314" was hard to read.
    assert f"OK   {good}: " in (out := capsys.readouterr().out)
    assert f"{v.scores[0]} to {v.scores[1]} ({v.reason})" in out
    assert main(["verify", str(good), str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"FAIL {bad}: hand 1, line" in err and "points" in err


def test_cli_names_the_winners_score_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "team 1 wins, -310 to 296" read as if the winner had fewer points: the dashboard, and
    # now `arena verify` and `arena play`, write the winner's score first.
    players = [RandomPlayer(5), GreedyPlayer(), RandomPlayer(6), GreedyPlayer()]
    game = play_game(STANDARD, 5, players)
    assert game.winner == 1 and game.scores[1] > game.scores[0]
    path = tmp_path / "won-by-team-1.jsonl"
    path.write_text(game_record(game, ["random", "greedy"] * 2, "verify-team-1"))
    assert main(["verify", str(path)]) == 0
    won, lost = game.scores[1], game.scores[0]
    assert f"team 1 wins, {won} to {lost} (target)" in capsys.readouterr().out
    line = result_line(game.events, ["random", "greedy"] * 2)
    assert line == f"team 1 (greedy+greedy) wins, {won} to {lost} (target)"


def _faulting_game(seat: int, faults: int, *, forfeit: bool, played: int = 40) -> Game:
    """A game whose `seat` faults on its first `faults` decisions, each played as the
    fallback; then it forfeits, or the game goes on."""
    game = Game(STANDARD, 3)
    for _ in range(played):
        legal = game.legal()
        if legal.seat == seat and faults:
            game.apply(legal.first(), seat, fault="timeout", detail="no reply", ms=10)
            faults -= 1
            if not faults and forfeit:
                game.forfeit(seat, "fault limit")
                break
        else:
            game.apply(legal.first())
    return game


def test_a_seat_at_the_fault_limit_must_forfeit() -> None:
    limits = {"fault_limit": 2}
    kept_on = game_record(_faulting_game(1, 2, forfeit=False), AGENTS, "g", limits=limits)
    lines = kept_on.splitlines()
    lines.append(
        json.dumps({"event": "game_end", "scores": [0, 0], "winner": None, "reason": "max_hands"})
    )
    with pytest.raises(RecordError, match="seat 1 reached the fault limit .2 faults"):
        verify_text("\n".join(lines))
    forfeited = _faulting_game(1, 2, forfeit=True)
    verified = verify_text(game_record(forfeited, AGENTS, "g", limits=limits))
    assert (verified.faults, verified.reason, verified.winner) == (2, "forfeit", 0)
    # Without a limit in the header (in-process play) faults are only counted.
    assert verify_text(game_record(_faulting_game(1, 3, forfeit=True), AGENTS, "g")).faults == 3


def test_a_fault_is_played_as_the_fallback() -> None:
    game = Game(STANDARD, 3)
    legal = game.legal()
    chosen = legal.all()[-1]
    assert chosen != legal.first()
    game.apply(chosen, legal.seat, fault="illegal", detail="x", ms=1)
    with pytest.raises(
        RecordError,
        match=rf"line 3: seat {legal.seat}'s illegal fault played '{chosen}', but the "
        rf"game master plays .* '{legal.first()}'",
    ):
        verify_text(game_record(game, AGENTS, "g"))


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda raw: raw[:-1] + ', "x": NaN}', "NaN is not JSON"),
        (lambda raw: raw[:-1] + ', "ms": -Infinity}', "-Infinity is not JSON"),
        (lambda raw: raw[:-1] + ', "note": "\\ud800"}', "half a surrogate pair"),
    ],
    ids=["NaN", "Infinity", "lone surrogate"],
)
def test_what_python_reads_but_json_is_not_is_refused(
    edit: Callable[[str], str], said: str
) -> None:
    lines = _record().splitlines()
    lines[2] = edit(lines[2])
    with pytest.raises(RecordError, match=f"line 3: .*{said}"):
        verify_text("\n".join(lines))
    # An escaped character that is one is read as it.
    lines[2] = _record().splitlines()[2][:-1] + ', "note": "\\u00e9t\\u00e9"}'
    assert verify_text("\n".join(lines)).decisions > 0


# JSON leaves these unescaped inside a string; str.splitlines() ends a line at each.
LINE_BREAKS_JSON_KEEPS = ["\u2028", "\u2029", "\x85"]


def _with_raw_in_header(text: str, char: str) -> str:
    """The record with seat 0's agent named around ``char``, written unescaped, as JSON may."""
    head, rest = text.split("\n", 1)
    header = json.loads(head)
    header["seats"][0]["agent"] = f"bot{char}one"
    return json.dumps(header, ensure_ascii=False) + "\n" + rest


@pytest.mark.parametrize("char", LINE_BREAKS_JSON_KEEPS)
def test_a_string_holding_a_unicode_line_break_is_one_line(char: str) -> None:
    text = _with_raw_in_header(_record(), char)
    assert char in text
    assert verify_text(text).reason == json.loads(text.split("\n")[-2])["reason"]


def test_a_draw_must_say_winner_null_not_leave_it_out() -> None:
    # RECORD.md: winner is a team or null for a draw, and every field it names must be there.
    ruleset = dataclasses.replace(STANDARD, max_hands=2)
    game = play_game(ruleset, 42, [RandomPlayer(42 + s) for s in range(4)])
    assert game.winner is None  # this seed's two hands end level
    lines = [json.loads(line) for line in game_record(game, AGENTS, "draw").splitlines()]
    assert verify_text(_text(lines)).winner is None
    del lines[-1]["winner"]
    with pytest.raises(RecordError, match='game_end line without "winner", which RECORD.md'):
        verify_text(_text(lines))
