"""Bad configuration gets one clear line saying what to fix, never a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _arena(
    tmp_path: Path, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    full.update({"ARENA_DATA_DIR": str(tmp_path / "data"), **env})
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


MIN_BID_40_5 = "ruleset: min_bid must be a whole number from 1 to 63, not 40.5"
# Valid, but stored as {"dealer_default":20,...} in 201 characters.
LONG_RULESET = json.dumps(
    {
        "points": dict(A=2, K=24, J=2, T=2, **{"9": 8, "5": 4, "O": 4, "3": 1, "2": 2}, JO=14),
        **{"min_bid": 30, "dealer_default": 20, "target": 300, "max_hands": 20},
        **{"out_of_trumps": False, "first_lead_trump": False},
    }
)
TOO_LONG = "is 201 characters long; the database holds 200. Only the parameters that differ"


@pytest.mark.parametrize(
    ("env", "args", "expected"),
    [
        (
            {"ARENA_DATABASE_URL": "postgresql+psycopg://arena:s3cret@127.0.0.1:{port}/x"},
            ["bots", "list"],
            "cannot reach the database at postgresql+psycopg://arena:***@127.0.0.1:{port}/x",
        ),
        ({"ARENA_DATABASE_URL": "nonsense"}, ["bots", "list"], "cannot use database URL"),
        # Workers wait for a database that is down, but not for one no driver here can use.
        (
            {"ARENA_DATABASE_URL": "mysql://x@h/db"},
            ["worker"],
            # not the driver it lacked ("No module named 'MySQLdb'")
            "mysql://x@h/db: mysql:// is not one of the arena's databases, SQLite and PostgreSQL",
        ),
        (
            {"ARENA_REDIS_URL": "redis://127.0.0.1:{port}/0"},
            ["tournament", "create", "--sets", "1"],
            "cannot reach Redis at redis://127.0.0.1:{port}/0",
        ),
        ({"ARENA_DECISION_MS": "soon"}, ["gamemaster", "--listen", "127.0.0.1:0"], "'soon'"),
        ({"ARENA_FAULT_LIMIT": "0"}, ["gamemaster", "--listen", "127.0.0.1:0"], "at least 1"),
        ({"ARENA_FAULT_LIMIT": str(10**20)}, ["gamemaster"], "must be at most 4294967295"),
        ({}, ["dashboard", "--threads", "0"], "--threads: must be at least 1"),
        ({}, ["gamemaster", "--listen", "127.0.0.1:99999"], "port must be a number from 0"),
        (
            {"ARENA_GAME_MASTER_SOCKET": "gm.sock"},
            ["gamemaster", "--listen", "127.0.0.1:0"],
            "arena gamemaster: the socket path 'gm.sock' must be absolute",
        ),
        ({"ARENA_NIGHTLY_CRON": "0 0 31 4 *"}, ["scheduler"], "'0 0 31 4 *' never fires"),
        ({"ARENA_NIGHTLY_CRON": "* * * * * *"}, ["scheduler"], "has 6 fields, not 5"),
        ({}, ["scheduler", "--cron", "0 25 * * *"], "'0 25 * * *' has '25' as its hour, which"),
        ({}, ["scheduler", "--cron", "0 2 * * fri-x"], "has 'fri-x' as its weekday, which takes"),
        ({"ARENA_GAME_MASTER": "nohostport"}, ["worker"], "ARENA_GAME_MASTER='nohostport'"),
        (
            {"ARENA_GAME_MASTER_SOCKET": "gm.sock"},
            ["worker"],
            "ARENA_GAME_MASTER_SOCKET='gm.sock': give the socket's absolute path",
        ),
        ({"ARENA_DECISION_MS": "abc"}, ["worker"], "ARENA_DECISION_MS='abc' is not a whole"),
        ({}, ["worker", "--count", "0"], "argument --count: must be at least 1, not 0"),
        ({}, ["scheduler", "--ruleset", "nosuch"], "unknown ruleset 'nosuch'; choose one of"),
        ({}, ["scheduler", "--sets", "0"], "argument --sets: must be at least 1, not 0"),
        # accepted, and then every set failed with a game master's internal error
        ({}, ["tournament", "create", "--ruleset", '{"min_bid":40.5}'], MIN_BID_40_5),
        ({}, ["match", "a", "b", "--ruleset", '{"min_bid":40.5}'], MIN_BID_40_5),
        ({}, ["scheduler", "--ruleset", '{"min_bid":40.5}'], MIN_BID_40_5),
        # TypeError tracebacks; the demo's only once every process had started
        ({}, ["tournament", "create", "--ruleset", '{"points":null}'], "points must be an"),
        ({}, ["demo", "--ruleset", '{"max_hands":"x"}'], "max_hands must be a whole number"),
        ({}, ["play", "--ruleset", '{"points":{"A":"x"}}'], "points.A must be a whole number"),
        # PostgreSQL's ratings.ruleset holds 200: the games were played, their rating failed
        ({}, ["tournament", "create", "--ruleset", LONG_RULESET], TOO_LONG),
        ({}, ["match", "a", "b", "--ruleset", LONG_RULESET], TOO_LONG),
        ({}, ["scheduler", "--ruleset", LONG_RULESET], TOO_LONG),
        ({}, ["play", "--ruleset", LONG_RULESET], TOO_LONG),
        ({}, ["tournament", "create", "--sets", "-3"], "argument --sets: must be at least 1"),
        ({}, ["match", "a", "b", "--sets", "x"], "argument --sets: 'x' is not a whole number"),
        # Numbers that no arena could honour: refused, not stored or started (one worker was
        # forked per second until 100,000; a connect time of -5 failed every attempt later).
        ({}, ["tournament", "create", "--connect-ms", "-5"], "--connect-ms: must be at least 1"),
        ({}, ["gamemaster", "--connect-ms", str(2**32)], "must be at most 4294967295"),
        ({}, ["gamemaster", "--max-games", "0"], "--max-games: must be at least 1, not 0"),
        # named as the user wrote them (it said "bank_ms must not be negative")
        ({}, ["gamemaster", "--bank-ms", "-1"], "--bank-ms: must be at least 0, not -1"),
        ({}, ["gamemaster", "--decision-ms", "0"], "--decision-ms: must be at least 1, not 0"),
        ({}, ["gamemaster", "--fault-limit", "0"], "--fault-limit: must be at least 1, not 0"),
        ({}, ["worker", "--count", "100000"], "--count: must be at most 256, not 100000"),
        ({}, ["worker", "--reconcile-every", "-5"], "must be a positive number of seconds"),
        ({}, ["dashboard", "--threads", "100000"], "--threads: must be at most 256"),
        ({}, ["tournament", "list", "--limit", "0"], "--limit: must be at least 1, not 0"),
        ({}, ["tournament", "create", "--bots", ",,"], "--bots ',,' names no bot; leave it out"),
        # it picked the first of all bots, by name, as the champion
        ({}, ["tournament", "create", "--format", "gauntlet"], "a gauntlet needs --bots CHAMPION"),
        # accepted at start; every night's job then failed on it
        ({}, ["scheduler", "--sets", "100000000"], "--sets: must be at most 100000"),
        ({}, ["tournament", "list", "--limit", str(10**20)], "--limit: must be at most 10000"),
        # redis-py took '/x' for database 0 (another arena's queue, say) and '/1/2' for 12
        (
            {"ARENA_REDIS_URL": "redis://127.0.0.1:{port}/x"},
            ["tournament", "create", "--sets", "1"],
            "ARENA_REDIS_URL='redis://127.0.0.1:{port}/x': its path '/x' is not a database number",
        ),
        (
            {"ARENA_REDIS_URL": "rediss://127.0.0.1:{port}/1/2"},
            ["worker"],
            "its path '/1/2' is not a database number; write the database as a whole number",
        ),
        (
            {"ARENA_REDIS_URL": "redis://:s3cret@127.0.0.1:{port}?db=y"},
            ["scheduler"],
            "ARENA_REDIS_URL='redis://:***@127.0.0.1:{port}?db=y': its db parameter 'y' is not",
        ),
        (  # redis-py gives the password unquoted: it was shown as written
            {"ARENA_REDIS_URL": "redis://:s3cret%21@127.0.0.1:{port}/0"},
            ["tournament", "create", "--sets", "1"],
            "cannot reach Redis at redis://:***@127.0.0.1:{port}/0",
        ),
        # A password given as a parameter, or with a '/' in it, was shown as written.
        (
            {"ARENA_REDIS_URL": "redis://127.0.0.1:{port}/0?password=s3cret"},
            ["tournament", "create", "--sets", "1"],
            "cannot reach Redis at redis://127.0.0.1:{port}/0?password=*** (",
        ),
        (
            {"ARENA_REDIS_URL": "redis://:s3cret/x@127.0.0.1:{port}/0"},
            ["worker"],
            "ARENA_REDIS_URL='redis://:***@127.0.0.1:{port}/0': write a '/' in the user name",
        ),
        (
            {"ARENA_DATABASE_URL": "postgresql+psycopg://arena@127.0.0.1:{port}/x?password=s3cret"},
            ["bots", "list"],
            "cannot reach the database at postgresql+psycopg://arena@127.0.0.1:{port}/x?password=***",
        ),
        # database 0 and a TypeError traceback
        (
            {"ARENA_REDIS_URL": "redis://127.0.0.1:{port}?db="},
            ["tournament", "create", "--sets", "1"],
            "its db parameter '' is not a database number",
        ),
        (
            {"ARENA_REDIS_URL": "redis://127.0.0.1:{port}/0?colour=blue"},
            ["tournament", "create", "--sets", "1"],
            "ARENA_REDIS_URL='redis://127.0.0.1:{port}/0?colour=blue' is not a Redis URL (",
        ),
        (
            {"ARENA_REDIS_URL": "unix:///tmp/no.sock?db=-1"},
            ["tournament", "create", "--sets", "1"],
            "its db parameter '-1' is not a database number",
        ),
        (
            {"ARENA_REDIS_URL": "redis://127.0.0.1:{port}/1?db=2"},
            ["tournament", "create", "--sets", "1"],
            "ARENA_REDIS_URL='redis://127.0.0.1:{port}/1?db=2' names two databases; give one",
        ),
        (
            {"ARENA_REDIS_URL": "notaurl"},
            ["tournament", "create", "--sets", "1"],
            "ARENA_REDIS_URL='notaurl' is not a Redis URL",
        ),
        (
            {"ARENA_DATA_DIR": "/dev/null/data"},
            ["bots", "list"],
            "ARENA_DATA_DIR='/dev/null/data': cannot use /dev/null/data as the data directory "
            "(/dev/null is not a directory)",  # not "Not a directory", naming no file
        ),
        (
            {"ARENA_AGENT_LOGS": "/dev/null/logs"},
            ["worker"],
            "ARENA_AGENT_LOGS='/dev/null/logs': cannot use /dev/null/logs as agents' logs "
            "(/dev/null is not a directory)",
        ),
        (
            {"ARENA_GAME_MASTER": "nohostport"},
            ["gamemaster"],
            "ARENA_GAME_MASTER='nohostport': write it as HOST:PORT",
        ),
        (
            {"ARENA_DASHBOARD_LISTEN": "foo"},
            ["dashboard"],
            "ARENA_DASHBOARD_LISTEN='foo': write it as HOST:PORT",
        ),
        # the message starts with the command's name (it was the bot's command list, "arena []")
        ({}, ["stdio-agent"], "arena stdio-agent: give the bot's command after --"),
        # a file where the SQLite file's directory should be: which file, not "File exists"
        (
            {"ARENA_DATABASE_URL": "sqlite:////dev/null/arena.db"},
            ["bots", "list"],
            "cannot create its directory /dev/null (/dev/null is not a directory): fix "
            "ARENA_DATABASE_URL",
        ),
        (
            {},
            ["db", "copy", "--to", "sqlite:////dev/null/copy.db"],
            "cannot copy into sqlite:////dev/null/copy.db: cannot create /dev/null/copy.db: "
            "/dev/null is not a directory",
        ),
    ],
)
def test_bad_configuration_is_one_actionable_line(
    tmp_path: Path, env: dict[str, str], args: list[str], expected: str
) -> None:
    port = str(_unused_port())
    done = _arena(tmp_path, *args, **{k: v.format(port=port) for k, v in env.items()})
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected.format(port=port) in done.stderr
    assert "Traceback" not in done.stderr
    assert "s3cret" not in done.stderr


@pytest.mark.parametrize("command", [["ratings"], ["bots", "list"]])
def test_a_database_url_naming_some_other_file_is_one_actionable_line(
    tmp_path: Path, command: list[str]
) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("not a database\n" * 100)
    done = _arena(tmp_path, *command, ARENA_DATABASE_URL=f"sqlite:///{other}")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot use the database at sqlite:///{other} (file is not a database)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_game_master_port_in_use_is_one_actionable_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _arena(tmp_path, "gamemaster", "--listen", f"127.0.0.1:{port}")
    assert done.returncode == 2, done.stderr
    # One line, the system's reason and what to do: no gRPC C-core log line before it.
    [line] = done.stderr.strip().splitlines()
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in line, line
    assert "another game master there?" in line and "--listen" in line, line


def test_a_game_master_on_an_address_of_another_machine_is_told_so(tmp_path: Path) -> None:
    done = _arena(tmp_path, "gamemaster", "--listen", "192.0.2.1:50051")  # TEST-NET-1
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "cannot listen on 192.0.2.1:50051" in line, line
    assert "not an address of this machine" in line and "another game master" not in line, line


def test_a_game_master_on_a_host_name_not_known_is_told_so(tmp_path: Path) -> None:
    # "nosuchhost.invalid": a name that never resolves (RFC 2606); gRPC logged a C-core line
    # and advised GRPC_VERBOSITY
    done = _arena(tmp_path, "gamemaster", "--listen", "nosuchhost.invalid:0")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "cannot listen on nosuchhost.invalid:0: the host name 'nosuchhost.invalid' is" in line
    assert "give an address of this machine with --listen, e.g. 127.0.0.1:0" in line, line


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize(
    "args", [["play", "--players", "random,random,random,random"], ["--help"]], ids=["play", "help"]
)
def test_output_cut_short_by_its_reader_ends_quietly(
    args: list[str], unbuffered: bool, tmp_path: Path
) -> None:
    # `arena watch ID | head -2`: the reader goes, and so do we, without a traceback. Buffered
    # (no PYTHONUNBUFFERED, as most users have it) the failure came only at the flush at exit:
    # "Exception ignored ... BrokenPipeError" and exit 120.
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first line: every write fails
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["ARENA_DATA_DIR"] = str(tmp_path / "data")
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "arena.cli", *args],
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    # Unbuffered, argparse drops its own failed write of the help and exits 0.
    assert done.returncode == 1 or (args == ["--help"] and unbuffered and done.returncode == 0)
    assert done.stderr == ""


def test_a_blank_variable_means_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.config import VARIABLES, env

    monkeypatch.setenv("ARENA_QUEUE", "")  # was a queue named ""
    monkeypatch.setenv("ARENA_DATA_DIR", "  ")  # was the current directory
    assert env("ARENA_QUEUE") == VARIABLES["ARENA_QUEUE"][0] == "arena"
    assert env("ARENA_DATA_DIR") == "data"


def test_unusable_paths_are_one_line_before_any_game_is_played(tmp_path: Path) -> None:
    # The whole game was played and printed, then the record was lost in a traceback.
    into_dir = _arena(tmp_path, "play", "--output", str(tmp_path))
    assert into_dir.returncode == 2 and into_dir.stdout == ""
    assert f"--output {tmp_path} is a directory; give a file name" in into_dir.stderr
    nowhere = _arena(tmp_path, "play", "--output", str(tmp_path / "no" / "g.jsonl"))
    assert nowhere.returncode == 2 and nowhere.stdout == ""
    assert f"no directory {tmp_path / 'no'}" in nowhere.stderr
    logs = tmp_path / "logs"
    logs.write_text("a file")
    as_logs = _arena(tmp_path, "play", "--processes", "--agent-logs", str(logs))
    assert as_logs.returncode == 2
    assert f"--agent-logs {logs}: {logs} is not a directory; give a directory" in as_logs.stderr
    below = _arena(tmp_path, "play", "--processes", "--agent-logs", str(logs / "x"))
    assert below.returncode == 2  # was "Not a directory", once the game master had started
    assert f"--agent-logs {logs / 'x'}: {logs} is not a directory" in below.stderr
    data = _arena(tmp_path, "bots", "list", ARENA_DATA_DIR=str(logs))
    assert data.returncode == 2  # was "(File exists)"
    assert f"as the data directory ({logs} is not a directory)" in data.stderr


def test_verify_says_what_is_wrong_with_a_file_that_is_no_record(tmp_path: Path) -> None:
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"record":\xff\xfe}\n')
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    done = _arena(tmp_path, "verify", str(binary), str(deep))
    assert done.returncode == 1
    assert f"FAIL {binary}: not UTF-8 text (byte 10: invalid start byte)" in done.stderr
    assert f"FAIL {deep}: line 1: nested too deeply to be a record" in done.stderr
    assert "Traceback" not in done.stderr


# `arena verify PATH` with at most 2 GiB of memory: without a limit a verify that reads without
# end takes all the machine's memory first. The child sets the limit itself: a preexec_fn would
# run in a fork of this process, whose gRPC threads (from earlier tests) can print their fork
# warnings into the child's stderr.
VERIFY_IN_2_GIB = """
import resource, runpy, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
sys.argv = ["arena", "verify", sys.argv[1]]
runpy.run_module("arena.cli", run_name="__main__")
"""


@pytest.mark.parametrize(("path", "name"), [
    ("/dev/zero", "/dev/zero"),
    ("/dev/stdin", "/dev/stdin"),  # an endless pipe
    ("-", "standard input"),
])  # fmt: skip
def test_verify_stops_reading_at_what_a_record_can_hold(
    tmp_path: Path, path: str, name: str
) -> None:
    # `arena verify /dev/zero` read until memory ran out; a pipe has no size to check first.
    from arena.verify import MAX_RECORD_BYTES

    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    endless = subprocess.Popen(["yes", '{"record":"sixty-three/1"}'], stdout=subprocess.PIPE)
    try:
        done = subprocess.run(
            [sys.executable, "-c", VERIFY_IN_2_GIB, path],
            stdin=endless.stdout,
            env={**env, "ARENA_DATA_DIR": str(tmp_path / "data")},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        endless.kill()
        endless.wait()
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"FAIL {name}: longer than {MAX_RECORD_BYTES:,} bytes (128 MiB), more than any record "
        "can be\n"
    )


@pytest.mark.parametrize("how", [[], ["--processes"]], ids=["in-process", "processes"])
def test_a_record_goes_through_a_pipe_as_a_dash(tmp_path: Path, how: list[str]) -> None:
    # As Unix tools do, `arena play --output - | arena verify -`: "-" was taken for a file name.
    played = _arena(tmp_path, "play", *how, "--seed", "3", "--output", "-")
    assert played.returncode == 0, played.stderr
    assert "result: team 0" in played.stderr  # the table of hands, out of the record's way
    hands = played.stdout.count('"event":"hand_end"')
    good = _arena(tmp_path, "verify", "-", stdin=played.stdout)
    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith(f"OK   standard input: standard, {hands} hands, ")
    broken = played.stdout.replace('"game_end"', '"game_over"')
    refused = _arena(tmp_path, "verify", "-", stdin=broken)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"FAIL standard input: hand {hands}, ")
    assert "lacks the game_end line" in refused.stderr
    two = _arena(tmp_path, "play", *how, "--mirror", "--output", "-")
    assert two.returncode == 2 and two.stdout == ""
    assert "--mirror plays two games: give --output a file name" in two.stderr


def test_something_other_than_redis_at_the_redis_url_is_one_line(tmp_path: Path) -> None:
    # A web server, say, at the address (redis-py raised its protocol error as a traceback);
    # a database number the server lacks is refused the same way.
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer_like_a_web_server() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                with conn:
                    conn.recv(100)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    threading.Thread(target=answer_like_a_web_server, daemon=True).start()
    try:
        url = f"redis://127.0.0.1:{port}/0"
        done = _arena(tmp_path, "tournament", "create", "--sets", "1", ARENA_REDIS_URL=url)
    finally:
        server.close()
    assert done.returncode == 2, done.stderr
    assert f"Redis at {url} refused the connection (Protocol Error: " in done.stderr
    assert "check ARENA_REDIS_URL" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("ruleset", "expected"),
    [
        ("nosuch", "arena ratings: unknown ruleset 'nosuch'; choose one of standard, "),
        ("Standard", "arena ratings: unknown ruleset 'Standard'; choose one of standard, "),
        ('standard{"min_bid":', "arena ratings: unknown ruleset 'standard{\"min_bid\":'; "),
        ('{"min_bid":', "arena ratings: ruleset '{\"min_bid\":' is not valid JSON: "),
        ('{"points":null}', "arena ratings: ruleset: points must be an"),
        # a long name is cut in the one line, not echoed whole
        ("x" * 5000, "arena ratings: unknown ruleset '" + "x" * 58 + "…; choose one of "),
    ],
)
def test_ratings_refuses_a_ruleset_it_cannot_read_instead_of_saying_no_games(
    tmp_path: Path, ruleset: str, expected: str
) -> None:
    # A typo or a cut-off JSON object printed 'no rated games under ruleset ...' and exit 0,
    # as if the ruleset were merely unplayed.
    done = _arena(tmp_path, "ratings", "--ruleset", ruleset)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(expected) and done.stderr.count("\n") == 1, done.stderr
    assert done.stdout == ""
    assert "sqlite:" not in done.stderr  # no row was looked for: the database is no suspect
    if ruleset == "Standard":
        assert done.stderr.endswith("(names are lower-case: standard)\n"), done.stderr


def test_ratings_of_a_ruleset_stored_as_written_by_an_older_arena_are_shown(
    tmp_path: Path,
) -> None:
    from arena.storage import open_database
    from tests.dashboard.fill import RULESET, fill

    url = f"sqlite:///{tmp_path / 'older.db'}"
    db = open_database(url)
    fill(db)  # stores its games and ratings under "short-3", no ruleset this arena reads
    db.dispose()
    done = _arena(tmp_path, "ratings", "--ruleset", RULESET, ARENA_DATABASE_URL=url)
    assert done.returncode == 0, done.stderr
    assert f"ratings, ruleset {RULESET}" in done.stdout and "greedy@" in done.stdout


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@h:6379/0", "redis://:***@h:6379/0"),
        ("postgresql://u:s3/cret:x@h/db", "postgresql://u:***@h/db"),  # '/' and ':' unencoded
        ("redis://h/0?db=1&password=s3cret", "redis://h/0?db=1&password=***"),
        ("postgresql://u@h/db?sslpassword=s3cret#x", "postgresql://u@h/db?sslpassword=***#x"),
        ("redis://u@h/0?password=", "redis://u@h/0?password="),  # nothing to hide
        ("sqlite:///data/arena.db", "sqlite:///data/arena.db"),
        ("not a url", "not a url"),
    ],
)
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    from arena.config import hide_password

    assert hide_password(url) == shown


@pytest.mark.parametrize(
    ("args", "usage", "unknown"),
    [
        (["play", "--seeds", "3"], "usage: arena play ", "--seeds 3"),
        (["bots", "add", "somewhere", "--bogus"], "usage: arena bots add ", "--bogus"),
        (["tournament", "status", "7", "--folow"], "usage: arena tournament status ", "--folow"),
    ],
)
def test_an_unknown_option_shows_its_own_commands_usage(
    tmp_path: Path, args: list[str], usage: str, unknown: str
) -> None:
    # Not the top level's `usage: arena [-h] COMMAND ...`, which lists none of its options.
    result = _arena(tmp_path, *args)
    assert result.returncode == 2
    assert result.stderr.startswith(usage), result.stderr
    assert f"error: unrecognized arguments: {unknown}\n" in result.stderr


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["match", "a", "b", "--sprt", "-10,10"], ["match", "a", "b", "--sprt=-10,10"]),
        (["match", "a", "b", "--sprt", "0,20"], ["match", "a", "b", "--sprt", "0,20"]),
        (["match", "a", "--sprt", "--queue"], ["match", "a", "--sprt", "--queue"]),
        (
            ["stdio-agent", "--", "bot", "--sprt", "-1,1"],
            ["stdio-agent", "--", "bot", "--sprt", "-1,1"],
        ),
    ],
    ids=["negative elo0", "positive", "no value", "a bot's own argument"],
)
def test_a_negative_sprt_bound_is_the_options_value(argv: list[str], parsed: list[str]) -> None:
    # argparse takes "-10,10" for an option (only bare negative numbers are values to it).
    from arena.cli import _attach_signed_values, build_parser

    assert _attach_signed_values(argv) == parsed
    if argv[0] == "match" and "--queue" not in argv:
        assert build_parser().parse_args(parsed).sprt == argv[-1]
