"""The import rules of ARCHITECTURE.md ("The layers"), read from every module's ``ast``.

- core imports only the standard library, attrs, cattrs and rfc8785 (anywhere, even
  inside a function).
- ports imports core; sql imports sqlglot and core.
- adapters never import the app (``powercontext`` itself, ``powercontext.service``, ...),
  except the driving adapters cli, mcp and http.
- app never imports adapters or sql at module level (the registry picks adapters at run
  time); an import inside a function is allowed. ``if TYPE_CHECKING:`` counts as module
  level.
- plugins (all but the contract kit ``plugins/testing``) never import adapters or the app
  at module level: adapters import plugins, so that would be a cycle.
- no module imports the bare source folders (``core``, ``app``, ...) or ``tests``.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]

SUBPACKAGES = ("core", "ports", "adapters", "plugins", "sql")
"""Folders mapped to ``powercontext.<name>``; ``app/`` is ``powercontext`` itself."""
FOLDER_NAMES = frozenset({*SUBPACKAGES, "app", "tests", "bench", "support"})
DRIVING_ADAPTERS = ("cli", "mcp", "http")
APP = "powercontext"
STDLIB = "stdlib"


@attrs.frozen
class Import:
    path: Path
    line: int
    target: str  # absolute dotted name ("powercontext.core.models.Source", "attrs")
    module_level: bool

    @property
    def kind(self) -> str:
        """``stdlib``, ``powercontext`` (the app), ``powercontext.<sub>``, or the
        top-level name of a third-party distribution."""
        parts = self.target.split(".")
        if parts[0] in sys.stdlib_module_names:
            return STDLIB
        if parts[0] == APP:
            if len(parts) > 1 and parts[1] in SUBPACKAGES:
                return f"{APP}.{parts[1]}"
            return APP
        return parts[0]

    def __str__(self) -> str:
        where = "module level" if self.module_level else "in a function"
        return f"{self.path}:{self.line}: imports {self.target} ({where})"


def module_name(root: Path, path: Path) -> str:
    """The installed dotted name of a source file under ``root``."""
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    head = parts.pop(0)
    prefix = [APP] if head == "app" else [APP, head]
    return ".".join(prefix + parts)


class _Collector(ast.NodeVisitor):
    def __init__(self, path: Path, module: str, is_package: bool) -> None:
        self.path, self._depth = path, 0
        self.found: list[Import] = []
        self._package = module if is_package else module.rpartition(".")[0]

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, node: ast.stmt, target: str) -> None:
        self.found.append(Import(self.path, node.lineno, target, self._depth == 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base_parts = self._package.split(".")
            base_parts = base_parts[: len(base_parts) - (node.level - 1)]
            base = ".".join([*base_parts, node.module] if node.module else base_parts)
        else:
            base = node.module or ""
        for alias in node.names:
            self._add(node, base if alias.name == "*" else f"{base}.{alias.name}")


def imports_of(root: Path, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    collector = _Collector(
        path.relative_to(root), module_name(root, path), path.name == "__init__.py"
    )
    collector.visit(tree)
    return collector.found


def source_files(root: Path) -> Iterator[Path]:
    for folder in ("app", *SUBPACKAGES):
        yield from sorted(p for p in (root / folder).rglob("*.py") if "__pycache__" not in p.parts)


def violations(root: Path) -> list[str]:
    """Every broken import rule under ``root`` (a tree laid out like this repository)."""
    broken: list[str] = []
    for path in source_files(root):
        rel = path.relative_to(root)
        layer = rel.parts[0]
        for imp in imports_of(root, path):
            kind, top = imp.kind, imp.target.split(".")[0]
            if top in FOLDER_NAMES:
                broken.append(f"{imp}: import the installed name, not the folder {top!r}")
            if layer == "core":
                allowed = {STDLIB, "attrs", "cattrs", "rfc8785", f"{APP}.core"}
                if kind not in allowed:
                    broken.append(f"{imp}: core imports only stdlib, attrs, cattrs, rfc8785")
            elif layer == "ports":
                if kind not in {STDLIB, f"{APP}.core", f"{APP}.ports"}:
                    broken.append(f"{imp}: ports imports only stdlib and core")
            elif layer == "sql":
                if kind not in {STDLIB, "sqlglot", f"{APP}.core", f"{APP}.sql"}:
                    broken.append(f"{imp}: sql imports only stdlib, sqlglot and core")
            elif layer == "adapters":
                driving = len(rel.parts) > 2 and rel.parts[1] in DRIVING_ADAPTERS
                if kind == APP and not driving:
                    broken.append(f"{imp}: only the driving adapters (cli, mcp, http) import app")
            elif layer == "plugins":
                kit = rel.parts[1].removesuffix(".py") == "testing"
                if imp.module_level and not kit and kind in {APP, f"{APP}.adapters"}:
                    broken.append(f"{imp}: plugins import adapters/app only inside functions")
            elif layer == "app" and imp.module_level and kind in {f"{APP}.adapters", f"{APP}.sql"}:
                broken.append(
                    f"{imp}: app picks adapters through the registry at run time "
                    "(import inside a function, never at module level)"
                )
    return broken


# -- the rules hold in this repository ------------------------------------------------


def test_every_layer_is_read():
    files = list(source_files(ROOT))
    layers = {p.relative_to(ROOT).parts[0] for p in files}
    assert layers == {"app", *SUBPACKAGES}
    assert sum(len(imports_of(ROOT, p)) for p in files) > 20


def test_import_rules_hold():
    broken = violations(ROOT)
    assert not broken, "import rules broken (ARCHITECTURE.md):\n" + "\n".join(broken)


# -- the checker catches what it should (a synthetic tree) ----------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for folder in ("app", *SUBPACKAGES):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").touch()
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("core/bad.py", "import apsw\n", "core imports only"),
        ("core/bad.py", "def f():\n    import sqlglot\n", "core imports only"),
        ("core/bad.py", "from powercontext.ports import MemoryBackend\n", "core imports only"),
        ("core/bad.py", "from core import models\n", "not the folder 'core'"),
        ("ports/bad.py", "import attrs\nfrom powercontext.sql import t\n", "ports imports only"),
        ("sql/bad.py", "from powercontext.adapters import database\n", "sql imports only"),
        ("adapters/sqlite/bad.py", "from powercontext.service import S\n", "driving adapters"),
        ("adapters/sqlite/bad.py", "from powercontext import MemoryService\n", "driving"),
        ("adapters/bad.py", "def f():\n    from ..service import S\n", "driving adapters"),
        ("app/bad.py", "from powercontext.adapters.sqlite import B\n", "app picks adapters"),
        ("app/bad.py", "from powercontext import adapters\n", "app picks adapters"),
        ("app/bad.py", "from .adapters import sqlite\n", "app picks adapters"),
        (
            "app/bad.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from powercontext.sql import templates\n",
            "app picks adapters",
        ),
        ("plugins/bad.py", "from powercontext.adapters import sqlite\n", "plugins import"),
        ("plugins/bad.py", "from ..service import MemoryService\n", "plugins import"),
    ],
)
def test_checker_reports_a_broken_rule(tmp_path, name, text, expected):
    broken = violations(_tree(tmp_path, {name: text}))
    assert len(broken) >= 1
    assert expected in broken[0]
    assert broken[0].startswith(f"{name}:")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("core/ok.py", "import hashlib, unicodedata\nimport attrs, cattrs, rfc8785\n"),
        ("core/ok.py", "from . import models\nfrom .errors import E\n"),
        ("ports/ok.py", "from typing import Protocol\nfrom powercontext.core.models import M\n"),
        ("sql/ok.py", "import sqlglot\nfrom sqlglot import exp\nfrom powercontext.core import x\n"),
        ("adapters/sqlite/ok.py", "import apsw\nfrom powercontext.plugins import hookimpl\n"),
        ("adapters/cli/main.py", "from powercontext.service import MemoryService\n"),
        ("adapters/mcp/server.py", "from powercontext import MemoryService\n"),
        ("app/ok.py", "def f():\n    from powercontext.adapters.sqlite import B\n"),
        ("app/ok.py", "import click\nfrom powercontext.plugins.registry import Registry\n"),
        ("plugins/ok.py", "def f():\n    import powercontext.adapters.sqlite\n"),
        ("plugins/testing.py", "from powercontext.adapters.database import D\n"),
        ("plugins/testing/memory_backend.py", "from powercontext.adapters.database import D\n"),
    ],
)
def test_checker_accepts_allowed_imports(tmp_path, name, text):
    assert violations(_tree(tmp_path, {name: text})) == []


def test_relative_imports_resolve_to_installed_names(tmp_path):
    root = _tree(tmp_path, {"adapters/sqlite/backend.py": "from ..database import D\n"})
    (target,) = [i.target for i in imports_of(root, root / "adapters/sqlite/backend.py")]
    assert target == "powercontext.adapters.database.D"
    root = _tree(tmp_path, {"app/service.py": "from .core import models\nfrom . import x\n"})
    targets = [i.target for i in imports_of(root, root / "app/service.py")]
    assert targets == ["powercontext.core.models", "powercontext.x"]
