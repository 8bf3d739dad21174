"""The bot registry: bot.toml checks with messages that say what to fix, versions, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from arena import cli
from arena.errors import ArenaError
from arena.interpreter import arena_command
from arena.registry import (
    ALLOWED_KEYS,
    ManifestError,
    RegistrationRefused,
    load_manifest,
    register_bot,
)
from arena.storage import Database, repo
from arena.storage.database import shown_url

BOTS = Path(__file__).parent / "data" / "bots"

GOOD = """
name = "tester"
version = "1.0"
author = "alice"
language = "shell"
command = ["sh", "bot.sh"]
"""


def _bot_dir(tmp_path: Path, toml: str, *, files: dict[str, str] | None = None) -> Path:
    directory = tmp_path / "bot"
    directory.mkdir(exist_ok=True)
    (directory / "bot.toml").write_text(toml)
    for name, body in (files or {"bot.sh": "exit 0\n"}).items():
        (directory / name).write_text(body)
    return directory


def _copy(name: str, tmp_path: Path, **replace: str) -> Path:
    """A copy of a test bot with some of its bot.toml lines rewritten."""
    target = tmp_path / f"{name}-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(BOTS / name, target)
    manifest = target / "bot.toml"
    text = manifest.read_text()
    for key, value in replace.items():
        text = "\n".join(
            f'{key} = "{value}"' if line.startswith(f"{key} =") else line
            for line in text.splitlines()
        )
    manifest.write_text(text + "\n")
    return target


# --- manifests -------------------------------------------------------------------------


def test_a_list_command_is_kept_as_written() -> None:
    manifest = load_manifest(BOTS / "echo-list")
    assert (manifest.name, manifest.version, manifest.author) == ("echo-bot", "1.0", "alice")
    assert manifest.command == ("sh", "bot.sh") and manifest.image is None
    assert manifest.directory == (BOTS / "echo-list").resolve()
    assert manifest.description.startswith("Plays the first legal action")
    assert manifest.ref == "echo-bot@1.0"


def test_a_string_command_is_split_like_a_shell_would() -> None:
    manifest = load_manifest(BOTS / "echo-string")
    assert manifest.command == ("./run.sh", "--quiet", "two words")


def test_arena_and_python_in_a_command_are_the_arenas_own_wherever_path_leads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # a worker started as .venv/bin/arena worker
    command = '["arena", "stdio-agent", "--", "python3", "bot.py", "--level", "2.5"]'
    directory = _bot_dir(tmp_path, GOOD.replace('["sh", "bot.sh"]', command), files={"bot.py": ""})
    assert load_manifest(directory).command[:3] == ("arena", "stdio-agent", "--")
    assert arena_command(["arena", "stdio-agent"]) == [
        sys.executable,
        "-m",
        "arena.cli",
        "stdio-agent",
    ]
    assert arena_command(["python3", "-m", "x"]) == [sys.executable, "-m", "x"]
    assert arena_command(["node", "a.js"]) == ["node", "a.js"]


def test_an_image_bot_needs_no_command() -> None:
    manifest = load_manifest(BOTS / "boxed")
    assert (manifest.name, manifest.image, manifest.command) == (
        "boxed.bot",
        "ghcr.io/example/boxed-bot:2",
        None,
    )


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (GOOD.replace('author = "alice"\n', ""), "missing required key 'author'"),
        (GOOD.replace('version = "1.0"\n', ""), "missing required key 'version'"),
        (
            GOOD + 'homepage = "x"\n',
            "unknown key 'homepage'; allowed keys are " + ", ".join(ALLOWED_KEYS),
        ),
        (GOOD + 'homepage = "x"\nlicence = "y"\n', "unknown keys 'homepage', 'licence'"),
        (GOOD + 'image = "x:1"\n', "has both of 'command' and 'image'; give exactly one"),
        (GOOD.replace('command = ["sh", "bot.sh"]\n', ""), "has neither of 'command' and 'image'"),
        (
            GOOD.replace('["sh", "bot.sh"]', '["no-such-program-xyz", "bot.py"]'),
            "command 'no-such-program-xyz' not found on PATH (a name without a '/' is a "
            "program on PATH); install it",
        ),
        (  # the launcher would look for it on PATH, not in the bot directory
            GOOD.replace('["sh", "bot.sh"]', '["bot.sh"]'),
            "command 'bot.sh' not found on PATH (a name without a '/' is a program on PATH); "
            "write './bot.sh' to run the file in",
        ),
        (
            GOOD.replace('["sh", "bot.sh"]', '"./missing.sh"'),
            "command './missing.sh' is not a file in",
        ),
        (
            GOOD.replace('["sh", "bot.sh"]', '["./bot.sh"]'),
            "command './bot.sh' is not executable; run `chmod +x",
        ),
        (  # every game would end in "can't open file"
            GOOD.replace('["sh", "bot.sh"]', '["sh", "bots.sh"]'),
            "command 'sh' is to run 'bots.sh', which is not in",
        ),
        (
            GOOD.replace('["sh", "bot.sh"]', '["arena", "stdio-agent", "--", "nosuch-xyz"]'),
            "command 'nosuch-xyz' not found on PATH",
        ),
        (
            GOOD.replace('["sh", "bot.sh"]', '"python -m arena.cli stdio-agent -- sh lost.sh"'),
            "command 'sh' is to run 'lost.sh', which is not in",
        ),
        (
            GOOD.replace('["sh", "bot.sh"]', '["arena", "stdio-agent"]'),
            "the stdio bridge runs no command; name your bot's after '--'",
        ),
        (GOOD.replace('["sh", "bot.sh"]', "[]"), "'command' is empty"),
        (GOOD.replace('["sh", "bot.sh"]', '["sh", "bot\\u0000.sh"]'), "contains a NUL"),
        (GOOD.replace('"alice"', '"al\\u0000ice"'), "'author' contains a NUL"),
        (
            GOOD.replace('"alice"', '"\\u202eecila"'),
            "'author' contains the bidirectional control character U+202E, which would reorder",
        ),
        (
            GOOD.replace('["sh", "bot.sh"]', '["sh", "bot.sh", "\\u2066x"]'),
            "'command' contains the bidirectional control character U+2066",
        ),
        (GOOD.replace('["sh", "bot.sh"]', "[1, 2]"), "'command' must be a list of strings"),
        (  # docker run would take it for an option and run the bot privileged
            GOOD.replace('command = ["sh", "bot.sh"]', 'image = "--privileged"'),
            "image '--privileged' is not an image reference; write it as [registry/]name",
        ),
        (GOOD.replace('command = ["sh", "bot.sh"]', 'image = "a b"'), "is not an image reference"),
        (  # an escape sequence or a line break would rewrite the terminal or log showing it
            GOOD.replace('language = "', 'language = "\\u001b[31m'),
            "'language' contains the control character U+001B; remove it",
        ),
        (GOOD.replace('"alice"', '"al\\nice"'), "'author' contains the control character U+000A"),
        (
            GOOD.replace('"alice"', '"al\\u2028ice"'),
            "'author' contains the control character U+2028",
        ),
        (
            GOOD + 'description = "two\\rlines"\n',
            "'description' contains the control character U+000D",
        ),
        (
            GOOD.replace('"alice"', '"' + "a" * 201 + '"'),
            "'author' is 201 characters long; at most 200",
        ),
        (GOOD + 'description = "' + "d" * 2001 + '"\n', "'description' is 2001 characters long"),
        (
            GOOD.replace('"tester"', '"my bot!"'),
            "name 'my bot!' is not allowed; use 1 to 64 letters, digits, '-', '_' or '.'",
        ),
        # "/bots/.." would be no page a link could reach
        (GOOD.replace('"tester"', '".."'), "name '..' is not allowed"),
        (GOOD.replace('"1.0"', '"."'), "version '.' is not allowed"),
        (GOOD.replace('"tester"', '"a@b"'), "name 'a@b' is not allowed"),
        (GOOD.replace('"1.0"', '"1 0"'), "version '1 0' is not allowed"),
        (GOOD.replace('"1.0"', "1"), 'not int; write it in quotes: version = "..."'),
        (GOOD.replace('"1.0"', "1.10"), 'not float; write it in quotes: version = "..."'),
        (GOOD.replace('"1.0"', "true"), "'version' must be a string, not bool"),
        (GOOD.replace('"alice"', '"  "'), "'author' is empty"),
        ("name = ", "not valid TOML"),
    ],
    ids=lambda v: v[:40] if isinstance(v, str) else None,
)
def test_bad_manifests_say_what_to_fix(tmp_path: Path, toml: str, message: str) -> None:
    directory = _bot_dir(tmp_path, toml)
    with pytest.raises(ManifestError) as caught:
        load_manifest(directory)
    assert message in str(caught.value)
    assert isinstance(caught.value, ArenaError)


def test_a_directory_without_bot_toml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="needs a bot.toml"):
        load_manifest(tmp_path)
    with pytest.raises(ManifestError, match="not a directory"):
        load_manifest(tmp_path / "nope")
    (tmp_path / "bot.toml").mkdir()  # it said "bot.toml: missing"
    with pytest.raises(ManifestError, match="bot.toml: a directory; the manifest is a file"):
        load_manifest(tmp_path)


# --- registration ----------------------------------------------------------------------


def test_registering_stores_the_manifest_and_a_new_version_is_a_new_row(
    database: Database, tmp_path: Path
) -> None:
    with database.session() as s:
        first = register_bot(s, BOTS / "echo-list")
        second = register_bot(s, _copy("echo-list", tmp_path, version="1.1"))
        image = register_bot(s, BOTS / "boxed")
    assert first.id != second.id
    with database.session() as s:
        bot = repo.get_bot(s, "echo-bot")
        assert [v.version for v in bot.versions] == ["1.0", "1.1"]
        old = repo.get_version(s, "echo-bot@1.0")
        assert old.command == ["sh", "bot.sh"] and old.image is None
        assert old.directory == str((BOTS / "echo-list").resolve())
        assert old.manifest["description"].startswith("Plays")
        boxed = repo.get_version(s, image.id)
        assert (boxed.image, boxed.command, boxed.language) == (
            "ghcr.io/example/boxed-bot:2",
            None,
            "rust",
        )


def test_registering_the_same_version_again_is_refused(database: Database) -> None:
    with database.session() as s:
        register_bot(s, BOTS / "echo-list")
        with pytest.raises(RegistrationRefused, match="echo-bot@1.0 is already registered"):
            register_bot(s, BOTS / "echo-list")
        assert len(repo.get_bot(s, "echo-bot").versions) == 1


def test_the_refusal_for_an_existing_version_says_to_set_a_new_version(
    database: Database,
) -> None:
    with database.session() as s:
        register_bot(s, BOTS / "echo-list")
        with pytest.raises(RegistrationRefused, match="set a new version in .*bot.toml"):
            register_bot(s, BOTS / "echo-list")


def test_a_bot_name_owned_by_another_author_is_refused(database: Database, tmp_path: Path) -> None:
    with database.session() as s:
        register_bot(s, BOTS / "echo-list")
        stolen = _copy("echo-list", tmp_path, version="9", author="mallory")
        with pytest.raises(RegistrationRefused, match="registered by 'alice', not 'mallory'"):
            register_bot(s, stolen)
        assert [v.version for v in repo.get_bot(s, "echo-bot").versions] == ["1.0"]


# --- CLI -------------------------------------------------------------------------------


@pytest.fixture
def arena_env(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> pytest.MonkeyPatch:
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
    return monkeypatch


def test_cli_adds_lists_shows_and_disables_bots(
    arena_env: pytest.MonkeyPatch, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bots", "list"]) == 0
    # The database named: a mistyped ARENA_DATABASE_URL is a new, empty one.
    empty = capsys.readouterr().out
    assert "no bots registered in " in empty and shown_url(database_url) in empty, empty

    assert cli.main(["bots", "add", str(BOTS / "echo-list")]) == 0
    assert cli.main(["bots", "add", str(BOTS / "boxed")]) == 0
    out = capsys.readouterr().out
    assert "registered echo-bot@1.0" in out and "registered boxed.bot@2" in out

    assert cli.main(["bots", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "LATEST", "VERSIONS", "LANGUAGE", "AUTHOR", "STATE"]
    assert lines[1].split() == ["boxed.bot", "2", "1", "rust", "carol", "enabled"]
    assert lines[2].split() == ["echo-bot", "1.0", "1", "shell", "alice", "enabled"]

    assert cli.main(["bots", "show", "echo-bot"]) == 0
    out = capsys.readouterr().out
    assert "echo-bot by alice" in out and "echo-bot@1.0" in out and "sh bot.sh" in out

    assert cli.main(["bots", "disable", "echo-bot"]) == 0
    assert "echo-bot is now disabled" in capsys.readouterr().out
    assert cli.main(["bots", "list", "--json"]) == 0
    listed = {b["name"]: b for b in json.loads(capsys.readouterr().out)}
    assert listed["echo-bot"]["disabled"] is True and listed["boxed.bot"]["disabled"] is False
    assert cli.main(["bots", "list", "--enabled", "--json"]) == 0
    assert [b["name"] for b in json.loads(capsys.readouterr().out)] == ["boxed.bot"]

    assert cli.main(["bots", "enable", "echo-bot"]) == 0
    assert "echo-bot is now enabled" in capsys.readouterr().out
    assert cli.main(["bots", "enable", "echo-bot"]) == 0
    assert "echo-bot is already enabled: nothing changed" in capsys.readouterr().out
    assert cli.main(["bots", "show", "echo-bot", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["disabled"] is False
    assert [v["ref"] for v in shown["versions"]] == ["echo-bot@1.0"]


@pytest.mark.parametrize(
    ("state", "warning"),
    [
        ("daemon-down", "warning: this host reaches no Docker daemon (Cannot connect to the"),
        ("no-image", "warning: docker has no image 'ghcr.io/example/boxed-bot:2' here: build"),
        (None, None),
    ],
)
def test_a_container_bot_this_host_could_not_run_is_registered_with_a_warning(
    arena_env: pytest.MonkeyPatch,
    fake_docker: Path,
    capsys: pytest.CaptureFixture[str],
    state: str | None,
    warning: str | None,
) -> None:
    # Registered without a word, its games forfeited (no image) or waited (no daemon).
    if state is not None:
        (fake_docker / state).touch()
    assert cli.main(["bots", "add", str(BOTS / "boxed")]) == 0  # a warning: workers may differ
    said = capsys.readouterr()
    assert "registered boxed.bot@2" in said.out
    if warning is None:
        assert said.err == ""
    else:
        assert said.err.startswith(warning), said.err
        assert "every worker host needs the image before the bot's games" in said.err


def test_cli_reports_refusals_with_exit_code_2(
    arena_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bots", "add", str(BOTS / "echo-list")]) == 0
    capsys.readouterr()
    assert cli.main(["bots", "add", str(BOTS / "echo-list")]) == 2
    assert "arena bots: echo-bot@1.0 is already registered" in capsys.readouterr().err

    broken = _bot_dir(tmp_path, GOOD + 'colour = "red"\n')
    assert cli.main(["bots", "add", str(broken)]) == 2
    assert "unknown key 'colour'" in capsys.readouterr().err

    for action in ("show", "disable"):
        assert cli.main(["bots", action, "ghost"]) == 2
        assert "no bot named 'ghost'" in capsys.readouterr().err
        # As ratings name a version: it said "no bot named 'echo-bot@1.0'", of a bot that exists.
        with pytest.raises(SystemExit) as usage:
            cli.main(["bots", action, "echo-bot@1.0"])
        assert usage.value.code == 2
        said = capsys.readouterr().err
        assert "'echo-bot@1.0' names a version: give the bot's name alone, 'echo-bot'" in said


def test_cli_uses_a_sqlite_file_in_the_data_dir_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ARENA_DATABASE_URL", raising=False)
    assert cli.main(["bots", "add", str(BOTS / "echo-string")]) == 0
    assert (tmp_path / "data" / "arena.db").is_file()
    assert os.path.getsize(tmp_path / "data" / "arena.db") > 0
    assert "registered string-bot@0.3.1" in capsys.readouterr().out


def test_a_description_may_span_lines(tmp_path: Path) -> None:
    toml = GOOD + 'description = """first line\n\tsecond line"""\n'
    manifest = load_manifest(_bot_dir(tmp_path, toml, files={"bot.sh": "true\n"}))
    assert manifest.description == "first line\n\tsecond line"


def test_a_manifest_that_is_not_utf8_is_refused_saying_so(tmp_path: Path) -> None:
    directory = _bot_dir(tmp_path, GOOD)
    (directory / "bot.toml").write_bytes(GOOD.replace("alice", "m\xe9").encode("latin-1"))
    with pytest.raises(ManifestError, match=r"bot.toml: not UTF-8 text \(byte \d+: .*\); save it"):
        load_manifest(directory)
