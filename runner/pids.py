"""Whether a process id is in use."""

from __future__ import annotations

import os


def running(pid: int) -> bool:
    """Whether a process `pid` exists (another user's too; a zombie still counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True
