"""The contract kit installs with ``powercontext[testing]`` alone.

``powercontext.testing`` is what a third-party backend's test suite imports, so
everything it imports must come from the standard library, powercontext's base
dependencies or the ``testing`` extra (pytest, hypothesis). Read from the ``ast`` of
every kit module (module level and inside functions, since the tests run those
functions) and, transitively, the module-level imports of every powercontext module
the kit reaches (imports inside their functions are lazy features the kit never runs,
e.g. mysqlclient in the OceanBase adapter).
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from support.imports import owning_module

ROOT = Path(__file__).resolve().parents[2]
KIT = "powercontext.testing"
FOLDERS = {"core", "ports", "adapters", "plugins", "sql", "entrypoints", "testing"}


def _module_files(root: Path) -> dict[str, Path]:
    """Installed dotted name -> source file, for every module under ``root``."""
    out = {}
    for folder in ("app", *sorted(FOLDERS)):
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            head = parts.pop(0)
            prefix = ["powercontext"] if head == "app" else ["powercontext", head]
            out[".".join(prefix + parts)] = path
    return out


def _imports(path: Path, module: str, *, all_levels: bool) -> list[tuple[int, str]]:
    """(line, absolute dotted target) of each import of ``path`` (module level only
    unless ``all_levels``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree) if all_levels else _executed_on_import(tree.body):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, node.module] if node.module else parts)
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return found


def _executed_on_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported: into ``if`` (so
    ``TYPE_CHECKING`` blocks count), ``try``, ``with`` and class bodies, never into a
    function."""
    for node in body:
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _executed_on_import(getattr(node, field, []) or [])
        for handler in getattr(node, "handlers", []):
            yield from _executed_on_import(handler.body)


def _normal(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    return {_normal(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) for r in requirements}


def allowed_distributions(pyproject: Path) -> set[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    extra = project.get("optional-dependencies", {}).get("testing", [])
    return _requirement_names(project["dependencies"]) | _requirement_names(extra)


def kit_imports_outside(root: Path, allowed: set[str],
                        distributions: dict[str, list[str]]) -> list[str]:
    """Every import the kit reaches whose distribution is not in ``allowed``."""
    modules = _module_files(root)
    todo = [(m, True) for m in modules if m == KIT or m.startswith(KIT + ".")]
    seen: set[str] = set()
    broken = []
    while todo:
        module, all_levels = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = modules[module]
        for line, target in _imports(path, module, all_levels=all_levels):
            top = target.split(".")[0]
            if top == "__future__" or top in sys.stdlib_module_names:
                continue
            if top == "powercontext":
                found = owning_module(target, modules)
                if found is not None:
                    todo.append((found, found == KIT or found.startswith(KIT + ".")))
                continue
            dists = {_normal(d) for d in distributions.get(top, [top])}
            if not dists & allowed:
                where = path.relative_to(root)
                broken.append(f"{where}:{line}: imports {target} (from {sorted(dists)}), "
                              "not a base dependency nor in the testing extra")
    return broken


def test_the_testing_extra_is_pytest_and_hypothesis():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert _requirement_names(project["optional-dependencies"]["testing"]) == {
        "pytest", "hypothesis"}


def test_the_kit_imports_only_base_dependencies_and_the_testing_extra():
    modules = _module_files(ROOT)
    assert f"{KIT}.memory_backend" in modules and f"{KIT}.contract" in modules
    broken = kit_imports_outside(ROOT, allowed_distributions(ROOT / "pyproject.toml"),
                                 metadata.packages_distributions())
    assert not broken, "\n".join(broken)


def _tree(tmp_path: Path, kit_text: str, extra: str = "") -> Path:
    for folder in ("app", *FOLDERS):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").touch()
    (tmp_path / "testing" / "__init__.py").write_text(textwrap.dedent(kit_text))
    (tmp_path / "adapters" / "thing.py").write_text(textwrap.dedent(extra))
    return tmp_path


@pytest.mark.parametrize(("kit", "extra", "expected"), [
    ("import numpy\n", "", "testing/__init__.py:1: imports numpy"),
    ("def f():\n    import MySQLdb\n", "", "imports MySQLdb"),
    ("from powercontext.adapters.thing import X\n", "import openai\n",
     "adapters/thing.py:1: imports openai"),
    ("from powercontext.adapters import thing\n", "from typing import TYPE_CHECKING\n"
     "if TYPE_CHECKING:\n    import torch\n", "imports torch"),
])
def test_the_checker_reports_an_import_outside_the_extra(tmp_path, kit, extra, expected):
    broken = kit_imports_outside(_tree(tmp_path, kit, extra), {"pytest", "hypothesis"},
                                 {"MySQLdb": ["mysqlclient"]})
    assert len(broken) == 1 and expected in broken[0]


def test_the_checker_ignores_lazy_imports_outside_the_kit(tmp_path):
    root = _tree(tmp_path, "import pytest\nfrom powercontext.adapters.thing import X\n",
                 "def load():\n    import openai\n")
    assert kit_imports_outside(root, {"pytest"}, {}) == []
