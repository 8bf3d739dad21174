"""Helpers for engine tests: deals written as text, scripted games, replays and invariants."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from arena.actions import Action, ActionKind
from arena.cards import CARDS, Card, Suit, deck, parse_card, sort_key
from arena.game import Deal, Game, seeded_deal
from arena.legal import Phase
from arena.rulesets import Redeal, Ruleset
from arena.trumps import trump_table


def cards(text: str) -> list[Card]:
    """``"AS KS 5C"`` -> the cards, in the order written."""
    return [parse_card(t) for t in text.split()]


def _filler_order(pack: Iterable[Card], trump: Suit) -> list[Card]:
    """Cards to top hands up with: dirt of the other colour first, low ranks first, then the
    rest of the dirt, then (only if it cannot be helped) trumps."""
    other_colour = [s for s in Suit if s not in (trump, trump.partner)]
    opposite = int(trump.partner) * 13 + 3  # the opposite five

    def key(c: Card) -> tuple[int, int, int]:
        if c.is_joker or c.suit is trump or c == opposite:
            return (2, 0, c.rank)
        return (0 if c.suit in other_colour else 1, int(c.suit), c.rank)  # type: ignore[arg-type]

    return sorted(pack, key=key)


def make_deal(
    hands: Sequence[str],
    stock_top: str = "",
    joker: bool = True,
    fill: bool = True,
    trump: Suit = Suit.H,
) -> Deal:
    """A deal from text. Short hands are topped up with dirt (for ``trump``) of the other colour;
    the stock is ``stock_top`` followed by every card not yet dealt, in the same filler order."""
    pack = deck(joker)
    dealt = [cards(h) for h in hands]
    top = cards(stock_top)
    named = [c for h in dealt for c in h] + top
    dupes = [str(c) for c, n in Counter(named).items() if n > 1]
    assert not dupes, f"cards named twice: {dupes}"
    assert all(c in pack for c in named), "a card not in this pack"
    taken = set(named)
    rest = _filler_order((c for c in pack if c not in taken), trump)
    if fill:
        for h in dealt:
            while len(h) < 9:
                h.append(rest.pop(0))
    assert all(len(h) == 9 for h in dealt), [len(h) for h in dealt]
    return dealt, top + rest


def game_with_deals(ruleset: Ruleset, deals: Sequence[Deal], dealer: int = 0) -> Game:
    """A game whose first hands are dealt as given (later hands: seeded shuffles)."""

    def provider(hand: int, dealer_now: int) -> Deal:
        if hand <= len(deals):
            hands, stock = deals[hand - 1]
            return [list(h) for h in hands], list(stock)
        return seeded_deal(ruleset, "later-hands", hand, dealer_now)

    return Game(ruleset, seed=0, first_dealer=dealer, deal_provider=provider)


def fixed_game(
    ruleset: Ruleset,
    hands: Sequence[str],
    stock_top: str = "",
    dealer: int = 0,
    fill: bool = True,
    trump: Suit = Suit.H,
) -> Game:
    """A game whose first hand is dealt exactly as written (later hands: seeded shuffles)."""
    deal = make_deal(hands, stock_top, joker=ruleset.joker, fill=fill, trump=trump)
    return game_with_deals(ruleset, [deal], dealer)


def refill_deal_for(
    ruleset: Ruleset, trump: Suit, finals: Sequence[str], dealer: int = 0
) -> tuple[Deal, list[str]]:
    """A refill-ruleset deal after whose re-deal (giving nothing) seat s holds ``finals[s]``,
    and the re-deal decisions that get there.

    A non-dealer's final hand is its dealt trumps plus the dirt it draws; the dealer keeps every
    trump left over, so every trump of the pack must appear in some final hand.
    """
    assert ruleset.redeal is Redeal.REFILL and ruleset.dealer_picks
    table = trump_table(ruleset, trump)
    final = [cards(f) for f in finals]
    pack = deck(ruleset.joker)
    in_finals = {c for f in final for c in f}
    missing = [str(c) for c in pack if table.is_trump[c] and c not in in_finals]
    assert not missing, f"trumps in no final hand: {missing}"
    order = [(dealer + k) % 4 for k in range(1, 4)]
    dealt: list[list[Card]] = [[], [], [], []]
    top: list[Card] = []
    for s in order:
        trumps = [c for c in final[s] if table.is_trump[c]]
        dirt = [c for c in final[s] if not table.is_trump[c]]
        assert len(trumps) <= 9
        assert len(dirt) == max(0, 6 - len(trumps)), f"seat {s} draws exactly its dirt"
        dealt[s] = trumps
        top += dirt
    dealer_trumps = [c for c in final[dealer] if table.is_trump[c]]
    dealer_dirt = [c for c in final[dealer] if not table.is_trump[c]]
    assert len(dealer_trumps) + len(dealer_dirt) == max(6, len(dealer_trumps))
    dealt[dealer] = (dealer_dirt + dealer_trumps)[:9]
    # the dealer's other trumps come from the stock's end; fillers must be dirt
    taken = {c for h in dealt for c in h} | set(top)
    rest = _filler_order((c for c in pack if c not in taken), trump)
    for s in range(4):
        while len(dealt[s]) < 9:
            nxt = rest.pop(0)
            assert not table.is_trump[nxt], "not enough dirt to fill the deal"
            dealt[s].append(nxt)
    decisions: list[str] = []
    for s in order:
        if len([c for c in final[s] if table.is_trump[c]]) > 6:
            decisions.append("give")
    if len(dealer_trumps) < 6:
        decisions.append("keep " + " ".join(str(c) for c in dealer_dirt))
    elif len(dealer_trumps) > 6:
        decisions.append("give")
    return (dealt, top + rest), decisions


def auction_for(
    ruleset: Ruleset, bidder: int, dealer: int = 0, contract: int | None = None
) -> list[str]:
    """Actions of an auction that ``bidder`` wins at ``contract``: everyone else passes."""
    order = [(dealer + k) % 4 for k in range(1, 5)]
    i = order.index(bidder)
    return ["pass"] * i + [f"bid {contract or ruleset.min_bid}"] + ["pass"] * (3 - i)


def play_position(
    ruleset: Ruleset,
    trump: Suit,
    finals: Sequence[str],
    bidder: int,
    dealer: int = 0,
    contract: int | None = None,
) -> Game:
    """A game at the start of play with seat s holding ``finals[s]`` (refill rulesets)."""
    deal, decisions = refill_deal_for(ruleset, trump, finals, dealer)
    game = game_with_deals(ruleset, [deal], dealer)
    run(game, *auction_for(ruleset, bidder, dealer, contract), f"trump {trump}", *decisions)
    assert game.phase is Phase.PLAY, game
    for s in range(4):
        want = sorted_text(cards(finals[s]))
        if not game.out[s]:
            assert sorted_text(game.hands[s]) == want, (s, game)
    return game


def draw4_position(
    ruleset: Ruleset,
    trump: Suit,
    finals: Sequence[str],
    bidder: int,
    dealer: int = 0,
    contract: int | None = None,
) -> Game:
    """A draw4-ruleset game at the start of play with seat s holding ``finals[s]``, topped up
    to six with dirt. Every point trump must be in a final hand (with a joker pack, one card
    stays in the stock: it may be a point trump)."""
    assert ruleset.redeal is Redeal.DRAW4
    table = trump_table(ruleset, trump)
    pack = deck(ruleset.joker)
    final = [cards(f) for f in finals]
    used = {c for f in final for c in f}
    assert len(used) == sum(len(f) for f in final), "a card in two final hands"
    rest = _filler_order([c for c in pack if c not in used], trump)
    for f in final:
        while len(f) < 6:
            dirt = next(c for c in rest if not table.is_trump[c])
            rest.remove(dirt)
            f.append(dirt)
    spare = len(pack) - 52
    points_left = [c for c in rest if table.points[c]]
    assert len(points_left) <= spare, f"point trumps in no hand: {sorted_text(points_left)}"
    others = [c for c in rest if not table.points[c]]
    leftover = points_left + others[: spare - len(points_left)]
    others = others[spare - len(points_left) :]
    seat13: list[list[Card]] = []
    for f in final:
        n = 13 - len(f)
        seat13.append(f + others[:n])
        others = others[n:]
    assert not others
    order = [(dealer + k) % 4 for k in range(1, 5)]
    hands = [h[:9] for h in seat13]
    stock = [c for s in order for c in seat13[s][9:]] + leftover
    game = game_with_deals(ruleset, [(hands, stock)], dealer)
    keeps = [f"keep {' '.join(str(c) for c in final[s])}" for s in order]
    run(game, *auction_for(ruleset, bidder, dealer, contract), f"trump {trump}", *keeps)
    assert game.phase is Phase.PLAY, game
    return game


def play_trick(game: Game, *plays: str) -> dict[str, Any]:
    """Play one trick, card by card by the seat to act; return its `trick` event."""
    before = len(events_of(game, "trick"))
    for c in plays:
        game.apply(f"play {c}", seat=game.to_act)
    tricks = events_of(game, "trick")
    assert len(tricks) == before + 1, "the trick did not end"
    return tricks[-1]


def run(game: Game, *actions: str) -> Game:
    """Apply actions, each by the seat to act (so a wrong turn order shows up as an error)."""
    for text in actions:
        game.apply(text, seat=game.to_act)
    return game


def hand(game: Game, seat: int) -> str:
    return " ".join(str(c) for c in game.hands[seat])


def card_set(text: str) -> set[Card]:
    return set(cards(text))


def legal_texts(game: Game) -> list[str]:
    return [str(a) for a in game.legal_actions()]


def events_of(game: Game, kind: str, hand_number: int | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in game.events
        if e.get("event") == kind and (hand_number is None or e.get("hand") == hand_number)
    ]


# ----------------------------------------------------------------------------- replays


def replay(ruleset: Ruleset, events: Sequence[dict[str, Any]], first_dealer: int) -> Game:
    """Re-play a record's deal and action lines through a fresh Game (RECORD.md guarantee)."""
    deals: dict[int, Deal] = {}
    for e in events:
        if e.get("event") == "deal":
            deals[e["hand"]] = (
                [[parse_card(t) for t in h] for h in e["hands"]],
                [parse_card(t) for t in e["stock"]],
            )

    def provider(hand_number: int, dealer: int) -> Deal:
        hands, stock = deals[hand_number]
        return [list(h) for h in hands], list(stock)

    game = Game(ruleset, seed="replay", first_dealer=first_dealer, deal_provider=provider)
    for e in events:
        if e.get("event") == "action":
            assert e["hand"] == game.hand_number
            extra = {k: v for k, v in e.items() if k not in ("event", "hand", "seat", "action")}
            game.apply(e["action"], seat=e["seat"], **extra)
    return game


