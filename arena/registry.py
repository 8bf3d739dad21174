"""Bot registry: read and check a bot directory's bot.toml, then register it as a version."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tomllib
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.errors import ArenaError
from arena.interpreter import arena_command, bridged_at

if TYPE_CHECKING:  # sqlalchemy is only needed by callers that register
    from sqlalchemy.orm import Session

    from arena.storage.models import BotVersion

MANIFEST_NAME = "bot.toml"
# Embeddings, overrides and isolates (U+202A-202E, U+2066-2069): they reorder what follows them.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# The longest each text may be: what the database holds (PostgreSQL refused longer ones with a
# traceback; SQLite took a megabyte of author and every bot list showed it). A description
# is for a line or two on the bot's page.
_MAX_CHARS = {"name": 64, "version": 64, "author": 200, "language": 64, "image": 300}
_MAX_DESCRIPTION_CHARS = 2000
# Control characters, and the line and paragraph separators (U+2028, U+2029).
_CONTROLS = frozenset({"Cc", "Zl", "Zp"})
REQUIRED_KEYS = ("name", "version", "author", "language")
OPTIONAL_KEYS = ("command", "image", "description")
ALLOWED_KEYS = REQUIRED_KEYS + OPTIONAL_KEYS
# An image reference as docker reads one: [registry[:port]/]path[:tag][@algorithm:digest].
IMAGE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")
# At least one letter or digit: "." and ".." would be path segments in the dashboard's links.
NAME_PATTERN = re.compile(r"(?=.*[A-Za-z0-9])[A-Za-z0-9._-]{1,64}")
# Versions appear in "name@version" and in file names, so they get the same alphabet plus '+'.
VERSION_PATTERN = re.compile(r"(?=.*[A-Za-z0-9])[A-Za-z0-9._+-]{1,64}")


class ManifestError(ArenaError, ValueError):
    """A bot.toml that cannot be registered; the message says what to change."""


class RegistrationRefused(ArenaError):
    """A valid manifest the arena will not register (taken name, existing version)."""


@dataclass(frozen=True)
class Manifest:
    """A checked bot.toml. `command` is split into words; `directory` is absolute; `raw` is
    the file's table as read (stored as the version's manifest)."""

    name: str
    version: str
    author: str
    language: str
    directory: Path
    raw: dict[str, Any]
    command: tuple[str, ...] | None = None
    image: str | None = None
    description: str = ""

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


def load_manifest(directory: str | os.PathLike[str]) -> Manifest:
    """Read `directory/bot.toml` and check it; raises ManifestError naming the fix."""
    bot_dir = Path(directory).resolve()
    path = bot_dir / MANIFEST_NAME
    if not bot_dir.is_dir():
        raise ManifestError(f"{directory}: not a directory; give the bot's directory")
    if path.is_dir():
        raise ManifestError(f"{path}: a directory; the manifest is a file named {MANIFEST_NAME}")
    if not path.is_file():
        raise ManifestError(f"{path}: missing; a bot directory needs a {MANIFEST_NAME}")
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ManifestError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8"
        ) from None
    return parse_manifest(data, bot_dir, source=str(path))


def parse_manifest(data: dict[str, Any], bot_dir: Path, *, source: str = MANIFEST_NAME) -> Manifest:
    """Check the keys of a parsed bot.toml against the rules of the registry."""
    unknown = sorted(set(data) - set(ALLOWED_KEYS))
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        raise ManifestError(
            f"{source}: unknown key{'s' if len(unknown) > 1 else ''} {names}; "
            f"allowed keys are {', '.join(ALLOWED_KEYS)}"
        )
    for key in REQUIRED_KEYS:
        if key not in data:
            raise ManifestError(f"{source}: missing required key {key!r}")
    fields = {key: _string(data, key, source) for key in REQUIRED_KEYS}
    name, version = fields["name"], fields["version"]
    if not NAME_PATTERN.fullmatch(name):
        raise ManifestError(
            f"{source}: name {name!r} is not allowed; use 1 to 64 letters, digits, '-', '_' "
            "or '.', at least one letter or digit"
        )
    if not VERSION_PATTERN.fullmatch(version):
        raise ManifestError(
            f"{source}: version {version!r} is not allowed; "
            "use 1 to 64 letters, digits, '-', '_', '.' or '+', at least one letter or digit"
        )
    description = _string(data, "description", source) if "description" in data else ""

    has_command, has_image = "command" in data, "image" in data
    if has_command == has_image:
        which = "both" if has_command else "neither"
        raise ManifestError(
            f"{source}: has {which} of 'command' and 'image'; give exactly one: "
            "command = [...] to run a program, or image = '...' to run a container"
        )
    command = _command(data["command"], bot_dir, source) if has_command else None
    image = _string(data, "image", source) if has_image else None
    if image is not None and not IMAGE_PATTERN.fullmatch(image):
        # `docker run` reads an image that starts with '-' as an option: "--privileged".
        raise ManifestError(
            f"{source}: image {image!r} is not an image reference; write it as "
            "[registry/]name[:tag][@digest], starting with a letter or digit"
        )
    return Manifest(
        name=name,
        version=version,
        author=fields["author"],
        language=fields["language"],
        directory=bot_dir,
        raw=data,
        command=command,
        image=image,
        description=description,
    )


def _string(data: dict[str, Any], key: str, source: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        # TOML reads version = 1.10 as the number 1.1; the fix is the quotes, so say it
        # (without echoing the number, which may no longer be what was written).
        quoted = f'; write it in quotes: {key} = "..."' if _is_number(value) else ""
        raise ManifestError(
            f"{source}: {key!r} must be a string, not {type(value).__name__}{quoted}"
        )
    value = value.strip()
    # Line breaks and tabs only in the description; any other control character (escape
    # sequences, carriage returns) would rewrite the terminal or log that shows the text.
    breaks = "\n\t\u2028\u2029" if key == "description" else ""
    _refuse_controls(value, repr(key), source, allowed=breaks)
    _refuse_bidi(value, repr(key), source)
    if not value and key != "description":
        raise ManifestError(f"{source}: {key!r} is empty")
    longest = _MAX_CHARS.get(key, _MAX_DESCRIPTION_CHARS)
    if len(value) > longest:
        raise ManifestError(
            f"{source}: {key!r} is {len(value)} characters long; at most {longest} are allowed"
        )
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _refuse_controls(text: str, what: str, source: str, allowed: str = "") -> None:
    control = next(
        (ch for ch in text if unicodedata.category(ch) in _CONTROLS and ch not in allowed), None
    )
    if control == "\x00":  # TOML allows it; no program can take it
        raise ManifestError(f"{source}: {what} contains a NUL character")
    if control is not None:
        raise ManifestError(
            f"{source}: {what} contains the control character U+{ord(control):04X}; remove it"
        )


def _refuse_bidi(text: str, what: str, source: str) -> None:
    if bidi := next((ch for ch in text if ch in _BIDI_CONTROLS), None):
        raise ManifestError(
            f"{source}: {what} contains the bidirectional control character U+{ord(bidi):04X}, "
            "which would reorder the text around it where it is shown; remove it"
        )


def _command(value: object, bot_dir: Path, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise ManifestError(f"{source}: command {value!r} cannot be split: {exc}") from None
    elif isinstance(value, list) and all(isinstance(w, str) for w in value):
        words = list(value)
    else:
        raise ManifestError(f"{source}: 'command' must be a list of strings or one string")
    for word in words:
        _refuse_controls(word, "'command'", source)
        _refuse_bidi(word, "'command'", source)
    if not words or not words[0]:
        raise ManifestError(f"{source}: 'command' is empty; name the program to run")
    _check_executable(words[0], bot_dir, source)
    _check_script(words, bot_dir, source)
    own = arena_command(words)
    if (at := bridged_at(own)) is not None:
        _check_executable(own[at], bot_dir, source)
        _check_script(own[at:], bot_dir, source)
    elif "stdio-agent" in words:
        raise ManifestError(
            f"{source}: the stdio bridge runs no command; name your bot's after '--', as in "
            "command = ['arena', 'stdio-agent', '--', 'python3', 'bot.py']"
        )
    return tuple(words)


# A program's first argument that names a file: a path, or a name with an extension (bot.py).
_FILE_ARGUMENT = re.compile(r".*/.*|.*\.[A-Za-z]+")


def _check_script(words: list[str], bot_dir: Path, source: str) -> None:
    """The file an interpreter is told to run (python3 bot.py, node agent.js) is there: else
    every game would be lost to "can't open file" in place of this one message."""
    script = words[1] if len(words) > 1 else ""
    names_file = _FILE_ARGUMENT.fullmatch(script) and not script.startswith("-")
    if names_file and not (bot_dir / script).exists():
        raise ManifestError(
            f"{source}: command {words[0]!r} is to run {script!r}, which is not in {bot_dir}; "
            "fix the path (it is relative to the bot's directory)"
        )


def _check_executable(exe: str, bot_dir: Path, source: str) -> None:
    # As the launcher runs it: a bare name is a program on PATH; a path is relative to the
    # bot directory (where the command runs).
    if arena_command([exe]) != [exe]:  # the arena's own Python or command
        return
    local = bot_dir / exe
    if "/" not in exe:
        if shutil.which(exe) is not None:
            return
        fix = f"write './{exe}' to run the file in {bot_dir}" if local.is_file() else "install it"
        raise ManifestError(
            f"{source}: command {exe!r} not found on PATH (a name without a '/' is a program "
            f"on PATH); {fix}"
        )
    if not local.is_file():
        raise ManifestError(f"{source}: command {exe!r} is not a file in {bot_dir}; fix the path")
    if not os.access(local, os.X_OK):
        raise ManifestError(
            f"{source}: command {exe!r} is not executable; run `chmod +x {local}` "
            "or start it with its interpreter (e.g. command = ['python3', ...])"
        )


def register_bot(session: Session, directory: str | os.PathLike[str]) -> BotVersion:
    """Check the bot in `directory` and store it as a new version; never overwrites."""
    from arena.storage import repo
    from arena.storage.errors import AuthorMismatch, VersionExists

    manifest = load_manifest(directory)
    existing = repo.find_bot(session, manifest.name)
    if existing is not None and existing.author != manifest.author:
        raise RegistrationRefused(
            f"bot {manifest.name!r} is registered by {existing.author!r}, not "
            f"{manifest.author!r}: choose another name"
        )
    if existing is not None and any(v.version == manifest.version for v in existing.versions):
        raise RegistrationRefused(
            f"{manifest.ref} is already registered; set a new version in "
            f"{manifest.directory / MANIFEST_NAME} to register this code"
        )
    try:
        return repo.add_bot_version(
            session,
            name=manifest.name,
            version=manifest.version,
            author=manifest.author,
            language=manifest.language,
            manifest=manifest.raw,
            directory=str(manifest.directory),
            command=list(manifest.command) if manifest.command is not None else None,
            image=manifest.image,
        )
    except (AuthorMismatch, VersionExists) as exc:
        raise RegistrationRefused(str(exc)) from None
