"""A minimal Sixty-three bot on the Python SDK (arena.agent).

The platform starts it with ARENA_GAME_MASTER and ARENA_SEAT_TOKEN in the environment;
play_function() dials the game master, says Hello, calls decide() for every DecisionRequest,
sends the Reply and exits when the game ends. Try it:

    arena play --seat 'python docs/examples/python/minimal_bot.py' \
               --seat greedy --seat random --seat greedy
"""

from __future__ import annotations

from typing import Any

from arena.agent import play_function


def decide(obs: dict[str, Any], legal: dict[str, Any]) -> str | tuple[str, str]:
    """One decision: return an action text, or (action text, note)."""
    choice = legal["choice"]
    if choice is not None:  # give / keep: choose cards, between min_count and max_count
        required = choice["required"]
        others = [c for c in choice["cards"] if c not in required]
        extra = max(0, choice["min_count"] - len(required))
        return " ".join([choice["verb"], *required, *others[:extra]])

    actions = legal["actions"]  # every legal action, canonical order
    hand = obs["hand"]  # e.g. ["AS", "TH", "5D", "JO"]
    longest = max("SHDC", key=lambda suit: sum(card[1] == suit for card in hand))
    if legal["phase"] == "auction":
        bids = [a for a in actions if a.startswith("bid ")]
        length = sum(card[1] == longest for card in hand)
        if "pass" in actions and (length < 5 or not bids):
            return "pass"
        return bids[0], f"{length} cards in {longest}"  # the note is shown in replays
    if legal["phase"] == "trump":
        return f"trump {longest}"
    return actions[0]  # play: the first legal card


if __name__ == "__main__":
    play_function(decide, name="minimal-python")
