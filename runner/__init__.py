"""Tournament planning, RQ jobs, agent launchers, the nightly schedule and the worker CLI."""
