"""How the dashboard writes stored values out."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dashboard.formatting import ruleset_label, when


@pytest.mark.parametrize(
    ("stored", "label"),
    [
        ("standard", "standard"),
        ('{"max_hands":3,"name":"standard"}', "standard, max_hands 3"),
        ('{"max_hands":2,"name":"standard"}', "standard, max_hands 2"),  # not the same label
        ('{"name":"x","points":{"J":1}}', 'x, points {"J":1}'),
        ('{"redeal":"draw4"}', "custom, redeal draw4"),
        ("{not json", "custom"),
    ],
)
def test_a_custom_ruleset_is_labelled_by_what_it_sets(stored: str, label: str) -> None:
    assert ruleset_label(stored) == label


@pytest.mark.parametrize(
    "stored",
    [
        datetime(2026, 12, 2, 2, 5, 59, tzinfo=UTC),
        datetime(2026, 12, 2, 2, 5),
        "2026-12-02T02:05:00",
    ],
)
def test_a_time_says_it_is_utc(stored: datetime | str) -> None:
    assert when(stored) == "2026-12-02 02:05 UTC"
    assert when(None) == "—"
