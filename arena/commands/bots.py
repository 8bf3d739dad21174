"""`arena bots`: register bot directories, list, show, disable and re-enable bots."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from arena.commands.table import print_table

if TYPE_CHECKING:
    from arena.storage import Bot, BotVersion, Database, Fault


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bots = subparsers.add_parser("bots", help="register and manage bots")
    sub = bots.add_subparsers(dest="bots_command", metavar="ACTION", required=True)

    add = sub.add_parser("add", help="register the bot in DIR (its bot.toml) as a new version")
    add.add_argument("directory", metavar="DIR", help="the bot's directory, holding its bot.toml")
    add.set_defaults(func=_add)

    lst = sub.add_parser("list", help="list bots with their latest version")
    lst.add_argument("--json", action="store_true", help="print JSON instead of a table")
    lst.add_argument("--enabled", action="store_true", help="leave out disabled bots")
    lst.set_defaults(func=_list)

    show = sub.add_parser("show", help="show a bot and all its versions")
    show.add_argument("name", metavar="NAME", type=_bot_name, help=_NAME_HELP)
    show.add_argument("--json", action="store_true", help="print JSON instead of text")
    show.set_defaults(func=_show)

    disable = sub.add_parser("disable", help="stop scheduling a bot (its games stay)")
    disable.add_argument("name", metavar="NAME", type=_bot_name, help=_NAME_HELP)
    disable.set_defaults(func=_disable, disabled=True)

    enable = sub.add_parser("enable", help="schedule a disabled bot again")
    enable.add_argument("name", metavar="NAME", type=_bot_name, help=_NAME_HELP)
    enable.set_defaults(func=_disable, disabled=False)


_NAME_HELP = "the bot's name, as bots list shows it (every version of it)"


def _bot_name(text: str) -> str:
    """A bot's name; NAME@VERSION, as ratings and tournaments name a version, is refused saying
    so (it read "no bot named 'greedy@1'", of a bot that exists)."""
    name, at, _ = text.partition("@")
    if at:
        raise argparse.ArgumentTypeError(
            f"{text!r} names a version: give the bot's name alone, {name!r} (it covers every "
            "version)"
        )
    return text


def _open() -> Database:
    from arena.config import database_url
    from arena.storage import open_database

    return open_database(database_url())


def _add(args: argparse.Namespace) -> int:
    from arena.registry import register_bot
    from runner.launch.container import ContainerLauncher

    with _open() as db, db.session() as session:
        version = register_bot(session, args.directory)
        print(f"registered {version.ref} (id {version.id}) from {version.directory}")
        # A warning, not a refusal: bots may be registered where no worker runs.
        if version.image and (problem := ContainerLauncher().image_problem(version.image)):
            print(
                f"warning: {problem}; every worker host needs the image before the bot's games",
                file=sys.stderr,
            )
        if version.bot.disabled:
            print(f"note: bot {version.bot.name!r} is disabled; `arena bots enable` to play it")
    return 0


def _list(args: argparse.Namespace) -> int:
    from arena.storage import repo

    with _open() as db, db.session() as session:
        bots = repo.list_bots(session, include_disabled=not args.enabled)
        if args.json:
            print(json.dumps([_bot_json(bot, versions=False) for bot in bots], indent=2))
            return 0
        if not bots:
            # Named: a mistyped ARENA_DATABASE_URL is a new, empty database.
            print(f"no bots registered in {db.shown_url}; add one with `arena bots add DIR`")
            return 0
        rows: list[tuple[str, ...]] = [
            ("NAME", "LATEST", "VERSIONS", "LANGUAGE", "AUTHOR", "STATE")
        ]
        for bot in bots:
            latest = bot.latest
            rows.append(
                (
                    bot.name,
                    latest.version if latest else "-",
                    str(len(bot.versions)),
                    latest.language if latest else "-",
                    bot.author,
                    "disabled" if bot.disabled else "enabled",
                )
            )
        print_table(rows)
    return 0


def _show(args: argparse.Namespace) -> int:
    from arena.storage import repo

    with _open() as db, db.session() as session:
        bot = repo.get_bot(session, args.name)
        faults = {v.id: repo.fault_kinds(session, v.id) for v in bot.versions}
        if args.json:
            shown = _bot_json(bot, versions=True)
            for version in shown["versions"]:
                version["faults"] = dict(faults[version["id"]])
            print(json.dumps(shown, indent=2))
            return 0
        print(f"{bot.name} by {bot.author}{' (disabled)' if bot.disabled else ''}")
        print(f"registered {bot.created:%Y-%m-%d %H:%M} UTC, {len(bot.versions)} version(s)")
        for version in bot.versions:
            print()
            print(f"  {version.ref}  (id {version.id}, {version.created:%Y-%m-%d %H:%M} UTC)")
            print(f"    language:  {version.language}")
            print(f"    runs:      {_runs(version)}")
            print(f"    directory: {version.directory}")
            description = version.manifest.get("description")
            if description:
                print(f"    about:     {description}")
            if faults[version.id]:
                latest = repo.list_faults_for_version(session, version.id, limit=1)[0]
                print(f"    faults:    {', '.join(f'{k} {n}' for k, n in faults[version.id])}")
                print(f"    latest:    {_fault_line(latest)}")
                if said := latest.stderr.strip():  # its last words, often the reason
                    print(f"    stderr:    {said.splitlines()[-1][:200]}")
    return 0


def _fault_line(fault: Fault) -> str:
    hand = f", hand {fault.hand}" if fault.hand else ""
    detail = f": {fault.detail}" if fault.detail else ""
    return f"{fault.kind} in game {fault.game_id}, seat {fault.seat}{hand}{detail}"


def _disable(args: argparse.Namespace) -> int:
    from arena.storage import repo

    state = "disabled" if args.disabled else "enabled"
    with _open() as db, db.session() as session:
        if repo.get_bot(session, args.name).disabled == args.disabled:  # "is now" said otherwise
            print(f"{args.name} is already {state}: nothing changed")
            return 0
        repo.set_bot_disabled(session, args.name, args.disabled)
        print(f"{args.name} is now {state}")
    return 0


def _runs(version: BotVersion) -> str:
    import shlex

    if version.command is not None:
        return shlex.join(version.command)
    return f"image {version.image}"


def _bot_json(bot: Bot, *, versions: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": bot.name,
        "author": bot.author,
        "disabled": bot.disabled,
        "created": bot.created.isoformat(),
        "latest": bot.latest.ref if bot.latest else None,
        "versions": len(bot.versions),
    }
    if versions:
        out["versions"] = [
            {
                "ref": v.ref,
                "id": v.id,
                "version": v.version,
                "language": v.language,
                "command": v.command,
                "image": v.image,
                "directory": v.directory,
                "created": v.created.isoformat(),
                "manifest": v.manifest,
            }
            for v in bot.versions
        ]
    return out
