"""Plain-text tables the subcommands print: left-aligned columns as wide as their widest cell."""

from __future__ import annotations

from collections.abc import Sequence


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """Print `rows` (the first is the heading), two spaces between columns, none at line ends."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
