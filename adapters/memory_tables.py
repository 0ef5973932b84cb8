"""MemoryTables: the Memory family's authoritative rows and what is kept beside them,
handed as one collaborator to the Memory store, search, unit of work and upkeep
(Memory RFC, "Storage model"): the rows
(:class:`~powercontext.adapters.memory_sql_rows.SQLMemoryRows` or a backend's own
object with the same methods), the Revision cache
(:mod:`powercontext.adapters.revision_cache`: parsed Revisions, which never go stale),
the manifest log (:mod:`powercontext.adapters.manifest_log`) and the per-Memory count
of head rows without a vector (:mod:`powercontext.adapters.vector_gaps`).
"""

from __future__ import annotations

import functools

from powercontext.adapters import manifest_log
from powercontext.adapters.manifest_log import ManifestLog
from powercontext.adapters.revision_cache import LogDecoder, ParsedRevision, RevisionCache
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.ports.engine import MemoryRows

__all__ = ["MemoryTables"]


class MemoryTables:
    """``rows``: the Memory rows (heads, Revisions, entry versions, keys); ``log``: the
    manifest log (None: Revision rows hold their manifests, as deltas and
    checkpoints); ``gaps``: the vector-gap counts (None: completeness is counted over
    every head row); ``revisions``: the Revision cache every read shares."""

    def __init__(self, rows: MemoryRows, log: ManifestLog | None = None,
                 gaps: VectorGaps | None = None) -> None:
        self.rows = rows
        self.log = log
        self.gaps = gaps
        self.revisions = RevisionCache()

    def cached(self, artifact_id: str, revision: int) -> ParsedRevision | None:
        """The parsed Revision when the cache holds it (no read)."""
        return self.revisions.get((artifact_id, revision))

    def put(self, artifact_id: str, revision: int, parsed: ParsedRevision) -> None:
        """Cache a Revision validated by its writer."""
        self.revisions.put((artifact_id, revision), parsed)

    def log_decoder(self) -> LogDecoder | None:
        """How the Revision cache reads a Revision from the manifest log (None: no log)."""
        log = self.log
        return None if log is None else functools.partial(
            manifest_log.read, log, self.rows.revision_rows)

    def parsed(self, artifact_id: str, revision: int) -> ParsedRevision:
        """The validated Revision from the Revision cache (read and decoded on a miss:
        from the manifest log when it holds the Revision). Runs in the caller's
        transaction."""
        return self.revisions.parsed(artifact_id, revision, self.rows.revision_rows,
                                     self.log_decoder())
