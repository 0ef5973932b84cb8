"""A manifest read from packs (core/manifest_chunks.py ``from_packs``, parsed per pack on
first use) is the manifest it was cut from: the same items, lookups, bytes and active
content hashes, whatever the pack sizes and whatever the strings hold (quotes, braces,
non-ASCII: the byte search and the pattern must give way to a parse); the duplicate
check's byte search answers as the counts do; a pack that is not what it says is an
IntegrityError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.core import manifest, manifest_chunks
from powercontext.core.errors import IntegrityError
from powercontext.core.models import MemoryManifest, MemoryManifestEntry

_ID = st.text(st.sampled_from('abcXYZ09_-"{}\\é中 '), min_size=1, max_size=6)
_HASH = st.sampled_from(["h0", "h1", "h2", 'h"3', "h{4", "h5é"])


@st.composite
def manifests(draw: st.DrawFn) -> tuple[MemoryManifestEntry, ...]:
    ids = sorted(draw(st.sets(_ID, min_size=1, max_size=30)))
    return tuple(MemoryManifestEntry(i, f"v{n}", draw(_HASH),
                                     draw(st.sampled_from(["active", "inactive"])))
                 for n, i in enumerate(ids))


def _packed(entries: tuple[MemoryManifestEntry, ...], size: int) -> manifest.ManifestView:
    built = manifest_chunks.build(entries)
    ids, item_bytes = built.between(None, None)
    packs = manifest_chunks.packs_of(ids, item_bytes, size)
    return manifest.view(MemoryManifest(entries=manifest_chunks.from_packs(packs)))


@settings(max_examples=200, deadline=None)
@given(entries=manifests(), size=st.integers(1, 8), probes=st.lists(_HASH, max_size=8),
       bounds=st.tuples(st.none() | _ID, st.none() | _ID))
def test_a_manifest_read_from_packs_is_the_manifest_it_was_cut_from(
        entries, size, probes, bounds) -> None:
    whole = manifest.view(MemoryManifest(entries=entries))
    packed = _packed(entries, size)
    assert packed.joined == whole.joined
    assert len(packed) == len(entries)
    for h in probes:  # the byte search first, then the counts
        assert (h in packed.active_hashes) == (h in whole.active)
    assert dict(packed.active) == dict(whole.active)
    assert tuple(packed.entries) == entries
    for e in entries:
        assert packed.get(e.entry_id) == e
    assert packed.get("absent\x00") is None
    low, high = bounds
    ids, item_bytes = _packed(entries, size).entries.between(low, high)
    want = [e for e in entries if (low is None or e.entry_id >= low)
            and (high is None or e.entry_id < high)]
    assert ids == [e.entry_id for e in want]
    assert b",".join(item_bytes) == b",".join(
        manifest_chunks.build(want).pieces()) if want else item_bytes == []


@given(entries=manifests(), size=st.integers(1, 8))
def test_packs_are_cut_evenly_and_never_empty(entries, size) -> None:
    built = manifest_chunks.build(entries)
    packs = manifest_chunks.packs_of(*built.between(None, None), size)
    counts = [n for _, n, _ in packs]
    assert sum(counts) == len(entries) and min(counts) >= 1
    assert max(counts) - min(counts) <= 1 and max(counts) <= size


def test_a_pack_that_is_not_what_it_says_is_an_integrity_error() -> None:
    entries = tuple(MemoryManifestEntry(f"e{i}", f"v{i}", "h", "active") for i in range(4))
    built = manifest_chunks.build(entries)
    [(first, count, joined)] = manifest_chunks.packs_of(*built.between(None, None), 8)
    for bad in [(first + "x", count, joined), (first, count + 1, joined),
                ("e1", count, joined)]:
        with pytest.raises(IntegrityError):
            manifest_chunks.from_packs([bad])
    odd = manifest_chunks.from_packs([(first, count, joined.replace(b'"v2"', b'"v2" '))])
    with pytest.raises(IntegrityError):  # not canonical: found when the pack is parsed
        odd.find("e2")
