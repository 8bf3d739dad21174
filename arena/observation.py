"""What one seat knows: its own cards and public information, never another hand or the stock."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from arena.cards import Card, Suit
from arena.game import Game, team_of
from arena.legal import Phase


@dataclass(frozen=True, slots=True)
class SeenTrick:
    leader: int
    cards: tuple[tuple[int, Card], ...]  # (seat, card) in the order played
    winner: int | None  # None while the trick is in progress


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything a seat may know at one moment (ARCHITECTURE §3): enough to play statelessly."""

    seat: int
    team: int
    ruleset: str
    hand_number: int
    dealer: int
    phase: Phase
    to_act: int | None
    hand: tuple[Card, ...]  # own cards, canonical order
    card_counts: tuple[int, ...]  # cards held by each seat
    stock_count: int
    auction: tuple[tuple[int, str], ...]  # (seat, action text) in order
    high_bid: int
    bidder: int | None
    contract: int | None
    trump: Suit | None
    discarded: tuple[int, ...]  # face-down discards per seat (counts only)
    drawn: tuple[int, ...]  # cards drawn per seat (counts only)
    given: tuple[tuple[int, int, tuple[Card, ...]], ...]  # (from, to, cards) given face up
    out: tuple[bool, ...]
    trick: SeenTrick | None  # the trick in progress
    tricks: tuple[SeenTrick, ...]  # completed tricks of this hand
    points: tuple[int, int]  # points each team has taken in this hand so far
    scores: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values: cards and suits as text. (Not dataclasses.asdict, which
        deep-copies every value: most of the time of a game's replay went there.)"""
        d = {name: getattr(self, name) for name in _FIELDS}
        d["phase"] = self.phase.value
        d["hand"] = [str(c) for c in self.hand]
        d["trump"] = None if self.trump is None else str(self.trump)
        d["given"] = [[f, t, [str(c) for c in cs]] for f, t, cs in self.given]
        d["trick"] = None if self.trick is None else _trick_dict(self.trick)
        d["tricks"] = [_trick_dict(t) for t in self.tricks]
        return d


_FIELDS = tuple(f.name for f in fields(Observation))


def _trick_dict(trick: SeenTrick) -> dict[str, Any]:
    return {
        "leader": trick.leader,
        "cards": [[s, str(c)] for s, c in trick.cards],
        "winner": trick.winner,
    }


def observe(game: Game, seat: int) -> Observation:
    """The observation of ``seat``: built only from its own hand and public information."""
    trick = None
    if game.phase is Phase.PLAY and game.leader is not None:
        trick = SeenTrick(game.leader, tuple(game.trick), None)
    return Observation(
        seat=seat,
        team=team_of(seat),
        ruleset=game.ruleset.name,
        hand_number=game.hand_number,
        dealer=game.dealer,
        phase=game.phase,
        to_act=game.to_act,
        hand=tuple(game.hands[seat]),
        card_counts=tuple(len(h) for h in game.hands),
        stock_count=len(game.stock),
        auction=tuple((s, str(a)) for s, a in game.auction),
        high_bid=game.high_bid,
        bidder=game.bidder,
        contract=game.contract,
        trump=game.trump,
        discarded=tuple(game.discard_counts),
        drawn=tuple(game.draw_counts),
        given=tuple(game.given),
        out=tuple(game.out),
        trick=trick,
        tricks=tuple(SeenTrick(lead, cards, win) for lead, cards, win in game.tricks),
        points=(game.points[0], game.points[1]),
        scores=(game.scores[0], game.scores[1]),
    )
