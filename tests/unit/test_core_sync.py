"""core is synchronous (ARCHITECTURE.md, "The layers": a pure, synchronous domain): no
module under core/ defines a coroutine, so no loop that calls a model (or anything
else that awaits) runs inside the core. The rules stay there as plain functions; their
loops live in the application (e.g. :mod:`powercontext.topic_reduction`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def coroutines(root: Path) -> list[str]:
    """``path:line name`` of every ``async def``, ``await``, ``async for`` and
    ``async with`` under ``root/core``."""
    found = []
    for path in sorted((root / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor
                          | ast.AsyncWith):
                name = getattr(node, "name", type(node).__name__)
                found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_core_defines_no_coroutine():
    found = coroutines(ROOT)
    assert not found, "move these loops out of core:\n" + "\n".join(found)


def test_the_check_sees_a_coroutine(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "loop.py").write_text("async def f(call):\n    return await call()\n")
    assert coroutines(tmp_path) == ["core/loop.py:1 f", "core/loop.py:2 Await"]
