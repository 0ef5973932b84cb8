"""SQLiteMemoryBackend: :class:`DatabaseMemoryBackend` on APSW + sqlite-vec (Memory RFC,
"SQLite adapter"; ARCHITECTURE.md, "Decisions").

One APSW connection, opened lazily on the backend's single worker thread, in WAL mode
with ``synchronous=FULL`` (a COMMIT is durable), ``foreign_keys=ON`` and a 5 s busy
timeout. A write transaction is ``BEGIN IMMEDIATE`` (it takes the write lock before the
head check, so two writers serialize and the second sees the first's head); a read
transaction is a deferred ``BEGIN``, one WAL snapshot for the whole read.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import apsw

from powercontext.adapters.database import (
    MEMORY_FAMILY,
    Candidate,
    DatabaseMemoryBackend,
    RevisionRow,
    VectorRow,
)
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    BackendError,
    CapabilityNotSupportedError,
    InvalidInputError,
    PowerContextError,
    ProfileMismatchError,
    RevisionConflictError,
)
from powercontext.core.models import (
    EmbeddingProfile,
    EmbeddingVector,
    MemoryCapabilities,
    MemoryEntryVersion,
    Source,
)
from powercontext.core.plan import ProjectionRow
from powercontext.sql import sqlite as frag
from powercontext.sql import templates

__all__ = ["BUSY_TIMEOUT_MS", "MIN_SQLITE_VERSION", "SCHEMA_VERSION", "SQLITE_FEATURES",
           "SQLiteMemoryBackend", "check_sqlite_version", "parse_sqlite_url"]

#: The SQLite features this adapter uses, each with the first version that has it. The
#: Memory RFC ("SQLite adapter") names 3.38.0 for vec's sqlite3_vtab_in / LIMIT APIs; the
#: full-text table is a contentless-delete FTS5 table (``contentless_delete=1``), which
#: needs 3.43.0, so the gate is the newest of them (ARCHITECTURE.md, "Decisions").
SQLITE_FEATURES: tuple[tuple[tuple[int, int, int], str], ...] = (
    ((3, 38, 0), "the sqlite3_vtab_in and virtual-table LIMIT APIs vec0 uses"),
    ((3, 43, 0), "FTS5 contentless-delete tables (contentless_delete=1)"),
)
MIN_SQLITE_VERSION = max(v for v, _ in SQLITE_FEATURES)
BUSY_TIMEOUT_MS = 5000
SCHEMA_VERSION = "1"
_DIALECT = "sqlite"
_CONFLICT_TABLES = ("artifact_revisions.", "artifact_heads.", "memory_entry_versions.",
                    "memory_keys.")


def parse_sqlite_url(path_or_url: str) -> str:
    """The file name APSW opens: a plain path is kept; ``sqlite:///abs/path`` gives
    ``/abs/path``; ``sqlite:///:memory:`` (or ``:memory:``) an in-memory database (one
    connection, so only for tests). ValueError for another scheme or an empty path."""
    if not isinstance(path_or_url, str) or not path_or_url:
        raise ValueError("a SQLite path or sqlite:/// URL is required")
    if "://" not in path_or_url:
        return path_or_url
    scheme, _, rest = path_or_url.partition("://")
    if scheme != "sqlite":
        raise ValueError(f"not a sqlite URL: {path_or_url!r}")
    if rest in ("/:memory:", ":memory:"):
        return ":memory:"
    if not rest.startswith("/") or rest == "/":
        raise ValueError(
            f"a sqlite URL needs an absolute path (sqlite:///abs/path): {path_or_url!r}")
    return "/" + rest.lstrip("/")


def sqlite_version() -> str:
    """The version string of the SQLite library APSW runs on (``sqlite_version()``)."""
    return apsw.sqlite_lib_version()


def check_sqlite_version(version: str) -> None:
    """Raise :class:`BackendError` naming the newest missing feature and the version it
    needs when ``version`` (``"3.42.0"``) is older than a feature in SQLITE_FEATURES."""
    try:
        found = tuple(int(p) for p in version.split(".")[:3])
    except ValueError:
        raise BackendError(f"cannot parse the SQLite version {version!r}") from None
    missing = [(v, what) for v, what in SQLITE_FEATURES if found < v]
    if missing:
        need, what = max(missing)
        raise BackendError(
            f"SQLite {version} is too old: the Memory family needs SQLite "
            f"{'.'.join(map(str, need))} or newer for {what} (Memory RFC, \"SQLite adapter\")"
        )


def _pack(vector: EmbeddingVector) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


def _vec0_path() -> str:
    """The path ``sqlite_vec.loadable_path()`` gives, found without importing the package
    (its ``__init__`` imports numpy: 0.1-0.2 s on every hook event)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("sqlite-vec is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


class SQLiteMemoryBackend(DatabaseMemoryBackend):
    """The Memory family on one SQLite file (Memory RFC, "SQLite adapter").

    ``path_or_url``: a file path, ``sqlite:///abs/path`` or ``sqlite:///:memory:``.
    ``profile``: the deployment's fixed embedding profile; with it the vector tables
    (``memory_entry_vector_metadata`` and the vec0 ``memory_entry_search_vector``) are
    created and vector/hybrid search reported when the vec0 probe passes. Opening
    raises :class:`BackendError` for SQLite older than 3.43.0 (contentless-delete
    FTS5; see SQLITE_FEATURES) or an unknown schema
    version, :class:`ProfileMismatchError` for another profile than the stored one.
    ``busy_timeout_ms``: how long a writer waits for the write lock before
    :class:`BackendError` ("database is locked").
    """

    supports_revision_encodings = True
    vector_k_cap = frag.MAX_KNN_K

    def __init__(self, path_or_url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        super().__init__(profile=profile, analyzer=analyzer)
        self._filename = parse_sqlite_url(path_or_url)
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: apsw.Connection | None = None
        self._vec_tables = False
        self._vec_usable = False  # sqlite-vec loaded and its probe passed

    @property
    def filename(self) -> str:
        return self._filename

    # ------------------------------------------------------------------ plumbing

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement and fetch its rows (the one place SQL reaches APSW)."""
        assert self._conn is not None, "the connection is not open"
        return self._conn.execute(sql, tuple(params)).fetchall()

    def _t(self, name: str) -> str:
        return templates.render(name, _DIALECT)

    def _select_in(self, name: str, values: Sequence[Any],
                   before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        for sql, chunk in templates.render_in(name, _DIALECT, list(dict.fromkeys(values))):
            rows.extend(self._execute(sql, [*before, *chunk]))
        return rows

    # ------------------------------------------------------------------ open / close

    def _open_sync(self) -> MemoryCapabilities:
        self._close_sync()
        check_sqlite_version(sqlite_version())
        try:
            conn = apsw.Connection(self._filename)
        except apsw.Error as exc:
            raise BackendError(f"cannot open SQLite database {self._filename!r}: {exc}") from exc
        self._conn = conn
        try:
            return self._setup_sync(conn)
        except apsw.NotADBError as exc:  # the user named a file that is something else
            self._close_sync()
            raise InvalidInputError(
                "db", f"{self._filename!r} is not a SQLite database") from exc
        except BaseException:
            self._close_sync()
            raise

    def _setup_sync(self, conn: apsw.Connection) -> MemoryCapabilities:
        conn.setbusytimeout(self._busy_timeout_ms)
        self._execute("PRAGMA journal_mode=WAL")
        self._execute("PRAGMA synchronous=FULL")
        self._execute("PRAGMA foreign_keys=ON")
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

    def _exists_sync(self, table: str) -> bool:
        return bool(self._execute(frag.statement("table_exists"), [table]))

    def _schema_sync(self, fts_ok: bool, vec_ok: bool, vec_loaded: bool,
                     reasons: list[str], create: bool) -> MemoryCapabilities | None:
        """Check (and with ``create``, create) the schema; None when something is missing
        and ``create`` is False."""
        if create:
            for name in templates.SCHEMA:
                self._execute(self._t(name))
            self._execute(frag.statement("create_fts"))
            self._execute(frag.statement("create_fts_vocab"))
        elif not (self._exists_sync("powercontext_meta") and self._exists_sync(frag.FTS_TABLE)
                  and self._exists_sync(frag.FTS_VOCAB_TABLE)
                  and self._exists_sync("memory_keys")):  # a database of an earlier release
            return None
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
            d = json.loads(stored)
            profile = EmbeddingProfile(d["profile_id"], d["model"], int(d["dimension"]),
                                       d["distance"], d["normalization"])
        if profile is not None and vec_ok and profile.distance != "l2":
            vec_ok = False
            reasons.append(f"vec0 is built for L2; the profile asks for {profile.distance!r}")
        if profile is not None and vec_ok:
            if not create and not (self._exists_sync(frag.VECTOR_TABLE)
                                   and self._exists_sync("memory_entry_vector_metadata")):
                return None
            if create:
                for name in templates.VECTOR_SCHEMA:
                    self._execute(self._t(name))
                self._execute(frag.vector_ddl(profile.dimension))
        self._vec_tables = self._exists_sync(frag.VECTOR_TABLE)
        if self._vec_tables and not vec_loaded:
            raise BackendError("this database has a vec0 projection but sqlite-vec cannot be "
                               "loaded; writes would leave stale vectors behind")
        vector = profile is not None and vec_ok and self._vec_tables
        if profile is None:
            reasons.append("no embedding profile: vector search is off")
        return MemoryCapabilities(fts=fts_ok, vector=vector, hybrid=vector and fts_ok,
                                          embedding_profile=profile, reasons=tuple(reasons))

    def _load_vec_sync(self, reasons: list[str]) -> bool:
        assert self._conn is not None
        try:
            self._conn.enable_load_extension(True)
            self._conn.load_extension(_vec0_path())
            self._conn.enable_load_extension(False)
            return True
        except (ImportError, apsw.Error, OSError) as exc:
            reasons.append(f"sqlite-vec cannot be loaded: {exc}")
            return False

    def _probe_fts_sync(self, reasons: list[str]) -> bool:
        try:
            self._execute(frag.statement("probe_fts_drop"))
            self._execute(frag.statement("probe_fts_create"))
            self._execute(frag.statement("probe_fts_insert"),
                          [7, frag.fts_document("m_probe", "probe_x token")])
            found = self._execute(frag.statement("probe_fts_search"),
                                  [frag.fts_match_expression(["m_probe"], ["probe_x"])])
            self._execute(frag.statement("probe_fts_delete"), [7])
            gone = self._execute(frag.statement("probe_fts_search"),
                                 [frag.fts_match_expression(["m_probe"], ["probe_x"])])
            self._execute(frag.statement("probe_fts_drop"))
        except apsw.Error as exc:
            reasons.append(f"FTS5 probe failed: {exc}")
            return False
        if found != [(7,)] or gone:
            reasons.append(f"FTS5 probe returned {found!r} then {gone!r}")
            return False
        return True

    def _probe_vec_sync(self, reasons: list[str]) -> bool:
        try:
            self._execute(frag.statement("probe_vec_drop"))
            self._execute(frag.statement("probe_vec_create"))
            self._execute(frag.statement("probe_vec_insert"), [1, "m_a", _pack((1.0, 0.0))])
            self._execute(frag.statement("probe_vec_insert"), [2, "m_b", _pack((1.0, 0.0))])
            self._execute(frag.statement("probe_vec_insert"), [3, "m_a", _pack((0.0, 1.0))])
            found = self._execute(frag.statement("probe_vec_search"),
                                  [_pack((1.0, 0.0)), 2, "m_a"])
            self._execute(frag.statement("probe_vec_delete"), [1])
            after = self._execute(frag.statement("probe_vec_search"),
                                  [_pack((1.0, 0.0)), 2, "m_a"])
            self._execute(frag.statement("probe_vec_drop"))
        except apsw.Error as exc:
            reasons.append(f"vec0 probe failed: {exc}")
            return False
        ids = [r[0] for r in found]
        if ids != [1, 3] or abs(found[0][1]) > 1e-6 or [r[0] for r in after] != [3]:
            reasons.append(f"vec0 probe returned {found!r} then {after!r}")
            return False
        return True

    def _close_sync(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # ------------------------------------------------------------------ transactions

    def _begin_sync(self, write: bool) -> None:
        # The caller rolls back only failures after BEGIN returned, so a failure here
        # (even one raised after the BEGIN ran) must not leave a transaction open.
        try:
            self._execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except apsw.BusyError as exc:
            self._rollback_sync()
            raise BackendError(
                f"database is locked: another writer held {self._filename!r} for more "
                f"than {self._busy_timeout_ms} ms"
            ) from exc
        except BaseException:
            self._rollback_sync()
            raise

    def _commit_sync(self) -> None:
        self._execute("COMMIT")

    def _rollback_sync(self) -> None:
        if self._conn is not None and self._conn.in_transaction:
            self._execute("ROLLBACK")
            # a rolled-back migration may have dropped or created the vector tables
            self._vec_tables = self._exists_sync(frag.VECTOR_TABLE)

    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        if isinstance(exc, apsw.ConstraintError):
            msg = str(exc)
            if "UNIQUE constraint failed" in msg and any(t in msg for t in _CONFLICT_TABLES):
                return RevisionConflictError(f"a concurrent write stored this first: {msg}")
            return BackendError(f"SQLite refused the write: {msg}")
        if isinstance(exc, apsw.BusyError | apsw.LockedError):
            return BackendError(f"database is locked: {exc}")
        if isinstance(exc, apsw.Error):
            return BackendError(f"SQLite error: {exc}")
        return None

    # ------------------------------------------------------------------ metadata

    def _meta_get_sync(self, key: str) -> str | None:
        rows = self._execute(self._t("meta_get"), [key])
        return None if not rows else rows[0][0]

    def _meta_set_sync(self, key: str, value: str | None) -> None:
        self._execute(self._t("meta_delete"), [key])
        if value is not None:
            self._execute(self._t("meta_insert"), [key, value])

    # ------------------------------------------------------------------ revisions

    def _head_sync(self, artifact_id: str) -> int | None:
        rows = self._execute(self._t("head_get"), [artifact_id])
        return None if not rows else int(rows[0][0])

    def _revision_rows_sync(self, artifact_id: str, after: int, upto: int) -> list[RevisionRow]:
        rows = self._execute(self._t("revision_range"), [artifact_id, after, upto])
        return [RevisionRow(a, int(r), fam, bytes(content), h, lineage.encode("utf-8"), enc)
                for a, r, fam, enc, content, h, lineage in rows]

    def _insert_revision_sync(self, row: RevisionRow) -> None:
        self._execute(self._t("revision_insert"), [
            row.artifact_id, row.revision, row.family, row.encoding, row.content,
            row.content_hash, row.lineage.decode("utf-8")])

    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        self._execute(self._t("head_insert"), [artifact_id, revision])

    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        self._execute(self._t("head_cas"), [revision, artifact_id, base_revision])
        assert self._conn is not None
        return bool(self._conn.changes() == 1)

    def _set_revision_hash_sync(self, artifact_id: str, revision: int, old_hash: str,
                                new_hash: str) -> bool:
        self._execute(self._t("revision_hash_update"), [new_hash, artifact_id, revision, old_hash])
        assert self._conn is not None
        return bool(self._conn.changes() == 1)

    # ------------------------------------------------------------------ entry versions

    def _entry_versions_sync(self, entry_version_ids: Sequence[str]) -> list[MemoryEntryVersion]:
        return [
            MemoryEntryVersion(m, e, v, int(n), prev, kind, text,
                               canonical.parse_source_refs(srefs),
                               canonical.parse_artifact_refs(arefs), h, int(created))
            for m, e, v, n, prev, kind, text, srefs, arefs, h, created
            in self._select_in("versions_by_id", entry_version_ids)
        ]

    def _entry_ids_elsewhere_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> set[str]:
        return {r[0] for r in self._select_in("entry_ids_elsewhere", entry_ids, [artifact_id])}

    def _insert_entry_versions_sync(self, versions: Sequence[MemoryEntryVersion]) -> None:
        sql = self._t("version_insert")
        for v in versions:
            self._execute(sql, [
                v.memory_artifact_id, v.entry_id, v.entry_version_id, v.version,
                v.previous_version_id, v.kind, v.text,
                canonical.source_refs_bytes(v.sources).decode("utf-8"),
                canonical.artifact_refs_bytes(v.artifacts).decode("utf-8"),
                v.entry_content_hash, v.created_in_revision])

    # ------------------------------------------------------------------ projections

    def _delete_projections_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> None:
        pids = [r[0] for r in self._select_in("head_projection_ids", entry_ids, [artifact_id])]
        if not pids:
            return
        fts_delete = frag.statement("fts_delete")
        for pid in pids:
            self._execute(fts_delete, [pid])
        if self._vec_tables:
            # No cascade reaches a virtual table: vec0 rows go explicitly.
            vec_delete = frag.statement("vector_delete")
            for pid in pids:
                self._execute(vec_delete, [pid])
            self._select_in("vector_metadata_delete", pids)
        self._select_in("head_rows_delete", pids)

    def _insert_projections_sync(
        self,
        artifact_id: str,
        head_revision: int,
        rows: Sequence[ProjectionRow],
        vectors: Sequence[VectorRow | None],
    ) -> None:
        assert self._conn is not None
        scope = frag.scope_token(artifact_id)
        head_insert = self._t("head_row_insert")
        fts_insert = frag.statement("fts_insert")
        fts_delete = frag.statement("fts_delete")
        for row, vec in zip(rows, vectors, strict=True):
            self._execute(head_insert, [artifact_id, head_revision, row.entry_id,
                                        row.entry_version_id, row.entry_content_hash,
                                        row.searchable_text])
            pid = self._conn.last_insert_rowid()
            # A stray FTS row under this rowid (projections are rebuildable, so one may be
            # left by damage) must not block authoritative writes: replace it.
            self._execute(fts_delete, [pid])
            self._execute(fts_insert, [pid, frag.fts_document(scope, row.searchable_text)])
            if vec is None:
                continue
            if not self._vec_tables or self._profile is None:
                raise BackendError("a vector was given but the database has no vec0 table")
            if len(vec.vector) != self._profile.dimension:
                raise BackendError(f"vector has {len(vec.vector)} dimensions, "
                                   f"the profile {self._profile.dimension}")
            self._execute(self._t("vector_metadata_insert"), [
                pid, row.entry_version_id, row.entry_content_hash, vec.embedding_content_hash])
            self._execute(frag.statement("vector_delete"), [pid])  # no INSERT OR REPLACE
            self._execute(frag.statement("vector_insert"), [pid, scope, _pack(vec.vector)])

    # ------------------------------------------------------------------ search

    def _fts_candidates_sync(
        self,
        artifact_ids: Sequence[str],
        terms: Sequence[str],
        limit: int,
        *,
        offset: int = 0,
    ) -> list[Candidate]:
        """One page of the FTS5 matches of any scoped term, ordered by ``bm25`` then
        rowid (the projection id): a total order, so pages at growing offsets are exact.
        Every query term is in the MATCH (issue 9: none is left out for being common)."""
        if not artifact_ids or not terms or limit <= 0:
            return []
        scopes = [frag.scope_token(a) for a in dict.fromkeys(artifact_ids)]
        distinct = list(dict.fromkeys(terms))
        query = frag.fts_match_tokens(
            [tok for s in scopes for tok in frag.scoped_terms(s, distinct)])
        wanted = set(artifact_ids)
        return [Candidate(a, e, v, h, text)
                for _pid, a, e, v, h, text
                in self._execute(frag.statement("fts_search"), [query, limit, offset])
                if a in wanted]

    def _vector_candidates_sync(
        self, artifact_ids: Sequence[str], vector: EmbeddingVector, limit: int
    ) -> list[Candidate]:
        if not self._vec_tables:
            return super()._vector_candidates_sync(artifact_ids, vector, limit)
        if limit <= 0:
            return []
        k = min(limit, frag.MAX_KNN_K)
        blob = _pack(vector)
        found: list[tuple[float, int, Candidate]] = []
        # One KNN per Memory (k applies per partition value anyway), merged by distance.
        for a in dict.fromkeys(artifact_ids):
            for pid, aid, e, v, h, text, dist in self._execute(
                    frag.statement("vector_search"), [blob, k, frag.scope_token(a)]):
                if aid == a:
                    found.append((float(dist), pid, Candidate(aid, e, v, h, text, float(dist))))
        found.sort(key=lambda t: (t[0], t[1]))
        return [c for _, _, c in found[:limit]]

    def _vector_projection_sync(self, artifact_id: str) -> list[tuple[str, str | None]]:
        if not self._vec_tables:
            return super()._vector_projection_sync(artifact_id)
        return [(h, emb) for h, emb in
                self._execute(frag.statement("vector_projection"), [artifact_id])]

    def _head_vectors_sync(self, artifact_id: str) -> dict[str, VectorRow]:
        if not self._vec_tables:
            return {}
        out = {}
        for v, emb, blob in self._execute(frag.statement("head_vectors"), [artifact_id]):
            if isinstance(blob, bytes) and len(blob) % 4 == 0:
                out[v] = VectorRow(emb, struct.unpack(f"<{len(blob) // 4}f", blob))
        return out

    # ------------------------------------------------------------------ offline rebuild

    def _all_heads_sync(self) -> list[tuple[str, int]]:
        return [(a, int(r)) for a, r in self._execute(self._t("all_heads"), [MEMORY_FAMILY])]

    def _clear_projection_sync(self, artifact_id: str) -> None:
        scope = frag.scope_token(artifact_id)
        pids = [r[0] for r in self._execute(self._t("memory_projection_ids"), [artifact_id])]
        fts_delete = frag.statement("fts_delete")
        for pid in pids:
            self._execute(fts_delete, [pid])
        if self._vec_tables:
            self._execute(frag.statement("vector_delete_scope"), [scope])
            self._select_in("vector_metadata_delete", pids)
        self._select_in("head_rows_delete", pids)

    def _mark_rebuilt_sync(self) -> None:
        super()._mark_rebuilt_sync()
        # rows left without a head row by damage: invisible to search, but they take space
        self._execute(frag.statement("fts_delete_orphans"))

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
        self._execute(self._t("drop_memory_entry_vector_metadata"))
        self._vec_tables = False
        if profile is not None:
            for name in templates.VECTOR_SCHEMA:
                self._execute(self._t(name))
            self._execute(frag.vector_ddl(profile.dimension))
            self._vec_tables = True

    # ------------------------------------------------------------------ sources

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        positions = {s.source_id: pos for pos, s in
                     self._get_sources_sync([s.source_id for s in sources])}
        insert = self._t("source_insert")
        assert self._conn is not None
        for s in sources:
            if s.source_id in positions:
                continue
            self._execute(insert, [s.source_id, s.kind, s.content, s.content_hash, s.uri,
                                   canonical.canonical_dumps([list(p) for p in s.metadata])
                                   .decode("utf-8")])
            positions[s.source_id] = self._conn.last_insert_rowid()
        return [positions[s.source_id] for s in sources]

    @staticmethod
    def _source(row: tuple[Any, ...]) -> tuple[int, Source]:
        pos, sid, kind, content, h, uri, metadata = row
        pairs = tuple((str(k), str(v)) for k, v in json.loads(metadata))
        return int(pos), Source(sid, kind, content, h, uri, pairs)

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        return [self._source(r) for r in self._select_in("sources_by_id", source_ids)]

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        return [self._source(r) for r in self._execute(self._t("journal"), [after, limit])]

    # ------------------------------------------------------------------ business keys

    def _memory_key_sync(self, key: str) -> str | None:
        rows = self._execute(self._t("memory_key_get"), [key])
        return None if not rows else str(rows[0][0])

    def _memory_keys_sync(self) -> list[tuple[str, str]]:
        return [(str(k), str(a)) for k, a in self._execute(self._t("memory_keys_all"))]

    def _insert_memory_key_sync(self, key: str, artifact_id: str) -> None:
        self._execute(self._t("memory_key_insert"), [key, artifact_id])