# ----------------------------------------------------------------------------- invariants


def set_aside(game: Game) -> list[Card]:
    """Cards of players who went out this hand. The engine keeps them only in its `out` events
    (its state empties the hand), so the census reads them from there."""
    found: list[Card] = []
    for e in events_of(game, "out", game.hand_number):
        found.extend(parse_card(t) for t in e["cards"])
    return found


def census(game: Game) -> list[Card]:
    """Every card of the hand in progress, wherever it is."""
    found: list[Card] = []
    for h in game.hands:
        found.extend(h)
    found.extend(game.stock)
    for d in game.discards:
        found.extend(d)
    found.extend(game.dead)
    for _leader, trick, _winner in game.tricks:
        found.extend(c for _s, c in trick)
    found.extend(c for _s, c in game.trick)
    found.extend(set_aside(game))
    return found


def check_census(game: Game) -> None:
    found = census(game)
    counts = Counter(found)
    dupes = sorted(str(c) for c, n in counts.items() if n > 1)
    assert not dupes, f"cards in two places: {dupes} in {game!r}"
    pack = set(deck(game.ruleset.joker))
    assert set(found) == pack, (
        f"missing {sorted(str(c) for c in pack - set(found))}, "
        f"extra {sorted(str(c) for c in set(found) - pack)} in {game!r}"
    )


