"""The docs stay true: every command-line argument has --help text, the docs' commands parse,
every ARENA_ variable is documented, the example bots shown are the files in docs/examples, and
each example bot plays a game `arena verify` accepts."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from arena.cli import build_parser
from arena.registry import load_manifest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
PAGES = sorted(DOCS.glob("*.md"))
JS_MODULES = ROOT / "sample_agents" / "js" / "node_modules"

# Code blocks of these languages hold commands; others hold code, output or data.
COMMAND_LANGUAGES = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^```(\S*)\s*$")

# Where the code lives, and the names that look like variables but are not.
CODE_DIRS = ["arena", "runner", "dashboard", "sample_agents", "tests", "scripts", "bench"]
CODE_DIRS += [".ci", "docs/examples"]
CODE_FILES = ["docker-compose.yml", "Dockerfile"]
SKIP_DIRS = {"node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", "_proto"}
NOT_VARIABLES = {"ARENA_SUBCOMMANDS"}  # a constant in tests/test_compose.py
# ARENA_ names not preceded by a letter or "_" (MALLOC_ARENA_MAX is glibc's, not ours).
VARIABLE = re.compile(r"(?<![A-Za-z0-9_])ARENA_[A-Z][A-Z0-9_]*")


def code_blocks(page: Path) -> list[tuple[str, int, list[str]]]:
    """(language, first line number, lines) of every fenced block."""
    blocks, current, language, start = [], None, "", 0
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if current is None and fence:
            current, language, start = [], fence.group(1), number + 1
        elif current is not None and line.startswith("```"):
            blocks.append((language, start, current))
            current = None
        elif current is not None:
            current.append(line)
    assert current is None, f"{page.name}: unclosed code block from line {start}"
    return blocks


def arena_commands() -> list[tuple[str, str]]:
    """("page:line", command) for every `arena ...` line in command blocks."""
    found = []
    for page in PAGES:
        for language, start, lines in code_blocks(page):
            if language not in COMMAND_LANGUAGES:
                continue
            joined: list[tuple[int, str]] = []
            pending = ""
            for offset, line in enumerate(lines):
                if pending:
                    pending += " " + line.strip()
                else:
                    pending, first = line.strip(), start + offset
                if pending.endswith("\\"):
                    pending = pending[:-1].rstrip()
                    continue
                joined.append((first, pending))
                pending = ""
            for number, line in joined:
                if line.startswith("$ "):
                    line = line[2:]
                if line.startswith("arena "):
                    found.append((f"{page.name}:{number}", line))
    return found


def test_docs_quote_arena_commands() -> None:
    places = {place.split(":")[0] for place, _ in arena_commands()}
    assert {"writing-a-bot.md", "running.md"} <= places


@pytest.mark.parametrize(("place", "command"), arena_commands())
def test_arena_command_in_docs_parses(place: str, command: str) -> None:
    words = shlex.split(command, comments=True)
    while words and words[-1] in ("&", "&&", ";"):
        words.pop()
    assert words[0] == "arena"
    try:
        build_parser().parse_args(words[1:])
    except SystemExit as exc:
        pytest.fail(f"{place}: `{command}` does not parse (exit {exc.code})")


def code_variables() -> dict[str, str]:
    """Every ARENA_ name in the code -> one file that uses it."""
    files = [ROOT / name for name in CODE_FILES]
    for directory in CODE_DIRS:
        base = ROOT / directory
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if path.is_file() and not SKIP_DIRS & set(path.relative_to(ROOT).parts):
                files.append(path)
    found: dict[str, str] = {}
    for path in files:
        if path == Path(__file__).resolve() or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary
        for name in VARIABLE.findall(text):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return {k: v for k, v in found.items() if k not in NOT_VARIABLES}


def test_every_arena_variable_is_in_running_md() -> None:
    used = code_variables()
    assert "ARENA_DATA_DIR" in used and "ARENA_SEAT_TOKEN" in used
    documented = set(VARIABLE.findall((DOCS / "running.md").read_text(encoding="utf-8")))
    missing = {name: where for name, where in used.items() if name not in documented}
    assert not missing, f"ARENA_ variables used in the code but not in docs/running.md: {missing}"


def test_config_defaults_are_documented() -> None:
    """running.md's table gives each arena/config.py variable with its default."""
    from arena.config import VARIABLES

    text = (DOCS / "running.md").read_text(encoding="utf-8")
    for name, (default, _meaning) in VARIABLES.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, f"no table row for {name} in docs/running.md"
        if default:
            assert f"`{default}`" in row, f"{name}: default {default!r} not in its row"


