"""Opening the Memory side loads no Topic family code: the module-level import closure of
each Memory backend (read from the sources' ``ast``, so nothing is executed) holds no
Topic model, Topic store or Topic backend module. The prompt hook opens a Memory backend
on every prompt, and the Topic side's modules cost it CPU it does not need when the
Scope holds no Source (docs/benchmarks.md, "Prompt hook").

Allowed: the Scope journal's own values (``core.topic.scope``) and the processing
ledger the two families share (``core.topic.processing``, ``core.topic.operator``)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

MEMORY_BACKENDS = ("powercontext.adapters.sqlite.backend",
                   "powercontext.adapters.oceanbase.backend")
SHARED = frozenset({"powercontext.core.topic", "powercontext.core.topic.scope",
                    "powercontext.core.topic.processing", "powercontext.core.topic.operator"})


def _origin(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(name: str, path: Path) -> set[str]:
    """Dotted names a module imports when it is executed (not inside a function or an
    ``if TYPE_CHECKING:`` block); ``from a import b`` gives ``a`` and ``a.b``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.If) and not _is_type_checking(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def closure(root: str) -> set[str]:
    """Every ``powercontext`` module executed by importing ``root`` (parents included)."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
            candidate = ".".join(parts[:i])
            if candidate in seen or not candidate.startswith("powercontext"):
                continue
            path = _origin(candidate)
            if path is None:
                continue
            seen.add(candidate)
            todo.extend(m for m in _module_level_imports(candidate, path)
                        if m.startswith("powercontext"))
    return seen


def topic_side(modules: set[str]) -> list[str]:
    return sorted(m for m in modules
                  if (m.startswith("powercontext.core.topic") and m not in SHARED)
                  or m.startswith("powercontext.adapters.topic_")
                  or m.endswith(".topic_backend") or m.endswith(".topic_supervision"))


@pytest.mark.parametrize("backend", MEMORY_BACKENDS)
def test_memory_backend_imports_no_topic_code(backend):
    modules = closure(backend)
    assert backend in modules
    assert topic_side(modules) == []


def test_the_walk_sees_the_topic_side():
    """The check can fail: the Topic backend's closure is full of Topic modules."""
    found = topic_side(closure("powercontext.adapters.sqlite.topic_backend"))
    assert "powercontext.core.topic.models" in found
    assert "powercontext.adapters.sqlite.topic_backend" in found
