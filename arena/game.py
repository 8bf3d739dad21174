"""The game state machine of RULES.md §3–§4: deal, auction, trump, re-deal, play, scoring.

A `Game` is mutable for speed; ``clone()`` is cheap and explicit. Every change goes through
``apply``, which accepts exactly what ``legal()`` allows. Automatic steps (discards, refills,
going out, tricks, scoring, the next deal) happen inside ``apply`` and are logged as events,
which the record module writes out as RECORD.md lines.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from arena import actions as act
from arena.actions import Action, ActionKind, parse_action
from arena.cards import CARD_TEXT, CARDS, Card, Suit, cards_text, deck, sorted_cards
from arena.errors import ArenaError, GameOver, IllegalAction, NotYourTurn, UnparseableAction
from arena.legal import CardChoice, Legal, Phase
from arena.rulesets import DirtFollow, Redeal, Ruleset, TwoScoresFor
from arena.trumps import TrumpTable, trump_table

HAND_SIZE = 9
KEEP_SIZE = 6
DRAW4_EXTRA = 4
MAX_BID = 63

# A deal: the four hands (seat order) and the stock in drawing order.
Deal = tuple[list[list[Card]], list[Card]]
DealProvider = Callable[[int, int], Deal]  # (hand number, dealer) -> deal

Event = dict[str, Any]


def team_of(seat: int) -> int:
    return seat % 2


def seeded_deal(ruleset: Ruleset, seed: int | str, hand: int, dealer: int) -> Deal:
    """Shuffle and deal as §3.1 says, from a generator private to (seed, hand).

    The deal depends only on the seed and the hand number, so both games of a duplicate set
    see the same cards whoever sits where.
    """
    cards = deck(ruleset.joker)
    random.Random(f"sixty-three/{seed}/{hand}").shuffle(cards)
    hands: list[list[Card]] = [[], [], [], []]
    i = 0
    for _ in range(HAND_SIZE // 3):
        for k in range(1, 5):
            hands[(dealer + k) % 4].extend(cards[i : i + 3])
            i += 3
    return hands, cards[i:]


def first_dealer_for(seed: int | str) -> int:
    return random.Random(f"sixty-three/{seed}/first-dealer").randrange(4)


class Game:
    """One game of Sixty-three, from its first deal to its result."""

    def __init__(
        self,
        ruleset: Ruleset,
        seed: int | str = 0,
        first_dealer: int | None = None,
        deal_provider: DealProvider | None = None,
    ) -> None:
        self.ruleset = ruleset
        self.seed = seed
        self.first_dealer = first_dealer_for(seed) if first_dealer is None else first_dealer
        if self.first_dealer not in range(4):
            raise ValueError(f"first dealer must be a seat 0..3, not {self.first_dealer!r}")
        self._deal_provider = deal_provider or (
            lambda hand, dealer: seeded_deal(ruleset, seed, hand, dealer)
        )
        self.events: list[Event] = []
        self.scores = [0, 0]
        self.hand_number = 0
        self.dealer = (self.first_dealer - 1) % 4
        self.winner: int | None = None
        self.end_reason: str | None = None
        self._legal: Legal | None = None
        self._follow_suit = ruleset.dirt_follow is DirtFollow.SUIT  # read on every play
        self._start_hand()

    # ----------------------------------------------------------------------------- queries

    @property
    def is_over(self) -> bool:
        return self.phase is Phase.GAME_OVER

    def legal(self) -> Legal:
        """The one legality oracle: what the seat to act may do now."""
        if self._legal is None:
            self._legal = self._compute_legal()
        return self._legal

    def legal_actions(self) -> list[Action]:
        return self.legal().all()

    def clone(self) -> Game:
        other = Game.__new__(Game)
        other.__dict__.update(self.__dict__)
        other.events = list(self.events)
        other.scores = list(self.scores)
        other.hands = [list(h) for h in self.hands]
        other.stock = list(self.stock)
        other.discards = [list(d) for d in self.discards]
        other.discard_counts = list(self.discard_counts)
        other.draw_counts = list(self.draw_counts)
        other.given = list(self.given)
        other.auction = list(self.auction)
        other.passed = list(self.passed)
        other.out = list(self.out)
        other.trick = list(self.trick)
        other.tricks = list(self.tricks)
        other.points = list(self.points)
        other.dead = list(self.dead)
        other._steps = list(self._steps)
        return other

    # ----------------------------------------------------------------------------- actions

    def apply(self, action: Action | str, seat: int | None = None, **extra: Any) -> None:
        """Apply the decision of the seat to act. ``extra`` (fault, note, ms) goes to the record.

        Raises UnparseableAction, NotYourTurn, GameOver or IllegalAction, naming the action,
        the seat and the phase; the state is unchanged when it raises.
        """
        if isinstance(action, str):
            try:
                action = parse_action(action)
            except UnparseableAction as exc:
                raise UnparseableAction(
                    f"{exc} (from seat {seat if seat is not None else self.to_act} "
                    f"in phase {self.phase.value}, hand {self.hand_number})"
                ) from None
        if self.phase is Phase.GAME_OVER:
            raise GameOver(f"{str(action)!r} by seat {seat}: the game is over")
        to_act = self.to_act
        assert to_act is not None  # only a finished game has nobody to act
        if seat is not None and seat != to_act:
            raise NotYourTurn(
                f"{str(action)!r} by seat {seat} in phase {self.phase.value}: "
                f"it is seat {to_act}'s turn"
            )
        legal = self._legal or self.legal()
        # The explicit-tuple test is inlined: this is the innermost loop of every tournament.
        if (action not in legal.actions) if legal.choice is None else (action not in legal):
            reason = self.why_illegal(action) or "not a legal action here"
            raise IllegalAction(
                f"illegal action {str(action)!r} by seat {to_act} in phase {self.phase.value} "
                f"(hand {self.hand_number}): {reason}"
            )
        event: Event = {
            "event": "action",
            "hand": self.hand_number,
            "seat": to_act,
            "action": str(action),
        }
        if extra:
            event.update(extra)
        self.events.append(event)
        self._legal = None
        _DISPATCH[self.phase](self, to_act, action)

    def forfeit(self, seat: int, detail: str = "") -> None:
        """End the game at once: the seat's team loses (ARCHITECTURE §4)."""
        if self.is_over:
            raise GameOver(f"seat {seat} cannot forfeit: the game is over")
        if seat not in range(4):
            raise ArenaError(f"no seat {seat!r} to forfeit (seats are 0-3)")
        event: Event = {"event": "forfeit", "hand": self.hand_number, "seat": seat}
        if detail:
            event["detail"] = detail
        self.events.append(event)
        self._end_game(1 - team_of(seat), "forfeit", forfeit_seat=seat)

    def abort(self, detail: str) -> None:
        """End the game with no result (the game master is shutting down)."""
        self._end_game(None, "aborted", detail=detail)

    def why_illegal(self, action: Action) -> str | None:
        """Why the rules refuse ``action`` now (None if legal): the text names the rule."""
        phase = self.phase
        legal = self.legal()
        if action in legal:
            return None
        expected = {
            Phase.AUCTION: "pass or bid N",
            Phase.TRUMP: "trump S|H|D|C",
            Phase.GIVE: "give CARDS",
            Phase.KEEP: "keep CARDS",
            Phase.PLAY: "play CARD",
            Phase.GAME_OVER: "nothing",
        }[phase]
        kind_ok = {
            Phase.AUCTION: (ActionKind.PASS, ActionKind.BID),
            Phase.TRUMP: (ActionKind.TRUMP,),
            Phase.GIVE: (ActionKind.GIVE,),
            Phase.KEEP: (ActionKind.KEEP,),
            Phase.PLAY: (ActionKind.PLAY,),
        }.get(phase, ())
        if action.kind not in kind_ok:
            return f"the decision is {phase.value}: expected {expected}"
        if legal.choice is not None:
            return legal.choice.why_not(action)
        if phase is Phase.AUCTION:
            return self._why_illegal_bid(action)
        if phase is Phase.PLAY:
            return self._why_illegal_play(action)
        return None

    # ----------------------------------------------------------------------------- hands

    def _start_hand(self) -> None:
        self.hand_number += 1
        self.dealer = (self.dealer + 1) % 4
        hands, stock = self._deal_provider(self.hand_number, self.dealer)
        self.hands = [sorted_cards(h) for h in hands]
        self.stock = list(stock)
        self.events.append(
            {
                "event": "deal",
                "hand": self.hand_number,
                "dealer": self.dealer,
                "hands": [[CARD_TEXT[c] for c in h] for h in hands],
                "stock": [CARD_TEXT[c] for c in stock],
            }
        )
        self.discards: list[list[Card]] = [[], [], [], []]
        self.discard_counts = [0, 0, 0, 0]
        self.draw_counts = [0, 0, 0, 0]
        self.given: list[tuple[int, int, tuple[Card, ...]]] = []
        self.auction: list[tuple[int, Action]] = []
        self.passed = [False, False, False, False]
        self.high_bid = 0
        self.bidder: int | None = None
        self.contract: int | None = None
        self.trump: Suit | None = None
        self.table: TrumpTable | None = None
        self.out = [False, False, False, False]
        self.trick: list[tuple[int, Card]] = []
        self.leader: int | None = None
        self.tricks: list[tuple[int, tuple[tuple[int, Card], ...], int]] = []
        self.points = [0, 0]
        self.dead: list[Card] = []
        self._steps: list[tuple[str, int]] = []
        self._step_index = 0
        self.phase = Phase.AUCTION
        self.to_act: int | None = (self.dealer + 1) % 4
        self._legal = None

    # ----------------------------------------------------------------------------- auction

    def _dealer_forced(self) -> bool:
        return self.to_act == self.dealer and self.bidder is None

    def _auction_legal(self, seat: int) -> Legal:
        rs = self.ruleset
        if self._dealer_forced():
            key = ("forced", rs.min_bid, rs.dealer_default)
        else:
            key = ("open", max(rs.min_bid, self.high_bid + 1), None)
        actions = _AUCTION_CACHE.get(key)
        if actions is None:
            lo = key[1]
            bids = [act.bid(n) for n in range(lo, MAX_BID + 1)]
            if key[0] == "forced":
                if rs.dealer_default is not None and rs.dealer_default < lo:
                    bids.insert(0, act.bid(rs.dealer_default))
                actions = tuple(bids)
            else:
                actions = (act.PASS, *bids)
            _AUCTION_CACHE[key] = actions
        return Legal(Phase.AUCTION, seat, actions)

    def _why_illegal_bid(self, action: Action) -> str:
        if action.kind is ActionKind.PASS:
            return "the dealer must take the contract after three passes (§3.2)"
        if self._dealer_forced():
            default = self.ruleset.dealer_default
            extra = f" or take the dealer's default bid {default}" if default else ""
            return f"the dealer must bid at least {self.ruleset.min_bid}{extra} (§3.2)"
        floor = max(self.ruleset.min_bid, self.high_bid + 1)
        return (
            f"a bid must be at least {self.ruleset.min_bid}, at most 63 and higher than the "
            f"current high bid {self.high_bid or 'none'}: at least {floor} (§3.2)"
        )

    def _apply_auction(self, seat: int, action: Action) -> None:
        self.auction.append((seat, action))
        if action.kind is ActionKind.PASS:
            self.passed[seat] = True
        else:
            assert action.number is not None
            self.high_bid = action.number
            self.bidder = seat
        if self.high_bid == MAX_BID or (self.bidder is not None and sum(self.passed) == 3):
            self._end_auction()
            return
        nxt = (seat + 1) % 4
        while self.passed[nxt]:
            nxt = (nxt + 1) % 4
        self.to_act = nxt

    def _end_auction(self) -> None:
        assert self.bidder is not None
        self.contract = self.high_bid
        self.phase = Phase.TRUMP
        self.to_act = self.bidder

    # ----------------------------------------------------------------------------- trump

    def _apply_trump(self, seat: int, action: Action) -> None:
        self.trump = action.suit
        self.table = trump_table(self.ruleset, self.trump)
        order = [(self.dealer + k) % 4 for k in range(1, 5)]  # dealer last
        rs = self.ruleset
        if rs.redeal is Redeal.DRAW4:
            self._steps = [("draw4", s) for s in order] + [("keep6", s) for s in order]
        elif rs.dealer_picks:
            players = order[:3]
            self._steps = (
                [("discard", s) for s in players]
                + [("give", s) for s in players]
                + [("refill", s) for s in players]
                + [("pick", self.dealer), ("give", self.dealer)]
            )
        else:
            self._steps = (
                [("discard", s) for s in order]
                + [("give", s) for s in order]
                + [("refill", s) for s in order]
                + [("dead", self.dealer)]
            )
        self._step_index = 0
        self._advance_redeal()

    # ----------------------------------------------------------------------------- re-deal

    def _advance_redeal(self) -> None:
        """Run automatic re-deal steps until one needs a decision, then start play."""
        table = self.table
        assert table is not None
        while self._step_index < len(self._steps):
            step, seat = self._steps[self._step_index]
            hand = self.hands[seat]
            if step == "discard":
                dirt = [c for c in hand if not table.is_trump[c]]
                self.hands[seat] = [c for c in hand if table.is_trump[c]]
                self._discard(seat, dirt)
            elif step == "give":
                if table.trumps_in(hand) > KEEP_SIZE:
                    self.phase, self.to_act = Phase.GIVE, seat
                    return
            elif step == "refill":
                want = KEEP_SIZE - len(hand)
                if want > 0 and self.stock:
                    drawn = self.stock[:want]
                    del self.stock[:want]
                    self._draw(seat, drawn)
            elif step == "pick":
                taken = list(self.stock)
                self.stock.clear()
                self._draw(seat, taken)
                if table.trumps_in(self.hands[seat]) < KEEP_SIZE:
                    self.phase, self.to_act = Phase.KEEP, seat
                    return
                self._keep(seat, [c for c in self.hands[seat] if table.is_trump[c]])
            elif step == "dead":
                self.dead = list(self.stock)
                self.stock.clear()
                if self.dead:
                    self.events.append(
                        {"event": "dead", "hand": self.hand_number, "cards": _texts(self.dead)}
                    )
            elif step == "draw4":
                drawn = self.stock[:DRAW4_EXTRA]
                del self.stock[:DRAW4_EXTRA]
                self._draw(seat, drawn)
            elif step == "keep6":
                self.phase, self.to_act = Phase.KEEP, seat
                return
            self._step_index += 1
        self._start_play()

    def _redeal_legal(self, seat: int) -> Legal:
        table = self.table
        assert table is not None
        hand = self.hands[seat]
        step = self._steps[self._step_index][0]
        if self.phase is Phase.GIVE:
            spare = tuple(c for c in hand if table.is_trump[c] and not table.points[c])
            room = table.trumps_in(hand) - KEEP_SIZE
            choice = CardChoice(ActionKind.GIVE, spare, (), 0, min(room, len(spare)))
        elif step == "pick":
            dirt = tuple(c for c in hand if not table.is_trump[c])
            need = KEEP_SIZE - table.trumps_in(hand)
            choice = CardChoice(ActionKind.KEEP, dirt, (), need, need)
        else:  # keep6: every point trump stays, the rest brings the hand to six
            required = tuple(c for c in hand if table.points[c])
            n = min(len(hand), max(KEEP_SIZE, len(required)))
            choice = CardChoice(ActionKind.KEEP, tuple(hand), required, n, n)
        return Legal(self.phase, seat, choice=choice)

    def _apply_give(self, seat: int, action: Action) -> None:
        if action.cards:
            partner = (seat + 2) % 4
            given = set(action.cards)
            self.hands[seat] = [c for c in self.hands[seat] if c not in given]
            self.hands[partner] = sorted_cards(self.hands[partner] + list(action.cards))
            self.given.append((seat, partner, action.cards))
            self.events.append(
                {
                    "event": "give",
                    "hand": self.hand_number,
                    "seat": seat,
                    "to": partner,
                    "cards": _texts(action.cards),
                }
            )
        self._step_index += 1
        self._advance_redeal()

    def _apply_keep(self, seat: int, action: Action) -> None:
        table = self.table
        assert table is not None
        if self._steps[self._step_index][0] == "pick":
            kept = [c for c in self.hands[seat] if table.is_trump[c]] + list(action.cards)
        else:
            kept = list(action.cards)
        self._keep(seat, kept)
        self._step_index += 1
        self._advance_redeal()

    def _keep(self, seat: int, kept: list[Card]) -> None:
        keep_set = set(kept)
        self._discard(seat, [c for c in self.hands[seat] if c not in keep_set])
        self.hands[seat] = sorted_cards(kept)

    def _discard(self, seat: int, cards: list[Card]) -> None:
        self.discards[seat].extend(cards)
        self.discard_counts[seat] += len(cards)
        self.events.append(
            {"event": "discard", "hand": self.hand_number, "seat": seat, "cards": _texts(cards)}
        )

    def _draw(self, seat: int, cards: list[Card]) -> None:
        self.hands[seat] = sorted_cards(self.hands[seat] + cards)
        self.draw_counts[seat] += len(cards)
        self.events.append(
            {"event": "draw", "hand": self.hand_number, "seat": seat, "cards": _texts(cards)}
        )

    # ----------------------------------------------------------------------------- play

    def _start_play(self) -> None:
        self.phase = Phase.PLAY
        self._check_out()
        assert self.bidder is not None
        self._lead_from(self.bidder)

    def _check_out(self) -> None:
        """§3.5: a player without trumps (or, where that rule is off, without cards) is out."""
        table = self.table
        assert table is not None
        by_trumps = self.ruleset.out_of_trumps
        for seat in range(4):
            if self.out[seat]:
                continue
            hand = self.hands[seat]
            if not hand or (by_trumps and not table.has_trump(hand)):
                self.out[seat] = True
                self.hands[seat] = []
                event: Event = {"event": "out", "hand": self.hand_number, "seat": seat}
                event["cards"] = _texts(hand)
                self.events.append(event)

    def _lead_from(self, seat: int) -> None:
        """The lead goes to ``seat`` or, if it is out, the next active player clockwise."""
        for k in range(4):
            s = (seat + k) % 4
            if not self.out[s]:
                self.leader = self.to_act = s
                self.trick = []
                return
        self._end_hand()

    def _play_legal(self, seat: int) -> Legal:
        table = self.table
        assert table is not None
        hand = self.hands[seat]
        allowed = hand
        if not self.trick:
            if self.ruleset.first_lead_trump and not self.tricks:
                allowed = [c for c in hand if table.is_trump[c]] or hand
        else:
            led = table.suit_of[self.trick[0][1]]
            if table.is_trump[self.trick[0][1]] or self._follow_suit:
                suit_of = table.suit_of
                allowed = [c for c in hand if suit_of[c] == led] or hand
        return Legal(Phase.PLAY, seat, tuple(map(_PLAYS.__getitem__, allowed)))

    def _why_illegal_play(self, action: Action) -> str:
        table = self.table
        assert table is not None
        seat = self.to_act
        assert seat is not None
        if action.card not in self.hands[seat]:
            return f"{action.card} is not in seat {seat}'s hand"
        if not self.trick:
            return "the first lead of the hand must be a trump (§3.5 first_lead_trump)"
        if table.is_trump[self.trick[0][1]]:
            return "after a trump lead a player holding a trump must play one (§3.5)"
        return "after a dirt lead a player must follow the suit led if able (§3.5 dirt_follow)"

    def _apply_play(self, seat: int, action: Action) -> None:
        c = action.card
        self.hands[seat].remove(c)
        self.trick.append((seat, c))
        nxt = (seat + 1) % 4
        while nxt != self.leader and self.out[nxt]:
            nxt = (nxt + 1) % 4
        if nxt != self.leader:
            self.to_act = nxt
            return
        self._finish_trick()

    def _finish_trick(self) -> None:
        table = self.table
        assert table is not None
        trick = self.trick
        led_suit = table.suit_of[trick[0][1]]
        strength, suit_of = table.strength, table.suit_of
        best = -1
        winner = trick[0][0]
        for seat, c in trick:
            key = 100 + strength[c] if strength[c] else (c % 13 if suit_of[c] == led_suit else -1)
            if key > best:
                best, winner = key, seat
        won = [0, 0]
        two_to_player = self.ruleset.two_scores_for is TwoScoresFor.PLAYER
        for seat, c in trick:
            p = table.points[c]
            if p:
                won[team_of(seat) if two_to_player and c == table.two else team_of(winner)] += p
        self.points[0] += won[0]
        self.points[1] += won[1]
        self.tricks.append((self.leader or 0, tuple(trick), winner))
        self.events.append(
            {
                "event": "trick",
                "hand": self.hand_number,
                "leader": self.leader,
                "cards": [[s, CARD_TEXT[c]] for s, c in trick],
                "winner": winner,
                "points": won,
            }
        )
        self._check_out()
        self._lead_from(winner)

    # ----------------------------------------------------------------------------- scoring

    def _end_hand(self) -> None:
        assert self.bidder is not None and self.contract is not None and self.trump is not None
        bidding_team = team_of(self.bidder)
        made = self.points[bidding_team] >= self.contract
        for team in (0, 1):
            if team == bidding_team and not made:
                self.scores[team] -= self.contract
            else:
                self.scores[team] += self.points[team]
        self.events.append(
            {
                "event": "hand_end",
                "hand": self.hand_number,
                "bidder": self.bidder,
                "contract": self.contract,
                "trump": str(self.trump),
                "points": list(self.points),
                "made": made,
                "scores": list(self.scores),
            }
        )
        target = self.ruleset.target
        reached = [s >= target for s in self.scores]
        if all(reached):
            self._end_game(bidding_team, "target")
        elif any(reached):
            self._end_game(reached.index(True), "target")
        elif self.hand_number >= self.ruleset.max_hands:
            a, b = self.scores
            self._end_game(None if a == b else (0 if a > b else 1), "max_hands")
        else:
            self._start_hand()

    def _end_game(self, winner: int | None, reason: str, **extra: Any) -> None:
        self.phase = Phase.GAME_OVER
        self.to_act = None
        self._legal = None
        self.winner, self.end_reason = winner, reason
        event: Event = {"event": "game_end", "scores": list(self.scores)}
        event.update(winner=winner, reason=reason, **extra)
        self.events.append(event)

    # ----------------------------------------------------------------------------- dispatch

    def _compute_legal(self) -> Legal:
        seat = self.to_act
        phase = self.phase
        if phase is Phase.GAME_OVER or seat is None:
            return Legal(Phase.GAME_OVER, -1)
        if phase is Phase.PLAY:
            return self._play_legal(seat)
        if phase is Phase.AUCTION:
            return self._auction_legal(seat)
        if phase is Phase.TRUMP:
            return Legal(Phase.TRUMP, seat, _TRUMP_ACTIONS)
        return self._redeal_legal(seat)

    def __repr__(self) -> str:
        hands = " | ".join(cards_text(h) for h in self.hands)
        return (
            f"<Game {self.ruleset.name} hand {self.hand_number} {self.phase.value} "
            f"to_act={self.to_act} scores={self.scores} hands: {hands}>"
        )


def _texts(cards: tuple[Card, ...] | list[Card]) -> list[str]:
    """Card texts in canonical order (hands are kept sorted, so most inputs already are)."""
    return [CARD_TEXT[c] for c in sorted_cards(cards)]


_PLAYS = [act.play(c) for c in CARDS]
_TRUMP_ACTIONS = tuple(act.trump(s) for s in Suit)
_AUCTION_CACHE: dict[tuple[str, int, int | None], tuple[Action, ...]] = {}
_DISPATCH: dict[Phase, Callable[[Game, int, Action], None]] = {
    Phase.AUCTION: Game._apply_auction,
    Phase.TRUMP: Game._apply_trump,
    Phase.GIVE: Game._apply_give,
    Phase.KEEP: Game._apply_keep,
    Phase.PLAY: Game._apply_play,
}
