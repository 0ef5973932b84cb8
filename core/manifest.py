"""Fast manifest operations: an index and the canonical bytes of every item, memoized per
manifest object, and splicing a few changed items into a large manifest.

A flat-v1 manifest is rewritten on every Revision (Memory RFC, "Drawbacks"), so a write
to a Memory of 10k entries must not re-serialize or re-sort 10k items. Revisions are
immutable, so a view computed once per manifest object never goes stale. The manifest
value holds a weak reference to its view (:attr:`MemoryManifest.memo`): the view lives as
long as whoever uses it (the backend's Revision cache, a plan), with no process-global
table. The bytes are
exactly those of :func:`powercontext.core.canonical.manifest_entry_bytes`; the result
of :func:`splice` is exactly the sorted manifest a full rebuild would give (a property
test holds both).

A commit splices the same changes into the same base twice: the planner builds the new
manifest, then the unit of work re-derives it from the stored base to verify the plan.
:func:`splice` therefore keeps, on the base view, the one view it last made with the
items it was made of; a second call with equal items takes it (once) instead of copying
the manifest again. The answer is the same value, computed once.
"""

from __future__ import annotations

import bisect
import functools
import weakref
from collections.abc import Mapping

from powercontext.core.canonical import manifest_entry_bytes as _item_bytes
from powercontext.core.models import MemoryManifest, MemoryManifestEntry

__all__ = ["ManifestView", "splice", "view"]


class ManifestView:
    """``manifest``'s items with their canonical bytes, UTF-8 sort keys and positions.
    Treat as immutable."""

    def __init__(
        self,
        manifest: MemoryManifest,
        item_bytes: tuple[bytes, ...],
        keys: tuple[bytes, ...],
        index: Mapping[str, int],
    ) -> None:
        self.manifest = manifest
        self.item_bytes = item_bytes
        self.keys = keys
        self.index = index

    @functools.cached_property
    def joined(self) -> bytes:
        """The items' canonical bytes joined by commas: the inside of the JSON array."""
        return b",".join(self.item_bytes)

    @functools.cached_property
    def offsets(self) -> list[int]:
        """Start offset of each item inside :attr:`joined`."""
        out = [0] * len(self.item_bytes)
        pos = 0
        for i, b in enumerate(self.item_bytes):
            out[i] = pos
            pos += len(b) + 1
        return out

    @functools.cached_property
    def active_counts(self) -> dict[str, int]:
        """Content hash -> number of active entries holding it (do not mutate)."""
        counts: dict[str, int] = {}
        for e in self.manifest.entries:
            if e.state == "active":
                counts[e.entry_content_hash] = counts.get(e.entry_content_hash, 0) + 1
        return counts

    @functools.cached_property
    def active_total(self) -> int:
        """Number of active entries."""
        return sum(1 for e in self.manifest.entries if e.state == "active")

    @property
    def active_hashes(self) -> Mapping[str, int]:
        """Content hashes of the active entries (a mapping; use ``in``)."""
        return self.active_counts

    @functools.cached_property
    def as_dict(self) -> dict[str, MemoryManifestEntry]:
        """entry_id -> item (do not mutate)."""
        return {e.entry_id: e for e in self.manifest.entries}

    def get(self, entry_id: str) -> MemoryManifestEntry | None:
        i = self.index.get(entry_id)
        return None if i is None else self.manifest.entries[i]


_VIEW = "powercontext.core.manifest.view"


def _remember(v: ManifestView) -> ManifestView:
    # weakly: a view held by its manifest strongly would make a reference cycle that only
    # the cyclic garbage collector frees (megabytes per large Revision)
    v.manifest.memo[_VIEW] = weakref.ref(v)
    return v


