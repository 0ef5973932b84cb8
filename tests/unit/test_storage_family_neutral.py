"""The storage base (``adapters/storage``) is family-neutral: a Topic Memory backend
subclasses it without inheriting anything of the Memory family. Read from every
module's ``ast``: no identifier and no string value (docstrings aside) names
``memory``, and no import reaches a Memory-side adapter module."""

from __future__ import annotations

import ast
import builtins
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORAGE = ROOT / "adapters" / "storage"
#: The adapter modules the storage base may import (besides its own package).
ALLOWED_ADAPTERS = ("powercontext.adapters.storage", "powercontext.adapters.secret_scanner")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def family_names(source: str) -> list[str]:
    """Every identifier, imported name and non-docstring string in ``source`` that
    contains ``memory`` (any case); comments are not in the ``ast``."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            names = [node.arg]
        elif isinstance(node, ast.alias):
            names = [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docs):
            names = [node.value]
        found.extend(n for n in names
                      if "memory" in n.lower() and not hasattr(builtins, n))  # memoryview
    return found


def adapter_imports(source: str) -> list[str]:
    """The ``powercontext.adapters.*`` modules ``source`` imports outside the allowed."""
    out = []
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            targets = [node.module + "." + a.name for a in node.names]
        out.extend(t for t in targets if t.startswith("powercontext.adapters.")
                   and not t.startswith(ALLOWED_ADAPTERS))
    return out


def test_the_checks_see_identifiers_strings_and_imports_but_not_comments_or_docstrings():
    sample = textwrap.dedent('''
        """The Memory family builds on this."""
        # a comment about memory
        from powercontext.adapters.database import MEMORY_FAMILY
        from powercontext.adapters.storage.rows import text

        def f(memory_id):
            """Docstring naming a Memory."""
            return {"family": "memory"}
    ''')
    assert sorted(family_names(sample)) == ["MEMORY_FAMILY", "memory", "memory_id"]
    assert adapter_imports(sample) == ["powercontext.adapters.database.MEMORY_FAMILY"]
    assert family_names('"""Memory."""\nx = memoryview(b"")  # memory\n') == []


def test_the_storage_base_names_no_memory_family():
    files = sorted(STORAGE.glob("*.py"))
    assert {p.name for p in files} >= {"__init__.py", "base.py", "rows.py", "sources.py"}
    for path in files:
        source = path.read_text(encoding="utf-8")
        assert family_names(source) == [], path
        assert adapter_imports(source) == [], path
