"""scripts/gen-proto's generator: makes importable code, skips when up to date."""

from __future__ import annotations

import subprocess
from pathlib import Path

from arena._proto import generate
from tests.gamemaster.helpers import REPO


def test_generation_is_idempotent_and_names_the_package(tmp_path: Path) -> None:
    out = tmp_path / "_proto"
    assert generate.generate(out_dir=out) is True
    assert generate.generate(out_dir=out) is False
    assert generate.up_to_date(out_dir=out)
    grpc_code = (out / "sixtythree" / "v1" / "arena_pb2_grpc.py").read_text()
    assert "from arena._proto.sixtythree.v1 import arena_pb2" in grpc_code
    assert (out / "sixtythree" / "v1" / "__init__.py").is_file()
    assert (
        "'arena._proto.sixtythree.v1.arena_pb2'" in (out / "sixtythree/v1/arena_pb2.py").read_text()
    )
    (out / generate.STAMP_NAME).write_text("stale\n")
    assert generate.generate(out_dir=out) is True


def test_generated_code_is_not_tracked_by_git() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "arena/_proto"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [name for name in tracked if "_pb2" in name or "sixtythree" in name]


def test_gen_proto_script_reports_up_to_date() -> None:
    done = subprocess.run(
        [str(REPO / "scripts" / "gen-proto")], capture_output=True, text=True, check=True
    )
    assert "up to date" in done.stdout or "generated" in done.stdout
