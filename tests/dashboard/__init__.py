"""Tests of the web dashboard: pages, JSON twins, replays and the browser."""
