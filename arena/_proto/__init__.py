"""Generated protobuf code for proto/ (git-ignored): made on first import if missing or stale.

In a source checkout the code is normally made by ``scripts/gen-proto`` (``scripts/setup`` runs
it) or by ``pip install`` (setup.py); this import-time check covers a fresh clone or an edited
.proto, so ``import arena.wire`` always works there. An installed wheel ships the code and has
no proto/ directory, so nothing is checked.
"""

from __future__ import annotations

import sys

from arena._proto import generate as _generate


def _ensure() -> None:
    if not _generate.has_sources():
        if not _generate.is_generated():
            raise ImportError(
                "the protobuf code of arena is missing and proto/ is not here to make it from; "
                "reinstall the package (pip install) or run scripts/gen-proto in a checkout"
            )
        return
    if _generate.up_to_date(check_tools=False):
        return
    print(
        "arena: generating protobuf code from proto/ (missing or out of date; "
        "scripts/gen-proto does this ahead of time)",
        file=sys.stderr,
    )
    try:
        _generate.generate()
    except (RuntimeError, OSError) as exc:
        raise ImportError(f"arena: could not generate the protobuf code: {exc}") from exc


_ensure()
