"""Fast manifest operations: a view of a manifest (its items in shared chunks with their
canonical bytes, lookups by entry_id, the active content hashes), splicing a few changed
items into a large manifest, and the Artifact content hash computed over the chunks.

A flat-v1 manifest is rewritten on every Revision (Memory RFC, "Drawbacks"), so a write
to a Memory of N entries must not re-serialize, re-sort or copy N items. The items live
in :class:`~powercontext.core.manifest_chunks.ManifestEntries` (chunks shared between a
manifest and the ones spliced from it), and everything derived from them here is
derived in time proportional to the change: the new view's chunks, its active content
hashes (:class:`ActiveHashes`, buckets shared likewise), and the content hash, one
SHA-256 pass over the chunks' bytes (:func:`content_digest`) without joining them. The
bytes are exactly those of :func:`powercontext.core.canonical.manifest_entry_bytes`; the
result of :func:`splice` is exactly the sorted manifest a full rebuild would give (a
property test holds both).

Revisions are immutable, so a view computed once per manifest object never goes stale.
The manifest value holds a weak reference to its view (:attr:`MemoryManifest.memo`):
the view lives as long as whoever uses it (the backend's Revision cache, a plan), with
no process-global table.

A commit splices the same changes into the same base twice: the planner builds the new
manifest, then the unit of work re-derives it from the stored base to verify the plan.
:func:`splice` therefore keeps, on the base view, the one view it last made with the
items it was made of; a second call with equal items takes it (once) instead of
splicing again. The answer is the same value, computed once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import weakref
from collections.abc import Iterator, Mapping

from powercontext.core import manifest_chunks
from powercontext.core.canonical import content_frame
from powercontext.core.manifest_chunks import ManifestEntries
from powercontext.core.models import MemoryContent, MemoryManifest, MemoryManifestEntry

__all__ = [
    "ActiveHashes",
    "ManifestView",
    "content_bytes",
    "content_bytes_equal",
    "content_digest",
    "splice",
    "view",
]

#: Buckets of :class:`ActiveHashes` (a power of two).
_BUCKETS = 1024


class ActiveHashes(Mapping[str, int]):
    """Content hash -> number of active entries holding it, in buckets by the hash's
    ``hash()`` so that a splice copies only the buckets it changes. Immutable."""

    __slots__ = ("_buckets", "_total")

    def __init__(self, buckets: tuple[dict[str, int] | None, ...], total: int) -> None:
        self._buckets = buckets
        self._total = total

    @classmethod
    def of(cls, entries: ManifestEntries) -> ActiveHashes:
        buckets: list[dict[str, int] | None] = [None] * _BUCKETS
        total = 0
        for h, state in entries.hash_states():
            if state == "active":
                b = hash(h) & (_BUCKETS - 1)
                d = buckets[b]
                if d is None:
                    d = buckets[b] = {}
                d[h] = d.get(h, 0) + 1
                total += 1
        return cls(tuple(buckets), total)

    def __getitem__(self, h: str) -> int:
        d = self._buckets[hash(h) & (_BUCKETS - 1)]
        if d is None:
            raise KeyError(h)
        return d[h]

    def __contains__(self, h: object) -> bool:
        d = self._buckets[hash(h) & (_BUCKETS - 1)]
        return d is not None and h in d

    def __iter__(self) -> Iterator[str]:
        for d in self._buckets:
            if d:
                yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._buckets if d)

    @property
    def total(self) -> int:
        """The number of active entries."""
        return self._total

    def changed(self, base: ManifestView, items: Mapping[str, MemoryManifestEntry]
                ) -> ActiveHashes:
        """These counts after ``items`` replace their entries of ``base`` (whose counts
        these are), copying only the buckets that change."""
        buckets = list(self._buckets)
        copied: set[int] = set()
        total = self._total

        def add(h: str, n: int) -> None:
            b = hash(h) & (_BUCKETS - 1)
            if b not in copied:
                buckets[b] = dict(buckets[b] or {})
                copied.add(b)
            d = buckets[b]
            assert d is not None
            left = d.get(h, 0) + n
            if left:
                d[h] = left
            else:
                d.pop(h, None)

        for item in items.values():
            old = base.get(item.entry_id)
            if old is not None and old.state == "active":
                add(old.entry_content_hash, -1)
                total -= 1
            if item.state == "active":
                add(item.entry_content_hash, 1)
                total += 1
        return ActiveHashes(tuple(b or None for b in buckets), total)


class _ByEntry(Mapping[str, MemoryManifestEntry]):
    """entry_id -> item of a view, answered by binary search (no dict of N items)."""

    __slots__ = ("_entries",)

    def __init__(self, entries: ManifestEntries) -> None:
        self._entries = entries

    def __getitem__(self, entry_id: str) -> MemoryManifestEntry:
        found = self._entries.find(entry_id) if isinstance(entry_id, str) else None
        if found is None:
            raise KeyError(entry_id)
        return found

    def get(self, entry_id: str, default: object = None) -> object:  # type: ignore[override]
        found = self._entries.find(entry_id) if isinstance(entry_id, str) else None
        return default if found is None else found

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, str) and self._entries.find(entry_id) is not None

    def __iter__(self) -> Iterator[str]:
        return (e.entry_id for e in self._entries)

    def __len__(self) -> int:
        return len(self._entries)


class ManifestView:
    """``manifest``'s items in chunks with their canonical bytes, lookups by entry_id
    and the active content hashes. Treat as immutable."""

    def __init__(self, manifest: MemoryManifest, entries: ManifestEntries) -> None:
        self.manifest = manifest
        self.entries = entries

    def get(self, entry_id: str) -> MemoryManifestEntry | None:
        """The item of ``entry_id``, or None."""
        return self.entries.find(entry_id)

    def __len__(self) -> int:
        return len(self.entries)

    @functools.cached_property
    def as_dict(self) -> Mapping[str, MemoryManifestEntry]:
        """entry_id -> item, a read-only mapping answered by lookup (nothing copied)."""
        return _ByEntry(self.entries)

    def pieces(self) -> list[bytes]:
        """The items' canonical bytes in chunks; joined by commas they are the inside of
        the manifest's JSON ``entries`` array."""
        return self.entries.pieces()

    @functools.cached_property
    def joined(self) -> bytes:
        """The items' canonical bytes joined by commas, as one value (copies them all:
        hot paths use :meth:`pieces`)."""
        return b",".join(self.entries.pieces())

    @property
    def item_bytes(self) -> tuple[bytes, ...]:
        """Each item's canonical bytes (copies them all)."""
        return tuple(c.item_bytes(i) for c in self.entries.chunks for i in range(len(c.ids)))

    @functools.cached_property
    def active(self) -> ActiveHashes:
        """The active entries' content hashes with their counts."""
        return ActiveHashes.of(self.entries)

    @property
    def active_counts(self) -> Mapping[str, int]:
        """Content hash -> number of active entries holding it."""
        return self.active

    @property
    def active_hashes(self) -> Mapping[str, int]:
        """Content hashes of the active entries (a mapping; use ``in``). Before
        :attr:`active` is computed, the first few questions of a view and the views
        spliced from it are answered by a search of the canonical bytes (a view read
        from packs is not parsed whole for one write's check); then :attr:`active`."""
        if "active" in self.__dict__:
            return self.active
        return _ActiveProbe(self)

    @property
    def active_total(self) -> int:
        """Number of active entries."""
        return self.active.total


