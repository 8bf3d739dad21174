"""Pure core (STYLE.md habit 1): the engine loads no service, web or database library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = ("grpc", "redis", "flask", "rq", "sqlalchemy", "psycopg", "werkzeug", "google.protobuf")

PROBE = """
import json, sys
import arena.game, arena.observation, arena.record, arena.play
import arena.cards, arena.actions, arena.rulesets, arena.trumps, arena.legal, arena.errors
print(json.dumps(sorted(sys.modules)))
"""


def _loaded_modules(code: str) -> list[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_engine_imports_load_no_grpc_redis_flask_rq_or_sqlalchemy() -> None:
    modules = _loaded_modules(PROBE)
    assert "arena.game" in modules and "arena.play" in modules
    bad = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []


def test_the_probe_would_notice_a_forbidden_import() -> None:
    """The check itself works: importing one of them shows up in sys.modules."""
    modules = _loaded_modules("import json, sys\nimport rq\nprint(json.dumps(sorted(sys.modules)))")
    assert "rq" in modules and "redis" in modules
