"""An in-memory TopicMemoryBackend: the smallest Topic backend, in plain Python.

The worked example for third-party Topic adapters (Topic Memory RFC, "Storage, Head,
and atomic activation"; TOPIC-MEMORY.md): a :class:`~powercontext.adapters.storage.
StorageBackend` over dicts with its Source store composed (a
:class:`~powercontext.adapters.storage.SourceJournal` over
:class:`~powercontext.testing.memory_sources.InMemorySources`), with the same
write-boundary checks as the SQL backends (``core.topic.publication.verify_publication``,
which re-checks every projection), the same ranking (``core.topic.search``: collapse
by Topic, admission floors, RRF), Analyzer token matching as its "full-text engine"
and brute-force L2 as its "vector engine". It passes :class:`~powercontext.testing.
TopicBackendContract` and declares the kit's ``FaultInjection`` hook. It is not
durable: a :class:`TopicDatabase` lives as long as the Python object.

Usage in a test module::

    from powercontext.testing import InMemoryTopicBackend, TopicBackendContract

    class TestMine(TopicBackendContract):
        @pytest.fixture
        def topic_backend_factory(self):
            return lambda profile: InMemoryTopicBackend(profile=profile)

        @pytest.fixture
        def topic_backend_reopen(self):
            return lambda backend, profile: InMemoryTopicBackend(
                profile=profile, database=backend.database)
"""

from __future__ import annotations

import copy
import datetime
import threading
from collections.abc import Sequence
from typing import Any

from powercontext.adapters.storage import SourceJournal, StorageBackend
from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    AnalyzerMismatchError,
    InvalidInputError,
    PowerContextError,
    RetrievalShapeError,
    RevisionConflictError,
)
from powercontext.core.models import EmbeddingProfile, Source
from powercontext.core.topic import content as topic_content
from powercontext.core.topic.chunks import CHUNK_POLICY_VERSION
from powercontext.core.topic.guards import check_guards
from powercontext.core.topic.models import (
    PublicationGuards,
    RetrievalShape,
    ShapeKind,
    TopicCapabilities,
    TopicPublication,
    TopicRevision,
    TopicWrite,
)
from powercontext.core.topic.projection import profile_fingerprint
from powercontext.core.topic.publication import verify_publication
from powercontext.core.topic.supervision import SupervisorTerm
from powercontext.testing.memory_sources import InMemorySources, SourceFront
from powercontext.testing.topic_backend_budget import (
    GUARD_FAULT_POINTS,
    InMemoryTopicBudget,
)
from powercontext.testing.topic_backend_fronts import InMemoryTopicFronts
from powercontext.testing.topic_backend_reads import InMemoryTopicReads
from powercontext.testing.topic_backend_supervision import InMemoryTopicSupervision

__all__ = ["InMemoryTopicBackend", "TopicDatabase"]

#: The primitives of a publication where ``inject_fault`` can fail it, in the spec's
#: order (the guard steps of a guarded publication: GUARD_FAULT_POINTS).
TOPIC_FAULT_POINTS = (
    "_write_shape_sync",
    "_cas_head_sync",
    "_insert_head_sync",
    "_insert_revision_sync",
    "_insert_lineage_sync",
    "_insert_publication_sync",
    "_delete_active_sync",
    "_insert_active_sync",
    "_commit_sync",
)


def _empty_state() -> dict[str, Any]:
    return {
        "meta": {},
        "shape": None,  # RetrievalShape | None
        "sources": {},  # source_id -> (position, Source)
        "journal": [],
        "heads": {},  # artifact_id -> revision
        "revisions": {},  # (artifact_id, revision) -> dict (the Revision row)
        "lineage_sources": {},  # (artifact_id, revision) -> tuple[SourceRef, ...]
        "lineage_artifacts": {},  # (artifact_id, revision) -> TopicRef | None
        "publications": {},  # (artifact_id, revision) -> (scope_id, published_at)
        "active_topics": {},  # artifact_id -> dict (rowid, ref, scope, title, ...)
        "active_chunks": {},  # artifact_id -> list[dict] (rowid, ordinal, ...)
        "next_rowid": 1,
        "last_published_at": "",
        "budgets": {},  # (scope_id, binding_name, source_after) -> BudgetRow
        "cursors": {},  # (binding_name, scope_id) -> source_position (no key: Cursor 0)
        "pending": {},  # (binding_name, scope_id) -> PendingRow
        "leases": {},  # supervisor_group -> (holder_id, supervisor_generation)
        "binding_states": {},  # binding_name -> last_auto_wave_completed_at (aware UTC)
        "wave_targets": {},  # (wave_id, binding_name, scope_id) -> WaveTarget
        "operator_decisions": [],  # OperatorDecision, oldest first
    }