#: How many content hashes the views of one line of splices look up in their bytes
#: before :attr:`ManifestView.active` is computed once and carried on (a new process's
#: one write asks one; a process that writes on pays for the counts once).
PROBES = 4
_PROBED = "_powercontext_probes"
_HASH_KEY = b'{"entry_content_hash":'
_ACTIVE_TAIL = b',"state":"active"}'


class _ActiveProbe(Mapping[str, int]):
    """:attr:`ManifestView.active_hashes` answered from the canonical bytes: an item is
    ``{"entry_content_hash":H,"entry_id":...,"state":S}`` (RFC 8785 sorts the keys;
    ``{"`` and ``,"`` cannot occur inside a JSON string), so ``H`` is active when some
    item that begins with it ends with ``"state":"active"``."""

    __slots__ = ("_view",)

    def __init__(self, view: ManifestView) -> None:
        self._view = view

    def __contains__(self, h: object) -> bool:
        v = self._view
        probes = v.__dict__.get(_PROBED, 0) + 1
        v.__dict__[_PROBED] = probes
        if probes > PROBES or not isinstance(h, str):
            return h in v.active
        try:
            key = json.dumps(h, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            return h in v.active
        lead = len(_HASH_KEY)
        for piece in v.pieces():
            at = piece.find(key)
            while at >= 0:
                if (piece.startswith(_HASH_KEY, at - lead)
                        and piece.startswith(b",", at + len(key))):
                    state = piece.find(b',"state":', at)
                    if piece.startswith(_ACTIVE_TAIL, state):
                        return True
                at = piece.find(key, at + 1)
        return False

    def __getitem__(self, h: str) -> int:
        return self._view.active[h]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view.active)

    def __len__(self) -> int:
        return len(self._view.active)


_VIEW = "powercontext.core.manifest.view"


def _remember(v: ManifestView) -> ManifestView:
    # weakly: a view held by its manifest strongly would make a reference cycle that only
    # the cyclic garbage collector frees (megabytes per large Revision)
    v.manifest.memo[_VIEW] = weakref.ref(v)
    return v


