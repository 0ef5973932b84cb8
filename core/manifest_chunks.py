"""Manifest items kept in shared chunks: the persistent sequence a Revision's manifest is
spliced in, so that a write to a Memory of N entries copies O(changes + N / 256) values
instead of O(N) (ARCHITECTURE.md, "Performance by design").

A flat-v1 manifest lists every entry of the Memory at every Revision (Memory RFC,
"MemoryContent"). :class:`ManifestEntries` holds the items sorted by entry_id (code point
order, which is the UTF-8 byte order the spec sorts by) in :class:`ManifestChunk` values
of at most ``2 * CHUNK_ITEMS`` items, each with the items' canonical bytes joined by
commas (:func:`powercontext.core.canonical.manifest_entry_bytes`). :func:`spliced`
rebuilds only the chunks a change touches; every other chunk is the same object in both
manifests. A chunk read from storage keeps its items as plain strings and makes their
:class:`~powercontext.core.models.MemoryManifestEntry` values when first asked (a write
to a Memory read whole needs a few of them, not N). The chunk boundaries are an
in-memory layout: the items, their order and their bytes are exactly those of the
sorted tuple (a property test holds it).
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

from powercontext.core.canonical import JSON_ESCAPED, manifest_entry_bytes
from powercontext.core.errors import IntegrityError
from powercontext.core.models import MemoryManifestEntry

__all__ = ["CHUNK_ITEMS", "ItemStrings", "ManifestChunk", "ManifestEntries", "build",
           "from_packs", "from_strings", "manifest_items_text", "packs_of", "spliced"]

#: Items per chunk when a manifest is built whole; a chunk that grows past twice this
#: is split. 256 items of ~210 bytes: a change re-joins ~54 kB, and a manifest of 1M
#: entries has ~4k chunks (the per-write copy of the chunk list).
CHUNK_ITEMS = 256

#: A manifest item as strings: (entry_id, entry_version_id, entry_content_hash, state).
ItemStrings = tuple[str, str, str, str]


def manifest_items_text(items: Sequence[tuple[str, str, str, str]]) -> str | None:
    """The canonical bytes of manifest items ``(entry_id, entry_version_id,
    entry_content_hash, state)`` joined by commas, as ASCII text, when every member is
    a string of printable ASCII that needs no escaping (the ids and hashes this library
    writes); None otherwise (take :func:`manifest_entry_bytes` of each item)."""
    try:
        members = "".join([x for item in items for x in item])  # TypeError: not strings
    except TypeError:
        return None
    if not members.isascii() or JSON_ESCAPED.search(members) is not None:
        return None
    return ",".join([f'{{"entry_content_hash":"{h}","entry_id":"{i}",'
                     f'"entry_version_id":"{v}","state":"{st}"}}' for i, v, h, st in items])


#: The characters of an item's canonical text besides its four strings, and its comma.
_FRAME = len(manifest_items_text([("", "", "", "")]) or "") + 1


def _starts(sizes: Iterable[int]) -> array[int]:
    """The offset of each item inside the comma-joined bytes, from the items' sizes."""
    sizes = list(sizes)
    return array("q", itertools.accumulate((n + 1 for n in sizes[:-1]), initial=0))


