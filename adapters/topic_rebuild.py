"""The analyzer migration of the Topic projections (Memory RFC, "Normalization, hashing,
and the search analyzer": "Changing analyzer rules requires a migration that completely
rebuilds searchable_text and the full-text index"; Topic Memory RFC, "Storage, Head, and
atomic activation"): :class:`TopicRebuild`.

``powercontext memory rebuild --analyzer NAME`` first migrates the Memory projections,
which records the new ``analyzer_version``, then this rewrites every active Topic's
full-text fields from its stored Revision under that analyzer and records it in the
retrieval shape. Until the shape records it, Topic Memory refuses to open
(RetrievalShapeError naming the command), so a crash half way is finished by running
the command again. Vectors, Revisions and Heads are not touched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from powercontext.adapters.topic_deployment import TopicDeployment
from powercontext.adapters.topic_host import TopicHost
from powercontext.adapters.topic_reads import TopicReads
from powercontext.adapters.topic_rows import TopicRows
from powercontext.core.errors import IntegrityError
from powercontext.core.topic.models import TopicRebuildReport, TopicRef
from powercontext.core.topic.projection import build_projection
from powercontext.ports.engine import TopicSearchProjection

__all__ = ["TopicRebuild"]

T = TypeVar("T")


class TopicRebuild:
    """``allow_analyzer_migration`` and ``rebuild_fts`` of a Topic backend, over the
    host's transactions, the Topic rows, the engine's search projection, the
    deployment (its analyzer and migration flag) and the checked reads of
    :class:`~powercontext.adapters.topic_reads.TopicReads`."""

    def __init__(self, host: TopicHost, rows: TopicRows, projection: TopicSearchProjection,
                 deployment: TopicDeployment, reads: TopicReads) -> None:
        self._host = host
        self._rows = rows
        self._projection = projection
        self._deployment = deployment
        self._reads = reads

    async def _tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        return await self._host._run(self._host._in_tx, write, fn, *args)

    def allow_analyzer_migration(self) -> None:
        """Let the next open accept Topic projections built by another analyzer than the
        database records (search stays refused until :meth:`rebuild_fts` has run). Only
        for ``memory rebuild``."""
        self._deployment.analyzer_migration = True

    async def rebuild_fts(
        self, progress: Callable[[int, int, str], None] | None = None,
    ) -> TopicRebuildReport:
        """Rebuild the full-text fields of every active Topic and chunk row from its
        stored Revision (content, hash and lineage checked as ``get`` checks them) under
        the database's recorded analyzer, one transaction per Topic, then record that
        analyzer in the retrieval shape; nothing to do (an empty report) when the shape
        records it already or there is no shape. A Topic whose Revision fails its checks is
        reported in ``corrupt`` and left as it was. ``progress(done, total,
        artifact_id)`` after each Topic. Opens the database (AnalyzerMismatchError while
        the Memory migration is unfinished)."""
        await self._host._run(lambda: None)
        analyzer = self._deployment.db_analyzer
        report = TopicRebuildReport(analyzer=analyzer.version)
        shape = await self._tx(False, self._rows.shape)
        if shape is None or shape.analyzer_version == analyzer.version:
            self._deployment.analyzer_migration = False
            return report  # nothing was built by another analyzer
        active = await self._tx(False,
                                     self._projection.active_refs)
        for done, (ref, scope_id) in enumerate(active, start=1):
            try:
                report.chunks += await self._tx(True, self._refts_sync,
                                                 scope_id, ref)
                report.topics += 1
            except IntegrityError as exc:
                report.corrupt.append((ref.artifact_id, ref.revision, str(exc)))
            if progress is not None:
                progress(done, len(active), ref.artifact_id)
        await self._tx(True, self._record_shape_analyzer_sync)
        self._deployment.analyzer_migration = False
        return report

    def _refts_sync(self, scope_id: str, ref: TopicRef) -> int:
        content = self._reads.get_sync(scope_id, ref).content
        projection = build_projection(content, self._deployment.db_analyzer)
        self._projection.set_fts_texts(ref, projection.topic_text,
                                 [(c.chunk.ordinal, c.fts_text) for c in projection.chunks])
        return len(projection.chunks)

    def _record_shape_analyzer_sync(self) -> None:
        shape = self._rows.shape()
        version = self._deployment.db_analyzer.version
        if shape is not None and shape.analyzer_version != version:
            shape = attrs.evolve(shape, analyzer_version=version)
            self._rows.set_shape(shape)
        host = self._host
        if host._db_caps is not None:
            host._db_caps = attrs.evolve(host._db_caps, shape=shape)
