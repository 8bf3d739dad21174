"""Generate the Python protobuf and gRPC code for proto/ into this package (idempotent).

Used by ``scripts/gen-proto``, by ``setup.py`` at build time and, when the generated files are
missing or stale in a source checkout, by ``arena._proto`` on first import. Standard library
only at import time (grpc_tools is loaded when generating), so setup.py can load this file alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# proto/ of a source checkout; absent in an installed wheel, where the generated code ships.
PROTO_ROOT = PACKAGE_DIR.parents[1] / "proto"
PROTO_FILES = ("sixtythree/v1/arena.proto",)
PACKAGE = "arena._proto"
STAMP_NAME = ".stamp"
GENERATED_TOP = "sixtythree"
# Bump when the generation steps change, so old output counts as stale.
GENERATOR_VERSION = "2"


def _tools_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("grpcio-tools")
    except metadata.PackageNotFoundError:
        return "none"


def digest(proto_root: Path = PROTO_ROOT) -> str:
    """What the generated code depends on: the .proto texts and this generator's version."""
    h = hashlib.sha256(f"generator {GENERATOR_VERSION}".encode())
    for name in PROTO_FILES:
        h.update(name.encode() + b"\0" + (proto_root / name).read_bytes() + b"\0")
    return h.hexdigest()


def _stamp_text(proto_root: Path) -> str:
    return f"{digest(proto_root)}\ngrpcio-tools {_tools_version()}\n"


def has_sources(proto_root: Path = PROTO_ROOT) -> bool:
    return all((proto_root / name).is_file() for name in PROTO_FILES)


def generated_files(out_dir: Path = PACKAGE_DIR) -> list[Path]:
    files = []
    for name in PROTO_FILES:
        base = out_dir / name.removesuffix(".proto")
        files += [Path(f"{base}_pb2.py"), Path(f"{base}_pb2_grpc.py"), Path(f"{base}_pb2.pyi")]
    return files


def is_generated(out_dir: Path = PACKAGE_DIR) -> bool:
    return all(p.is_file() for p in generated_files(out_dir))


def up_to_date(
    proto_root: Path = PROTO_ROOT, out_dir: Path = PACKAGE_DIR, check_tools: bool = True
) -> bool:
    """Whether the output matches the .proto files (and, if asked, the installed grpcio-tools).

    The import-time check skips the tools version: reading package metadata costs more than
    the rest of the import, and a new protoc only matters to scripts/gen-proto and builds.
    """
    stamp = out_dir / STAMP_NAME
    if not is_generated(out_dir) or not stamp.is_file():
        return False
    text = stamp.read_text()
    if check_tools:
        return text == _stamp_text(proto_root)
    return text.split("\n", 1)[0] == digest(proto_root)


@contextlib.contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    # Several agent processes may start at once on a fresh checkout: one generates, the rest wait.
    import fcntl

    with open(out_dir / ".gen.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def generate(
    proto_root: Path = PROTO_ROOT, out_dir: Path = PACKAGE_DIR, force: bool = False
) -> bool:
    """Run protoc unless the output is up to date; True if it generated. Raises RuntimeError."""
    if not has_sources(proto_root):
        raise RuntimeError(f"no .proto sources under {proto_root}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with _locked(out_dir):
        if not force and up_to_date(proto_root, out_dir):
            return False
        with tempfile.TemporaryDirectory(dir=out_dir, prefix=".gen-") as tmp:
            _run_protoc(proto_root, Path(tmp))
            _fix_imports(Path(tmp))
            _add_init_files(Path(tmp))
            _install(Path(tmp), out_dir)
        (out_dir / STAMP_NAME).write_text(_stamp_text(proto_root))
    return True


def _run_protoc(proto_root: Path, out: Path) -> None:
    try:
        from importlib.resources import files

        from grpc_tools import protoc
    except ImportError as exc:
        raise RuntimeError(
            "grpcio-tools is needed to generate the protobuf code: pip install grpcio-tools"
        ) from exc
    well_known = str(files("grpc_tools") / "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{proto_root}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *PROTO_FILES,
    ]
    # protoc resolves the listed files against -I, so run from proto/ for clear messages.
    cwd = os.getcwd()
    os.chdir(proto_root)
    try:
        code = protoc.main(args)
    finally:
        os.chdir(cwd)
    if code != 0:
        raise RuntimeError(f"protoc failed (exit {code}) on {', '.join(PROTO_FILES)}")


_IMPORT = re.compile(rf"^(from|import) ({GENERATED_TOP})\b", re.MULTILINE)
# The module name protobuf gives the message classes (their __module__, used by pickle).
_MODULE_NAME = re.compile(rf"'({GENERATED_TOP}\.[\w.]+_pb2)'")


def _fix_imports(out: Path) -> None:
    # protoc writes absolute imports from the proto root (`from sixtythree.v1 import ...`);
    # the code lives inside the arena package, so they must name it.
    for path in out.rglob("*.py*"):
        text = path.read_text()
        fixed = _IMPORT.sub(rf"\1 {PACKAGE}.\2", text)
        fixed = _MODULE_NAME.sub(rf"'{PACKAGE}.\1'", fixed)
        if fixed != text:
            path.write_text(fixed)


def _add_init_files(out: Path) -> None:
    for directory in [out / GENERATED_TOP, *(out / GENERATED_TOP).rglob("*")]:
        if directory.is_dir():
            (directory / "__init__.py").write_text('"""Generated from proto/: do not edit."""\n')


def _install(tmp: Path, out_dir: Path) -> None:
    # Replace file by file with os.replace, so a process importing meanwhile sees whole files.
    for path in sorted(tmp.rglob("*")):
        target = out_dir / path.relative_to(tmp)
        if path.is_dir():
            target.mkdir(exist_ok=True)
        else:
            os.replace(path, target)


def clean(out_dir: Path = PACKAGE_DIR) -> None:
    shutil.rmtree(out_dir / GENERATED_TOP, ignore_errors=True)
    (out_dir / STAMP_NAME).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Generate Python code from proto/.")
    parser.add_argument("--force", action="store_true", help="regenerate even if up to date")
    parser.add_argument("--clean", action="store_true", help="remove the generated code")
    parser.add_argument("--out", type=Path, default=PACKAGE_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.clean:
        clean(args.out)
        print(f"[gen-proto] removed generated code under {args.out}")
        return 0
    try:
        made = generate(PROTO_ROOT, args.out, force=args.force)
    except RuntimeError as exc:
        print(f"[gen-proto] {exc}", file=sys.stderr)
        return 1
    state = "generated" if made else "up to date"
    print(f"[gen-proto] {', '.join(PROTO_FILES)}: {state} ({args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
