"""Engine speed: seeded random play-outs per ruleset, decisions and hands per second.

Legal actions are generated at every decision (as the game master and search bots do);
observations are built only when asked: the last column times building one observation.
Run: python bench/engine.py [--games N]
"""

from __future__ import annotations

import argparse
import random
import time

from arena.actions import Action
from arena.cards import sort_key
from arena.game import Game
from arena.observation import observe
from arena.rulesets import RULESETS, Ruleset


def random_playout(ruleset: Ruleset, seed: int) -> tuple[int, int]:
    """One game with uniformly random legal actions; returns (decisions, hands)."""
    rng = random.Random(seed)
    game = Game(ruleset, seed)
    decisions = 0
    while not game.is_over:
        legal = game.legal()
        choice = legal.choice
        if choice is None:
            action = rng.choice(legal.actions)
        else:
            optional = [c for c in choice.cards if c not in choice.required]
            n = rng.randint(choice.min_count, choice.max_count) - len(choice.required)
            picked = list(choice.required) + rng.sample(optional, n)
            action = Action(choice.kind, None, sorted(picked, key=sort_key))
        game.apply(action)
        decisions += 1
    return decisions, game.hand_number


def observation_cost(ruleset: Ruleset, samples: int = 20_000) -> float:
    """Seconds to build one observation, averaged over play positions of a real game."""
    game = Game(ruleset, 1)
    positions = []
    rng = random.Random(1)
    while not game.is_over and len(positions) < 200:
        positions.append(game.clone())
        legal = game.legal()
        game.apply(legal.first() if legal.choice else rng.choice(legal.actions))
    start = time.perf_counter()
    for i in range(samples):
        g = positions[i % len(positions)]
        observe(g, i % 4)
    return (time.perf_counter() - start) / samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=40, help="games per ruleset")
    args = parser.parse_args()
    print(f"{'ruleset':<14} {'decisions/s':>12} {'hands/s':>9} {'observation µs':>15}")
    for name, ruleset in RULESETS.items():
        decisions = hands = 0
        start = time.perf_counter()
        for seed in range(args.games):
            d, h = random_playout(ruleset, seed)
            decisions, hands = decisions + d, hands + h
        elapsed = time.perf_counter() - start
        obs_us = observation_cost(ruleset) * 1e6
        print(f"{name:<14} {decisions / elapsed:>12,.0f} {hands / elapsed:>9,.0f} {obs_us:>15.1f}")


if __name__ == "__main__":
    main()
