"""Shared fixtures. Heavy modules (sqlalchemy, …) are imported inside fixtures, so tests that
check the engine loads none of them still can."""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import arena  # noqa: F401  (before any test imports grpc: it makes gRPC's settings, as in use)

if TYPE_CHECKING:
    from arena.storage import Database

DATA_DIR = Path(__file__).parent / "data"

# The real PostgreSQL the tests use; CI sets ARENA_REQUIRE_POSTGRES=1 so absence fails there.
POSTGRES_URL = os.environ.get(
    "ARENA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


@functools.cache
def _postgres_problem() -> str | None:
    """Why PostgreSQL cannot be used, or None if it can (checked once per process)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # any failure to connect means "absent" here
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {exc.__class__.__name__}"
    finally:
        engine.dispose()
    return None


def _require_postgres() -> None:
    problem = _postgres_problem()
    if problem is not None:
        if os.environ.get("ARENA_REQUIRE_POSTGRES"):
            pytest.fail(problem)
        pytest.skip(problem)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh, empty schema, dropped afterwards."""
    from sqlalchemy import create_engine, make_url, text

    _require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database's URL: a SQLite file, then a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arena.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    """An opened Database (schema created) on each backend in turn."""
    from arena.storage import open_database

    db = open_database(database_url)
    try:
        yield db
    finally:
        db.dispose()


@pytest.fixture
def fake_docker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """tests/agents/fake_docker.sh first on PATH as `docker` (no engine runs here), its config
    directory returned: it logs each call to calls.log there; a file daemon-down there makes it
    a client that reaches no daemon, a file no-image one whose daemon has no image."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(Path(__file__).parent / "agents" / "fake_docker.sh", bin_dir / "docker")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))  # passed through to the client
    return tmp_path
