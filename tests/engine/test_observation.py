"""Observation isolation: a seat's observation depends on nothing it cannot see, for every seat,
every phase reached in real games and every ruleset (OpenSpiel's lesson: test every seat)."""

from __future__ import annotations

import dataclasses
import random
from functools import cache

import pytest

from arena.cards import Card, sorted_cards
from arena.game import Game
from arena.legal import Phase
from arena.observation import observe
from arena.rulesets import RULESETS, Redeal

from .builders import random_choice, replay

PHASES_PER_RULESET = {
    name: {Phase.AUCTION, Phase.TRUMP, Phase.KEEP, Phase.PLAY}
    | (set() if rs.redeal is Redeal.DRAW4 else {Phase.GIVE})
    for name, rs in RULESETS.items()
}
# wiki-2010 has no dealer's pick, so no keep decision at all
PHASES_PER_RULESET["wiki-2010"].discard(Phase.KEEP)

STATES_PER_PHASE = 5
MAX_SEEDS = 800

Position = tuple[str, int, int]  # (place, seat or -1, index)


@cache
def sampled_states(name: str) -> tuple[Game, ...]:
    """Up to STATES_PER_PHASE decision states of each phase, from seeded one-hand random games."""
    rs = dataclasses.replace(RULESETS[name], max_hands=1)
    wanted = PHASES_PER_RULESET[name]
    found: dict[Phase, list[Game]] = {p: [] for p in wanted}
    for seed in range(MAX_SEEDS):
        game = Game(rs, seed)
        rng = random.Random(seed)
        step = 0
        while not game.is_over:
            states = found[game.phase]
            # spread the samples: keep a state now and then, not only the first of each phase
            if len(states) < STATES_PER_PHASE and (
                step % 7 == seed % 7 or game.phase in (Phase.GIVE, Phase.KEEP, Phase.TRUMP)
            ):
                states.append(game.clone())
            game.apply(random_choice(game, rng), seat=game.to_act)
            step += 1
        if all(len(v) >= STATES_PER_PHASE for v in found.values()):
            break
    missing = [p.value for p, v in found.items() if not v]
    assert not missing, f"{name}: no state of phase {missing} in {MAX_SEEDS} games"
    return tuple(s for v in found.values() for s in v)


def hidden_positions(game: Game, seat: int) -> list[Position]:
    """Every place holding a card that ``seat`` cannot see."""
    out: list[Position] = []
    for s in range(4):
        if s != seat:
            out += [("hands", s, i) for i in range(len(game.hands[s]))]
            out += [("discards", s, i) for i in range(len(game.discards[s]))]
    out += [("stock", -1, i) for i in range(len(game.stock))]
    out += [("dead", -1, i) for i in range(len(game.dead))]
    return out


def _list(game: Game, place: str, s: int) -> list[Card]:
    if place in ("hands", "discards"):
        return getattr(game, place)[s]  # type: ignore[no-any-return]
    return getattr(game, place)  # type: ignore[no-any-return]


def swap(game: Game, a: Position, b: Position) -> None:
    la, lb = _list(game, a[0], a[1]), _list(game, b[0], b[1])
    la[a[2]], lb[b[2]] = lb[b[2]], la[a[2]]
    for s in range(4):  # hands stay in canonical order, as the engine keeps them
        game.hands[s] = sorted_cards(game.hands[s])


def shuffle_hidden(game: Game, seat: int, rng: random.Random) -> None:
    positions = hidden_positions(game, seat)
    found = [_list(game, p, s)[i] for p, s, i in positions]
    rng.shuffle(found)
    for (p, s, i), c in zip(positions, found, strict=True):
        _list(game, p, s)[i] = c
    for s in range(4):
        game.hands[s] = sorted_cards(game.hands[s])


