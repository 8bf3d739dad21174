#!/bin/sh
# Runs slow_bot.py with the checkout's Python (the agent's environment is clean).
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
py="$root/.venv/bin/python"; [ -x "$py" ] || py=python3
export MALLOC_ARENA_MAX=2
PYTHONPATH="$root" exec "$py" "$here/slow_bot.py"