class ManifestChunk:
    """Consecutive manifest items (sorted, at least one): their entry ids, their
    canonical bytes joined by commas, and the items themselves (made on first use
    from their strings when the chunk was read from storage). A chunk read as a pack
    (:meth:`packed`: its first entry id, its count and its bytes) parses its bytes
    into ids and items only when first asked for them. Immutable."""

    __slots__ = ("_entries", "_ids", "_starts", "_strings", "count", "first", "joined")

    def __init__(self, ids: tuple[str, ...], joined: bytes, starts: array[int], *,
                 entries: tuple[MemoryManifestEntry, ...] | None = None,
                 strings: Sequence[ItemStrings] | None = None) -> None:
        self._ids: tuple[str, ...] | None = ids
        self.joined = joined
        self._starts: array[int] | None = starts
        self._entries = entries
        self._strings = strings
        #: the number of items and the first one's entry id
        self.count = len(ids)
        self.first = ids[0] if ids else ""

    @classmethod
    def packed(cls, first: str, count: int, joined: bytes) -> ManifestChunk:
        """A chunk of ``count`` items whose canonical bytes joined by commas are
        ``joined`` and whose first entry id is ``first``, parsed when first needed (a
        parse that does not give back exactly these bytes, this count and this first
        id is an IntegrityError)."""
        chunk = cls((), joined, array("q"))
        chunk._ids = chunk._starts = None
        chunk.count, chunk.first = count, first
        return chunk

    @classmethod
    def of(cls, entries: tuple[MemoryManifestEntry, ...],
           item_bytes: Sequence[bytes]) -> ManifestChunk:
        """The chunk of these items with their canonical bytes."""
        return cls(tuple(e.entry_id for e in entries), b",".join(item_bytes),
                   _starts(len(b) for b in item_bytes), entries=entries)

    @classmethod
    def of_strings(cls, items: Sequence[ItemStrings]) -> ManifestChunk:
        """The chunk of items given as strings (InvalidInputError for an item RFC 8785
        cannot carry)."""
        text = manifest_items_text(items)
        if text is not None:  # ASCII: one character per byte
            starts = array("q", itertools.accumulate(
                [len(i) + len(v) + len(h) + len(st) + _FRAME for i, v, h, st in items[:-1]],
                initial=0))
            return cls(tuple([i[0] for i in items]), text.encode("ascii"), starts,
                       strings=items)
        entries = tuple(MemoryManifestEntry(*i) for i in items)  # type: ignore[arg-type]
        return cls.of(entries, [manifest_entry_bytes(e) for e in entries])

    def _parse(self) -> None:
        """A packed chunk's ids, offsets and item strings from its bytes, checked."""
        try:
            parsed = json.loads(b"[" + self.joined + b"]")
            states = _STATES
            strings: list[ItemStrings] = [
                (d["entry_id"], d["entry_version_id"], d["entry_content_hash"],
                 states.get(d["state"], d["state"])) for d in parsed]
            made = ManifestChunk.of_strings(strings)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise IntegrityError(f"a stored manifest pack does not parse: {exc}") from exc
        if made.joined != self.joined or made.count != self.count or made.first != self.first:
            raise IntegrityError("a stored manifest pack is not the items it names")
        self._ids, self._starts = made.ids, made.starts
        self._strings, self._entries = made._strings, made._entries

    @property
    def ids(self) -> tuple[str, ...]:
        """The items' entry ids, in order."""
        if self._ids is None:
            self._parse()
        assert self._ids is not None
        return self._ids

    @property
    def starts(self) -> array[int]:
        """The offset of each item's bytes inside ``joined``."""
        if self._starts is None:
            self._parse()
        assert self._starts is not None
        return self._starts

    @property
    def entries(self) -> tuple[MemoryManifestEntry, ...]:
        """The items (made from their strings on first use)."""
        if self._entries is None:
            if self._ids is None:
                self._parse()
            if self._entries is None:
                assert self._strings is not None
                self._entries = tuple(MemoryManifestEntry(*s)  # type: ignore[arg-type]
                                      for s in self._strings)
                self._strings = None
        return self._entries

    def hash_states(self) -> Iterator[tuple[str, str]]:
        """(entry_content_hash, state) of each item (no item made for it; a packed
        chunk not parsed yet is read by a pattern when it matches every item)."""
        if self._ids is None:
            found = _hash_states(self.joined)
            if found is not None and len(found) == self.count:
                return iter(found)
            self._parse()
        strings = self._strings
        if strings is not None:
            return ((s[2], s[3]) for s in strings)
        return ((e.entry_content_hash, e.state) for e in self.entries)

    def item_bytes(self, i: int) -> bytes:
        """The canonical bytes of item ``i``."""
        starts = self.starts
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(self.joined)
        return self.joined[starts[i]:end]


_STATES = {"active": sys.intern("active"), "inactive": sys.intern("inactive")}
#: An item's content hash and state when its strings need no escape and hold no ``{``
#: (RFC 8785 sorts the keys; ``{"`` and ``"state":"`` cannot occur inside a string).
_HASH_STATE = re.compile(
    r'\{"entry_content_hash":"([^"\\]*)",[^{]*"state":"(active|inactive)"\}')
_ITEM_START = b'{"entry_content_hash":'


def _hash_states(joined: bytes) -> list[tuple[str, str]] | None:
    """(entry_content_hash, state) of every item of canonical item bytes, by a pattern,
    or None when some item does not match it (the caller parses them)."""
    try:
        text = joined.decode("utf-8")
    except UnicodeDecodeError:
        return None
    found = _HASH_STATE.findall(text)
    return found if len(found) == joined.count(_ITEM_START) else None


