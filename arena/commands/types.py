"""Argument types shared by the subcommands: argparse turns their ValueError into a usage error."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `minimum` to `maximum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, not {value}")
        return value

    parse.__name__ = "whole number"  # argparse names the type in its message
    return parse


def seconds(text: str) -> float:
    """A positive, finite number of seconds (--reconcile-every)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value
