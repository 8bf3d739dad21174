"""Test agent: grows its memory in 64 MB steps towards 2 GB, as a leaking bot would."""

from __future__ import annotations

STEP = 64 * 1024 * 1024
TARGET = 2 * 1024 * 1024 * 1024

hoard: list[bytearray] = []
while len(hoard) * STEP < TARGET:
    hoard.append(bytearray(STEP))  # bytearray touches its pages, so they count as used
print("allocated 2 GB without hitting a limit")
