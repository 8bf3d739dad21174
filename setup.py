"""Build hook: generate the protobuf code from proto/ into arena/_proto before building.

Everything else about the package is in pyproject.toml. The generated code is git-ignored; a
wheel ships it, an editable install finds it in the source tree.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _generate_proto() -> list[str]:
    """Run arena/_proto/generate.py (loaded by path: importing arena is not needed)."""
    spec = importlib.util.spec_from_file_location(
        "_arena_generate_proto", HERE / "arena" / "_proto" / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate()
    top = HERE / "arena" / "_proto" / module.GENERATED_TOP
    return sorted(".".join(p.parent.relative_to(HERE).parts) for p in [*top.rglob("__init__.py")])


class BuildPyWithProto(build_py):
    """build_py that first generates the protobuf code (also run by editable installs)."""

    def run(self) -> None:
        generated = _generate_proto()
        # Packages were discovered before the code existed: add the generated ones.
        known = list(self.packages or [])
        self.packages = known + [p for p in generated if p not in known]
        super().run()


setup(cmdclass={"build_py": BuildPyWithProto})
