"""Bots and their versions: registering, looking up, disabling."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from arena.storage.errors import AuthorMismatch, NotFound, StorageError, VersionExists
from arena.storage.models import Bot, BotVersion
from arena.storage.values import VersionKey, parse_ref


def get_bot(session: Session, name: str) -> Bot:
    bot = session.scalar(select(Bot).where(Bot.name == name).options(selectinload(Bot.versions)))
    if bot is None:
        raise _no_bot(session, name, f"no bot named {name!r}")
    return bot


def _no_bot(session: Session, name: str, message: str) -> NotFound:
    """NotFound, naming the registered bot `name` is likely a slip for: the same name in another
    case (names are case-sensitive), else the closest spelling."""
    names = list(session.scalars(select(Bot.name)))
    same = [n for n in names if n.casefold() == name.casefold()]
    close = same or difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    if not close:
        return NotFound(message)
    return NotFound(f"{message}; did you mean {close[0]!r}?", near=True)


def find_bot(session: Session, name: str) -> Bot | None:
    return session.scalar(select(Bot).where(Bot.name == name))


def list_bots(session: Session, *, include_disabled: bool = True) -> list[Bot]:
    query = select(Bot).options(selectinload(Bot.versions)).order_by(Bot.name)
    if not include_disabled:
        query = query.where(Bot.disabled.is_(False))
    return list(session.scalars(query))


def get_version(session: Session, key: VersionKey) -> BotVersion:
    """A bot version by id or by "name@version"."""
    if isinstance(key, int):
        found = session.get(BotVersion, key)
        if found is None:
            raise NotFound(f"no bot version with id {key}")
        return found
    name, version = parse_ref(key)
    found = session.scalar(
        select(BotVersion).join(Bot).where(Bot.name == name, BotVersion.version == version)
    )
    if found is None:
        bot = find_bot(session, name)
        if bot is None:
            raise _no_bot(session, name, f"no bot version {key!r}: no bot named {name!r}")
        versions = ", ".join(v.version for v in bot.versions)
        raise NotFound(f"no bot version {key!r}: {name} has version(s) {versions}", near=True)
    return found


def active_versions(session: Session, *, latest_only: bool = True) -> list[BotVersion]:
    """Versions of enabled bots, by bot name: what a round robin is planned over."""
    out: list[BotVersion] = []
    for bot in list_bots(session, include_disabled=False):
        if latest_only:
            if bot.latest is not None:
                out.append(bot.latest)
        else:
            out.extend(bot.versions)
    return out


def add_bot_version(
    session: Session,
    *,
    name: str,
    version: str,
    author: str,
    language: str,
    manifest: Mapping[str, Any],
    directory: str,
    command: Sequence[str] | None = None,
    image: str | None = None,
) -> BotVersion:
    """Register name@version, creating the bot on its first version.

    A new version is always a new row with its own rating; an existing one is never
    overwritten (VersionExists), and only the bot's author may add versions (AuthorMismatch).
    """
    if (command is None) == (image is None):
        raise StorageError(f"{name}@{version}: give exactly one of command and image")
    bot = find_bot(session, name)
    if bot is None:
        bot = Bot(name=name, author=author)
        session.add(bot)
    elif bot.author != author:
        raise AuthorMismatch(
            f"bot {name!r} belongs to {bot.author!r}, not {author!r}: "
            "choose another name for your bot"
        )
    elif any(v.version == version for v in bot.versions):
        raise VersionExists(f"{name}@{version} is already registered: give this bot a new version")
    row = BotVersion(
        bot=bot,
        version=version,
        language=language,
        manifest=dict(manifest),
        command=list(command) if command is not None else None,
        image=image,
        directory=directory,
    )
    session.add(row)
    try:
        session.commit()
    except IntegrityError:
        # Someone registered the same name or name@version between our check and commit.
        session.rollback()
        raise VersionExists(
            f"{name}@{version} was registered concurrently: give this bot a new version"
        ) from None
    return row


def set_bot_disabled(session: Session, name: str, disabled: bool = True) -> Bot:
    """Disable (or re-enable) a bot: it keeps its games and ratings but is not scheduled."""
    bot = get_bot(session, name)
    bot.disabled = disabled
    session.commit()
    return bot


def resolve_version_id(session: Session, key: VersionKey) -> int:
    return key if isinstance(key, int) else get_version(session, key).id
