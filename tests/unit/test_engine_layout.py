"""The storage's layout, read from the source: each shared statement is run by one
method written once over the engine port (:mod:`powercontext.ports.engine`), not once
per engine; the engines implement that port and own their connection; the storage
composes an engine and its Source journal instead of stacking classes (no class in
``adapters/`` has more than three classes of ours among its ancestors).

``PER_ENGINE`` lists the storage primitives still written in both engine folders: each
is either engine-specific by nature (a family's open, the Topic search projection of
:class:`~powercontext.ports.engine.TopicSearchProjection`) or not moved yet. The list
only shrinks: a name that is no longer duplicated must leave it. The Memory search
projection is a class per engine with the public names of
:class:`~powercontext.ports.engine.MemorySearchProjection`, and the Memory backend is
composed of plain collaborators (no mixins), checked below."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from powercontext.adapters.oceanbase.engine import OceanBaseEngine
from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend
from powercontext.adapters.sqlite.engine import SQLiteEngine
from powercontext.ports.engine import LockingPolicy, SQLEngine

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ("sqlite", "oceanbase")

#: The ``_..._sync`` primitives still defined in both engine folders (see above). The
#: connection lifecycle, transactions, metadata and the Source positions are the
#: engines' public methods (``connect``, ``begin`` ... ``put_sources``, ``scope_lock``)
#: under the port's names, run by the one engine-neutral storage
#: (:class:`~powercontext.adapters.storage.sql_storage.SQLStorage`).
PER_ENGINE = frozenset({
    # each family's open: connect, then its schema and probes
    "_open_sync",
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


# ---------------------------------------------------------------------- the Topic family

#: The modules of the family-neutral storage (engine-neutral, not the Topic family's).
STORAGE_CHAIN = ("powercontext.adapters.storage.",)


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


#: The most classes of ours a class in adapters/ may have among its ancestors.
MAX_OUR_ANCESTORS = 3


def our_ancestors(cls: type) -> list[str]:
    """The classes of ours (``powercontext.*``) in ``cls``'s MRO, itself left out."""
    return [c.__qualname__ for c in cls.__mro__[1:]
            if c.__module__.startswith("powercontext.")]


def classes_of(package: str, folder: Path) -> list[type]:
    """Every class defined in the modules of ``folder`` (imported as ``package``)."""
    out: list[type] = []
    for path in sorted(folder.glob("*.py")):
        name = package if path.stem == "__init__" else f"{package}.{path.stem}"
        module = importlib.import_module(name)
        out.extend(c for _, c in inspect.getmembers(module, inspect.isclass)
                   if c.__module__ == name)
    return out


def towers(classes: dict[str, type]) -> dict[str, int]:
    """``{name: n}`` of the classes with more than :data:`MAX_OUR_ANCESTORS` classes of
    ours among their ancestors (their MRO minus themselves)."""
    return {name: len(our_ancestors(cls)) for name, cls in classes.items()
            if len(our_ancestors(cls)) > MAX_OUR_ANCESTORS}


def test_no_class_in_adapters_has_more_than_three_ancestors_of_ours() -> None:
    classes = adapter_classes()
    assert {"powercontext.adapters.sqlite.backend.SQLiteMemoryBackend",
            "powercontext.adapters.oceanbase.topic_backend.OceanBaseTopicBackend",
            "powercontext.adapters.storage.sql_storage.SQLStorage"} <= set(classes)
    assert towers(classes) == {}


def test_the_ancestor_rule_finds_a_class_four_deep() -> None:
    made: dict[str, type] = {}
    base: type = object
    for name in "ABCDE":  # E has D, C, B, A among its ancestors: four of ours
        base = made[name] = type(name, (base,), {"__module__": "powercontext.fake"})
    assert towers(made) == {"E": 4}
    assert towers({"T": type("T", (made["D"],), {})}) == {"T": 4}  # a subclass anywhere


def test_the_ancestor_rule_counts_only_our_classes() -> None:
    from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend
    from powercontext.adapters.storage.sql_storage import SQLStorage

    assert our_ancestors(SQLStorage) == ["StorageBackend"]
    for backend in (SQLiteMemoryBackend, OceanBaseMemoryBackend):
        assert our_ancestors(backend) == [
            "DatabaseMemoryBackend", "SQLStorage", "StorageBackend"]


def test_the_source_store_is_a_composed_journal_with_a_name_of_its_own() -> None:
    """The Source store is one plain class each backend holds (not a base class), and
    no class of the adapters takes the name of a port but the collaborators that
    implement it (the ``SourceStore`` Protocol had a namesake base class here)."""
    import powercontext.ports as ports
    from powercontext.adapters.storage.sources import SourceJournal
    from powercontext.adapters.storage.sql_storage import SQLStorage
    from powercontext.adapters.topic_database import SQLTopicBackend

    assert our_ancestors(SourceJournal) == []
    assert SourceJournal not in SQLStorage.__mro__ + SQLTopicBackend.__mro__
    backend = SQLiteMemoryBackend(":memory:")
    assert isinstance(backend.source_journal, SourceJournal)
    assert isinstance(backend, ports.SourceStore)
    port_names = {n for n, c in vars(ports).items()
                  if inspect.isclass(c) and getattr(c, "_is_protocol", False)}
    assert "SourceStore" in port_names
    namesakes = {cls.__name__: cls for cls in adapter_classes().values()
                 if cls.__name__ in port_names and not getattr(cls, "_is_protocol", False)}
    assert sorted(namesakes) == sorted(PORT_NAMESAKES)


#: The classes of the adapters that carry the name of a port: each is the Memory
#: facade's collaborator behind (part of) that port. The list only shrinks.
PORT_NAMESAKES = ("MemoryRebuild", "SourceCitations")


