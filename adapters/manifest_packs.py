"""The manifest packs: the head manifest's canonical item bytes kept in a few large
values beside the manifest log, so that the first write of a new process reads a
Memory of N entries as about N / :data:`PACK_ITEMS` blobs instead of N log rows
(docs/storage.md, "How a Revision is stored").

Two tables (``sql/templates.py``), written in the transaction of the Revision they
hold, never authoritative:

* ``memory_manifest_packs``: per Memory, consecutive items of one manifest as
  ``(first entry id, item count, canonical item bytes joined by commas)``, exactly the
  bytes the Revision's content hash covers;
* ``memory_manifest_pack_heads``: the Revision those packs hold.

A commit whose base is the pack head rewrites only the packs that hold a changed item
(a pack that grows past twice :data:`PACK_ITEMS` is cut in two); any other commit (a
Memory's first, one an earlier release wrote, or after a writer that kept no packs)
writes them whole. A reader takes the packs at the pack head, splices the log rows
after it and checks the Revision's content hash over the result, as for any stored
form; a reader that finds packs that do not check falls back to the log.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from powercontext.core import manifest_chunks
from powercontext.core.errors import IntegrityError
from powercontext.core.manifest import ManifestView
from powercontext.core.manifest_chunks import ManifestEntries

if TYPE_CHECKING:
    from powercontext.adapters.manifest_log import LogEngine

__all__ = ["PACK_ITEMS", "ManifestPacks", "PackLayout"]

#: Items per pack when packs are cut (about 21 kB of canonical bytes each); a pack is
#: rewritten by each commit that changes one of its items.
PACK_ITEMS = 128

#: ``(pack head Revision, the packs' first entry ids in order)``
PackLayout = tuple[int, list[str]]


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def _pack(artifact_id: str, row: Sequence[Any]) -> tuple[str, int, bytes]:
    """``(first entry id, item count, bytes)`` of one stored pack row; IntegrityError
    for a row of another shape (bytes stored as text, a count that is no integer), so
    that the read gives way to the log as for any pack that does not check."""
    first, count, joined = row
    if not isinstance(joined, bytes | bytearray | memoryview) or type(count) is not int:
        raise IntegrityError(f"a manifest pack of Memory {artifact_id!r} is malformed "
                             f"(first entry {first!r})")
    return _text(first), count, bytes(joined)


class ManifestPacks:
    """The manifest packs of one database, over an engine's shared templates (the
    :class:`~powercontext.adapters.manifest_log.LogEngine` methods). Every method runs
    in the caller's transaction."""

    def __init__(self, engine: LogEngine) -> None:
        self._engine = engine
        #: artifact id -> the layout of its packs at a pack head (a committed layout
        #: never changes: only the commit of a new Revision writes packs, for it)
        self._layouts: dict[str, PackLayout] = {}

    def head(self, artifact_id: str) -> int | None:
        """The Revision the Memory's packs hold, or None when it has none."""
        rows = self._engine._template_rows("manifest_pack_head_get", [artifact_id])
        return int(rows[0][0]) if rows else None

    def read(self, artifact_id: str) -> ManifestEntries:
        """The packs of the Memory as a manifest sequence (each parsed when first
        used). IntegrityError for a pack that does not begin with its first entry."""
        rows = self._engine._template_rows("manifest_packs_get", [artifact_id])
        return manifest_chunks.from_packs([_pack(artifact_id, row) for row in rows])

    def layout(self, artifact_id: str, revision: int) -> list[str] | None:
        """The packs' first entry ids when the pack head is ``revision``, else None."""
        known = self._layouts.get(artifact_id)
        if known is not None and known[0] == revision:
            return known[1]
        if self.head(artifact_id) != revision:
            return None
        firsts = sorted(_text(r[0]) for r in self._engine._template_rows(
            "manifest_pack_firsts", [artifact_id]))
        self._layouts[artifact_id] = (revision, firsts)
        return firsts

    def committed(self, artifact_id: str, layout: PackLayout) -> None:
        """Keep the layout a committed write left (call after its COMMIT)."""
        self._layouts[artifact_id] = layout

    def write(self, artifact_id: str, base: int | None, revision: int, view: ManifestView,
              changed: Sequence[str]) -> PackLayout:
        """Keep the packs of Revision ``revision`` (manifest ``view``) whose base is
        Revision ``base`` (None: a new Memory) and whose items of ``changed`` entries
        were set; returns the new layout (for :meth:`committed`)."""
        engine = self._engine
        firsts = None if base is None else self.layout(artifact_id, base)
        if firsts is None or not firsts:
            engine._template_rows("manifest_packs_delete", [artifact_id])
            ids, item_bytes = view.entries.between(None, None)
            packs = manifest_chunks.packs_of(ids, item_bytes, PACK_ITEMS)
            firsts = [p[0] for p in packs]
        else:
            firsts = list(firsts)
            touched = sorted({max(0, bisect.bisect_right(firsts, e) - 1) for e in changed})
            packs, gone = [], []
            for s in touched:
                low = firsts[s] if s else None
                high = firsts[s + 1] if s + 1 < len(firsts) else None
                ids, item_bytes = view.entries.between(low, high)
                size = PACK_ITEMS if len(ids) > 2 * PACK_ITEMS else len(ids)
                packs.extend(manifest_chunks.packs_of(ids, item_bytes, size))
                gone.append(firsts[s])
            for first in gone:
                engine._template_rows("manifest_pack_delete", [artifact_id, first])
            firsts = sorted(set(firsts).difference(gone).union(p[0] for p in packs))
        engine._template_many("manifest_pack_insert", [
            (artifact_id, first, count, joined) for first, count, joined in packs])
        engine._template_rows("manifest_pack_head_delete", [artifact_id])
        engine._template_many("manifest_pack_head_insert", [(artifact_id, revision)])
        return revision, firsts