@pytest.mark.parametrize(
    ("example", "language"),
    [
        ("python/minimal_bot.py", "python"),
        ("javascript/minimal_bot.js", "js"),
        ("stdio/minimal_bot.py", "python"),
    ],
)
def test_example_bot_is_shown_verbatim(example: str, language: str) -> None:
    source = (EXAMPLES / example).read_text(encoding="utf-8").rstrip("\n")
    blocks = code_blocks(DOCS / "writing-a-bot.md")
    shown = ["\n".join(lines) for lang, _, lines in blocks if lang == language]
    assert source in shown, f"docs/writing-a-bot.md does not show docs/examples/{example} as it is"


def _node_ready() -> bool:
    return shutil.which("node") is not None and JS_MODULES.is_dir()


@pytest.mark.parametrize("directory", ["python", "javascript", "stdio"])
def test_example_manifest_is_valid(directory: str) -> None:
    if directory == "javascript" and shutil.which("node") is None:
        pytest.skip("node is not installed")
    manifest = load_manifest(EXAMPLES / directory)
    assert manifest.command is not None
    shown = (DOCS / "writing-a-bot.md").read_text(encoding="utf-8")
    assert f'name = "{manifest.name}"' in shown


def _undocumented(parser: argparse.ArgumentParser, command: str) -> list[str]:
    """'arena CMD ARG' of every argument under `parser` whose --help says nothing of it."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _undocumented(sub, f"{command} {name}")
        elif action.help is None:
            found.append(f"{command} {'/'.join(action.option_strings) or action.metavar}")
    return found


def test_every_command_line_argument_has_help() -> None:
    assert _undocumented(build_parser(), "arena") == []


def test_arena_version_gives_the_versions_the_docs_name() -> None:
    # What a bot author checks a bot against: the values writing-a-bot and protocol-json give.
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"arena {version('sixtythree-arena')}: "), done.stdout
    for said in ("sixtythree.v1.GameMaster protocol_version 1", "json_protocol 1"):
        assert said in done.stdout, done.stdout
    assert done.stdout.rstrip().endswith("records sixty-three/1"), done.stdout
    bot_docs = (DOCS / "writing-a-bot.md").read_text() + (DOCS / "protocol-json.md").read_text()
    assert "| `protocol_version` | `1` |" in bot_docs and '"json_protocol":1' in bot_docs


def _play_options() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return {s for a in sub.choices["play"]._actions for s in a.option_strings}


SEATS = {
    "python": "python docs/examples/python/minimal_bot.py",
    "javascript": "node docs/examples/javascript/minimal_bot.js",
    "stdio": "arena stdio-agent -- python3 docs/examples/stdio/minimal_bot.py",
}


@pytest.mark.parametrize("example", list(SEATS))
def test_example_bot_plays_a_verified_game(example: str, tmp_path: Path) -> None:
    if "--seat" not in _play_options():
        pytest.skip("arena play has no --seat option")
    if example == "javascript" and not _node_ready():
        pytest.skip("node or sample_agents/js/node_modules is missing")
    record = tmp_path / "game.jsonl"
    play = subprocess.run(
        [sys.executable, "-m", "arena.cli", "play", "--seed", "3"]
        + ["--seat", SEATS[example], "--seat", "greedy", "--seat", "random", "--seat", "greedy"]
        + ["--agent-logs", str(tmp_path / "logs"), "--output", str(record)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert play.returncode == 0, play.stdout[-2000:] + play.stderr[-2000:]
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert lines[-1]["event"] == "game_end" and lines[-1]["reason"] != "aborted", lines[-1]
    faults = [line for line in lines if line.get("fault") and line.get("seat") == 0]
    assert not faults, f"the example bot faulted: {faults[:3]}"
    decisions = [line for line in lines if line.get("event") == "action" and line["seat"] == 0]
    assert decisions, "the example bot made no decision"
    verify = subprocess.run(
        [sys.executable, "-m", "arena.cli", "verify", str(record)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.startswith("OK")