def view(manifest: MemoryManifest) -> ManifestView:
    """The view of ``manifest``: computed once per manifest object while some holder
    keeps it alive (from the chunks when the manifest holds
    :class:`~powercontext.core.manifest_chunks.ManifestEntries`, else by serializing
    its items). InvalidInputError for an item RFC 8785 cannot carry."""
    ref = manifest.memo.get(_VIEW)
    found = ref() if ref is not None else None
    if found is not None:
        return found
    return _remember(ManifestView(manifest, manifest_chunks.build(manifest.entries)))


_SUCCESSOR = "_powercontext_successor"
_ItemsKey = tuple[tuple[str, str, str, str, str], ...]


def _items_key(items: Mapping[str, MemoryManifestEntry]) -> _ItemsKey | None:
    """``items`` as plain strings, order-free (None when an item is not exactly a
    MemoryManifestEntry: such a splice is not memoized)."""
    out = []
    for entry_id, e in items.items():
        if type(e) is not MemoryManifestEntry:
            return None
        out.append((entry_id, e.entry_id, e.entry_version_id, e.entry_content_hash, e.state))
    out.sort()
    return tuple(out)


def splice(base: ManifestView | None, items: Mapping[str, MemoryManifestEntry], *,
           memoize: bool = True) -> ManifestView:
    """The view of ``base`` with ``items`` replacing or inserting entries by entry_id,
    kept sorted by UTF-8 entry_id. ``base=None`` starts from an empty manifest.

    The view last spliced from ``base`` with equal items is returned again, once (the
    module docstring): the planner's and the verifier's splice of one commit cost one.
    ``memoize=False`` neither takes nor keeps that view: a walk over old Revisions (a
    reader of ``changes()``) must not pin its views on a base someone caches."""
    if base is None:
        return _splice(view(MemoryManifest(entries=())), items)
    if not memoize:
        return _splice(base, items)
    key = _items_key(items)
    memo = base.__dict__.pop(_SUCCESSOR, None)
    if memo is not None and key is not None and memo[0] == key:
        found: ManifestView = memo[1]
        return found
    out = _splice(base, items)
    if key is not None:
        base.__dict__[_SUCCESSOR] = (key, out)
    return out


def _splice(base: ManifestView, items: Mapping[str, MemoryManifestEntry]) -> ManifestView:
    entries, _ = manifest_chunks.spliced(base.entries, items)
    out = ManifestView(MemoryManifest(entries=entries, format=base.manifest.format), entries)
    if "active" in base.__dict__:  # carried over in time proportional to the change
        out.__dict__["active"] = base.active.changed(base, items)
    elif _PROBED in base.__dict__:
        out.__dict__[_PROBED] = base.__dict__[_PROBED]
    return _remember(out)


def content_digest(content: MemoryContent, manifest: ManifestView | None = None) -> str:
    """The Artifact content hash of ``content`` (Memory RFC: SHA-256 of the complete
    canonical MemoryContent, no prefix; :func:`powercontext.core.canonical.
    artifact_content_hash` of :func:`content_bytes`), in one pass over the frame and
    the chunks' bytes, never joined. ``manifest``: the view of ``content.manifest``
    (default: :func:`view` of it)."""
    pieces = (manifest or view(content.manifest)).pieces()
    head, tail = content_frame(content)
    digest = hashlib.sha256(head)
    for i, piece in enumerate(pieces):
        if i:
            digest.update(b",")
        digest.update(piece)
    digest.update(tail)
    return digest.hexdigest()


def content_bytes(content: MemoryContent, manifest: ManifestView | None = None) -> bytes:
    """The canonical MemoryContent bytes (:func:`powercontext.core.canonical.
    content_bytes`), joined from the chunks of ``manifest`` (default: the view of
    ``content.manifest``)."""
    head, tail = content_frame(content)
    return b"".join((head, b",".join((manifest or view(content.manifest)).pieces()), tail))


def content_bytes_equal(content: MemoryContent, manifest: ManifestView,
                        candidate: bytes) -> bool:
    """Whether ``candidate`` is exactly :func:`content_bytes` ``(content, manifest)``,
    compared in place (no copy of the megabytes of a large manifest)."""
    if not isinstance(candidate, bytes):
        candidate = bytes(candidate)
    head, tail = content_frame(content)
    pieces = manifest.pieces()
    size = len(head) + sum(len(p) for p in pieces) + max(0, len(pieces) - 1) + len(tail)
    if len(candidate) != size or not candidate.startswith(head) or not candidate.endswith(tail):
        return False
    pos = len(head)
    for i, piece in enumerate(pieces):
        if i:
            if candidate[pos:pos + 1] != b",":
                return False
            pos += 1
        if not candidate.startswith(piece, pos):
            return False
        pos += len(piece)
    return True
