"""The Memory family's SQLite schema and startup probes (Memory RFC, "SQLite adapter"):
the shared tables, the contentless-delete FTS5 table and, with an embedding profile,
the vec0 vector table; a real insert/search/delete probe of FTS5 and of vec0 decides
what :meth:`capabilities` reports (ARCHITECTURE.md, "Decisions"). The tables it finds
or creates are told to the search projection
(:class:`~powercontext.adapters.sqlite.memory_projection.SQLiteMemoryProjection`)."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import apsw

from powercontext.adapters.sqlite.vector_index import VectorIndex
from powercontext.adapters.storage import rows as shared_rows
from powercontext.core import canonical
from powercontext.core.errors import BackendError, ProfileMismatchError
from powercontext.core.models import EmbeddingProfile, EmbeddingVector, MemoryCapabilities
from powercontext.sql import sqlite as frag
from powercontext.sql import templates

if TYPE_CHECKING:
    from powercontext.adapters.sqlite.engine import SQLiteEngine
    from powercontext.adapters.sqlite.memory_projection import SQLiteMemoryProjection

__all__ = ["SCHEMA_VERSION", "SQLiteMemorySchema", "pack", "unpack"]

SCHEMA_VERSION = "1"


def pack(vector: EmbeddingVector) -> bytes:
    """A vector as vec0's float32 little-endian blob."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: object) -> tuple[float, ...] | None:
    """A vec0 blob as floats; None when it is not one."""
    if not isinstance(blob, bytes) or len(blob) % 4:
        return None
    return struct.unpack(f"<{len(blob) // 4}f", blob)