@pytest.mark.parametrize("name", sorted(RULESETS))
def test_states_cover_every_phase(name: str) -> None:
    assert {s.phase for s in sampled_states(name)} == PHASES_PER_RULESET[name]


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
@pytest.mark.parametrize("name", sorted(RULESETS))
def test_hidden_cards_do_not_change_the_observation(name: str, seat: int) -> None:
    rng = random.Random(f"{name}/{seat}")
    for state in sampled_states(name):
        seen = observe(state, seat)
        positions = hidden_positions(state, seat)
        for _ in range(12):
            a, b = rng.sample(positions, 2)
            other = state.clone()
            swap(other, a, b)
            assert observe(other, seat) == seen, (state.phase, seat, a, b)
        for _ in range(3):
            other = state.clone()
            shuffle_hidden(other, seat, rng)
            assert observe(other, seat) == seen, (state.phase, seat)
        assert observe(state, seat) == seen  # the clones never touched the state


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
@pytest.mark.parametrize("name", sorted(RULESETS))
def test_changing_the_seats_own_card_changes_its_observation(name: str, seat: int) -> None:
    rng = random.Random(f"own/{name}/{seat}")
    checked = 0
    for state in sampled_states(name):
        own = state.hands[seat]
        hidden = hidden_positions(state, seat)
        if not own or not hidden:
            continue
        seen = observe(state, seat)
        other = state.clone()
        swap(other, ("hands", seat, rng.randrange(len(own))), rng.choice(hidden))
        assert observe(other, seat) != seen
        assert observe(other, seat).hand != seen.hand
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("seat", [0, 1, 2, 3])
@pytest.mark.parametrize("name", sorted(RULESETS))
def test_auction_and_trump_observations_ignore_a_different_hidden_deal(
    name: str, seat: int
) -> None:
    """Re-deal the cards a seat cannot see, replay the same auction: it sees the same game."""
    rs = dataclasses.replace(RULESETS[name], max_hands=1)
    for seed in range(4):
        game = Game(rs, seed)
        rng = random.Random(seed)
        while game.phase in (Phase.AUCTION, Phase.TRUMP):
            game.apply(random_choice(game, rng), seat=game.to_act)
        deal = game.events[0]
        actions = []
        for e in game.events:
            if e["event"] == "action":
                actions.append(e)
                if e["action"].startswith("trump"):
                    break
        hands = [list(h) for h in deal["hands"]]
        hidden = [c for s in range(4) if s != seat for c in hands[s]] + list(deal["stock"])
        rng.shuffle(hidden)
        for s in range(4):
            if s != seat:
                hands[s], hidden = hidden[:9], hidden[9:]
        original = replay(rs, [deal], game.first_dealer)
        moved = replay(rs, [{**deal, "hands": hands, "stock": hidden}], game.first_dealer)
        assert [sorted(h) for h in moved.hands] != [sorted(h) for h in original.hands]
        assert observe(moved, seat) == observe(original, seat)
        for e in actions[:-1]:  # naming trump starts the re-deal, which draws hidden cards
            original.apply(e["action"], seat=e["seat"])
            moved.apply(e["action"], seat=e["seat"])
            assert observe(moved, seat) == observe(original, seat)
        assert original.phase is Phase.TRUMP


def test_observation_holds_own_hand_and_public_facts_only() -> None:
    game = Game(RULESETS["standard"], 5, first_dealer=0)
    for seat in range(4):
        obs = observe(game, seat)
        assert obs.seat == seat and obs.team == seat % 2
        assert obs.hand == tuple(game.hands[seat])
        assert obs.card_counts == (9, 9, 9, 9) and obs.stock_count == 17
        assert obs.phase is Phase.AUCTION and obs.to_act == 1 and obs.dealer == 0
        text = repr(obs.to_dict())
        for s in range(4):
            if s != seat:
                # no card of another hand appears anywhere in what this seat gets
                assert not any(f"'{c}'" in text for c in game.hands[s])
        assert not any(f"'{c}'" in text for c in game.stock)


@pytest.mark.parametrize("name", sorted(RULESETS))
def test_to_dict_holds_every_field_as_dataclasses_asdict_would(name: str) -> None:
    # Built by hand (asdict cost most of a replay's time); only cards, suits, the phase and
    # tricks are turned into text and plain lists.
    as_text = {"phase", "hand", "trump", "given", "trick", "tricks"}
    for game in sampled_states(name):
        for seat in range(4):
            obs = observe(game, seat)
            mine, reference = obs.to_dict(), dataclasses.asdict(obs)
            assert mine.keys() == reference.keys()
            for key in reference.keys() - as_text:
                assert mine[key] == reference[key], key