def view(manifest: MemoryManifest) -> ManifestView:
    """The view of ``manifest``: computed once per manifest object while some holder
    keeps it alive (the items' canonical bytes, UTF-8 keys and index). InvalidInputError
    for an item RFC 8785 cannot carry."""
    ref = manifest.memo.get(_VIEW)
    found = ref() if ref is not None else None
    if found is not None:
        return found
    entries = manifest.entries
    return _remember(
        ManifestView(
            manifest,
            tuple(_item_bytes(e) for e in entries),
            tuple(e.entry_id.encode("utf-8") for e in entries),
            {e.entry_id: i for i, e in enumerate(entries)},
        )
    )


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
    ``memoize=False`` neither takes nor keeps that view: a walk over old Revisions (a reader
    of ``changes()``) must not pin its views on a base someone caches."""
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
    entries = list(base.manifest.entries)
    item_bytes = list(base.item_bytes)
    keys = list(base.keys)
    inserts: list[tuple[bytes, MemoryManifestEntry]] = []
    replaced: list[int] = []
    middle = False
    for entry_id, item in items.items():
        i = base.index.get(entry_id)
        if i is None:
            inserts.append((entry_id.encode("utf-8"), item))
        else:
            entries[i] = item
            item_bytes[i] = _item_bytes(item)
            replaced.append(i)
    index = base.index
    if inserts:
        inserts.sort(key=lambda t: t[0])
        if not keys or inserts[0][0] > keys[-1]:
            entries.extend(item for _, item in inserts)
            item_bytes.extend(_item_bytes(item) for _, item in inserts)
            keys.extend(k for k, _ in inserts)
            index = dict(base.index)
            start = len(base.keys)
            index.update((item.entry_id, start + n) for n, (_, item) in enumerate(inserts))
        else:
            middle = True
            for k, item in inserts:
                pos = bisect.bisect_left(keys, k)
                keys.insert(pos, k)
                entries.insert(pos, item)
                item_bytes.insert(pos, _item_bytes(item))
            index = {e.entry_id: i for i, e in enumerate(entries)}
    manifest = MemoryManifest(entries=tuple(entries), format=base.manifest.format)
    out = ManifestView(manifest, tuple(item_bytes), tuple(keys), index)
    _carry_over(
        base,
        out,
        items,
        replaced,
        middle,
    )
    return _remember(out)


def _carry_over(
    base: ManifestView,
    out: ManifestView,
    items: Mapping[str, MemoryManifestEntry],
    replaced: list[int],
    middle_insert: bool,
) -> None:
    """Derive ``out``'s joined bytes and active counts from ``base``'s when those are
    already computed, in time proportional to the change (plus one memcpy)."""
    cached = base.__dict__
    n_appended = len(out.item_bytes) - len(base.item_bytes)
    if "joined" in cached and not middle_insert:
        offsets = base.offsets if replaced else []
        pieces: list[bytes] = []
        prev = 0
        joined = base.joined
        for i in sorted(replaced):
            start = offsets[i]
            pieces.append(joined[prev:start])
            pieces.append(out.item_bytes[i])
            prev = start + len(base.item_bytes[i])
        pieces.append(joined[prev:])
        if n_appended:
            tail = out.item_bytes[len(base.item_bytes) :]
            pieces.append((b"," if base.item_bytes else b"") + b",".join(tail))
        out.__dict__["joined"] = b"".join(pieces)
    if "active_total" in cached:
        total = base.active_total
        for entry_id, item in items.items():
            old = base.get(entry_id)
            total += (item.state == "active") - (old is not None and old.state == "active")
        out.__dict__["active_total"] = total
    if "active_counts" in cached:
        counts = dict(base.active_counts)
        for entry_id, item in items.items():
            old = base.get(entry_id)
            if old is not None and old.state == "active":
                left = counts[old.entry_content_hash] - 1
                if left:
                    counts[old.entry_content_hash] = left
                else:
                    del counts[old.entry_content_hash]
            if item.state == "active":
                counts[item.entry_content_hash] = counts.get(item.entry_content_hash, 0) + 1
        out.__dict__["active_counts"] = counts
