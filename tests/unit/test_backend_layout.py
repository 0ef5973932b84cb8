"""Every adapter module stays short, and "Candidate" alone never names the search
projection row (:class:`powercontext.core.ranking.SearchCandidate`). How the storage is
composed is checked by tests/unit/test_engine_layout.py."""

from __future__ import annotations

import ast
from pathlib import Path

from powercontext.adapters import database

ROOT = Path(__file__).resolve().parents[2]


def _product_files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def test_every_adapter_module_is_short() -> None:
    # the driving adapters (cli, http, mcp) moved to entrypoints/ keep the same limit
    long = {str(p.relative_to(ROOT)): n for p in _product_files(
                "adapters", "entrypoints/cli", "entrypoints/http", "entrypoints/mcp")
            if (n := p.read_text(encoding="utf-8").count("\n")) > 500}
    assert long == {}


def test_candidate_alias_is_gone() -> None:
    assert not hasattr(database, "Candidate")
    assert "Candidate" not in database.__all__
    assert database.SearchCandidate.__module__ == "powercontext.core.ranking"


def test_no_module_names_the_search_row_candidate() -> None:
    """``Candidate`` alone means a memory candidate (extraction): no product or test
    module uses the bare name for the search projection row."""
    users = []
    for path in _product_files("core", "ports", "adapters", "plugins", "app", "entrypoints",
                               "tests", "bench"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if ((isinstance(node, ast.Name) and node.id == "Candidate")
                    or (isinstance(node, ast.alias)
                        and "Candidate" in (node.name, node.asname))):
                users.append(str(path.relative_to(ROOT)))
    assert users == []
