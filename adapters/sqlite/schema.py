"""The Memory family's SQLite schema and startup probes (Memory RFC, "SQLite adapter"):
the shared tables, the contentless-delete FTS5 table and, with an embedding profile,
the vec0 vector table; a real insert/search/delete probe of FTS5 and of vec0 decides
what :meth:`capabilities` reports (ARCHITECTURE.md, "Decisions")."""

from __future__ import annotations

import struct
from typing import ClassVar

import apsw

from powercontext.adapters.memory_sql_rows import SQLMemoryRows
from powercontext.adapters.sqlite.connection import SQLiteStorage
from powercontext.adapters.sqlite.vector_index import VectorIndex
from powercontext.adapters.storage import rows as shared_rows
from powercontext.core import canonical
from powercontext.core.errors import (
    BackendError,
    CapabilityNotSupportedError,
    ProfileMismatchError,
)
from powercontext.core.models import EmbeddingProfile, EmbeddingVector, MemoryCapabilities
from powercontext.sql import sqlite as frag
from powercontext.sql import sqlite_vector_index as ivf_sql
from powercontext.sql import templates

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


class SQLiteMemorySchema(SQLiteStorage[MemoryCapabilities], SQLMemoryRows):
    """Schema, probes and vector-table migration of the Memory family on SQLite."""

    conflict_tables: ClassVar[tuple[str, ...]] = (
        *SQLiteStorage.conflict_tables, "memory_entry_versions.", "memory_keys.")

    _vec_tables = False  # the vec0 table exists
    _bits = False  # the ANN first pass (the sign-bit vec0 table) exists
    _ivf = False  # the IVF index's tables exist (adapters/sqlite/vector_index.py)
    _vector_index = "auto"  # "auto", "ivf", "ann" or "exact" (see SQLiteMemoryBackend)
    _vec_usable = False  # sqlite-vec loaded and its probe passed

    def _setup_sync(self, conn: apsw.Connection) -> MemoryCapabilities:
        reasons: list[str] = []
        vec_loaded = self._load_vec_sync(reasons)
        fts_ok = self._probe_fts_sync(reasons)
        vec_ok = vec_loaded and self._probe_vec_sync(reasons)
        self._vec_usable = vec_ok
        # A read transaction first: an existing, complete schema needs no write lock
        # (opening must not queue behind a long writer); otherwise create it.
        for create in (False, True):
            self._begin_sync(create)
            try:
                caps = self._schema_sync(fts_ok, vec_ok, vec_loaded, list(reasons), create)
                self._commit_sync()
            except BaseException:
                self._rollback_sync()
                raise
            if caps is not None:
                return caps
        raise BackendError("the schema could not be created")  # pragma: no cover

    def _schema_sync(self, fts_ok: bool, vec_ok: bool, vec_loaded: bool,
                     reasons: list[str], create: bool) -> MemoryCapabilities | None:
        """Check (and with ``create``, create) the schema; None when something is missing
        and ``create`` is False."""
        if create:
            for name in [*templates.SCHEMA, *templates.PROCESSING_SCHEMA]:
                self._execute(self._t(name))
            self._execute(frag.statement("create_fts"))
            self._execute(frag.statement("fts_usermerge"))
        # An fts5vocab table earlier releases created (never read) may stay: it costs
        # nothing, and dropping it would need the write lock at every open.
        elif not (self._exists_sync("powercontext_meta") and self._exists_sync(frag.FTS_TABLE)
                  and self._exists_sync("memory_keys")
                  and all(self._exists_sync(t) for t in templates.MEMORY_LOG_TABLES)
                  and all(self._exists_sync(t) for t in templates.PROCESSING_TABLES)
                  and self._scope_uris_ready_sync()):
            return None  # a database of an earlier release
        if create:
            self._migrate_scope_uris_sync()  # a journal of an earlier release: its uris
        schema = self._meta_get_sync("schema_version")
        if schema is None:
            if not create:
                return None
            self._meta_set_sync("schema_version", SCHEMA_VERSION)
            self._meta_set_sync("analyzer_version", self._new_database_analyzer().version)
        elif schema != SCHEMA_VERSION:
            raise BackendError(
                f"database schema version {schema} is not supported (expected {SCHEMA_VERSION})"
            )
        stored = self._meta_get_sync("embedding_profile")
        profile = self._profile
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
            if not create and not (self._exists_sync(frag.VECTOR_TABLE)
                                   and self._exists_sync("memory_entry_vector_metadata")):
                return None
            if create:
                new = not self._exists_sync(frag.VECTOR_TABLE)
                for name in templates.VECTOR_SCHEMA:
                    self._execute(self._t(name))
                self._execute(frag.vector_ddl(profile.dimension))
                bits = frag.vector_bits_ddl(profile.dimension)
                if new and bits is not None:
                    # only with a new float table: an older one keeps the exact KNN
                    # until `memory rebuild` fills the first pass from it
                    self._execute(bits)
                if new:  # likewise the IVF index
                    VectorIndex(self._execute, profile.dimension).create()
        self._read_vector_tables_sync()
        if self._vec_tables and not vec_loaded:
            raise BackendError("this database has a vec0 projection but sqlite-vec cannot be "
                               "loaded; writes would leave stale vectors behind")
        vector = profile is not None and vec_ok and self._vec_tables
        if profile is None:
            reasons.append("no embedding profile: vector search is off")
        return MemoryCapabilities(fts=fts_ok, vector=vector, hybrid=vector and fts_ok,
                                  embedding_profile=profile, reasons=tuple(reasons))

    @property
    def _ann(self) -> bool:
        """Searches take the ANN path: the first pass exists and the deployment asked for
        it (``vector_index="ann"``; ``"auto"`` is exact: the sign-bit pass's recall does
        not hold at 100k vectors)."""
        return self._bits and self._vector_index == "ann"

    def _rolled_back_sync(self) -> None:
        # a rolled-back migration may have dropped or created the vector tables
        self._read_vector_tables_sync()

    def _read_vector_tables_sync(self) -> None:
        self._vec_tables = self._exists_sync(frag.VECTOR_TABLE)
        self._bits = self._vec_tables and self._exists_sync(frag.BITS_TABLE)
        self._ivf = self._vec_tables and all(self._exists_sync(t) for t in (
            ivf_sql.IVF_TABLE, ivf_sql.CENTROIDS_TABLE, ivf_sql.LISTS_TABLE))

    def _probe_vec_sync(self, reasons: list[str]) -> bool:
        try:
            self._execute(frag.statement("probe_vec_drop"))
            self._execute(frag.statement("probe_vec_create"))
            self._execute(frag.statement("probe_vec_insert"), [1, "m_a", pack((1.0, 0.0))])
            self._execute(frag.statement("probe_vec_insert"), [2, "m_b", pack((1.0, 0.0))])
            self._execute(frag.statement("probe_vec_insert"), [3, "m_a", pack((0.0, 1.0))])
            found = self._execute(frag.statement("probe_vec_search"),
                                  [pack((1.0, 0.0)), 2, "m_a"])
            self._execute(frag.statement("probe_vec_delete"), [1])
            after = self._execute(frag.statement("probe_vec_search"),
                                  [pack((1.0, 0.0)), 2, "m_a"])
            self._execute(frag.statement("probe_vec_drop"))
        except apsw.Error as exc:
            reasons.append(f"vec0 probe failed: {exc}")
            return False
        ids = [r[0] for r in found]
        if ids != [1, 3] or abs(found[0][1]) > 1e-6 or [r[0] for r in after] != [3]:
            reasons.append(f"vec0 probe returned {found!r} then {after!r}")
            return False
        return True

    def _reset_vectors_sync(self, profile: EmbeddingProfile | None) -> None:
        if profile is not None:
            if not self._vec_usable:
                raise CapabilityNotSupportedError(
                    "sqlite-vec is not usable here: no vector projection can be created")
            if profile.distance != "l2":
                raise CapabilityNotSupportedError(
                    f"vec0 is built for L2; the profile asks for {profile.distance!r}")
        if self._vec_tables:
            self._execute(frag.statement("drop_vector"))
        if self._bits or self._exists_sync(frag.BITS_TABLE):
            self._execute(frag.statement("drop_bits"))
        self._execute(self._t("drop_memory_entry_vector_metadata"))
        VectorIndex(self._execute, 1).drop()
        self._vec_tables = self._bits = self._ivf = False
        if profile is not None:
            for name in templates.VECTOR_SCHEMA:
                self._execute(self._t(name))
            self._execute(frag.vector_ddl(profile.dimension))
            self._vec_tables = True
            VectorIndex(self._execute, profile.dimension).create()
            self._ivf = True
            bits = frag.vector_bits_ddl(profile.dimension)
            if bits is not None:
                self._execute(bits)
                self._bits = True

    def _refill_bits_sync(self) -> None:
        """Make the ANN first pass again from the float vectors (the end of a rebuild;
        the upgrade of a database made before it existed): every float row gets its
        sign-bit row and no other row is left. Inside the caller's write transaction."""
        profile = self._profile or (self._db_caps and self._db_caps.embedding_profile)
        if not self._vec_tables or not profile:
            return
        bits = frag.vector_bits_ddl(profile.dimension)
        if bits is None:
            return
        self._execute(frag.statement("drop_bits"))
        self._execute(bits)
        self._execute(frag.statement("bits_fill"))
        self._bits = True
