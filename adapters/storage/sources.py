"""SourceJournal: the append-only Source store and its journal, shared by every family
(Memory RFC, "Sources"), and the per-Scope Source journal of Source-driven processing
(Topic Memory RFC, "Source, Window, Cursor, and Pending"; TOPIC-MEMORY.md, "Scopes are
new"). Sources are validated and scanned for secrets before the transaction; the
storage it is composed on (its host, :class:`SourceHost`) runs the transaction on its
worker thread and gives the synchronous primitives over the shared ``sources`` table
and the processing tables (``pc_source_scope_journal``,
``pc_artifact_processing_pending``): for a SQL engine
:class:`~powercontext.adapters.storage.sql_storage.SQLStorage`, written once over the
engine. Each family's backend holds one journal and answers the
:class:`powercontext.ports.SourceStore` coroutines through it.

A scoped write is one transaction: each Source (as :meth:`SourceJournal.put_sources`),
its Scope-journal row at ``MAX(position) + 1`` of the Scope (the primitive
:meth:`SourceHost._scope_lock_sync` serialises that allocation per engine), the
database-UTC time the new rows were recorded at (``pc_source_scope_recorded``) and the
Pending raise of :data:`~powercontext.core.topic.processing.BINDING`
(``source_through = max(existing, position)``, flush generations unchanged)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import attrs

from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import Source
from powercontext.core.topic.processing import BINDING, JournalEntry
from powercontext.core.topic.scope import check_scope_id

__all__ = ["SourceHost", "SourceJournal", "uri_hash"]

T = TypeVar("T")


def uri_hash(uri: str) -> str:
    """The key of a Source's uri in ``pc_source_scope_uris``: lowercase hex SHA-256 of
    its UTF-8 bytes (a uri has no length limit; its hash fits an index)."""
    return hashlib.sha256(uri.encode("utf-8", "surrogatepass")).hexdigest()


class SourceHost(Protocol):
    """What a :class:`SourceJournal` uses of the storage it is composed on: the worker
    thread, one retried transaction, the metadata table, and the synchronous
    primitives of the Source store (each runs inside the caller's transaction)."""

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the worker thread, the database opened first."""
        ...

    def _in_tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in one retried transaction."""
        ...

    def _begin_sync(self, write: bool) -> None: ...
    def _commit_sync(self) -> None: ...
    def _rollback_sync(self) -> None: ...
    def _meta_get_sync(self, key: str) -> str | None: ...
    def _meta_set_sync(self, key: str, value: str | None) -> None: ...

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        """Insert Sources not yet stored; return each one's journal position."""
        ...

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        """Stored Sources with their journal positions (missing ids left out)."""
        ...

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        """Sources after a journal position, ascending."""
        ...

    def _scope_lock_sync(self, scope_id: str) -> None:
        """Serialise the allocation of the Scope's journal positions until COMMIT
        (SQLite: nothing, ``BEGIN IMMEDIATE`` holds the write lock; OceanBase: the
        journal lock row ``FOR UPDATE``)."""
        ...

    def _scope_rows_sync(self, source_ids: Sequence[str]) -> list[tuple[str, str, int, bool]]:
        """``(source_id, scope_id, position, lineage_only)`` of the journaled ones."""
        ...

    def _scope_head_sync(self, scope_id: str) -> int:
        """The Scope's highest journal position (0: none)."""
        ...

    def _cursor_get_sync(self, binding_name: str, scope_id: str) -> int:
        """The binding's Cursor in the Scope (0: none)."""
        ...

    def _scope_insert_sync(self, scope_id: str, position: int, source_id: str,
                           lineage_only: bool) -> None:
        """Insert one Scope-journal row."""
        ...

    def _scope_uri_insert_sync(self, scope_id: str, uri_hash: str, position: int) -> None:
        """Insert the ``pc_source_scope_uris`` row of a new journal row with a uri."""
        ...

    def _scope_uri_position_sync(self, scope_id: str, uri_hash: str) -> int | None:
        """The lowest position of the Scope's journal rows whose uri hashes to
        ``uri_hash``, or None."""
        ...

    def _scope_uris_backfill_rows_sync(self) -> list[tuple[str, int, str]]:
        """``(scope_id, position, uri)`` of every journal row with a uri and no
        ``pc_source_scope_uris`` row yet (the backfill of an earlier database)."""
        ...

    def _scope_recorded_sync(self, scope_id: str, positions: Sequence[int]) -> None:
        """Record the database's UTC time for these new journal rows of the Scope
        (``pc_source_scope_recorded``, read by the dashboard's Sources per day); a
        store without the table records nothing."""
        ...

    def _pending_raise_sync(self, binding_name: str, scope_id: str, through: int) -> None:
        """``source_through = max(existing, through)`` of the Pending row (created with
        both flush generations 0 when absent; generations unchanged otherwise)."""
        ...

    def _scope_journal_sync(self, scope_id: str, after: int,
                            limit: int) -> list[JournalEntry]:
        """The Scope's journal rows after ``after``, ascending, at most ``limit``."""
        ...


class SourceJournal:
    """The Source store of one storage (``host``, a :class:`SourceHost`): the
    coroutines of :class:`powercontext.ports.SourceStore` (``put_sources``,
    ``get_sources``, ``journal``) and the scoped ``put_scoped_sources``,
    ``scope_journal``, ``source_head``, ``scope_position_of_uri``,
    ``processing_cursor``; a family's backend answers them through its journal."""

    #: The largest ``limit`` of :meth:`scope_journal`.
    MAX_SCOPE_JOURNAL_LIMIT = 1000

    def __init__(self, host: SourceHost) -> None:
        self._host = host

    async def _tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in one transaction of the host, on its worker thread."""
        return await self._host._run(self._host._in_tx, write, fn, *args)

    # -- public API -------------------------------------------------------------------

    @staticmethod
    def check_new_sources(sources: Sequence[Source]) -> None:
        """The checks of :meth:`put_sources` before any transaction."""
        for s in sources:
            if not isinstance(s, Source):
                raise InvalidInputError("sources", "must be Source values")
            canonical.check_id(s.source_id, "source_id")
            made = canonical.make_source(s.source_id, s.kind, s.content, s.uri, s.metadata)
            if made == s:  # normalized, and its hash recomputed once
                continue
            if attrs.evolve(made, content_hash=s.content_hash) != s:
                raise InvalidInputError(
                    "sources",
                    f"Source {s.source_id!r} is not normalized (build it with make_source)",
                )
            raise InvalidInputError(
                "source.content_hash", f"does not match the content of {s.source_id!r}"
            )
        from powercontext.adapters.secret_scanner import default_scanner  # writes only
        from powercontext.core.secrets import check_sources

        check_sources(sources, default_scanner().scan)

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        """Persist Sources atomically; identical ones are kept once. Returns each one's
        journal position. ValueError for a different Source under an existing id or a
        Source whose hash is wrong; SecretDetectedError (a ValueError) for a Source
        holding a secret in its content, uri or metadata: nothing is stored (Sources are
        append-only)."""
        self.check_new_sources(sources)
        return tuple(await self._tx(True, self._put_sources_checked, list(sources)))

    def _put_sources_checked(self, sources: list[Source]) -> list[int]:
        ids = [s.source_id for s in sources]
        existing = dict((s.source_id, s) for _, s in self._host._get_sources_sync(ids))
        for s in sources:
            old = existing.get(s.source_id)
            if old is not None and old != s:
                raise InvalidInputError(
                    "source_id", f"{s.source_id!r} is already stored with other content"
                )
        return self._host._put_sources_sync(sources)

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        """The stored Sources with these ids, in this order. ArtifactNotFoundError names
        the first id that is not stored."""
        rows = dict(
            (s.source_id, s)
            for _, s in await self._tx(False, self._host._get_sources_sync, list(source_ids)
            )
        )
        missing = [i for i in source_ids if i not in rows]
        if missing:
            raise ArtifactNotFoundError(f"no stored Source {missing[0]!r}")
        return tuple(rows[i] for i in source_ids)

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        """``(position, Source)`` pairs after journal position ``after`` (exclusive),
        ascending, at most ``limit``."""
        return tuple(await self._tx(False, self._host._journal_sync, after, limit))

    async def put_scoped_sources(self, scope_id: str, sources: Sequence[Source], *,
                                 once_per_uri: bool = False) -> tuple[int, ...]:
        """Persist Sources into one Scope (Topic Memory RFC, "Source, Window, Cursor,
        and Pending"): in ONE transaction each Source (as :meth:`put_sources`), its
        Scope-journal row (positions 1, 2, ... per Scope, in input order, never reused)
        and the Pending raise of :data:`~powercontext.core.topic.processing.BINDING`
        (``source_through = max(existing, highest new position)``; nothing raised when
        every Source was already in this Scope). Returns each Source's Scope position
        in input order. Every add of a new Source (a new id) is a new journal row; the
        same Source (its id) given again is the same Source: it keeps its position
        (a retry after an unknown outcome stores nothing twice).

        ``once_per_uri``: a Source whose ``uri`` is journaled in this Scope already (by
        any Source, or earlier in this call) is not added: its position is the earlier
        row's, nothing is stored for it. For producers whose uri names one event (a
        hook's turn): a redelivered event is checked and skipped in the same
        transaction as the add (:meth:`scope_position_of_uri` is the read).

        Errors (nothing stored): those of :meth:`put_sources`; InvalidInputError naming
        ``scope_id`` for a bad Scope id or a Source already journaled in another Scope
        (one Scope per Source). The ``lineage_only`` flag is always False here."""
        if not isinstance(once_per_uri, bool):
            raise InvalidInputError("once_per_uri", "must be a bool")
        return await self.put_server_sources(scope_id, sources, lineage_only=False,
                                              once_per_uri=once_per_uri)

    async def scope_position_of_uri(self, scope_id: str, uri: str) -> int | None:
        """Read only: the lowest journal position of the Scope whose Source has exactly
        this ``uri``, or None (an indexed lookup by the uri's SHA-256, not a scan).
        InvalidInputError naming ``scope_id`` or ``uri``."""
        scope = check_scope_id(scope_id)
        if not isinstance(uri, str) or not uri:
            raise InvalidInputError("uri", "must be a non-empty string")
        found: int | None = await self._tx(False, self._host._scope_uri_position_sync,
                                            scope, uri_hash(uri))
        return found

    async def put_server_sources(self, scope_id: str, sources: Sequence[Source], *,
                                  lineage_only: bool,
                                  once_per_uri: bool = False) -> tuple[int, ...]:
        """:meth:`put_scoped_sources` with the server-owned ``lineage_only`` flag of the
        NEW journal rows (server-only: tests and the processing pipeline; no public
        capture path sets it). A Source already in the Scope keeps its flag."""
        scope = check_scope_id(scope_id)
        # a Scope id is stored and shown (status, logs) like content: never a secret
        from powercontext.adapters.secret_scanner import default_scanner  # writes only
        from powercontext.core.secrets import check_text

        check_text("scope_id", scope, default_scanner().scan)
        if not isinstance(lineage_only, bool):
            raise InvalidInputError("lineage_only", "must be a bool")
        if isinstance(sources, str | bytes) or not isinstance(sources, Sequence):
            raise InvalidInputError("sources", "must be a sequence of Source values")
        self.check_new_sources(sources)
        if not sources:
            return ()
        return tuple(await self._tx(True, self._put_scoped_checked, scope,
                                     list(sources), lineage_only, once_per_uri))

    def _put_scoped_checked(self, scope_id: str, sources: list[Source],
                            lineage_only: bool, once_per_uri: bool = False) -> list[int]:
        self._host._scope_lock_sync(scope_id)
        by_uri: dict[str, int] = {}  # uri -> position: journaled already, or in this call
        if once_per_uri:
            for s in sources:
                if s.uri is not None and s.uri not in by_uri:
                    found = self._host._scope_uri_position_sync(scope_id, uri_hash(s.uri))
                    if found is not None:
                        by_uri[s.uri] = int(found)
        unique = list(dict.fromkeys(s.source_id for s in sources))
        positions: dict[str, int] = {}
        for source_id, other, position, _ in self._host._scope_rows_sync(unique):
            if other != scope_id:
                raise InvalidInputError(
                    "scope_id", f"Source {source_id!r} is already journaled in Scope "
                    f"{other!r}; a Source belongs to one Scope")
            positions[source_id] = int(position)
        if once_per_uri:
            skipped = {s.source_id for s in sources
                       if s.source_id not in positions and s.uri in by_uri}
            for s in sources:
                if s.source_id in skipped:
                    positions[s.source_id] = by_uri[s.uri]  # type: ignore[index]
            stored = [s for s in sources if s.source_id not in skipped]
        else:
            stored = sources
        self._put_sources_checked(stored)
        uris = {s.source_id: s.uri for s in stored}
        head = self._host._scope_head_sync(scope_id)
        first, raised = head + 1, 0
        for source_id in unique:
            if source_id in positions:
                continue
            uri = uris[source_id]
            if once_per_uri and uri is not None and uri in by_uri:
                positions[source_id] = by_uri[uri]  # the same uri earlier in this call
                continue
            head += 1
            self._host._scope_insert_sync(scope_id, head, source_id, lineage_only)
            if uri is not None:
                self._host._scope_uri_insert_sync(scope_id, uri_hash(uri), head)
                by_uri.setdefault(uri, head)
            positions[source_id] = raised = head
        if raised:
            self._host._scope_recorded_sync(scope_id, range(first, raised + 1))
            self._host._pending_raise_sync(BINDING, scope_id, raised)
        return [positions[s.source_id] for s in sources]

    #: The meta key set once ``pc_source_scope_uris`` holds every journal row's uri.
    SCOPE_URIS_KEY = "scope_uris"

    def scope_uris_ready_sync(self) -> bool:
        """Whether this database's uri rows are complete (read at open)."""
        return self._host._meta_get_sync(self.SCOPE_URIS_KEY) == "1"

    def migrate_scope_uris_sync(self) -> None:
        """Inside the caller's write transaction, once per database: under the journal
        lock (no Source write in between), :meth:`backfill_scope_uris_sync`, then the
        meta key. A database of an earlier release opens and keeps working: its old
        journal rows answer :meth:`scope_position_of_uri` like new ones."""
        if self.scope_uris_ready_sync():
            return
        self._host._scope_lock_sync("")
        if not self.scope_uris_ready_sync():
            self.backfill_scope_uris_sync()
            self._host._meta_set_sync(self.SCOPE_URIS_KEY, "1")

    def migrate_scope_uris_in_tx_sync(self) -> None:
        """At open: :meth:`migrate_scope_uris_sync` in a write transaction of its own
        (an engine whose schema is created outside transactions); nothing when done
        already (a meta read)."""
        if self.scope_uris_ready_sync():
            return
        host = self._host
        host._begin_sync(True)
        try:
            self.migrate_scope_uris_sync()
            host._commit_sync()
        except BaseException:
            host._rollback_sync()
            raise

    def backfill_scope_uris_sync(self) -> int:
        """Inside the caller's write transaction: the ``pc_source_scope_uris`` rows of
        every journal row with a uri that has none (a database written before the table
        existed; rows a concurrent writer added already are kept). Returns the rows
        added. Run once per database at open (the meta key ``scope_uris``)."""
        added = 0
        for scope_id, position, uri in self._host._scope_uris_backfill_rows_sync():
            self._host._scope_uri_insert_sync(scope_id, uri_hash(uri), int(position))
            added += 1
        return added

    async def scope_journal(self, scope_id: str, after: int = 0,
                            limit: int = 100) -> tuple[JournalEntry, ...]:
        """The Scope's journal rows after position ``after`` (exclusive), ascending, at
        most ``limit`` (1..1000), each with its Source and ``lineage_only`` flag (Topic
        Memory RFC, "Source, Window, Cursor, and Pending"). InvalidInputError for a bad
        Scope id, ``after < 0`` or ``limit`` out of range."""
        scope = check_scope_id(scope_id)
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidInputError("after", f"must be an integer >= 0, not {after!r}")
        if (isinstance(limit, bool) or not isinstance(limit, int)
                or not 1 <= limit <= self.MAX_SCOPE_JOURNAL_LIMIT):
            raise InvalidInputError(
                "limit", f"must be an integer in 1..{self.MAX_SCOPE_JOURNAL_LIMIT}, "
                f"not {limit!r}")
        return tuple(await self._tx(False, self._host._scope_journal_sync, scope,
                                     after, limit))

    async def source_head(self, scope_id: str) -> int:
        """The Scope's highest journal position (0 when it has no Source).
        InvalidInputError for a bad Scope id."""
        scope = check_scope_id(scope_id)
        return int(await self._tx(False, self._host._scope_head_sync, scope))

    async def processing_cursor(self, binding_name: str, scope_id: str) -> int:
        """The Cursor of the processing binding ``binding_name`` (e.g.
        ``topic-memory-source-window``) in the Scope ``scope_id``: the journal position
        through which that binding has published, 0 before its first Window (Topic Memory
        RFC, "Source, Window, Cursor, and Pending"). Every CREATE and UPDATE of a Window
        commits with its Cursor, so a Topic binding's Cursor of 0 means the Scope holds no
        Topic. Read only, from the shared processing tables: it opens no Topic side.
        InvalidInputError for a bad Scope id."""
        scope = check_scope_id(scope_id)
        return int(await self._tx(False, self._host._cursor_get_sync,
                                   str(binding_name), scope))