class TurnModel:
    """An independent model of RULES.md's turn order, checked before every decision."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.hand_number = 0
        self.redeal_seats: list[tuple[Phase, int]] = []

    def _new_hand(self) -> None:
        self.hand_number = self.game.hand_number
        self.auction: list[tuple[int, Action]] = []
        self.redeal_seats = []

    def expected(self) -> int:
        g = self.game
        if g.hand_number != self.hand_number:
            self._new_hand()
        phase = g.phase
        if phase is Phase.AUCTION:
            if not self.auction:
                return (g.dealer + 1) % 4
            passed = {s for s, a in self.auction if a.kind is ActionKind.PASS}
            s = (self.auction[-1][0] + 1) % 4
            while s in passed:
                s = (s + 1) % 4
            return s
        if phase is Phase.TRUMP:
            bids = [s for s, a in self.auction if a.kind is ActionKind.BID]
            return bids[-1]
        if phase in (Phase.GIVE, Phase.KEEP):
            return self._redeal_seat(phase)
        assert phase is Phase.PLAY
        return self._play_seat()

    def _redeal_seat(self, phase: Phase) -> int:
        g = self.game
        rs = g.ruleset
        assert g.trump is not None
        table = trump_table(rs, g.trump)
        order = [(g.dealer + k) % 4 for k in range(1, 5)]
        seat = g.to_act
        assert seat is not None
        if rs.redeal is Redeal.DRAW4:
            assert phase is Phase.KEEP
            done = [s for _p, s in self.redeal_seats]
            assert done == order[: len(done)], f"draw4 keeps out of order: {done}"
            assert len(g.hands[seat]) == 13, "each player keeps from 9 + 4 cards"
            return order[len(done)]
        trumps = table.trumps_in(g.hands[seat])
        if phase is Phase.GIVE:
            assert trumps > 6, f"seat {seat} asked to give with {trumps} trumps"
        else:
            assert rs.dealer_picks and seat == g.dealer, "only the dealer picks"
            assert trumps < 6, "the dealer picks only when the pool has fewer than six trumps"
        # Decisions come in step order: givers clockwise from the dealer's left, then (standard)
        # the dealer's pick and the dealer's give; in wiki-2010 the dealer gives last.
        position = self._step_position(phase, seat, order)
        if self.redeal_seats:
            prev = self._step_position(*self.redeal_seats[-1], order)
            assert position > prev, f"re-deal decisions out of order: {self.redeal_seats}"
        return seat

    def _step_position(self, phase: Phase, seat: int, order: list[int]) -> int:
        if self.game.ruleset.dealer_picks and seat == self.game.dealer:
            return 3 if phase is Phase.KEEP else 4
        return order.index(seat)

    def _play_seat(self) -> int:
        g = self.game
        rs = g.ruleset
        assert g.table is not None
        # Who is out: exactly the players without trumps (or without cards), checked between
        # tricks; out players hold nothing.
        if not g.trick:
            for s in range(4):
                h = g.hands[s]
                should_be_out = not h or (rs.out_of_trumps and not g.table.has_trump(h))
                assert g.out[s] == should_be_out, f"seat {s} out={g.out[s]} holding {h}"
        for s in range(4):
            if g.out[s]:
                assert not g.hands[s]

        def next_active(start: int) -> int:
            for k in range(4):
                s = (start + k) % 4
                if not g.out[s]:
                    return s
            raise AssertionError("no active player but the hand goes on")

        if g.trick:
            return next_active((g.trick[-1][0] + 1) % 4)
        if not g.tricks:
            assert g.bidder is not None
            return next_active(g.bidder)
        return next_active(g.tricks[-1][2])

    def record(self, seat: int, action: Action) -> None:
        g = self.game
        if g.phase is Phase.AUCTION:
            self.auction.append((seat, action))
        elif g.phase in (Phase.GIVE, Phase.KEEP):
            self.redeal_seats.append((g.phase, seat))


def hand_points_in_play(
    ruleset: Ruleset, events: Sequence[dict[str, Any]], hand_number: int, trump: str
) -> int:
    """63 minus the points of trumps left dead in the stock (wiki-2010 only)."""
    table = trump_table(ruleset, Suit[trump])
    dead = [
        parse_card(t)
        for e in events
        if e.get("event") == "dead" and e.get("hand") == hand_number
        for t in e["cards"]
    ]
    return 63 - sum(table.points[c] for c in dead)


def check_hand_ends(game: Game) -> None:
    """Every hand_end: points add up, contract made or not, running scores, game_end."""
    rs = game.ruleset
    scores = [0, 0]
    ends = events_of(game, "hand_end")
    for e in ends:
        total = sum(e["points"])
        assert total == hand_points_in_play(rs, game.events, e["hand"], e["trump"]), e
        if rs.dealer_picks or rs.redeal is Redeal.DRAW4:
            assert total == 63, e
        team = e["bidder"] % 2
        made = e["points"][team] >= e["contract"]
        assert e["made"] == made, e
        for t in (0, 1):
            scores[t] += -e["contract"] if (t == team and not made) else e["points"][t]
        assert e["scores"] == scores, e
    end = game.events[-1]
    assert end["event"] == "game_end"
    assert end["scores"] == scores
    assert len(ends) <= rs.max_hands
    reached = [s >= rs.target for s in scores]
    last = ends[-1]
    if all(reached):
        assert end == {**end, "winner": last["bidder"] % 2, "reason": "target"}
    elif any(reached):
        assert end == {**end, "winner": reached.index(True), "reason": "target"}
    else:
        assert len(ends) == rs.max_hands and end["reason"] == "max_hands"
        expected = None if scores[0] == scores[1] else (0 if scores[0] > scores[1] else 1)
        assert end["winner"] == expected
    # no earlier hand ended the game
    for e in ends[:-1]:
        assert max(e["scores"]) < rs.target, e


Chooser = Callable[[Game, random.Random], Action]


def random_choice(game: Game, rng: random.Random) -> Action:
    """A uniformly random legal action (card choices: a random legal size and subset)."""
    legal = game.legal()
    choice = legal.choice
    if choice is None:
        return rng.choice(legal.actions)
    optional = [c for c in choice.cards if c not in choice.required]
    n = rng.randint(choice.min_count, choice.max_count) - len(choice.required)
    picked = list(choice.required) + rng.sample(optional, n)
    rng.shuffle(picked)  # the player's order: the engine compares sets
    return Action(choice.kind, None, picked)


def checked_playout(
    game: Game, rng: random.Random, choose: Chooser = random_choice, max_steps: int = 200_000
) -> Game:
    """Play to the end with invariants checked before every decision."""
    model = TurnModel(game)
    steps = 0
    while not game.is_over:
        check_census(game)
        seat = model.expected()
        assert game.to_act == seat, f"engine says seat {game.to_act}, rules say {seat}: {game!r}"
        legal = game.legal()
        assert legal.seat == seat and legal.phase is game.phase
        action = choose(game, rng)
        assert action in legal
        model.record(seat, action)
        game.apply(action, seat=seat)
        steps += 1
        assert steps < max_steps, "game does not terminate"
    assert game.to_act is None and game.hand_number <= game.ruleset.max_hands
    check_hand_ends(game)
    return game


def all_cards(joker: bool = True) -> Iterable[Card]:
    return CARDS if joker else CARDS[:52]


def sorted_text(cs: Iterable[Card]) -> str:
    return " ".join(str(c) for c in sorted(cs, key=sort_key))
