"""The storage's layout, read from the source: each shared statement is run by one
method written once over the engine port (:mod:`powercontext.ports.engine`), not once
per engine, and the engines implement that port.

``PER_ENGINE`` lists the storage primitives still written in both engine folders: each
is either engine-specific by nature (connection lifecycle, transactions, the search
projections of :class:`~powercontext.ports.engine.MemorySearchProjection` and
:class:`~powercontext.ports.engine.TopicSearchProjection`) or not moved yet. The
list only shrinks: a name that is no longer duplicated must leave it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from powercontext.adapters.oceanbase.connection import OceanBaseEngine
from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend
from powercontext.ports.engine import LockingPolicy, SQLEngine

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ("sqlite", "oceanbase")

#: The ``_..._sync`` primitives still defined in both engine folders (see above).
PER_ENGINE = frozenset({
    # connection lifecycle, transactions, metadata (the engine's own)
    "_open_sync", "_close_sync", "_begin_sync", "_commit_sync", "_rollback_sync",
    "_meta_get_sync", "_meta_set_sync",
    # how a Source gets its position, how Scope positions are serialised
    "_put_sources_sync", "_scope_lock_sync",
    # the Memory search projection (MemorySearchProjection)
    "_reset_vectors_sync", "_delete_projections_sync", "_insert_projections_sync",
    "_clear_projection_sync", "_fts_candidates_sync", "_vector_candidates_sync",
    # not moved yet: reads of the projections written as engine fragments on OceanBase
    "_all_heads_sync", "_head_vectors_sync", "_vector_first_k_sync", "_vector_projection_of_sync",
    "_vector_projection_sync",
})


def sync_primitives(root: Path, folder: Path) -> dict[str, list[str]]:
    """``{name: [where, ...]}`` of every ``_..._sync`` method a class in ``folder``
    defines (read from the ``ast``, nothing imported)."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in cls.body:
                if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                        and node.name.startswith("_") and node.name.endswith("_sync")
                        and not node.name.startswith("__")):
                    found.setdefault(node.name, []).append(
                        f"{path.relative_to(root)}:{node.lineno} {cls.name}")
    return found


def duplicated(root: Path) -> dict[str, list[str]]:
    """The primitives defined in more than one engine folder under ``root/adapters``."""
    per = [sync_primitives(root, root / "adapters" / e) for e in ENGINES]
    names = set(per[0]).intersection(*per[1:])
    return {n: [w for p in per for w in p[n]] for n in sorted(names)}


def test_no_shared_primitive_is_written_once_per_engine() -> None:
    twice = duplicated(ROOT)
    assert sorted(set(twice) - PER_ENGINE) == [], twice


def test_the_per_engine_list_only_shrinks() -> None:
    assert sorted(PER_ENGINE - set(duplicated(ROOT))) == []


def test_the_rule_finds_a_wrapper_written_twice(tmp_path: Path) -> None:
    body = ("class X:\n    def _head_sync(self, a):\n        return self.q('head_get', a)\n"
            "    def _only_here_sync(self):\n        pass\n")
    for engine in ENGINES:
        (tmp_path / "adapters" / engine).mkdir(parents=True)
        (tmp_path / "adapters" / engine / "backend.py").write_text(
            body if engine == "sqlite" else body.replace("_only_here", "_other"))
    assert list(duplicated(tmp_path)) == ["_head_sync"]


@pytest.mark.parametrize("engine_of, locking", [
    (lambda: SQLiteMemoryBackend(":memory:").engine, LockingPolicy.SINGLE_WRITER),
    (lambda: OceanBaseEngine.__new__(OceanBaseEngine), LockingPolicy.LEASES),
])
def test_each_engine_implements_the_port(engine_of, locking) -> None:  # type: ignore[no-untyped-def]
    engine = engine_of()
    assert isinstance(engine, SQLEngine)
    assert engine.engine_capabilities.locking is locking
    assert engine.engine_capabilities.row_locks is (locking is LockingPolicy.LEASES)


def test_a_backend_names_its_locking_policy_without_opening(tmp_path: Path) -> None:
    from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend
    from powercontext.ports.engine import EngineBacked

    backend = SQLiteTopicBackend(str(tmp_path / "never-opened.db"))
    assert isinstance(backend, EngineBacked)
    assert backend.engine.engine_capabilities.locking is LockingPolicy.SINGLE_WRITER
    assert not (tmp_path / "never-opened.db").exists()


# ---------------------------------------------------------------------- class depth