class ManifestEntries(Sequence[MemoryManifestEntry]):
    """An immutable sequence of manifest items sorted by entry_id, stored in chunks.

    Equal to a tuple of the same items (``==`` either way, same ``hash``), so a
    :class:`~powercontext.core.models.MemoryManifest` holding it is the same value as
    one holding the tuple."""

    __slots__ = ("_firsts", "_len", "_nbytes", "_starts", "chunks")

    def __init__(self, chunks: Iterable[ManifestChunk] = ()) -> None:
        self.chunks: tuple[ManifestChunk, ...] = tuple(c for c in chunks if c.count)
        self._firsts = [c.first for c in self.chunks]
        self._starts = list(itertools.accumulate((c.count for c in self.chunks),
                                                 initial=0))
        self._len = self._starts[-1]
        self._nbytes = sum(len(c.joined) for c in self.chunks) + max(0, len(self.chunks) - 1)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> MemoryManifestEntry: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[MemoryManifestEntry, ...]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return tuple(self)[i]
        n = self._len
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("manifest index out of range")
        c = bisect.bisect_right(self._starts, i) - 1
        return self.chunks[c].entries[i - self._starts[c]]

    def __iter__(self) -> Iterator[MemoryManifestEntry]:
        for c in self.chunks:
            yield from c.entries

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, ManifestEntries):
            if self._len != other._len:
                return False
            if len(self.chunks) == len(other.chunks) and all(
                    a is b for a, b in zip(self.chunks, other.chunks, strict=True)):
                return True
            return all(a == b for a, b in zip(self, other, strict=True))
        if isinstance(other, tuple | list):
            return self._len == len(other) and all(
                a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))

    def find(self, entry_id: str) -> MemoryManifestEntry | None:
        """The item of ``entry_id``, or None (two binary searches)."""
        c = bisect.bisect_right(self._firsts, entry_id) - 1
        if c < 0:
            return None
        chunk = self.chunks[c]
        i = bisect.bisect_left(chunk.ids, entry_id)
        return chunk.entries[i] if i < len(chunk.ids) and chunk.ids[i] == entry_id else None

    def hash_states(self) -> Iterator[tuple[str, str]]:
        """(entry_content_hash, state) of every item, in order."""
        for c in self.chunks:
            yield from c.hash_states()

    def pieces(self) -> list[bytes]:
        """The chunks' joined bytes; joined by commas they are the manifest's items."""
        return [c.joined for c in self.chunks]

    def byte_length(self) -> int:
        """The length of the items' bytes joined by commas."""
        return self._nbytes

    def between(self, low: str | None, high: str | None) -> tuple[list[str], list[bytes]]:
        """The entry ids and canonical bytes of the items with ``low <= entry_id <
        high`` (None: no bound), in order; only the chunks that hold them are read."""
        ids: list[str] = []
        out: list[bytes] = []
        chunks = self.chunks
        c = 0 if low is None else max(0, bisect.bisect_right(self._firsts, low) - 1)
        while c < len(chunks) and (high is None or chunks[c].first < high):
            chunk = chunks[c]
            cids = chunk.ids
            i = 0 if low is None else bisect.bisect_left(cids, low)
            j = len(cids) if high is None else bisect.bisect_left(cids, high)
            for k in range(i, j):
                ids.append(cids[k])
                out.append(chunk.item_bytes(k))
            c += 1
        return ids, out


def _chunks(entries: Sequence[MemoryManifestEntry],
            item_bytes: Sequence[bytes]) -> list[ManifestChunk]:
    return [ManifestChunk.of(tuple(entries[i:i + CHUNK_ITEMS]), item_bytes[i:i + CHUNK_ITEMS])
            for i in range(0, len(entries), CHUNK_ITEMS)]


def build(entries: Sequence[MemoryManifestEntry],
          item_bytes: Sequence[bytes] | None = None) -> ManifestEntries:
    """The chunked sequence of ``entries`` (already sorted by entry_id, unique), with
    their canonical bytes (computed when not given). InvalidInputError for an item
    RFC 8785 cannot carry."""
    if isinstance(entries, ManifestEntries):
        return entries
    if item_bytes is None:
        item_bytes = [manifest_entry_bytes(e) for e in entries]
    return ManifestEntries(_chunks(entries, item_bytes))


def from_strings(items: Sequence[ItemStrings]) -> ManifestEntries:
    """The chunked sequence of items given as strings (sorted by entry_id, unique)."""
    return ManifestEntries(ManifestChunk.of_strings(items[i:i + CHUNK_ITEMS])
                           for i in range(0, len(items), CHUNK_ITEMS))


_ENTRY_ID_KEY = b',"entry_id":'