@pytest.mark.parametrize("engine", [SQLiteEngine, OceanBaseEngine])
def test_an_engine_is_no_storage_and_owns_its_connection(engine: type) -> None:
    assert our_ancestors(engine) == []
    for name in ("connect", "opening", "close", "begin", "commit", "rollback",
                 "map_error", "meta_get", "meta_set", "put_sources", "scope_lock",
                 "relieve_contention", "database_now"):
        assert name in vars(engine), name


def test_the_sqlite_engine_runs_a_transaction_on_its_own_connection(tmp_path: Path) -> None:
    engine = SQLiteEngine(str(tmp_path / "e.db"))
    assert engine.connection is None and engine.rollback() is False
    engine.connect()
    try:
        assert engine.rows("PRAGMA journal_mode")[0][0] == "wal"
        engine.begin(True)
        engine.rows("CREATE TABLE t (k TEXT PRIMARY KEY)")
        engine.rows("INSERT INTO t VALUES ('a')")
        engine.commit()
        engine.begin(True)
        engine.rows("INSERT INTO t VALUES ('b')")
        assert engine.rollback() is True and engine.rollback() is False
        assert engine.rows("SELECT k FROM t") == [("a",)]
        try:
            engine.rows("INSERT INTO t VALUES ('a')")
        except Exception as exc:  # the driver's error, mapped by the engine
            assert type(engine.map_error(exc)).__name__ == "BackendError"
        else:
            raise AssertionError("a duplicate key was stored")
        assert engine.map_error(KeyError("x")) is None
    finally:
        engine.close()
        engine.close()
    assert engine.connection is None


def self_calls_defined_elsewhere(path: Path) -> dict[str, list[str]]:
    """``{class: [name, ...]}``: the ``self.NAME(...)`` calls of each class in ``path``
    whose NAME the class neither defines nor assigns (``self.NAME = ...``): a call to a
    method only a subclass (or a sibling mixin) defines."""
    out: dict[str, list[str]] = {}
    for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(cls, ast.ClassDef):
            continue
        defined = {n.name for n in cls.body
                   if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        defined |= {t.id for n in cls.body if isinstance(n, ast.AnnAssign | ast.Assign)
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Name)}
        calls = set()
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "self" and isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                calls.add(node.func.attr)
        missing = sorted(calls - defined)
        if missing:
            out[cls.name] = missing
    return out


def test_no_topic_collaborator_calls_a_method_it_does_not_define() -> None:
    """The engine-neutral Topic classes call only their own methods on ``self``; what
    they need of the storage, the rows or the projection goes through a collaborator
    they were given (``self._host``, ``self._rows``, ...)."""
    modules = [p for p in sorted((ROOT / "adapters").glob("topic_*.py"))
               if p.name not in ("topic_database.py", "topic_host.py")]
    assert len(modules) >= 12
    found = {p.name: m for p in modules if (m := self_calls_defined_elsewhere(p))}
    assert found == {}


def test_the_self_call_rule_finds_a_template_method(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("class Base:\n    def run(self):\n        return self._step_sync()\n"
                    "class Own:\n    def __init__(self, f):\n        self._f = f\n"
                    "    def run(self):\n        return self._f() + self._g()\n"
                    "    def _g(self):\n        return 1\n")
    assert self_calls_defined_elsewhere(path) == {"Base": ["_step_sync"]}


#: The Memory family's collaborators (adapters/*.py): plain classes, none a base of
#: another, each given its collaborators in ``__init__``.
MEMORY_PARTS = (
    ("memory_tables", "MemoryTables"), ("memory_deployment", "MemoryDeployment"),
    ("memory_completeness", "VectorCompleteness"), ("memory_reads", "MemoryStore"),
    ("memory_search", "MemorySearch"), ("memory_commit", "MemoryCommit"),
    ("memory_commit", "DatabaseUnitOfWork"), ("memory_rehash", "MemoryRehash"),
    ("memory_rebuild", "MemoryRebuild"), ("source_citations", "SourceCitations"),
    ("memory_sql_rows", "SQLMemoryRows"),
    ("sqlite.memory_projection", "SQLiteMemoryProjection"),
    ("sqlite.schema", "SQLiteMemorySchema"),
    ("oceanbase.memory_projection", "OceanBaseMemoryProjection"),
    ("oceanbase.schema", "OceanBaseMemorySchema"),
)


@pytest.mark.parametrize("module, name", MEMORY_PARTS)
def test_each_memory_collaborator_is_a_plain_class(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(f"powercontext.adapters.{module}"), name)
    assert our_ancestors(cls) == [], f"{name} inherits {our_ancestors(cls)}"


def test_the_memory_family_adds_one_class_to_the_storage() -> None:
    """A Memory backend is the engine-neutral storage plus the engine-neutral Memory
    facade, DatabaseMemoryBackend, and nothing else of the Memory family: before the
    facade it was 16 (SQLite) and 17 (OceanBase) classes of ours, 11 of them Memory
    mixins."""
    from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend

    for backend in (SQLiteMemoryBackend, OceanBaseMemoryBackend):
        family = [c.__qualname__ for c in _ours(backend)
                  if not c.__module__.startswith(STORAGE_CHAIN)]
        assert family == ["DatabaseMemoryBackend"], family


def test_each_engine_has_a_memory_search_projection() -> None:
    from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend
    from powercontext.ports.engine import MemorySearchProjection

    sqlite = SQLiteMemoryBackend(":memory:").projection
    oceanbase = OceanBaseMemoryBackend("oceanbase://root:@127.0.0.1:1/unused").projection
    for projection in (sqlite, oceanbase):
        assert isinstance(projection, MemorySearchProjection)