#: At most this many classes of ours among a class's ancestors (its MRO minus itself).
MAX_ANCESTORS = 3
#: The classes of ``adapters/`` over :data:`MAX_ANCESTORS` today, with their count; the
#: list only shrinks and a count only falls (the storage chain and the Memory family
#: are being composed the way the Topic family is).
DEEPER = {
    "powercontext.adapters.database.DatabaseMemoryBackend": 8,
    "powercontext.adapters.memory_commit.MemoryCommitMixin": 6,
    "powercontext.adapters.memory_reads.MemoryReadsMixin": 5,
    "powercontext.adapters.memory_rebuild.MemoryRebuildMixin": 4,
    "powercontext.adapters.memory_search.MemorySearchMixin": 7,
    "powercontext.adapters.memory_sql_rows.SQLMemoryRows": 9,
    "powercontext.adapters.oceanbase.backend.OceanBaseMemoryBackend": 17,
    "powercontext.adapters.oceanbase.connection.OceanBaseStorage": 5,
    "powercontext.adapters.oceanbase.schema.OceanBaseMemorySchema": 14,
    "powercontext.adapters.oceanbase.topic_backend.OceanBaseTopicBackend": 7,
    "powercontext.adapters.sqlite.backend.SQLiteMemoryBackend": 16,
    "powercontext.adapters.sqlite.connection.SQLiteStorage": 4,
    "powercontext.adapters.sqlite.schema.SQLiteMemorySchema": 13,
    "powercontext.adapters.sqlite.topic_backend.SQLiteTopicBackend": 6,
    "powercontext.adapters.topic_database.SQLTopicBackend": 4,
}
#: The modules of the family-neutral storage chain (engine-owned, not the Topic family's).
STORAGE_CHAIN = ("powercontext.adapters.storage.", "powercontext.adapters.sqlite.connection",
                 "powercontext.adapters.oceanbase.connection",
                 "powercontext.adapters.oceanbase.source_rows")


def _ours(cls: type) -> list[type]:
    return [c for c in cls.__mro__[1:] if c.__module__.startswith("powercontext.")]


def adapter_classes() -> dict[str, type]:
    """Every class defined in a module of ``powercontext.adapters`` (imported; a module
    whose optional dependency is missing is left out)."""
    import importlib
    import inspect
    import pkgutil

    import powercontext.adapters as adapters

    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(adapters.__path__, "powercontext.adapters."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for obj in vars(module).values():
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_no_adapter_class_has_more_than_three_ancestors_of_ours() -> None:
    depth = {name: len(_ours(cls)) for name, cls in adapter_classes().items()}
    over = {name: n for name, n in depth.items() if n > MAX_ANCESTORS}
    grown = {name: n for name, n in over.items() if n > DEEPER.get(name, MAX_ANCESTORS)}
    assert grown == {}, grown
    assert sorted(set(DEEPER) - set(over)) == [], "shrink DEEPER"


def test_the_topic_family_is_one_facade_over_the_storage() -> None:
    """Each engine's Topic backend has one ancestor of the Topic family (the
    engine-neutral facade) beside the storage chain, and the facade's collaborators
    have no base of ours: the Topic classes are composed, not stacked."""
    from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend
    from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend
    from powercontext.adapters.topic_database import SQLTopicBackend

    for backend in (SQLiteTopicBackend, OceanBaseTopicBackend):
        family = [c for c in _ours(backend) if not c.__module__.startswith(STORAGE_CHAIN)]
        assert family == [SQLTopicBackend], (backend, family)
    collaborators = [cls for name, cls in adapter_classes().items()
                     if name.startswith(("powercontext.adapters.topic_",
                                         "powercontext.adapters.sqlite.topic_",
                                         "powercontext.adapters.oceanbase.topic_"))
                     and not name.startswith("powercontext.adapters.topic_generation")
                     and cls.__name__ not in ("SQLTopicBackend", "SQLiteTopicBackend",
                                              "OceanBaseTopicBackend")]
    assert len(collaborators) >= 12
    stacked = {c.__qualname__: [b.__qualname__ for b in _ours(c)] for c in collaborators
               if any(not getattr(b, "_is_protocol", False) for b in _ours(c))}
    assert stacked == {}


def test_each_engine_topic_projection_implements_the_port() -> None:
    from powercontext.adapters.oceanbase.topic_projection import OceanBaseTopicProjection
    from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend
    from powercontext.ports.engine import TopicSearchProjection

    lite = SQLiteTopicBackend(":memory:")
    assert isinstance(lite.projection, TopicSearchProjection)
    ob = OceanBaseTopicProjection.__new__(OceanBaseTopicProjection)
    ob.vector_column = None
    assert isinstance(ob, TopicSearchProjection)
