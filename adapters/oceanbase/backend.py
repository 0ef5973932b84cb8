"""OceanBaseMemoryBackend: the Memory family on OceanBase MySQL mode (4.3.5 BP3+) or
seekdb, over mysqlclient (Memory RFC, "OceanBase adapter", "Concurrency and
transactions"; ARCHITECTURE.md, "Decisions").

The domain rules live in :class:`~powercontext.adapters.database.DatabaseMemoryBackend`;
this module implements its synchronous primitives: one MySQL connection used by the
backend's single worker thread, the schema (shared templates plus the OceanBase
``memory_entry_heads`` with FULLTEXT ``WITH PARSER SPACE`` and an HNSW L2 vector
index), transactions, the head compare-and-swap and the two search dialects.

Transactions: a write is ``START TRANSACTION`` at READ COMMITTED; the head CAS counts
*matched* rows (the connection sets ``CLIENT.FOUND_ROWS``); a duplicate key is a
RevisionConflictError; lock-wait timeouts and deadlocks are retried a bounded number
of times with backoff and never reported as conflicts; a connection lost during
COMMIT raises CommitOutcomeUnknownError. A read is one REPEATABLE READ (snapshot)
read-only transaction.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from powercontext.adapters.database import (
    MEMORY_FAMILY,
    Candidate,
    DatabaseMemoryBackend,
    RevisionRow,
    VectorRow,
)
from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    BackendError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    IntegrityError,
    InvalidInputError,
    PowerContextError,
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
from powercontext.sql import oceanbase as obsql
from powercontext.sql import templates

__all__ = ["OceanBaseMemoryBackend", "OceanBaseURL", "parse_url"]

T = TypeVar("T")
_DIALECT = "oceanbase"
SCHEMA_VERSION = "1"
_TOKEN_RE = re.compile(r"[a-z0-9_]+")
_VERSION_RE = re.compile(r"OceanBase[^0-9]*(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")
_VECTOR_COL_RE = re.compile(r"`embedding`\s+VECTOR\((\d+)\)", re.IGNORECASE)
#: mysqlclient / server error numbers.
_DUPLICATE_KEY = 1062
_LOCK_WAIT_TIMEOUT = 1205
_DEADLOCK = 1213
_RETRYABLE = frozenset({_LOCK_WAIT_TIMEOUT, _DEADLOCK, 6005})  # 6005: row lock conflict
_CONNECTION_LOST = frozenset({2006, 2013, 2055, 4031})  # 4031: killed by the server
#: COMMIT answered with these leaves the outcome unknown (OB_TRANS_UNKNOWN, timeouts).
_COMMIT_UNKNOWN = frozenset({6225, 6210, 6213, 4012})
_FK_VIOLATION = frozenset({1451, 1452})
#: Bounded retry of lock-wait timeouts and deadlocks (attempts, first backoff seconds).
RETRY_ATTEMPTS = 4
RETRY_BACKOFF = 0.05
#: Server-side lock wait of one statement, microseconds (``ob_trx_lock_timeout``).
LOCK_TIMEOUT_US = 3_000_000
#: Statement limit while the vector projection is migrated (DDL), microseconds.
DDL_TIMEOUT_US = 3_600_000_000


#: Tables the shared templates create (their DDL is skipped when all exist).
_SHARED_TABLES = frozenset({"powercontext_meta", "artifact_revisions", "artifact_heads",
                            "sources", "memory_entry_versions", "memory_keys"})


class _RetryableError(BackendError):
    """A lock-wait timeout or deadlock: the transaction rolled back and may be rerun."""


class OceanBaseURL:
    """The parts of ``oceanbase://user:password@host:port/database``."""

    def __init__(self, user: str, password: str, host: str, port: int, database: str) -> None:
        self.user, self.password, self.host, self.port, self.database = (
            user, password, host, port, database)

    def __repr__(self) -> str:  # never shows the password
        return f"oceanbase://{self.user}@{self.host}:{self.port}/{self.database}"