class TopicDatabase:
    """The state of one in-memory database, shared by every backend opened on it (to
    reopen it with another configuration). ``lock`` serialises write transactions."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = _empty_state()
        self.lock = threading.RLock()


class InMemoryTopicBackend(InMemorySources, SourceFront, InMemoryTopicReads,
                           InMemoryTopicBudget, InMemoryTopicSupervision, InMemoryTopicFronts,
                           StorageBackend[TopicCapabilities]):
    """Dict tables behind :class:`powercontext.ports.topic.TopicMemoryBackend`.

    ``profile``: the deployment's EmbeddingProfile (None: an FTS-only deployment; set:
    the first publication fixes a hybrid shape); ``analyzer``: the Analyzer version a
    new database records (None: the default; an existing one keeps its own);
    ``database``: an existing :class:`TopicDatabase` to open again (None: a new one).
    Opening refuses with RetrievalShapeError what the spec's start-up refuses (Topic
    Memory RFC, "Storage, Head, and atomic activation"; module docstring of
    :mod:`powercontext.core.topic.models`)."""

    FAULT_POINTS = TOPIC_FAULT_POINTS
    GUARD_FAULT_POINTS = GUARD_FAULT_POINTS

    def __init__(self, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | None = None, database: TopicDatabase | None = None) -> None:
        super().__init__()
        #: the Source store (:class:`powercontext.ports.SourceStore`), over these dicts
        self.source_journal = SourceJournal(self)
        self._profile = profile
        self._analyzer_choice = analyzer
        self.database = database if database is not None else TopicDatabase()
        self._analyzer: Analyzer = analyzers.get(analyzer)
        self._saved: dict[str, Any] | None = None
        self._locked = False
        self.fail_at: str | None = None

    # -- fault injection (the kit's FaultInjection hook) ------------------------------

    def fault_points(self) -> tuple[str, ...]:
        """The steps of a publication where :meth:`inject_fault` can fail it."""
        return self.FAULT_POINTS

    def guard_fault_points(self) -> tuple[str, ...]:
        """The guard steps of a guarded publication where :meth:`inject_fault` can fail
        it (beyond :meth:`fault_points`)."""
        return self.GUARD_FAULT_POINTS

    def inject_fault(self, point: str | None) -> None:
        """Fail every publication that reaches step ``point`` (RuntimeError) until
        cleared with None. ValueError for a name not in :data:`FAULT_POINTS` or
        :data:`GUARD_FAULT_POINTS`."""
        known = self.FAULT_POINTS + self.GUARD_FAULT_POINTS
        if point is not None and point not in known:
            raise ValueError(f"unknown fault point {point!r}; one of {known}")
        self.fail_at = point

    def _maybe_fail(self, name: str) -> None:
        if self.fail_at == name:
            raise RuntimeError(f"injected failure at {name}")

    async def put_server_sources(self, scope_id: str, sources: Sequence[Source], *,
                                 lineage_only: bool) -> tuple[int, ...]:
        """Server-only: ``put_scoped_sources`` with the ``lineage_only`` flag of the new
        journal rows (a client cannot set it; the processing pipeline and the kit's
        state machines do)."""
        return await self.source_journal.put_server_sources(scope_id, sources,
                                                            lineage_only=lineage_only)

    # -- StorageBackend primitives ----------------------------------------------------

    @property
    def _state(self) -> dict[str, Any]:
        return self.database.state

    def _open_sync(self) -> TopicCapabilities:
        stored = self._state["meta"].get("topic_analyzer")
        if stored is None:
            self._state["meta"]["topic_analyzer"] = self._analyzer.version
        elif self._analyzer_choice is not None and stored != self._analyzer_choice:
            raise AnalyzerMismatchError(stored, self._analyzer_choice)
        else:
            self._analyzer = analyzers.get(stored)
        return self._report()

    def _check_open_sync(self) -> None:
        state = self._state
        shape: RetrievalShape | None = state["shape"]
        heads = state["heads"]
        if not heads:
            if shape is not None and shape.kind != self._pending_kind():
                state["shape"] = None  # no Heads: the shape row may be replaced
            self._db_caps = self._report()
            return
        if shape is None:
            raise RetrievalShapeError("Topic Heads exist but no retrieval shape is stored")
        if shape.kind == "fts" and self._profile is not None:
            raise RetrievalShapeError(
                "this Topic deployment is FTS-only and has Topic Heads: remove the "
                "embedding profile to open it (no in-place FTS-to-vector conversion)")
        if shape.kind == "hybrid":
            if self._profile is None:
                raise RetrievalShapeError(
                    "this Topic deployment is hybrid: open it with its embedding profile "
                    f"{shape.embedding_profile!r}")
            if profile_fingerprint(self._profile) != shape.profile_fingerprint:
                raise RetrievalShapeError(
                    "this Topic deployment is hybrid with another embedding profile "
                    f"({shape.embedding_profile!r}); open it with that profile")
            for aid in heads:
                row = state["active_topics"].get(aid)
                chunks = state["active_chunks"].get(aid, [])
                if row is None or row["vector"] is None or any(
                        c["vector"] is None for c in chunks):
                    raise RetrievalShapeError(
                        f"hybrid Topic deployment: the Head of {aid!r} lacks vectors")
        self._db_caps = self._report()

    def _close_sync(self) -> None:
        pass

    def _begin_sync(self, write: bool) -> None:
        self.database.lock.acquire()
        self._locked = True
        if write:
            self._saved = copy.deepcopy(self._state)

    def _release(self) -> None:
        if self._locked:
            self._locked = False
            self.database.lock.release()

    def _commit_sync(self) -> None:
        if self._saved is not None:
            self._maybe_fail("_commit_sync")  # on failure the caller rolls back
        self._saved = None
        self._release()

    def _rollback_sync(self) -> None:
        if self._saved is not None:
            self.database.state = self._saved
            self._saved = None
        self._release()

    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        return None

    def _meta_get_sync(self, key: str) -> str | None:
        return self._state["meta"].get(key)

    def _meta_set_sync(self, key: str, value: str | None) -> None:
        if value is None:
            self._state["meta"].pop(key, None)
        else:
            self._state["meta"][key] = value

    # -- Source primitives: InMemorySources ------------------------------------------------

    # -- capabilities ------------------------------------------------------------------

    def _pending_kind(self) -> ShapeKind:
        return "hybrid" if self._profile is not None else "fts"

    def _report(self) -> TopicCapabilities:
        shape: RetrievalShape | None = self._state["shape"]
        pending = self._pending_kind()
        channels = shape.channels if shape is not None else RetrievalShape(
            pending, CHUNK_POLICY_VERSION, self._analyzer.version).channels
        reasons = () if pending == "hybrid" else ("no embedding profile configured",)
        return TopicCapabilities(shape, pending, channels, self._profile, reasons)

    def _kind(self) -> ShapeKind:
        shape: RetrievalShape | None = self._state["shape"]
        return shape.kind if shape is not None else self._pending_kind()

    async def topic_capabilities(self) -> TopicCapabilities:
        """The stored shape (None before the first publication), the kind the first
        publication would fix, the enabled channels and reasons (opens the database)."""
        return await self._run(self._in_tx, False, self._report)

    async def analyzer(self) -> Analyzer:
        """The Analyzer the database's Topic projections are built with."""
        await self._run(lambda: None)
        return self._analyzer

    # -- publish -----------------------------------------------------------------------

    async def publish(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        """Every write of the batch in one transaction, or nothing (see
        :meth:`powercontext.ports.topic.TopicMemoryBackend.publish`)."""
        if not isinstance(publication, TopicPublication):
            raise InvalidInputError("publication", "must be a TopicPublication")
        if not isinstance(publication.guards, PublicationGuards):
            raise InvalidInputError("publication.guards", "must be PublicationGuards")
        if isinstance(publication.writes, tuple):
            check_guards(publication.guards, publication.writes)
        return await self._run(self._in_tx, True, self._publish_sync, publication)

    def _publish_sync(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        kind = self._kind()
        verify_publication(publication, self._analyzer, kind, self._profile)
        if isinstance(publication.guards.supervisor, SupervisorTerm):
            self._fence_sync(publication.guards.supervisor)  # the lease row first
        state = self._state
        for i, w in enumerate(publication.writes):
            self._check_sources(w, i)
        if state["shape"] is None and publication.writes:
            self._write_shape_sync(kind)
        self._check_guards(publication.guards)
        for w in publication.writes:
            if w.op == "update":
                assert w.base is not None
                self._check_base_scope(w)
                self._cas_head_sync(w.base.artifact_id, w.base.revision, w.ref.revision)
            else:
                self._insert_head_sync(w.ref.artifact_id, w.ref.revision)
        for w in publication.writes:
            self._insert_revision_sync(w)
            self._insert_lineage_sync(w)
        published_at = self._clock()
        for w in publication.writes:
            self._insert_publication_sync(w, published_at)
        for w in publication.writes:
            self._delete_active_sync(w.ref.artifact_id)
            self._insert_active_sync(w)
        self._advance_guards(publication.guards)
        return tuple(self._revision(w.ref) for w in publication.writes)

    def _check_sources(self, w: TopicWrite, i: int) -> None:
        for s in w.sources:
            stored = self._state["sources"].get(s.source_id)
            if stored is None:
                raise InvalidInputError(
                    f"writes[{i}].sources", f"Source {s.source_id!r} is not stored")
            if stored[1].content_hash != s.content_hash:
                raise InvalidInputError(
                    f"writes[{i}].sources",
                    f"Source {s.source_id!r} is stored with another content hash")

    def _check_base_scope(self, w: TopicWrite) -> None:
        assert w.base is not None
        pub = self._state["publications"].get((w.base.artifact_id, 1))
        if pub is not None and pub[0] != w.scope_id:
            raise InvalidInputError(
                "base", f"Topic {w.base.artifact_id!r} belongs to another Scope")

    def _database_utc_now_sync(self) -> str:
        return self._clock()

    def _clock(self) -> str:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        last = self._state["last_published_at"]
        self._state["last_published_at"] = max(now, last)
        return str(self._state["last_published_at"])

    def _write_shape_sync(self, kind: ShapeKind) -> None:
        self._maybe_fail("_write_shape_sync")
        profile = self._profile if kind == "hybrid" else None
        self._state["shape"] = RetrievalShape(
            kind, CHUNK_POLICY_VERSION, self._analyzer.version, profile,
            profile_fingerprint(profile) if profile is not None else None)

    def _cas_head_sync(self, artifact_id: str, base: int, revision: int) -> None:
        self._maybe_fail("_cas_head_sync")
        if self._state["heads"].get(artifact_id) != base:
            raise RevisionConflictError(
                f"the head of {artifact_id!r} is no longer revision {base}")
        self._state["heads"][artifact_id] = revision

    def _insert_head_sync(self, artifact_id: str, revision: int) -> None:
        self._maybe_fail("_insert_head_sync")
        if artifact_id in self._state["heads"]:
            raise RevisionConflictError(f"Topic {artifact_id!r} exists")
        self._state["heads"][artifact_id] = revision

    def _insert_revision_sync(self, w: TopicWrite) -> None:
        self._maybe_fail("_insert_revision_sync")
        key = (w.ref.artifact_id, w.ref.revision)
        if key in self._state["revisions"]:
            raise RevisionConflictError(f"Revision {key} exists")
        self._state["revisions"][key] = {
            "content": w.content,
            "content_bytes": topic_content.content_bytes(w.content),
            "content_hash": topic_content.content_hash(w.content),
            "lineage": topic_content.lineage_bytes(canonical.sort_source_refs(w.sources),
                                                   w.base),
        }

    def _insert_lineage_sync(self, w: TopicWrite) -> None:
        self._maybe_fail("_insert_lineage_sync")
        key = (w.ref.artifact_id, w.ref.revision)
        self._state["lineage_sources"][key] = canonical.sort_source_refs(w.sources)
        if w.base is not None and (w.base.artifact_id, w.base.revision) not in \
                self._state["revisions"]:
            raise RuntimeError(f"foreign key: no Revision {w.base!r}")
        self._state["lineage_artifacts"][key] = w.base

    def _insert_publication_sync(self, w: TopicWrite, published_at: str) -> None:
        self._maybe_fail("_insert_publication_sync")
        self._state["publications"][(w.ref.artifact_id, w.ref.revision)] = (
            w.scope_id, published_at)

    def _delete_active_sync(self, artifact_id: str) -> None:
        self._maybe_fail("_delete_active_sync")
        self._state["active_topics"].pop(artifact_id, None)
        self._state["active_chunks"].pop(artifact_id, None)

    def _rowid(self) -> int:
        n = int(self._state["next_rowid"])
        self._state["next_rowid"] = n + 1
        return n

    def _insert_active_sync(self, w: TopicWrite) -> None:
        self._maybe_fail("_insert_active_sync")
        p = w.projection
        self._state["active_topics"][w.ref.artifact_id] = {
            "rowid": self._rowid(),
            "ref": w.ref,
            "scope_id": w.scope_id,
            "title": w.content.title,
            "summary": w.content.summary,
            "fts_text": p.topic_text,
            "source_count": len(set(w.sources)),
            "fingerprint": p.embedding_fingerprint,
            "vector": p.topic_vector,
        }
        self._state["active_chunks"][w.ref.artifact_id] = [
            {
                "rowid": self._rowid(),
                "ref": w.ref,
                "scope_id": w.scope_id,
                "ordinal": c.chunk.ordinal,
                "start": c.chunk.start,
                "end": c.chunk.end,
                "text": c.chunk.text,
                "fts_text": c.fts_text,
                "vector": c.vector,
            }
            for c in p.chunks
        ]

    # -- test helpers --------------------------------------------------------------------

    def table_sizes(self) -> dict[str, int]:
        """Row counts of every table (for all-or-nothing checks)."""
        return {k: len(v) for k, v in self._state.items() if isinstance(v, dict | list)}

