"""The contract a SQL engine implements (Memory RFC, "Code structure and abstraction
boundaries", "Concurrency and transactions"): :class:`SQLEngine`, what the
engine-neutral storage in ``powercontext.adapters`` runs every shared statement
through, and the search-projection ports, one per Artifact family
(:class:`MemorySearchProjection`, :class:`TopicSearchProjection`).

An engine is one connection, used by one worker thread: every method here is
synchronous and runs on that thread. Statements are named, never written by the
caller: ``statement`` is the name of a shared template of
:mod:`powercontext.sql.templates` (rendered in the engine's dialect, pre-rendered in
:mod:`powercontext.sql.rendered`), and ``params`` are bound, never substituted. Text
columns come back as ``str`` or ``bytes`` depending on the driver; callers decode with
:mod:`powercontext.adapters.storage.rows`.

What an engine differs in is a capability (:class:`EngineCapabilities`), not a test of
its URL: the locking policy (:class:`LockingPolicy`) tells the Supervisor whether one
process holds the database's write lock (SQLite: one writer, serialised by a file lock
beside the database) or leases stored in the database elect a Leader (OceanBase).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import datetime

    from powercontext.core.errors import PowerContextError
    from powercontext.core.models import EmbeddingProfile, EmbeddingVector, Source
    from powercontext.core.plan import ProjectionRow
    from powercontext.core.ranking import SearchCandidate
    from powercontext.core.topic.models import TopicChannel, TopicRef, TopicWrite
    from powercontext.core.topic.search import ChannelRow
    from powercontext.core.topic.supervision import SupervisorTerm

__all__ = [
    "EngineBacked",
    "EngineCapabilities",
    "LockingPolicy",
    "MemorySearchProjection",
    "SQLEngine",
    "SupervisorLeases",
    "TopicSearchProjection",
]

T = TypeVar("T")


class LockingPolicy(enum.Enum):
    """How writers of one database are kept apart, and so how the Supervisor holds its
    term (Topic Memory RFC, "Leader, term, and fencing").

    ``SINGLE_WRITER``: one write transaction at a time for the whole database (SQLite's
    ``BEGIN IMMEDIATE``); one Supervisor per database, held by a file lock beside it;
    its term never expires. ``LEASES``: many writers with row locks (OceanBase); every
    candidate Supervisor competes for a lease row that expires by database time, and
    rows a transaction must keep still are read ``FOR UPDATE``."""

    SINGLE_WRITER = "single-writer"
    LEASES = "leases"


@dataclasses.dataclass(frozen=True)
class EngineCapabilities:
    """What an engine is and can do, fixed for its life.

    ``dialect``: the sqlglot dialect its shared templates render in (``"sqlite"``,
    ``"oceanbase"``). ``locking``: its :class:`LockingPolicy`. ``row_locks``: a read
    can lock the rows it returns until COMMIT (``SELECT ... FOR UPDATE``); False where
    the write transaction locks the whole database already."""

    dialect: str
    locking: LockingPolicy
    row_locks: bool


@runtime_checkable
class SQLEngine(Protocol):
    """One connection to a SQL database, run by one thread. The engine owns the
    driver's connection; the engine-neutral storage
    (:class:`powercontext.adapters.storage.sql_storage.SQLStorage`) composes it.

    Lifecycle: :meth:`connect` (idempotent: the version gate and the session setup of a
    new connection) before the first statement, :meth:`opening` around the family's
    schema creation, :meth:`close` (idempotent) at the end. Transactions: :meth:`begin`
    then :meth:`commit` or :meth:`rollback`; a failure of ``begin`` leaves no
    transaction open, ``rollback`` never raises for a transaction that is not open.
    Errors: a statement raises the driver's exception; :meth:`map_error` turns it into
    the typed error the caller raises (a duplicate key of a Revision or head:
    RevisionConflictError; lock contention: a retryable BackendError; anything else the
    driver raises: BackendError; None for an exception that is not the driver's).

    Beyond statements, an engine holds what differs between engines in the shared
    tables: the deployment metadata table (:meth:`meta_get`, :meth:`meta_set`), how a
    Source gets its journal position (:meth:`put_sources`) and how the positions of
    one Scope are serialised (:meth:`scope_lock`)."""

    @property
    def engine_capabilities(self) -> EngineCapabilities:
        """The engine's :class:`EngineCapabilities` (known without connecting)."""
        ...

    def connect(self) -> None:
        """Open the connection unless open already: the engine's version gate, then its
        session setup (SQLite: WAL, ``synchronous=FULL``, foreign keys, busy timeout;
        OceanBase: the database, isolation and lock timeouts). BackendError for an old
        or unreachable server; InvalidInputError for a path that is no database."""
        ...

    def opening(self, setup: Callable[[], T]) -> T:
        """:meth:`connect`, then ``setup()`` (the family's schema creation and probes,
        idempotent) under the engine's open policy: SQLite maps a file that is no
        database, or cannot be written, to InvalidInputError; OceanBase reruns
        ``setup`` while it loses a race with a concurrent opener and maps driver
        errors. The connection is closed when it raises."""
        ...

    def close(self) -> None:
        """Close the connection; a later :meth:`connect` opens it again."""
        ...

    def begin(self, write: bool, *, long_running: bool = False) -> None:
        """Start a transaction: a write one takes the engine's write locks as its
        :class:`LockingPolicy` says; a read one reads one consistent snapshot.
        ``long_running``: maintenance (a rebuild, a rehash) whose transactions may be
        long; an engine that bounds a transaction's life gives it the long bound."""
        ...

    def commit(self) -> None:
        """COMMIT durably. CommitOutcomeUnknownError when the answer was lost."""
        ...

    def rollback(self) -> bool:
        """ROLLBACK the open transaction, if any; never raises. True when a
        transaction was open (the caller may re-read schema state it changed)."""
        ...

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        """Run the shared statement named ``statement``; the number of rows it matched
        (an UPDATE that matches a row counts it even when the values were equal)."""
        ...

    def execute_many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``statement`` once per parameter row (nothing for no rows)."""
        ...

    def query(self, statement: str, params: Sequence[Any] = (), *,
              for_update: bool = False) -> list[tuple[Any, ...]]:
        """The rows of the shared query named ``statement``. ``for_update``: lock them
        until COMMIT where the engine has row locks (``row_locks``); elsewhere the write
        transaction holds the whole database already and the flag changes nothing."""
        ...

    def query_in(self, statement: str, values: Sequence[Any],
                 before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of the shared query named ``statement`` whose last parameter is an
        ``IN`` list: run once per chunk of the distinct ``values`` (in first-seen
        order), each with the parameters ``before`` first; no rows for no values."""
        ...

    def map_error(self, exc: BaseException) -> PowerContextError | None:
        """The typed error to raise in place of the driver's ``exc``, or None."""
        ...

    def relieve_contention(self) -> None:
        """Between two attempts of a unit of work that met lock contention (outside any
        transaction): end what holds the locks for a client that is gone (OceanBase:
        abandoned sessions of this user). Never raises; may do nothing."""
        ...

    def database_now(self) -> str:
        """The database's clock, UTC, as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (one clock for
        every process and host that writes the database)."""
        ...

    def meta_get(self, key: str) -> str | None:
        """A value of the deployment metadata table (``powercontext_meta``), or None."""
        ...

    def meta_set(self, key: str, value: str | None) -> None:
        """Set (with None: delete) a value of the metadata table."""
        ...

    def put_sources(self, sources: Sequence[Source]) -> list[int]:
        """Inside the caller's write transaction: insert the Sources not stored yet
        (each checked by the caller, identical ones kept once) and return each one's
        journal position in input order (Memory RFC, "Sources"; SQLite: the rowid;
        OceanBase: the next position under the journal lock row)."""
        ...

    def scope_lock(self, scope_id: str) -> None:
        """Inside the caller's write transaction: serialise the allocation of the
        Scope's journal positions until COMMIT (SQLite: nothing, ``BEGIN IMMEDIATE``
        holds the write lock; OceanBase: the journal lock row ``FOR UPDATE``)."""
        ...


@runtime_checkable
class EngineBacked(Protocol):
    """A capability port: a backend stored on a SQL engine names it. The Supervisor
    asks ``isinstance(backend, EngineBacked)`` and then
    ``backend.engine.engine_capabilities.locking`` (a :class:`LockingPolicy`, known
    without opening the database) instead of reading the database URL; a backend that
    is not engine-backed (the kit's in-memory one) lives in one process."""

    @property
    def engine(self) -> SQLEngine:
        """The backend's engine."""
        ...


@runtime_checkable
class MemorySearchProjection(Protocol):
    """The Memory family's search projection on one engine (Memory RFC, "Search"): the
    engine's own tables beside the head rows (SQLite: FTS5 and vec0 tables; OceanBase:
    the FULLTEXT and HNSW indexes of ``memory_entry_heads`` itself). Every method runs
    inside the caller's transaction on the engine's thread; the caller checks every
    candidate against the head manifest (a projection is never trusted).

    The names are the storage primitives the engine-neutral Memory storage
    (``powercontext.adapters.database``) calls; each engine writes them once."""

    def _reset_vectors_sync(self, profile: EmbeddingProfile | None) -> None:
        """DDL: drop and recreate the vector projection for ``profile`` (None: none)."""
        ...

    def _delete_projections_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> None:
        """Row replacement: delete the head rows of these entries with their full-text
        and vector rows."""
        ...

    def _insert_projections_sync(self, artifact_id: str, head_revision: int,
                                 rows: Sequence[ProjectionRow],
                                 vectors: Sequence[Any]) -> None:
        """Row replacement: insert head rows (with their full-text rows and, where
        ``vectors[i]`` is not None, their vector)."""
        ...

    def _clear_projection_sync(self, artifact_id: str) -> None:
        """Row replacement: delete every projection row of one Memory (rebuild)."""
        ...

    def _fts_candidates_sync(self, artifact_ids: Sequence[str], terms: Sequence[str],
                             limit: int, *, offset: int = 0) -> list[SearchCandidate]:
        """Full-text candidates: one page of the head rows of these Memories matching
        any of ``terms`` (analyzer tokens), best first in one total order."""
        ...

    def _vector_candidates_sync(self, artifact_ids: Sequence[str],
                                vector: EmbeddingVector, limit: int) -> list[SearchCandidate]:
        """Vector candidates: the ``limit`` nearest head rows by L2, filtered by Memory
        inside the scan, ascending, a stable tie-break among equal distances."""
        ...


@runtime_checkable
class TopicSearchProjection(Protocol):
    """The Topic Memory family's search projection on one engine (Topic Memory RFC,
    "Retrieval"): the active topic and chunk rows of each Topic head with their
    full-text and vector indexes. Every method runs inside the caller's transaction.
    The names are the storage primitives the engine-neutral Topic storage
    (``powercontext.adapters.topic_database``) calls; each engine writes them once."""

    def _missing_vectors_sync(self, fingerprint: str) -> int:
        """DDL check: active rows lacking their vector, or embedded by another model."""
        ...

    def _delete_active_sync(self, artifact_id: str) -> None:
        """Row replacement: delete the Topic's active rows with their index rows."""
        ...

    def _insert_active_sync(self, write: TopicWrite, fingerprint: str | None) -> None:
        """Row replacement: insert the active rows of ``write.ref`` (and their vectors
        when ``fingerprint`` is not None)."""
        ...

    def _set_fts_texts_sync(self, ref: TopicRef, topic_text: str,
                            chunk_texts: Sequence[tuple[int, str]]) -> None:
        """Row replacement: the full-text field of ``ref``'s active rows (re-analysis)."""
        ...

    def _fts_rows_sync(self, channel: TopicChannel, scope_id: str, terms: Sequence[str],
                       limit: int, offset: int) -> list[ChannelRow]:
        """Full-text candidates: one page of the Scope's active rows matching any of
        ``terms``, best first in one total order."""
        ...

    def _vector_rows_sync(self, channel: TopicChannel, scope_id: str,
                          vector: EmbeddingVector, k: int) -> list[ChannelRow]:
        """Vector candidates: the ``k`` nearest active rows of the Scope by L2."""
        ...


@runtime_checkable
class SupervisorLeases(Protocol):
    """The Supervisor's rows that follow the engine's :class:`LockingPolicy` (Topic
    Memory RFC, "Leader, term, and fencing", "Automatic scheduling"): the lease of a
    group and each binding's last completed wave, read and written by the database's
    clock. Every method runs inside the caller's transaction.

    ``expires``: leases expire by database time (``LEASES``); otherwise a term lasts
    until the next Supervisor starts (``SINGLE_WRITER``), and ``lease_seconds`` is
    None."""

    @property
    def expires(self) -> bool:
        """True when a lease expires by database time."""
        ...

    def current(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        """``(holder_id, generation, unexpired)`` of the group's lease, or None; ``lock``
        keeps the row still until COMMIT where the engine has row locks."""
        ...

    def acquire(self, holder_id: str, lease_seconds: float | None) -> SupervisorTerm | None:
        """The term ``holder_id`` now holds, or None when another holder's lease is
        valid (or a concurrent first acquisition won)."""
        ...

    def renew(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        """Extend ``term``'s lease; False when the term was lost."""
        ...

    def release(self, term: SupervisorTerm) -> None:
        """Give ``term``'s lease up (nothing where a lease never expires)."""
        ...

    def binding_state(self, binding_name: str
                      ) -> tuple[datetime.datetime | None, datetime.datetime]:
        """``(completed_at or None, the database's now)``, both aware UTC."""
        ...

    def touch_binding_state(self, binding_name: str) -> None:
        """Record the database's now as the binding's completed wave (row created when
        absent)."""
        ...