class SQLiteMemorySchema:
    """Schema and probes of the Memory family on SQLite, run once per open on the
    worker thread: ``storage`` is the backend's storage (its transactions, metadata and
    Source journal, ``source_journal``), ``engine`` its SQLite engine (statements,
    tables, the FTS5 and vec0 probes), ``projection`` the search projection whose
    tables it creates or finds."""

    def __init__(self, storage: Any, engine: SQLiteEngine,
                 projection: SQLiteMemoryProjection) -> None:
        self._storage = storage
        self._engine = engine
        self._projection = projection

    def open(self, profile: EmbeddingProfile | None,
             analyzer_version: str) -> MemoryCapabilities:
        """Probe FTS5 and vec0, check (or create) the schema, and report the
        capabilities. ``profile``: the deployment's (None: the stored one, if any);
        ``analyzer_version``: what a new database records. BackendError for an unknown
        schema version or a vec0 table without sqlite-vec; ProfileMismatchError for
        another profile than the stored one."""
        st = self._storage
        reasons: list[str] = []
        vec_loaded = self._engine.load_vec(reasons)
        fts_ok = self._engine.probe_fts(reasons)
        vec_ok = vec_loaded and self._probe_vec(reasons)
        self._projection.vec_usable = vec_ok
        # A read transaction first: an existing, complete schema needs no write lock
        # (opening must not queue behind a long writer); otherwise create it.
        for create in (False, True):
            st._begin_sync(create)
            try:
                caps = self._schema(profile, analyzer_version, fts_ok, vec_ok, vec_loaded,
                                    list(reasons), create)
                st._commit_sync()
            except BaseException:
                st._rollback_sync()
                raise
            if caps is not None:
                return caps
        raise BackendError("the schema could not be created")  # pragma: no cover

    def _schema(self, profile: EmbeddingProfile | None, analyzer_version: str, fts_ok: bool,
                vec_ok: bool, vec_loaded: bool, reasons: list[str],
                create: bool) -> MemoryCapabilities | None:
        """Check (and with ``create``, create) the schema; None when something is missing
        and ``create`` is False."""
        st = self._storage
        execute, exists = self._engine.rows, self._engine.table_exists
        if create:
            for name in [*templates.SCHEMA, *templates.PROCESSING_SCHEMA]:
                execute(templates.render(name, "sqlite"))
            execute(frag.statement("create_fts"))
            execute(frag.statement("fts_usermerge"))
        # An fts5vocab table earlier releases created (never read) may stay: it costs
        # nothing, and dropping it would need the write lock at every open.
        elif not (exists("powercontext_meta") and exists(frag.FTS_TABLE)
                  and exists("memory_keys")
                  and all(exists(t) for t in templates.MEMORY_LOG_TABLES)
                  and all(exists(t) for t in templates.PROCESSING_TABLES)
                  and st.source_journal.scope_uris_ready_sync()):
            return None  # a database of an earlier release
        if create:
            st.source_journal.migrate_scope_uris_sync()  # a journal of an earlier release: its uris
        schema = st._meta_get_sync("schema_version")
        if schema is None:
            if not create:
                return None
            st._meta_set_sync("schema_version", SCHEMA_VERSION)
            st._meta_set_sync("analyzer_version", analyzer_version)
        elif schema != SCHEMA_VERSION:
            raise BackendError(
                f"database schema version {schema} is not supported (expected {SCHEMA_VERSION})"
            )
        stored = st._meta_get_sync("embedding_profile")
        if profile is not None and stored is not None:
            wanted = canonical.canonical_dumps(profile).decode()
            if stored != wanted:
                raise ProfileMismatchError(
                    f"this database was created with embedding profile {stored}; "
                    f"refusing to open it with {wanted} (a new profile needs "
                    "`powercontext --embedding NAME memory rebuild --migrate`)"
                )
        if profile is None and stored is not None:
            profile = shared_rows.embedding_profile(stored)
        if profile is not None and vec_ok and profile.distance != "l2":
            vec_ok = False
            reasons.append(f"vec0 is built for L2; the profile asks for {profile.distance!r}")
        if profile is not None and vec_ok:
            if not create and not (exists(frag.VECTOR_TABLE)
                                   and exists("memory_entry_vector_metadata")):
                return None
            if create:
                new = not exists(frag.VECTOR_TABLE)
                for name in templates.VECTOR_SCHEMA:
                    execute(templates.render(name, "sqlite"))
                execute(frag.vector_ddl(profile.dimension))
                bits = frag.vector_bits_ddl(profile.dimension)
                if new and bits is not None:
                    # only with a new float table: an older one keeps the exact KNN
                    # until `memory rebuild` fills the first pass from it
                    execute(bits)
                if new:  # likewise the IVF index
                    VectorIndex(execute, profile.dimension).create()
        projection = self._projection
        projection.refresh()
        projection.profile = profile
        if projection.vec_tables and not vec_loaded:
            raise BackendError("this database has a vec0 projection but sqlite-vec cannot be "
                               "loaded; writes would leave stale vectors behind")
        vector = profile is not None and vec_ok and projection.vec_tables
        if profile is None:
            reasons.append("no embedding profile: vector search is off")
        return MemoryCapabilities(fts=fts_ok, vector=vector, hybrid=vector and fts_ok,
                                  embedding_profile=profile, reasons=tuple(reasons))

    def _probe_vec(self, reasons: list[str]) -> bool:
        execute = self._engine.rows
        try:
            execute(frag.statement("probe_vec_drop"))
            execute(frag.statement("probe_vec_create"))
            execute(frag.statement("probe_vec_insert"), [1, "m_a", pack((1.0, 0.0))])
            execute(frag.statement("probe_vec_insert"), [2, "m_b", pack((1.0, 0.0))])
            execute(frag.statement("probe_vec_insert"), [3, "m_a", pack((0.0, 1.0))])
            found = execute(frag.statement("probe_vec_search"), [pack((1.0, 0.0)), 2, "m_a"])
            execute(frag.statement("probe_vec_delete"), [1])
            after = execute(frag.statement("probe_vec_search"), [pack((1.0, 0.0)), 2, "m_a"])
            execute(frag.statement("probe_vec_drop"))
        except apsw.Error as exc:
            reasons.append(f"vec0 probe failed: {exc}")
            return False
        ids = [r[0] for r in found]
        if ids != [1, 3] or abs(found[0][1]) > 1e-6 or [r[0] for r in after] != [3]:
            reasons.append(f"vec0 probe returned {found!r} then {after!r}")
            return False
        return True
