"""A greedy heuristic player: bids on its trumps, protects its points, feeds partner's tricks."""

from __future__ import annotations

from arena.actions import Action, ActionKind
from arena.cards import Card, Suit
from arena.legal import Legal, Phase
from arena.observation import Observation
from arena.rulesets import RULESETS, STANDARD, Ruleset
from arena.trumps import TrumpTable, trump_table


class GreedyPlayer:
    name = "greedy"

    def __init__(self, seed: int | str = 0) -> None:
        self.seed = seed  # deterministic: the seed is accepted for a uniform factory signature

    def act(self, obs: Observation, legal: Legal) -> Action:
        ruleset = _ruleset(obs)
        if legal.phase is Phase.AUCTION:
            return self._bid(obs, legal)
        if legal.phase is Phase.TRUMP:
            best = max(Suit, key=lambda s: _suit_value(obs.hand, trump_table(ruleset, s)))
            return next(a for a in legal.actions if a.suit is best)
        assert obs.trump is not None
        table = trump_table(ruleset, obs.trump)
        if legal.choice is not None:
            return self._choose_cards(legal, table)
        return self._play(obs, legal, table)

    # The expected hand value: points held count fully, each trump wins about five more, and
    # partner brings about ten.
    def _bid(self, obs: Observation, legal: Legal) -> Action:
        ruleset = _ruleset(obs)
        value = max(_suit_value(obs.hand, trump_table(ruleset, s)) for s in Suit)
        bids = [a for a in legal.actions if a.kind is ActionKind.BID]
        affordable = [a for a in bids if a.number is not None and a.number <= value]
        passes = [a for a in legal.actions if a.kind is ActionKind.PASS]
        if affordable:
            return affordable[0]
        return passes[0] if passes else bids[0]

    def _choose_cards(self, legal: Legal, table: TrumpTable) -> Action:
        choice = legal.choice
        assert choice is not None
        if choice.kind is ActionKind.GIVE:  # low non-point trumps strengthen partner
            spare = sorted(choice.cards, key=lambda c: table.strength[c])
            return Action(ActionKind.GIVE, None, spare[: choice.max_count])
        # keep: point trumps, then the strongest trumps, then high dirt
        optional = [c for c in choice.cards if c not in choice.required]
        optional.sort(key=lambda c: (table.is_trump[c], table.strength[c], c % 13), reverse=True)
        n = choice.min_count - len(choice.required)
        return Action(ActionKind.KEEP, None, list(choice.required) + optional[:n])

    def _play(self, obs: Observation, legal: Legal, table: TrumpTable) -> Action:
        cards = [a.card for a in legal.actions]
        played = {c for t in obs.tricks for _, c in t.cards}
        trick = obs.trick.cards if obs.trick else ()
        if trick:
            played |= {c for _, c in trick}
        mine = set(obs.hand)
        unseen_trumps = [
            c for c in range(53) if table.is_trump[c] and c not in played and c not in mine
        ]
        top_unseen = max((table.strength[c] for c in unseen_trumps), default=0)

        def cheap(c: Card) -> tuple[int, int, int]:
            return (table.points[c], table.strength[c], c % 13)

        if not trick:  # lead: pull trumps with a boss trump, otherwise lead something cheap
            boss = [c for c in cards if table.strength[c] > top_unseen]
            if boss:
                return Action(ActionKind.PLAY, None, (max(boss, key=lambda c: table.strength[c]),))
            return Action(ActionKind.PLAY, None, (min(cards, key=cheap),))

        winner_seat, winner_key = _winning(trick, table)
        partner_winning = winner_seat % 2 == obs.seat % 2
        last_to_play = len(trick) + 1 >= sum(1 for o in obs.out if not o)
        safe = partner_winning and (last_to_play or winner_key > 100 + top_unseen)
        if safe:  # smear points onto partner's trick
            return Action(ActionKind.PLAY, None, (max(cards, key=cheap),))
        led = table.suit_of[trick[0][1]]
        beating = [c for c in cards if _key(c, led, table) > winner_key]
        at_stake = sum(table.points[c] for _, c in trick)
        worth_it = at_stake or any(table.points[c] for c in cards)
        if (
            beating
            and worth_it
            and (last_to_play or max(table.strength[c] for c in beating) > top_unseen)
        ):
            return Action(ActionKind.PLAY, None, (min(beating, key=lambda c: table.strength[c]),))
        return Action(ActionKind.PLAY, None, (min(cards, key=cheap),))


def _ruleset(obs: Observation) -> Ruleset:
    # A custom ruleset arrives by name only: play it with the standard point values.
    return RULESETS.get(obs.ruleset, STANDARD)


def _suit_value(hand: tuple[Card, ...], table: TrumpTable) -> int:
    trumps = [c for c in hand if table.is_trump[c]]
    return sum(table.points[c] for c in trumps) + 5 * len(trumps) + 10


def _key(c: int, led: int, table: TrumpTable) -> int:
    if table.strength[c]:
        return 100 + table.strength[c]
    return c % 13 if table.suit_of[c] == led else -1


def _winning(trick: tuple[tuple[int, Card], ...], table: TrumpTable) -> tuple[int, int]:
    led = table.suit_of[trick[0][1]]
    best_seat, best = trick[0][0], -2
    for seat, c in trick:
        k = _key(c, led, table)
        if k > best:
            best_seat, best = seat, k
    return best_seat, best


if __name__ == "__main__":
    from arena.agent import run

    run(GreedyPlayer())
