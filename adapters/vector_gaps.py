"""How many head rows of a Memory have no valid vector, kept by every commit, so that
whether its vector projection is complete (Memory RFC, "Search and reads": ``auto``
uses hybrid only when "all selected Memory Artifacts have complete vector
projections"; "Vector integrity and offline rebuilds") is answered by one row read
instead of a pass over every head row in each new process and after each write.

``memory_vector_gaps`` (``sql/templates.py``) holds, per Memory, ``missing``: the head
rows whose vector is absent or does not hold the embedding hash the profile and the
row's entry content hash give, as of one head Revision and one projection generation.
A commit derives the new count from its base's in the same transaction: minus the
missing rows it deletes, plus the rows it writes without a vector. A row of another
head or another generation (an earlier release wrote after it; a rebuild ran) is not
read: the projection is counted whole then (:func:`missing`), as before, and the next
commit writes the count again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from powercontext.adapters.manifest_log import LogEngine
from powercontext.core import canonical
from powercontext.core.models import EmbeddingProfile

__all__ = ["VectorGaps", "missing"]


def missing(rows: Iterable[tuple[str, str | None]], profile: EmbeddingProfile) -> int:
    """How many of these head rows ``(entry_content_hash, embedding_content_hash or
    None)`` have no valid vector for ``profile``."""
    return sum(1 for h, emb in rows
               if emb is None or emb != canonical.embedding_content_hash(profile, h))


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


class VectorGaps:
    """``memory_vector_gaps`` over an engine's shared templates, in the caller's
    transaction."""

    def __init__(self, engine: LogEngine) -> None:
        self._engine = engine

    def read(self, artifact_id: str, head_revision: int, generation: str) -> int | None:
        """The stored count of the Memory as of exactly this head and generation, or
        None (no row, or one of another head or generation)."""
        rows = self._engine._template_rows("vector_gaps_get", [artifact_id])
        if not rows:
            return None
        revision, stored_generation, count = rows[0]
        if int(revision) != head_revision or _text(stored_generation) != generation:
            return None
        return int(count)

    def write(self, artifact_id: str, head_revision: int, generation: str,
              count: int) -> None:
        """Store the count of the Memory as of this head and generation."""
        self._engine._template_rows("vector_gaps_delete", [artifact_id])
        self._engine._template_many("vector_gaps_insert",
                                    [(artifact_id, head_revision, generation, count)])


def changed_entries(ops: Sequence[tuple[str, str]]) -> list[str]:
    """The entries of ``(op, entry_id)`` changes whose head row exists before the commit
    (a revised or deactivated entry; an added or reactivated one has none)."""
    return [entry_id for op, entry_id in ops if op in ("revise", "deactivate")]
