"""Subcommands of the `arena` CLI, one module per area."""
