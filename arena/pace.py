"""How long a tournament has run and, at its pace so far, how long it has left."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arena.storage import Progress


def elapsed_and_eta(
    started: datetime | None, finished: datetime | None, progress: Progress, now: datetime
) -> tuple[float | None, float | None]:
    """Seconds since the first set started (to the end, once finished), and seconds left at
    the pace so far: None before the start, and for the ETA when there is no pace to go by
    (no set settled yet, none being played, or all settled)."""
    if started is None:
        return None, None
    elapsed = max(0.0, ((finished or now) - started).total_seconds())
    settled = progress.done + progress.failed
    if progress.finished or not settled or progress.stalled:
        return elapsed, None
    return elapsed, elapsed / settled * (progress.total - settled)


def duration(seconds: float) -> str:
    """'1h02m', '3m05s' or '12s'."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def pace_words(elapsed: float | None, eta: float | None) -> list[str]:
    """["elapsed 3m05s", "ETA 1m10s"] (either may be missing), as `tournament status` and the
    dashboard say it."""
    words = [] if elapsed is None else [f"elapsed {duration(elapsed)}"]
    if eta is not None:
        words.append(f"ETA {duration(eta)}")
    return words
