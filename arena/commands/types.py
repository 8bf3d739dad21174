"""Argument types shared by the subcommands: argparse turns their ValueError into a usage error."""

from __future__ import annotations

import argparse


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1 (--sets, --threads, --workers)."""
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """A whole number of at least 0 (--bank-ms)."""
    return _whole_number(text, 0)
