"""The database-adapter SPI is split by concept (issue 10, part G): every adapter
module stays short, :class:`DatabaseMemoryBackend` is a linear chain of one mixin per
concept, each mixin's ``TYPE_CHECKING`` declarations name what the host really has,
and "Candidate" alone never names the search projection row
(:class:`powercontext.core.ranking.SearchCandidate`) any more."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from powercontext.adapters import database
from powercontext.adapters.database import DatabaseMemoryBackend
from powercontext.testing import InMemoryBackend

ROOT = Path(__file__).resolve().parents[2]

#: The bases of DatabaseMemoryBackend, nearest first: module and class, one per concept.
CHAIN = [
    ("powercontext.adapters.memory_search", "MemorySearchMixin"),
    ("powercontext.adapters.memory_commit", "MemoryCommitMixin"),
    ("powercontext.adapters.memory_reads", "MemoryReadsMixin"),
    ("powercontext.adapters.memory_rebuild", "MemoryRebuildMixin"),
    ("powercontext.adapters.memory_deployment", "MemoryDeploymentMixin"),
    ("powercontext.adapters.memory_rehash", "MemoryRehashMixin"),
    ("powercontext.adapters.storage.sources", "SourceStore"),
    ("powercontext.adapters.storage.base", "StorageBackend"),
]


def _product_files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def test_every_adapter_module_is_short() -> None:
    # the driving adapters (cli, http, mcp) moved to entrypoints/ keep the same limit
    long = {str(p.relative_to(ROOT)): n for p in _product_files(
                "adapters", "entrypoints/cli", "entrypoints/http", "entrypoints/mcp")
            if (n := p.read_text(encoding="utf-8").count("\n")) > 500}
    assert long == {}


def test_database_backend_is_a_linear_chain_of_mixins() -> None:
    chain = []
    cls: type = DatabaseMemoryBackend
    while len(chain) < len(CHAIN):
        bases = [b for b in cls.__bases__ if b.__module__.startswith("powercontext.")]
        assert len(bases) == 1, f"{cls.__name__} has bases {bases}"
        cls = bases[0]
        chain.append((cls.__module__, cls.__name__))
    assert chain == CHAIN


@pytest.mark.parametrize("module", sorted({m for m, _ in CHAIN[:6]}))
def test_mixin_declarations_name_what_the_host_has(module: str) -> None:
    """What a mixin declares under ``TYPE_CHECKING`` exists on the host: a method or
    class attribute of DatabaseMemoryBackend, or state its ``__init__`` sets."""
    tree = ast.parse(Path(importlib.import_module(module).__file__ or "").read_text())
    declared: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    declared.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    declared.add(item.target.id)
    host = InMemoryBackend()
    missing = sorted(n for n in declared
                     if not hasattr(DatabaseMemoryBackend, n) and not hasattr(host, n))
    assert missing == []


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
