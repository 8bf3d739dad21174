"""Tests of the rules engine (arena.cards … arena.record) against RULES.md and RECORD.md."""
