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
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import datetime

    from powercontext.core.errors import PowerContextError
    from powercontext.core.models import (
        EmbeddingProfile,
        EmbeddingVector,
        MemoryCapabilities,
        MemoryEntryVersion,
        Source,
    )
    from powercontext.core.plan import ProjectionRow
    from powercontext.core.ranking import SearchCandidate
    from powercontext.core.topic.models import TopicChannel, TopicRef, TopicWrite
    from powercontext.core.topic.search import ChannelRow
    from powercontext.core.topic.supervision import SupervisorTerm

__all__ = [
    "EngineBacked",
    "EngineCapabilities",
    "LockingPolicy",
    "MemoryRows",
    "MemorySchema",
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
    """The Memory family's search projection on one engine (Memory RFC, "Search",
    "Latest-head, full-text, and vector projection"): the head rows of every Memory
    with the engine's own full-text and vector rows beside them (SQLite: FTS5 and vec0
    tables; OceanBase: the FULLTEXT and HNSW indexes of ``memory_entry_heads`` itself).
    Every method runs inside the caller's transaction on the engine's thread; the
    caller checks every candidate against the head manifest (a projection is never
    trusted). The engine-neutral Memory backend
    (``powercontext.adapters.database.DatabaseMemoryBackend``) is given one; each
    engine writes one class (``SQLiteMemoryProjection``, ``OceanBaseMemoryProjection``).

    ``vectors`` and :meth:`head_vectors` carry ``VectorRow`` values
    (``powercontext.adapters.memory_rows``: the embedding content hash and the
    vector). The vector reads raise CapabilityNotSupportedError where the database has
    no vector projection (:meth:`head_vectors` answers none)."""

    #: The largest ``k`` :meth:`vector_candidates` answers (None: no cap).
    vector_k_cap: int | None

    def reset_vectors(self, profile: EmbeddingProfile | None) -> None:
        """DDL: drop the vector projection of every Memory and recreate it for
        ``profile`` (None: none). The caller stores the new profile."""
        ...

    def delete_projections(self, artifact_id: str, entry_ids: Sequence[str]) -> None:
        """Row replacement: delete the head rows of these entries with their full-text
        and vector rows."""
        ...

    def insert_projections(self, artifact_id: str, head_revision: int,
                           rows: Sequence[ProjectionRow], vectors: Sequence[Any]) -> None:
        """Row replacement: insert head rows (the entries have none at this point) with
        their full-text rows and, where ``vectors[i]`` is not None, their vector."""
        ...

    def clear_projection(self, artifact_id: str) -> None:
        """Row replacement: delete every projection row of one Memory (a rebuild)."""
        ...

    def after_rebuild(self) -> None:
        """The end of an offline rebuild, in its last write transaction: whatever the
        engine keeps beside the rows is made whole again."""
        ...

    def fts_candidates(self, artifact_ids: Sequence[str], terms: Sequence[str],
                       limit: int, *, offset: int = 0) -> list[SearchCandidate]:
        """Full-text candidates: positions ``offset .. offset + limit - 1`` of one total
        order, best first (the engine's relevance over the OR of ``terms``, analyzer
        tokens, every one counted; then a stable tie-break), of the head rows of these
        Memories matching any term, filtered by Memory inside the index. Fewer than
        ``limit`` only at the end."""
        ...

    def fts_stream(self, artifact_ids: Sequence[str], terms: Sequence[str],
                   first: int) -> Iterator[SearchCandidate]:
        """Every row of :meth:`fts_candidates`' order, lazily; ``first``: how many the
        caller wants at least (the first page's size)."""
        ...

    def vector_candidates(self, artifact_ids: Sequence[str], vector: EmbeddingVector,
                          limit: int) -> list[SearchCandidate]:
        """Vector candidates: the ``limit`` nearest head rows by L2 with ``distance``
        set, filtered by Memory inside the scan, ascending, a stable tie-break among
        equal distances."""
        ...

    def vector_first_k(self, first: int) -> int:
        """The ``k`` of the first :meth:`vector_candidates` call of a stream that wants
        ``first`` rows (an approximate index answers a constant, so that a smaller
        limit reads a prefix of the same stream)."""
        ...

    def vector_projection(self, artifact_id: str) -> list[tuple[str, str | None]]:
        """``(entry_content_hash, embedding_content_hash or None)`` of every head row of
        the Memory (None: the vector or its hash is missing)."""
        ...

    def vector_projection_of(self, artifact_id: str, entry_ids: Sequence[str]
                             ) -> list[tuple[str, str | None]]:
        """:meth:`vector_projection` of the head rows of these entries only."""
        ...

    def head_vectors(self, artifact_id: str) -> dict[str, Any]:
        """The stored vectors of one Memory's head rows by entry_version_id, only those
        whose stored hash names the row's entry (a rebuild keeps them when it cannot
        make new ones)."""
        ...


@runtime_checkable
class MemoryRows(Protocol):
    """The Memory family's authoritative rows as the engine-neutral Memory backend
    reads and writes them (Memory RFC, "Storage model"; ARCHITECTURE.md, Decisions:
    "Keys live in the database"): heads, Revision rows, entry versions, business keys
    and the reverse evidence of Sources. On a SQL engine each is one shared template
    run through :class:`SQLEngine` (``powercontext.adapters.memory_sql_rows``); the
    contract kit's in-memory backend answers them over dicts. Every method runs inside
    the caller's transaction; a write that breaks a unique key raises the store's
    error (mapped by the storage to RevisionConflictError).

    ``revision_rows`` gives ``RevisionRow`` values
    (``powercontext.adapters.storage.rows``)."""

    def head(self, artifact_id: str) -> int | None:
        """The current head revision of an Artifact (any family), or None."""
        ...

    def heads(self, artifact_ids: Sequence[str]) -> dict[str, int]:
        """The head revision of each of these Artifacts that exists, by id."""
        ...

    def all_heads(self) -> list[tuple[str, int]]:
        """Every Memory Artifact's ``(artifact_id, head revision)``, sorted by id."""
        ...

    def revision_rows(self, artifact_id: str, after: int, upto: int) -> list[Any]:
        """Revision rows with ``after < revision <= upto``, ascending."""
        ...

    def set_revision_hash(self, artifact_id: str, revision: int, old_hash: str,
                          new_hash: str) -> bool:
        """Rewrite one Revision's content hash when it is ``old_hash`` (rehash only)."""
        ...

    def entry_versions(self, entry_version_ids: Sequence[str]) -> list[MemoryEntryVersion]:
        """The stored entry versions with these ids (missing ids left out)."""
        ...

    def entry_ids_elsewhere(self, artifact_id: str, entry_ids: Sequence[str]) -> set[str]:
        """Those of ``entry_ids`` another Memory already uses."""
        ...

    def insert_entry_versions(self, versions: Sequence[MemoryEntryVersion]) -> None:
        """Insert immutable entry versions."""
        ...

    def key_owner(self, key: str) -> str | None:
        """The Memory Artifact id stored for a business key, or None."""
        ...

    def all_keys(self) -> list[tuple[str, str]]:
        """Every stored ``(key, artifact_id)``, sorted by key."""
        ...

    def insert_key(self, key: str, artifact_id: str) -> None:
        """Store a business key (a stored key raises the unique-key error)."""
        ...

    def delete_key(self, key: str, artifact_id: str) -> bool:
        """Delete a key when it names ``artifact_id``; True when it did."""
        ...

    def citing_versions(self, source_id: str, limit: int) -> list[MemoryEntryVersion]:
        """The first ``limit`` entry versions, by entry_version_id, citing a Source."""
        ...

    def entry_kinds(self, artifact_id: str) -> dict[str, str]:
        """``{entry_version_id: kind}`` of every stored version of one Memory."""
        ...


class MemorySchema(Protocol):
    """An engine's Memory schema and startup probes (Memory RFC, "SQLite adapter",
    "OceanBase adapter"): run once per open, on the open connection."""

    def open(self, profile: EmbeddingProfile | None,
             analyzer_version: str) -> MemoryCapabilities:
        """Create (or check) the Memory tables and the engine's projection, run the
        probes, and report the capabilities. ``profile``: the deployment's (None: the
        stored one, if any); ``analyzer_version``: what a new database records."""
        ...


@runtime_checkable
class TopicSearchProjection(Protocol):
    """The Topic Memory family's search projection on one engine (Topic Memory RFC,
    "Retrieval"): the active rows of each Topic head with their full-text and vector
    indexes, and the reads of those rows. Every method runs inside the caller's
    transaction; the engine-neutral Topic backend (``adapters/topic_database.py``)
    calls them."""

    #: The largest ``k`` :meth:`vector_rows` answers (None: no cap).
    vector_k_cap: int | None

    def missing_vectors(self, fingerprint: str) -> int:
        """DDL check: one set-based count of the active rows lacking their vector, or
        embedded by another model (0 in a complete hybrid deployment)."""
        ...

    def delete_active(self, artifact_id: str) -> None:
        """Row replacement: delete the Topic's active rows with their index rows."""
        ...

    def insert_active(self, write: TopicWrite, fingerprint: str | None) -> None:
        """Row replacement: insert the active rows of ``write.ref`` (the topic row with
        ``topic_text`` as its full-text field, one chunk row per chunk) with their
        full-text rows and, when ``fingerprint`` is not None, their vectors."""
        ...

    def set_fts_texts(self, ref: TopicRef, topic_text: str,
                      chunk_texts: Sequence[tuple[int, str]]) -> None:
        """Row replacement: the full-text field of ``ref``'s active rows (re-analysis;
        IntegrityError when ``ref`` is not active or its chunks differ)."""
        ...

    def fts_rows(self, channel: TopicChannel, scope_id: str, terms: Sequence[str],
                 limit: int, offset: int) -> Sequence[ChannelRow]:
        """Full-text candidates: one page (``offset``, ``limit``) of the Scope's active
        rows matching any of ``terms`` (Analyzer tokens), best first in one total
        order, each with its Analyzer text."""
        ...

    def vector_rows(self, channel: TopicChannel, scope_id: str,
                    vector: EmbeddingVector, k: int) -> Sequence[ChannelRow]:
        """Vector candidates: the ``k`` nearest active rows of the Scope by L2, filtered
        by Scope inside the scan, ascending, a stable tie-break."""
        ...

    def cards(self, scope_id: str, artifact_ids: Sequence[str]
              ) -> dict[str, tuple[TopicRef, str, str]]:
        """``artifact_id -> (active ref, title, summary)`` of these active Topics of the
        Scope (ids of another Scope are left out)."""
        ...

    def chunk_text(self, ref: TopicRef, ordinal: int) -> str | None:
        """The snippet text of one active chunk of exactly ``ref``, or None."""
        ...

    def active_refs(self) -> list[tuple[TopicRef, str]]:
        """``(ref, scope_id)`` of every active Topic of every Scope, by artifact_id."""
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

