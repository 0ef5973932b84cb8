"""The Revision cache of a Memory backend: parsed, validated Revisions keyed by
(artifact id, revision), beside :mod:`powercontext.adapters.revision_codec` whose rows
it decodes (ARCHITECTURE.md, "Performance by design": Revisions are immutable, so a
parsed manifest never goes stale).

A backend owns one :class:`RevisionCache`. It holds at most :data:`MAX_REVISIONS`
Revisions, :data:`MAX_ITEMS` manifest items and :data:`MAX_BYTES` bytes in all (least
recently used first out; the last one put always stays). The Revisions of one Memory
spliced from one another share the chunks of their manifests
(:mod:`powercontext.core.manifest_chunks`), so a Memory counts once, by its largest
cached Revision: its items and their canonical bytes (:func:`revision_bytes`; the item
objects cost about as much again).

A Revision in the manifest log (:mod:`powercontext.adapters.manifest_log`) is read from
the log, from the nearest cached Revision below it when there is one. A stored delta is
decoded from the nearest cached Revision or full checkpoint below it, every step's
content hash checked; only the Revision asked for is cached (caching a whole delta
chain evicted the heads of other Memories searched together).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping

import attrs

from powercontext.adapters import revision_codec
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.core import canonical, manifest_chunks
from powercontext.core.errors import ArtifactNotFoundError, IntegrityError
from powercontext.core.manifest import (
    ManifestView,
    content_bytes_equal,
    content_digest,
    splice,
)
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import (
    ArtifactRef,
    MemoryChange,
    MemoryContent,
    MemoryManifest,
    MemoryManifestEntry,
    MemoryRevision,
)

__all__ = [
    "MAX_BYTES",
    "MAX_CHANGES",
    "MAX_ITEMS",
    "MAX_REVISIONS",
    "MEMORY_FAMILY",
    "ParsedRevision",
    "RevisionCache",
    "revision_bytes",
]

#: The ``family`` column of a Memory Artifact's Revision rows.
MEMORY_FAMILY = "memory"
#: At most this many Revisions are cached.
MAX_REVISIONS = 64
#: The cache also holds at most this many manifest items in all (a parsed item with its
#: bytes costs a few hundred bytes; 100k-entry Memories must not pin gigabytes).
MAX_ITEMS = 400_000
#: ... and at most this many bytes of their own (:func:`revision_bytes`): two Revisions
#: of a 100k-entry Memory (issue 14: four of them were ~140 MB of a 809 MB peak).
MAX_BYTES = 64 * 2**20
#: The changes of Revisions read by :meth:`RevisionCache.changes` are kept apart (a few
#: hundred bytes per change, no manifest): at most this many changes in all.
MAX_CHANGES = 50_000

#: ``(artifact_id, after, upto)`` -> the Revision rows with ``after < revision <= upto``,
#: ascending (the Memory rows' ``revision_rows``).
RowReader = Callable[[str, int, int], list[RevisionRow]]
#: ``(artifact_id, revision, base)`` -> the validated Revision read from the manifest log
#: (:mod:`powercontext.adapters.manifest_log`; from ``base``, an earlier validated
#: Revision of the Memory, when given), or None when that Revision is not in the log.
LogDecoder = Callable[[str, int, "ParsedRevision | None"], "ParsedRevision | None"]


class ParsedRevision:
    """A validated Revision with the memoized view of its manifest."""

    __slots__ = ("revision", "view")

    def __init__(self, revision: MemoryRevision, view: ManifestView) -> None:
        self.revision = revision
        self.view = view

    @property
    def by_entry(self) -> Mapping[str, MemoryManifestEntry]:
        return self.view.as_dict


def revision_bytes(parsed: ParsedRevision) -> int:
    """The canonical bytes of ``parsed``'s manifest items (its chunks' joined bytes)."""
    return parsed.view.entries.byte_length()


def _held(cached: Iterable[tuple[tuple[str, int], ParsedRevision]]) -> tuple[int, int]:
    """(items, bytes) held by these cached Revisions: per Memory, its largest one."""
    per: dict[str, tuple[int, int]] = {}
    for (artifact_id, _), p in cached:
        mine = (len(p.view), revision_bytes(p))
        old = per.get(artifact_id)
        per[artifact_id] = mine if old is None else (max(old[0], mine[0]), max(old[1], mine[1]))
    return sum(i for i, _ in per.values()), sum(b for _, b in per.values())


class RevisionCache:
    """Parsed Memory Revisions, bounded by ``max_revisions``, ``max_items`` (manifest
    items summed over the cached Revisions) and ``max_bytes`` (:func:`revision_bytes`
    summed). Thread-safe."""

    def __init__(self, max_revisions: int = MAX_REVISIONS, max_items: int = MAX_ITEMS,
                 max_bytes: int = MAX_BYTES) -> None:
        self.max_revisions = max_revisions
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._cache: OrderedDict[tuple[str, int], ParsedRevision] = OrderedDict()
        #: the changes of Revisions :meth:`changes` decoded (validated, immutable)
        self._changes: OrderedDict[tuple[str, int], tuple[MemoryChange, ...]] = OrderedDict()
        #: the number of changes held in ``_changes`` (kept, not summed per put)
        self._changes_held = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def keys(self) -> list[tuple[str, int]]:
        """The cached ``(artifact_id, revision)`` keys, least recently used first."""
        with self._lock:
            return list(self._cache)

    def items(self) -> int:
        """The manifest items the cached Revisions hold (a Memory by its largest)."""
        with self._lock:
            return _held(self._cache.items())[0]

    def nbytes(self) -> int:
        """:func:`revision_bytes` the cached Revisions hold (a Memory by its largest)."""
        with self._lock:
            return _held(self._cache.items())[1]

    def get(self, key: tuple[str, int]) -> ParsedRevision | None:
        """The cached Revision ``(artifact_id, revision)`` (now the most recent), or None."""
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def put(self, key: tuple[str, int], parsed: ParsedRevision) -> None:
        """Cache ``parsed`` under ``key``, then evict the least recent Revisions while
        over any bound (never the one just put)."""
        with self._lock:
            cache = self._cache
            cache[key] = parsed
            cache.move_to_end(key)
            while len(cache) > 1:
                items, held = _held(cache.items())
                if (len(cache) <= self.max_revisions and items <= self.max_items
                        and held <= self.max_bytes):
                    break
                cache.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._changes.clear()
            self._changes_held = 0

    def below(self, artifact_id: str, revision: int) -> ParsedRevision | None:
        """The cached Revision of the Memory nearest below ``revision``, or None."""
        with self._lock:
            found = [r for a, r in self._cache if a == artifact_id and r < revision]
            return self._cache[(artifact_id, max(found))] if found else None

    def parsed(self, artifact_id: str, revision: int, read_rows: RowReader,
               decode_log: LogDecoder | None = None) -> ParsedRevision:
        """The validated Revision: read from the manifest log through ``decode_log``
        (from the nearest cached Revision below it, when there is one) when the
        Revision is in the log, else decoded from its stored row's delta chain from the
        nearest full row or cached Revision (each step's content hash checked); rows
        come from ``read_rows``. ArtifactNotFoundError when the Revision is not
        stored; IntegrityError when a stored row fails its checks."""
        hit = self.get((artifact_id, revision))
        if hit is not None:
            return hit
        parsed = None
        if decode_log is not None:
            parsed = decode_log(artifact_id, revision, self.below(artifact_id, revision))
        if parsed is None:
            parsed = self._decode(artifact_id, revision, read_rows, memo=True)
        # only the Revision asked for: caching a whole delta chain evicted the heads of
        # other Memories (many Memories searched together thrashed the cache)
        self.put((artifact_id, revision), parsed)
        return parsed

    def changes(self, artifact_id: str, after: int, upto: int, read_rows: RowReader,
                decode_log: LogDecoder | None = None
                ) -> list[tuple[ArtifactRef, tuple[MemoryChange, ...]]]:
        """``(ref, changes)`` of every Revision ``after < r <= upto``, ascending, each
        from a validated Revision (Memory RFC, "changes()"): cached ones as they are, the
        others decoded forward, one delta at a time, from the nearest cached Revision or
        full row (each step's content hash checked, as :meth:`parsed`). None of the
        decoded Revisions is cached and none pins its manifest on a cached one (so a
        walk over old Revisions neither evicts the heads nor holds more than two
        manifests at once); only their changes are kept, in a small cache of their own
        (at most :data:`MAX_CHANGES` changes), so a repeated walk decodes nothing.
        ArtifactNotFoundError / IntegrityError as :meth:`parsed`."""
        out: list[tuple[ArtifactRef, tuple[MemoryChange, ...]]] = []
        prev: ParsedRevision | None = None
        rows: dict[int, RevisionRow] | None = None
        for r in range(after + 1, upto + 1):
            key = (artifact_id, r)
            hit = self.get(key)
            if hit is None:
                with self._lock:
                    known = self._changes.get(key)
                if known is not None:
                    out.append((ArtifactRef(artifact_id, r), known))
                    prev = None
                    continue
                logged = None if decode_log is None else decode_log(
                    artifact_id, r, prev if prev is not None else self.below(artifact_id, r))
                if logged is not None:
                    hit = logged
                elif prev is not None and prev.revision.ref.revision == r - 1:
                    if rows is None:
                        rows = {row.revision: row for row in read_rows(artifact_id, r - 1, upto)}
                    row = rows.get(r)
                    if row is None:
                        raise ArtifactNotFoundError(
                            f"no Revision {r} of Artifact {artifact_id!r}")
                    hit = self.decode_row(row, prev, memo=False)
                else:
                    hit = self._decode(artifact_id, r, read_rows, memo=False)
                self._put_changes(key, hit.revision.content.changes)
            prev = hit
            out.append((hit.revision.ref, hit.revision.content.changes))
        return out

    def known_changes(self, artifact_id: str, after: int, upto: int
                      ) -> list[tuple[ArtifactRef, tuple[MemoryChange, ...]]] | None:
        """``(ref, changes)`` of the Revisions ``after < r <= upto`` when every one is
        cached (or its changes are), else None."""
        out = []
        for r in range(after + 1, upto + 1):
            hit = self.get((artifact_id, r))
            if hit is not None:
                out.append((hit.revision.ref, hit.revision.content.changes))
                continue
            with self._lock:
                known = self._changes.get((artifact_id, r))
            if known is None:
                return None
            out.append((ArtifactRef(artifact_id, r), known))
        return out

    def remember_changes(self, walked: list[tuple[ArtifactRef, tuple[MemoryChange, ...]]]
                         ) -> None:
        """Keep the changes of validated Revisions (see :meth:`changes`)."""
        for ref, changes in walked:
            self._put_changes((ref.artifact_id, ref.revision), changes)

    def _put_changes(self, key: tuple[str, int], changes: tuple[MemoryChange, ...]) -> None:
        with self._lock:
            cache = self._changes
            replaced = cache.get(key)
            if replaced is not None:
                self._changes_held -= len(replaced)
            cache[key] = changes
            cache.move_to_end(key)
            self._changes_held += len(changes)
            while len(cache) > 1 and self._changes_held > MAX_CHANGES:
                _, dropped = cache.popitem(last=False)
                self._changes_held -= len(dropped)

    def _decode(self, artifact_id: str, revision: int, read_rows: RowReader, *,
                memo: bool) -> ParsedRevision:
        """Revision ``revision`` decoded from the nearest full row or cached Revision
        below it, not cached (``memo``: see :meth:`decode_row`)."""
        low = max(1, revision - revision % revision_codec.CHECKPOINT_EVERY)
        base: ParsedRevision | None = None
        for r in range(revision - 1, low - 1, -1):
            base = self.get((artifact_id, r))
            if base is not None:
                low = r + 1
                break
        rows = read_rows(artifact_id, low - 1, revision)
        if rows and not revision_codec.is_full(rows[0].encoding) and base is None:
            rows = read_rows(artifact_id, 0, revision)  # no checkpoint: walk all
        if not rows or rows[-1].revision != revision:
            raise ArtifactNotFoundError(f"no Revision {revision} of Artifact {artifact_id!r}")
        start = max(i for i, row in enumerate(rows)
                    if revision_codec.is_full(row.encoding) or i == 0)
        if base is not None and not any(revision_codec.is_full(r.encoding) for r in rows):
            start = 0
        elif revision_codec.is_full(rows[start].encoding):
            base = None
        parsed = base
        for row in rows[start:]:
            parsed = self.decode_row(row, parsed, memo=memo)
        assert parsed is not None
        return parsed

    def decode_row(self, row: RevisionRow, base: ParsedRevision | None, *,
                   memo: bool = True) -> ParsedRevision:
        """One stored row as a validated Revision: a full row parsed, a delta spliced
        onto ``base`` (the Revision just below it; ``memo=False``: without keeping the
        result on ``base``'s view, see :func:`powercontext.core.manifest.splice`)."""
        if revision_codec.is_full(row.encoding):
            return self.parse_row(
                attrs.evolve(row, content=revision_codec.decode_full(row.encoding, row.content),
                             encoding=revision_codec.FULL))
        if row.family != MEMORY_FAMILY:
            raise ArtifactNotFoundError(f"Artifact {row.artifact_id!r} is not a Memory")
        if base is None or base.revision.ref.revision != row.revision - 1:
            raise IntegrityError(
                f"Revision {row.revision} of {row.artifact_id!r} is a delta without its base"
            )
        items, changes = revision_codec.decode_delta(row.content)
        view = splice(base.view, items, memoize=memo)
        content = MemoryContent(view.manifest, changes)
        if content_digest(content, view) != row.content_hash:
            raise IntegrityError(
                f"Revision {row.revision} of {row.artifact_id!r}: stored content does not "
                "match its content hash"
            )
        revision = MemoryRevision(
            ArtifactRef(row.artifact_id, row.revision), content, row.content_hash,
            canonical.parse_lineage(row.lineage),
        )
        return ParsedRevision(revision, view)

    @staticmethod
    def parse_row(row: RevisionRow) -> ParsedRevision:
        """A full ``identity`` row as a validated Revision: family, content hash and
        canonical bytes checked (ArtifactNotFoundError, IntegrityError)."""
        if row.family != MEMORY_FAMILY:
            raise ArtifactNotFoundError(
                f"Artifact {row.artifact_id!r} is a {row.family!r} Artifact, not a Memory"
            )
        if canonical.artifact_content_hash(row.content) != row.content_hash:
            raise IntegrityError(
                f"Revision {row.revision} of {row.artifact_id!r}: stored content does not "
                "match its content hash"
            )
        parsed = canonical.parse_content(row.content)
        content = MemoryContent(
            MemoryManifest(manifest_chunks.build(parsed.manifest.entries),
                           parsed.manifest.format), parsed.changes, parsed.schema)
        view = manifest_view(content.manifest)
        if not content_bytes_equal(content, view, row.content):
            raise IntegrityError(
                f"Revision {row.revision} of {row.artifact_id!r}: content is not canonical"
            )
        revision = MemoryRevision(
            ArtifactRef(row.artifact_id, row.revision),
            content,
            row.content_hash,
            canonical.parse_lineage(row.lineage),
        )
        return ParsedRevision(revision, view)