def parse_url(url: str) -> OceanBaseURL:
    """Parse ``oceanbase://user:password@host:port/database`` (port 2881 by default).
    InvalidInputError for another scheme or a missing host or database name."""
    parts = urlsplit(url)
    if parts.scheme not in ("oceanbase", "seekdb"):
        raise InvalidInputError(
            "url", f"expected oceanbase://user:pass@host:port/db, got {parts.scheme!r}")
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database or "/" in database or "`" in database:
        raise InvalidInputError(
            "url", "needs a host and a database name: oceanbase://user:pass@host:port/db")
    return OceanBaseURL(unquote(parts.username or "root"), unquote(parts.password or ""),
                        parts.hostname, parts.port or 2881, database)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def _errno(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


class OceanBaseMemoryBackend(DatabaseMemoryBackend):
    """Memory on OceanBase MySQL mode or seekdb (Memory RFC, "OceanBase adapter").

    ``url`` is ``oceanbase://user:password@host:port/database`` (the database is created
    when missing); ``profile`` the deployment's fixed embedding profile, whose dimension
    becomes ``VECTOR(dim)`` in the DDL. Startup probes (server version and mode, what
    the SPACE parser keeps, a real vector create/insert/search/drop, the dimension in
    the DDL) decide :meth:`capabilities`; each capability that is off carries a reason
    in ``MemoryCapabilities.reasons``. Errors: CapabilityNotSupportedError when the
    server is not OceanBase >= 4.3.5 BP3 in MySQL mode, BackendError for an unreachable
    server.
    """

    supports_revision_encodings = True

    def __init__(self, url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        super().__init__(profile=profile, analyzer=analyzer)
        self._url = parse_url(url)
        self._conn: Any = None
        self._vector_column: int | None = None  # dimension of memory_entry_heads.embedding
        self._short_tokens = True
        self._probe_facts: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"OceanBaseMemoryBackend({self._url!r})"

    # ------------------------------------------------------------------ connection

    def _connect(self) -> Any:
        import MySQLdb
        from MySQLdb.constants import CLIENT

        u = self._url
        kwargs = dict(host=u.host, port=u.port, user=u.user, passwd=u.password,
                      charset="utf8mb4", autocommit=True, connect_timeout=10,
                      client_flag=CLIENT.FOUND_ROWS)
        try:
            conn = MySQLdb.connect(**kwargs)
        except MySQLdb.OperationalError as exc:
            raise BackendError(f"cannot connect to {u!r}: {exc.args[-1]}") from exc
        try:
            cur = conn.cursor()
            try:
                cur.execute(f"USE `{u.database}`")
            except MySQLdb.OperationalError as exc:
                if _errno(exc) != 1049:  # unknown database: create it (needs the privilege)
                    raise
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{u.database}`")
                cur.execute(f"USE `{u.database}`")
            cur.execute("SET SESSION ob_trx_lock_timeout = %s", (LOCK_TIMEOUT_US,))
            cur.close()
        except MySQLdb.Error as exc:
            conn.close()
            raise BackendError(f"cannot use database {u!r}: {exc.args[-1]}") from exc
        return conn

    def _cursor(self) -> Any:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn.cursor()

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _exec(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement; returns the cursor (rows fetched by the caller). Every
        statement of the adapter goes through here (tests inject faults here)."""
        cur = self._cursor()
        try:
            cur.execute(sql, params)
        except Exception as exc:
            if _errno(exc) in _CONNECTION_LOST:
                self._drop_connection()
            raise
        return cur

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        cur = self._cursor()
        try:
            cur.executemany(sql, rows)
        except Exception as exc:
            if _errno(exc) in _CONNECTION_LOST:
                self._drop_connection()
            raise

    def _all(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return list(self._exec(sql, params).fetchall())

    def _in_chunks(self, name: str, values: list[Any],
                   prefix: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for sql, chunk in templates.render_in(name, _DIALECT, values):
            out.extend(self._all(sql, [*prefix, *chunk]))
        return out

    # ------------------------------------------------------------------ open / probes

    def _open_sync(self) -> MemoryCapabilities:
        try:
            return self._open_checked_sync()
        except PowerContextError:
            raise
        except Exception as exc:
            mapped = self._database_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _open_checked_sync(self) -> MemoryCapabilities:
        reasons: list[str] = []
        self._check_server_sync()
        self._create_schema_sync(reasons)
        fts = self._probe_tokenizer_sync(reasons)
        vector = self._probe_vector_sync(reasons)
        profile = self._effective_profile_sync()
        return MemoryCapabilities(fts, vector, fts and vector, profile, tuple(reasons))

    def _check_server_sync(self) -> None:
        version, comment = self._all("SELECT VERSION(), @@version_comment")[0]
        version, comment = _text(version), _text(comment)
        self._probe_facts["version"] = version
        self._probe_facts["version_comment"] = comment
        m = _VERSION_RE.search(comment) or _VERSION_RE.search(version)
        if m is None:
            raise CapabilityNotSupportedError(
                f"{self._url!r} is not OceanBase (version {version!r}, {comment!r}); the "
                "OceanBase backend needs OceanBase >= 4.3.5 BP3 in MySQL mode or seekdb"
            )
        found = tuple(int(g or 0) for g in m.groups())
        self._probe_facts["ob_version"] = found
        if found < obsql.MIN_VERSION:
            raise CapabilityNotSupportedError(
                f"OceanBase {'.'.join(map(str, found))} is too old: FULLTEXT WITH PARSER "
                "SPACE and HNSW vector indexes need 4.3.5 BP3 (4.3.5.3) or later; upgrade "
                "the cluster or use seekdb"
            )
        try:
            mode = _text(self._all("SELECT @@ob_compatibility_mode")[0][0])
        except Exception as exc:
            if _errno(exc) != 1193:  # unknown variable: seekdb speaks MySQL only
                raise
            mode = "MYSQL"
        self._probe_facts["mode"] = mode
        if mode.upper() != "MYSQL":
            raise CapabilityNotSupportedError(
                f"the tenant of {self._url!r} runs in {mode} mode; create a MySQL-mode tenant"
            )

    def _create_schema_sync(self, reasons: list[str]) -> None:
        existing = self._tables()
        if not existing >= _SHARED_TABLES:
            for name in templates.SCHEMA:
                if name == "create_memory_entry_heads":
                    continue  # OceanBase's own, below
                self._exec_ddl(templates.render(name, _DIALECT))
        stored_profile = self._stored_profile_sync()
        profile = self._profile or stored_profile
        dimension = profile.dimension if profile is not None else None
        if obsql.HEADS_TABLE not in existing:
            try:
                self._exec_ddl(obsql.heads_ddl(dimension, short_tokens=True))
            except Exception as exc:
                if _errno(exc) in _CONNECTION_LOST:
                    raise
                # An older server without PARSER_PROPERTIES: keep the default parser.
                self._exec_ddl(obsql.heads_ddl(dimension, short_tokens=False))
                reasons.append(f"FULLTEXT PARSER_PROPERTIES rejected ({exc}); tokens "
                               "under 3 characters are not indexed on this server")
        ddl = _text(self._all(f"SHOW CREATE TABLE {obsql.HEADS_TABLE}")[0][1])
        self._probe_facts["heads_ddl"] = ddl
        m = _VECTOR_COL_RE.search(ddl)
        self._vector_column = int(m.group(1)) if m else None
        self._short_tokens = "min_token_size=1" in ddl.replace(" ", "").lower()
        # a database of an earlier release records its analyzer under "analyzer" (the
        # ambiguous "analyzer-v1"): keep that, so the open refuses it until a rebuild
        legacy = self._meta_get_sync("analyzer")
        version = legacy if legacy is not None else self._new_database_analyzer().version
        for key, value in (("journal_lock", "0"), ("schema_version", SCHEMA_VERSION),
                           ("analyzer_version", version)):
            self._exec(obsql.meta_seed(), (key, value))

    def _exec_ddl(self, sql: str) -> None:
        try:
            self._exec(sql)
        except Exception as exc:
            if _errno(exc) not in (1050, 1061):  # exists already (a concurrent opener)
                raise

    def _tables(self) -> set[str]:
        return {_text(r[0]).lower() for r in self._all(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")}

    def _stored_profile_sync(self) -> EmbeddingProfile | None:
        raw = self._meta_get_sync("embedding_profile")
        if raw is None:
            return None
        d = json.loads(raw)
        return EmbeddingProfile(d["profile_id"], d["model"], int(d["dimension"]),
                                d["distance"], d["normalization"])

    def _effective_profile_sync(self) -> EmbeddingProfile | None:
        return self._profile or self._stored_profile_sync()

    def _probe_tokenizer_sync(self, reasons: list[str]) -> bool:
        try:
            raw = self._all(obsql.tokenize(), (obsql.TOKENIZE_PROBE_TEXT,))[0][0]
        except Exception as exc:
            if _errno(exc) in _CONNECTION_LOST:
                raise
            reasons.append(f"TOKENIZE is unavailable ({exc}); the SPACE parser was not checked")
            return True
        kept = set(json.loads(_text(raw)))
        words = set(obsql.TOKENIZE_PROBE_TEXT.split())
        dropped = words - kept
        self._probe_facts["space_parser_drops"] = sorted(dropped)
        must_keep = set(obsql.TOKENIZE_MUST_KEEP)
        if not must_keep <= kept:
            reasons.append(
                f"the SPACE parser drops {sorted(must_keep - kept)}, which every analyzer "
                "indexes: full-text search is off on this server")
            return False
        leaks = sorted(w for w in dropped
                       if any(a.analyze(w) == [w] for a in analyzers.ANALYZERS.values()))
        if leaks:
            reasons.append(
                f"the SPACE parser drops the words {leaks} that an analyzer keeps; queries "
                "for them find nothing on OceanBase (add them to analyzer.ENGINE_STOPWORDS)")
        if not self._short_tokens:
            reasons.append("the FULLTEXT index drops tokens under 3 characters (no "
                           "PARSER_PROPERTIES=(min_token_size=1)); rebuild memory_entry_heads")
        return True

    def _probe_vector_sync(self, reasons: list[str]) -> bool:
        profile = self._effective_profile_sync()
        if profile is None:
            return False
        if profile.distance != "l2" or profile.normalization != "unit":
            reasons.append(f"embedding profile {profile.profile_id!r} uses {profile.distance}/"
                           f"{profile.normalization}; the HNSW index is L2 over unit vectors")
            return False
        if self._vector_column is None:
            reasons.append(
                "memory_entry_heads has no embedding column (the database was created "
                "without an embedding profile); rebuild it with `powercontext memory rebuild`")
            return False
        if self._vector_column != profile.dimension:
            reasons.append(
                f"memory_entry_heads.embedding is VECTOR({self._vector_column}) but profile "
                f"{profile.profile_id!r} has {profile.dimension} dimensions; rebuild the "
                "vector projection for the new profile")
            return False
        ddl = self._probe_facts.get("heads_ddl", "").upper().replace(" ", "")
        if "DISTANCE=L2" not in ddl or "TYPE=HNSW" not in ddl:
            reasons.append("the vector index of memory_entry_heads is not an HNSW L2 index")
            return False
        table = f"powercontext_probe_{secrets.token_hex(6)}"
        create, insert, search, drop = obsql.vector_probe_statements(table, profile.dimension)
        near = [0.0] * profile.dimension
        far = [0.0] * profile.dimension
        near[0], far[-1 if profile.dimension > 1 else 0] = 1.0, -1.0
        try:
            self._exec(create)
            try:
                self._exec(insert, (1, obsql.vector_literal(near), 2, obsql.vector_literal(far)))
                lit = obsql.vector_literal(near)
                rows = self._all(search, (lit, lit))
            finally:
                self._exec(drop)
        except Exception as exc:
            if _errno(exc) in _CONNECTION_LOST:
                raise
            reasons.append(
                f"the vector probe failed ({exc}); on OceanBase 4.3.5 raise "
                "ob_vector_memory_limit_percentage (e.g. ALTER SYSTEM SET "
                "ob_vector_memory_limit_percentage = 30)")
            return False
        if not rows or int(rows[0][0]) != 1 or abs(float(rows[0][1])) > 1e-6:
            reasons.append(f"the vector probe returned {rows!r} instead of the nearest row")
            return False
        return True

    @property
    def probe_facts(self) -> dict[str, Any]:
        """What the startup probes saw (version, mode, words the SPACE parser drops, the
        heads DDL); empty before the backend opens."""
        return dict(self._probe_facts)

    def _close_sync(self) -> None:
        self._drop_connection()

    # ------------------------------------------------------------------ transactions

    def _begin_sync(self, write: bool) -> None:
        # The base class calls this outside its try block: map driver errors here.
        try:
            self._begin_statements(write)
        except PowerContextError:
            raise
        except Exception as exc:
            self._rollback_sync()
            mapped = self._database_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _begin_statements(self, write: bool) -> None:
        level = "READ COMMITTED" if write else "REPEATABLE READ"
        try:
            self._exec(f"SET TRANSACTION ISOLATION LEVEL {level}")
        except Exception as exc:
            if _errno(exc) not in _CONNECTION_LOST:
                raise
            # A connection that died while idle: nothing has happened yet, reconnect once.
            self._exec(f"SET TRANSACTION ISOLATION LEVEL {level}")
        self._exec("START TRANSACTION" if write else "START TRANSACTION READ ONLY")

    def _commit_sync(self) -> None:
        try:
            self._exec("COMMIT")
        except Exception as exc:
            code = _errno(exc)
            if code in _CONNECTION_LOST or code in _COMMIT_UNKNOWN:
                self._drop_connection()
                raise CommitOutcomeUnknownError(
                    f"the connection failed during COMMIT ({exc}); the Revision may or may "
                    "not exist: reread the head before deciding to retry") from exc
            raise

    def _rollback_sync(self) -> None:
        if self._conn is None:
            return
        try:
            self._conn.cursor().execute("ROLLBACK")
        except Exception:
            self._drop_connection()  # the server rolls back a closed session

    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        code = _errno(exc)
        if code is None:
            return None
        message = str(exc.args[-1]) if exc.args else str(exc)
        if code == _DUPLICATE_KEY:
            return RevisionConflictError(
                f"a concurrent writer stored the same key first ({message}); reread the head")
        if code in _RETRYABLE:
            return _RetryableError(f"lock contention ({code}: {message})")
        if code in _FK_VIOLATION:
            return IntegrityError(f"a foreign key rejected the write ({message})")
        if code in _CONNECTION_LOST:
            return BackendError(f"the connection to {self._url!r} was lost before COMMIT "
                                f"({message}); the transaction was rolled back")
        module = type(exc).__module__
        if module.startswith(("MySQLdb", "_mysql")):
            return BackendError(f"OceanBase error {code}: {message}")
        return None

    def _retrying(self, fn: Callable[..., T], *args: Any) -> T:
        delay = RETRY_BACKOFF
        for attempt in range(1, RETRY_ATTEMPTS + 1):
            try:
                return fn(*args)
            except _RetryableError as exc:
                if attempt == RETRY_ATTEMPTS:
                    raise BackendError(f"{exc} persisted after {attempt} attempts") from exc
                time.sleep(delay * (0.5 + secrets.randbelow(1000) / 1000))
                delay *= 2
        raise AssertionError("unreachable")

    def _commit_plan_sync(self, plan: Any, vectors: Any, key: str | None = None) -> Any:
        return self._retrying(super()._commit_plan_sync, plan, vectors, key)

    def _in_tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        return self._retrying(super()._in_tx, write, fn, *args)

    # ------------------------------------------------------------------ metadata

    def _meta_get_sync(self, key: str) -> str | None:
        rows = self._all(templates.render("meta_get", _DIALECT), (key,))
        return None if not rows or rows[0][0] is None else _text(rows[0][0])

    def _meta_set_sync(self, key: str, value: str | None) -> None:
        if value is None:
            self._exec(templates.render("meta_delete", _DIALECT), (key,))
        else:
            self._exec(obsql.meta_upsert(), (key, value))

    # ------------------------------------------------------------------ revisions

    def _head_sync(self, artifact_id: str) -> int | None:
        rows = self._all(templates.render("head_get", _DIALECT), (artifact_id,))
        return int(rows[0][0]) if rows else None

    def _revision_rows_sync(self, artifact_id: str, after: int, upto: int) -> list[RevisionRow]:
        rows = self._all(templates.render("revision_range", _DIALECT), (artifact_id, after, upto))
        out = []
        for aid, rev, family, encoding, content, chash, lineage in rows:
            raw = (bytes(content) if isinstance(content, bytes | bytearray)
                   else _text(content).encode())
            # stored encoding passed through: the SPI's revision codec decodes it
            out.append(RevisionRow(_text(aid), int(rev), _text(family), raw, _text(chash),
                                   _text(lineage).encode(), _text(encoding)))
        return out

    def _insert_revision_sync(self, row: RevisionRow) -> None:
        self._exec(templates.render("revision_insert", _DIALECT),
                   (row.artifact_id, row.revision, row.family, row.encoding, row.content,
                    row.content_hash, row.lineage.decode()))

    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        self._exec(templates.render("head_insert", _DIALECT), (artifact_id, revision))

    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool:
        # CLIENT.FOUND_ROWS makes rowcount the number of *matched* rows.
        cur = self._exec(templates.render("head_cas", _DIALECT),
                         (revision, artifact_id, base_revision))
        return int(cur.rowcount) == 1

    def _set_revision_hash_sync(self, artifact_id: str, revision: int, old_hash: str,
                                new_hash: str) -> bool:
        cur = self._exec(templates.render("revision_hash_update", _DIALECT),
                         (new_hash, artifact_id, revision, old_hash))
        return int(cur.rowcount) == 1

    # ------------------------------------------------------------------ entry versions

    def _entry_versions_sync(self, entry_version_ids: Sequence[str]) -> list[MemoryEntryVersion]:
        ids = list(dict.fromkeys(entry_version_ids))
        if not ids:
            return []
        out = []
        for (aid, eid, vid, version, prev, kind, text, srefs, arefs, chash,
             created) in self._in_chunks("versions_by_id", ids):
            out.append(MemoryEntryVersion(
                _text(aid), _text(eid), _text(vid), int(version),
                None if prev is None else _text(prev), _text(kind), _text(text),
                canonical.parse_source_refs(_text(srefs)),
                canonical.parse_artifact_refs(_text(arefs)), _text(chash), int(created)))
        return out

    def _entry_ids_elsewhere_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> set[str]:
        return {_text(r[0]) for r in self._in_chunks("entry_ids_elsewhere", list(entry_ids),
                                                     [artifact_id])}

    def _insert_entry_versions_sync(self, versions: Sequence[MemoryEntryVersion]) -> None:
        # One row at a time: a version may be the predecessor of a later one.
        sql = templates.render("version_insert", _DIALECT)
        for v in versions:
            self._exec(sql, (
                v.memory_artifact_id, v.entry_id, v.entry_version_id, v.version,
                v.previous_version_id, v.kind, v.text,
                canonical.source_refs_bytes(v.sources).decode(),
                canonical.artifact_refs_bytes(v.artifacts).decode(),
                v.entry_content_hash, v.created_in_revision))

    # ------------------------------------------------------------------ projections

    def _delete_projections_sync(self, artifact_id: str, entry_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(entry_ids))
        size = templates.IN_BUCKETS[-1]
        for start in range(0, len(ids), size):
            chunk = ids[start:start + size]
            self._exec(obsql.heads_delete(len(chunk)), (artifact_id, *chunk))

    def _insert_projections_sync(
        self,
        artifact_id: str,
        head_revision: int,
        rows: Sequence[ProjectionRow],
        vectors: Sequence[VectorRow | None],
    ) -> None:
        with_vector = self._vector_column is not None
        params = []
        for row, vec in zip(rows, vectors, strict=True):
            p: list[Any] = [artifact_id, head_revision, row.entry_id, row.entry_version_id,
                            row.entry_content_hash, row.searchable_text]
            if with_vector:
                if vec is None:
                    p += [None, None]
                else:
                    if len(vec.vector) != self._vector_column:
                        raise InvalidInputError(
                            "vector", f"has {len(vec.vector)} dimensions; the column has "
                            f"{self._vector_column}")
                    p += [vec.embedding_content_hash, obsql.vector_literal(vec.vector)]
            elif vec is not None:
                raise CapabilityNotSupportedError("this database has no vector column")
            params.append(p)
        self._exec_many(obsql.heads_insert(with_vector), params)

    # ------------------------------------------------------------------ search

    @staticmethod
    def _candidates(rows: list[tuple[Any, ...]], with_distance: bool) -> list[Candidate]:
        return [Candidate(_text(r[0]), _text(r[1]), _text(r[2]), _text(r[3]), _text(r[4]),
                          float(r[5]) if with_distance else None) for r in rows]

    def _fts_candidates_sync(
        self, artifact_ids: Sequence[str], terms: Sequence[str], limit: int, *,
        offset: int = 0,
    ) -> list[Candidate]:
        """One page of ``MATCH ... AGAINST`` over every term, ordered by relevance, then
        Memory and entry id (a total order). Every term reaches MATCH: a term the SPACE
        parser could not have indexed (longer than 84 characters; Analyzer v1 never
        makes one) is refused, not silently dropped (the caller's admission check
        filters the pages)."""
        ids = list(dict.fromkeys(artifact_ids))
        for t in terms:
            if not isinstance(t, str) or not _TOKEN_RE.fullmatch(t):
                raise InvalidInputError("terms", "only Analyzer v1 tokens ([a-z0-9_]) reach MATCH")
            if len(t) > obsql.MAX_TOKEN_CHARS:
                raise InvalidInputError(
                    "terms", f"a term longer than {obsql.MAX_TOKEN_CHARS} characters is "
                    "never indexed by the SPACE parser")
        tokens = list(dict.fromkeys(terms))
        if not ids or not tokens or limit < 1:
            return []
        query = " ".join(tokens)
        size = templates.IN_BUCKETS[-1]
        if len(ids) <= size:
            return self._candidates(self._all(obsql.fts_search(len(ids)),
                                              (query, *ids, query, limit, offset)), False)
        # More Memories than one IN list: the first offset + limit rows of every chunk,
        # merged in the same total order, hold the page.
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(ids), size):
            chunk = ids[start:start + size]
            rows.extend(self._all(obsql.fts_search(len(chunk)),
                                  (query, *chunk, query, offset + limit, 0)))
        rows.sort(key=lambda r: (-float(r[5]), _text(r[0]), _text(r[1])))
        return self._candidates(rows[offset:offset + limit], False)

    def _vector_candidates_sync(
        self, artifact_ids: Sequence[str], vector: EmbeddingVector, limit: int
    ) -> list[Candidate]:
        """``ORDER BY l2_distance(embedding, q) APPROXIMATE LIMIT k`` with ``WHERE
        memory_artifact_id IN (...)``. seekdb 1.4 plans this as ``VECTOR INDEX ADAPTIVE
        SCAN (PRE-FILTER)`` through the Memory key, so the filter holds inside the ANN
        scan (verified: 160 filtered queries at 5% selectivity returned exactly the exact
        top-32). Should a server answer short anyway (a post-filtering plan), the scan
        is rerun exactly whenever the Memories hold more vectors than it returned:
        never over-fetch-then-filter."""
        if self._vector_column is None:
            raise CapabilityNotSupportedError("this database has no vector column")
        ids = list(dict.fromkeys(artifact_ids))
        if not ids or limit < 1:
            return []
        lit = obsql.vector_literal(vector)
        rows: list[tuple[Any, ...]] = []
        size = templates.IN_BUCKETS[-1]
        for start in range(0, len(ids), size):
            chunk = ids[start:start + size]
            got = self._all(obsql.vector_search(len(chunk), True), (lit, *chunk, lit, limit))
            if len(got) < limit:
                # The ANN scan answered short: if the Memories hold more vectors than it
                # returned, the index missed rows, so rerun the scan exactly (never
                # over-fetch and filter afterwards).
                have = int(self._all(obsql.vector_count(len(chunk)), chunk)[0][0])
                if have > len(got):
                    got = self._all(obsql.vector_search(len(chunk), False),
                                    (lit, *chunk, lit, limit))
            rows.extend(r for r in got if r[5] is not None)
        rows.sort(key=lambda r: (float(r[5]), _text(r[0]), _text(r[1])))
        return self._candidates(rows[:limit], True)

    def _vector_projection_sync(self, artifact_id: str) -> list[tuple[str, str | None]]:
        if self._vector_column is None:
            raise CapabilityNotSupportedError("this database has no vector column")
        return [(_text(h), None if e is None else _text(e))
                for h, e in self._all(obsql.vector_projection(), (artifact_id,))]

    def _head_vectors_sync(self, artifact_id: str) -> dict[str, VectorRow]:
        if self._vector_column is None:
            return {}
        out = {}
        for v, emb, vec in self._all(obsql.head_vectors(), (artifact_id,)):
            try:
                values = tuple(float(x) for x in json.loads(_text(vec)))
            except (TypeError, ValueError):
                continue  # unreadable: treated as missing
            out[_text(v)] = VectorRow(_text(emb), values)
        return out

    # ------------------------------------------------------------------ offline rebuild

    def _all_heads_sync(self) -> list[tuple[str, int]]:
        return [(_text(a), int(r)) for a, r in self._all(obsql.all_heads(), (MEMORY_FAMILY,))]

    def _clear_projection_sync(self, artifact_id: str) -> None:
        self._exec(obsql.clear_projection(), (artifact_id,))

    def _reset_vectors_sync(self, profile: EmbeddingProfile | None) -> None:
        """Drop and recreate the embedding column and HNSW index for ``profile`` (DDL:
        OceanBase commits each statement implicitly; writes are paused meanwhile)."""
        dimension = profile.dimension if profile is not None else None
        # Building an HNSW index over many rows outlasts the default 10 s statement limit.
        self._exec("SET SESSION ob_query_timeout = %s", (DDL_TIMEOUT_US,))
        try:
            for sql in obsql.vector_reset_statements(self._vector_column is not None,
                                                     dimension):
                self._exec(sql)
        finally:
            if self._conn is not None:
                self._exec("SET SESSION ob_query_timeout = DEFAULT")
        self._vector_column = dimension
        ddl = _text(self._all(f"SHOW CREATE TABLE {obsql.HEADS_TABLE}")[0][1])
        self._probe_facts["heads_ddl"] = ddl

    # ------------------------------------------------------------------ sources

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        self._all(obsql.journal_lock())  # serializes journal positions until COMMIT
        unique = list(dict.fromkeys(s.source_id for s in sources))
        stored = {s.source_id: pos for pos, s in self._get_sources_sync(unique)}
        position = int(self._all(obsql.journal_max())[0][0])
        by_id = {s.source_id: s for s in sources}
        for source_id in unique:
            if source_id in stored:
                continue
            s = by_id[source_id]
            position += 1
            self._exec(obsql.source_insert_at(), (
                position, s.source_id, s.kind, s.content, s.content_hash, s.uri,
                canonical.canonical_dumps([list(p) for p in s.metadata]).decode()))
            stored[source_id] = position
        return [stored[s.source_id] for s in sources]

    @staticmethod
    def _source(row: tuple[Any, ...]) -> tuple[int, Source]:
        pos, sid, kind, content, chash, uri, metadata = row
        pairs = tuple((str(k), str(v)) for k, v in json.loads(_text(metadata)))
        return int(pos), Source(_text(sid), _text(kind), _text(content), _text(chash),
                                None if uri is None else _text(uri), pairs)

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        ids = list(dict.fromkeys(source_ids))
        if not ids:
            return []
        return [self._source(r) for r in self._in_chunks("sources_by_id", ids)]

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        return [self._source(r) for r in
                self._all(templates.render("journal", _DIALECT), (after, limit))]

    # ------------------------------------------------------------------ business keys

    def _memory_key_sync(self, key: str) -> str | None:
        rows = self._all(templates.render("memory_key_get", _DIALECT), (key,))
        return _text(rows[0][0]) if rows else None

    def _memory_keys_sync(self) -> list[tuple[str, str]]:
        return [(_text(k), _text(a))
                for k, a in self._all(templates.render("memory_keys_all", _DIALECT))]

    def _insert_memory_key_sync(self, key: str, artifact_id: str) -> None:
        self._exec(templates.render("memory_key_insert", _DIALECT), (key, artifact_id))

