"""How the dashboard writes stored values out."""

from __future__ import annotations

import pytest

from dashboard.formatting import ruleset_label


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
