"""Why games were forfeited, told by the commands that just played them (demo, match)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from arena.storage.models import Game

STDERR_LINES = 10


def print_forfeits(
    session: Session, games: Iterable[Game], say: Callable[[str], None] = print
) -> int:
    """For each forfeited game: which seat, why (the record's forfeit line) and the end of that
    seat's stderr. Returns how many were forfeited."""
    from arena.storage import repo
    from arena.storage.models import BotVersion

    count = 0
    for game in games:
        if game.forfeit_seat is None:
            continue
        count += 1
        record = repo.get_game_record(session, game.id).decode("utf-8", "replace")
        why = next(
            (
                str(event.get("detail", "no reason given"))
                for event in map(json.loads, record.splitlines())
                if event.get("event") == "forfeit"
            ),
            "no forfeit line in the record",
        )
        bot = session.get(BotVersion, game.seat_ids[game.forfeit_seat])
        who = f" ({bot.ref})" if bot is not None else ""
        say(f"game {game.id}: seat {game.forfeit_seat}{who} forfeited: {why}")
        for fault in game.faults:
            if fault.seat == game.forfeit_seat and fault.stderr.strip():
                for line in fault.stderr.strip().splitlines()[-STDERR_LINES:]:
                    print(f"    {line}")
    return count
