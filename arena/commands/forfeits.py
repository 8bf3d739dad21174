"""What went wrong in games just played, told by the commands that played them (demo, match):
why a game was forfeited, and which seats faulted without forfeiting."""

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
    seat's stderr; for each other seat with faults, how many and the first (a bot that faults
    without forfeiting only looks weak in the scores). Returns how many were forfeited."""
    from arena.record import record_lines
    from arena.storage import repo
    from arena.storage.models import BotVersion

    def who(game: Game, seat: int) -> str:
        bot = session.get(BotVersion, game.seat_ids[seat])
        return f"seat {seat} ({bot.ref})" if bot is not None else f"seat {seat}"

    count = 0
    for game in games:
        faulted = sorted({fault.seat for fault in game.faults} - {game.forfeit_seat})
        for seat in faulted:
            faults = [fault for fault in game.faults if fault.seat == seat]
            first = faults[0]
            say(
                f"game {game.id}: {who(game, seat)}: {len(faults)} fault(s), the first "
                f"{first.kind}: {first.detail}"
            )
        if game.forfeit_seat is None:
            continue
        count += 1
        record = repo.get_game_record(session, game.id).decode("utf-8", "replace")
        why = next(
            (
                str(event.get("detail", "no reason given"))
                for event in map(json.loads, record_lines(record))
                if event.get("event") == "forfeit"
            ),
            "no forfeit line in the record",
        )
        say(f"game {game.id}: {who(game, game.forfeit_seat)} forfeited: {why}")
        for fault in game.faults:
            if fault.seat == game.forfeit_seat and fault.stderr.strip():
                for line in fault.stderr.strip().splitlines()[-STDERR_LINES:]:
                    say(f"    {line}")
    return count