def from_packs(packs: Iterable[tuple[str, int, bytes]]) -> ManifestEntries:
    """The chunked sequence of stored packs ``(first entry id, item count, canonical
    bytes joined by commas)``, in entry order, each parsed only when an item of it is
    asked for. Each pack's bytes must begin with the item of its first entry id and
    hold as many items as it says (checked here, so that a lookup goes to the right
    pack and a length is right; the rest of a pack is checked when it is parsed):
    else IntegrityError. The bytes as a whole are the
    caller's to check (the Revision's content hash covers them)."""
    chunks = []
    for first, count, joined in sorted(packs, key=lambda p: p[0]):
        if not isinstance(joined, bytes):
            joined = bytes(joined)
        at = joined.find(_ENTRY_ID_KEY)
        try:
            want = _ENTRY_ID_KEY + json.dumps(first, ensure_ascii=False).encode() + b","
        except (TypeError, UnicodeEncodeError) as exc:
            raise IntegrityError(f"a stored manifest pack names {first!r}") from exc
        if count < 1 or at < 0 or not joined.startswith(want, at):
            raise IntegrityError(f"a stored manifest pack does not begin with {first!r}")
        if joined.count(_ITEM_START) != count:  # an item begins only there
            raise IntegrityError(f"the stored manifest pack of {first!r} miscounts its items")
        chunks.append(ManifestChunk.packed(first, count, joined))
    return ManifestEntries(chunks)


def packs_of(ids: Sequence[str], item_bytes: Sequence[bytes],
             size: int) -> list[tuple[str, int, bytes]]:
    """Consecutive items cut into packs ``(first entry id, count, joined bytes)`` of
    about ``size`` items each (the same number, give or take one, in every pack)."""
    n = len(ids)
    if not n:
        return []
    parts = -(-n // size)
    bounds = [n * k // parts for k in range(parts + 1)]
    return [(ids[a], b - a, b",".join(item_bytes[a:b]))
            for a, b in itertools.pairwise(bounds)]


def spliced(base: ManifestEntries,
            items: Mapping[str, MemoryManifestEntry]) -> tuple[ManifestEntries, set[int]]:
    """``base`` with ``items`` replacing or inserting entries (by their entry_id), and
    the positions in the result's chunk list of the chunks that were rebuilt. Only
    the chunks that hold a changed entry are rebuilt (split when they grow past
    ``2 * CHUNK_ITEMS``); the others are shared with ``base``."""
    if not items:
        return base, set()
    chunks = base.chunks
    if not chunks:
        ordered = sorted(items.values(), key=lambda e: e.entry_id)
        out = ManifestEntries(_chunks(ordered, [manifest_entry_bytes(e) for e in ordered]))
        return out, set(range(len(out.chunks)))
    groups: dict[int, list[MemoryManifestEntry]] = {}
    firsts = base._firsts
    for item in items.values():
        c = max(0, bisect.bisect_right(firsts, item.entry_id) - 1)
        groups.setdefault(c, []).append(item)
    result: list[ManifestChunk] = []
    rebuilt: set[int] = set()
    prev = 0
    for c in sorted(groups):
        result.extend(chunks[prev:c])
        made = _merge(chunks[c], groups[c])
        rebuilt.update(range(len(result), len(result) + len(made)))
        result.extend(made)
        prev = c + 1
    result.extend(chunks[prev:])
    return ManifestEntries(result), rebuilt


def _merge(chunk: ManifestChunk, updates: list[MemoryManifestEntry]) -> list[ManifestChunk]:
    """``chunk`` with ``updates`` replacing or inserting items, as one or more chunks."""
    old = chunk.entries
    ids = chunk.ids
    entries: list[MemoryManifestEntry] = []
    item_bytes: list[bytes] = []
    i = 0
    latest = {u.entry_id: u for u in updates}  # the last update of an id wins
    for u in sorted(latest.values(), key=lambda e: e.entry_id):
        j = bisect.bisect_left(ids, u.entry_id, lo=i)
        entries.extend(old[i:j])
        item_bytes.extend(chunk.item_bytes(k) for k in range(i, j))
        entries.append(u)
        item_bytes.append(manifest_entry_bytes(u))
        i = j + 1 if j < len(ids) and ids[j] == u.entry_id else j
    entries.extend(old[i:])
    item_bytes.extend(chunk.item_bytes(k) for k in range(i, len(old)))
    if len(entries) <= 2 * CHUNK_ITEMS:
        return [ManifestChunk.of(tuple(entries), item_bytes)]
    return _chunks(entries, item_bytes)
