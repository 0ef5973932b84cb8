"""The manifest view and splice give exactly what a full rebuild gives."""

from __future__ import annotations

import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.manifest import splice, view
from powercontext.core.models import MemoryManifest, MemoryManifestEntry

ids = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=4)
items = st.builds(
    MemoryManifestEntry,
    ids,
    ids.map(lambda s: "mem_ver_" + s),
    st.sampled_from(["a" * 64, "b" * 64, "c" * 64]),
    st.sampled_from(["active", "inactive"]),
)


def full(entries):
    return sorted(entries, key=lambda e: e.entry_id.encode())


@given(st.lists(items, max_size=12), st.lists(items, max_size=6), st.booleans(),
       st.lists(st.lists(items, max_size=4), max_size=3))
def test_splice_equals_full_rebuild(base_items, changes, warm, more):
    base_map = {e.entry_id: e for e in base_items}
    base = view(MemoryManifest(entries=tuple(full(base_map.values()))))
    if warm:  # carried-over caches must equal fresh computation
        _ = base.joined, base.active_counts, base.active_total
    current, expected = base, dict(base_map)
    for batch in [changes, *more]:
        upd = {e.entry_id: e for e in batch}
        expected.update(upd)
        current = splice(current, upd)
        want = tuple(full(expected.values()))
        assert current.manifest.entries == want
        assert current.joined == b",".join(
            rfc8785.dumps({"entry_content_hash": e.entry_content_hash, "entry_id": e.entry_id,
                           "entry_version_id": e.entry_version_id, "state": e.state})
            for e in want)
        counts: dict[str, int] = {}
        for e in want:
            if e.state == "active":
                counts[e.entry_content_hash] = counts.get(e.entry_content_hash, 0) + 1
        assert current.active_counts == counts
        assert current.active_total == sum(counts.values())
        assert {e.entry_id: current.get(e.entry_id) for e in want} == {e.entry_id: e for e in want}
        assert canonical.content_bytes(
            canonical.MemoryContent(current.manifest, ())) == canonical.canonical_dumps(
            canonical.MemoryContent(current.manifest, ()))


# -- the view is memoized on the manifest value, not in a process-global table -----------


@given(st.lists(items, max_size=8))
def test_view_is_memoized_per_manifest_object_while_held(entries):
    manifest = MemoryManifest(entries=tuple(full({e.entry_id: e for e in entries}.values())))
    held = view(manifest)
    assert view(manifest) is held
    twin = MemoryManifest(entries=manifest.entries)  # equal value, another object
    assert twin == manifest and hash(twin) == hash(manifest)
    other = view(twin)
    assert other is not held and other.item_bytes == held.item_bytes
    assert other.joined == held.joined == canonical.manifest_items_bytes(manifest)


@given(st.lists(items, max_size=8), st.lists(items, min_size=1, max_size=3))
def test_splice_result_is_the_view_of_its_manifest(base_items, changes):
    base = view(MemoryManifest(entries=tuple(full({e.entry_id: e for e in base_items}.values()))))
    out = splice(base, {e.entry_id: e for e in changes})
    assert view(out.manifest) is out


def test_the_memo_is_not_part_of_the_manifest_value():
    entry = MemoryManifestEntry("e1", "mem_ver_1", "a" * 64, "active")
    manifest = MemoryManifest(entries=(entry,))
    before = (canonical.unstructure(manifest), repr(manifest), hash(manifest))
    held = view(manifest)
    assert manifest.memo  # the weak reference to the view
    assert (canonical.unstructure(manifest), repr(manifest), hash(manifest)) == before
    assert manifest == MemoryManifest(entries=(entry,))
    assert held.joined == canonical.manifest_entry_bytes(entry)


def test_a_view_is_freed_with_its_last_holder_without_the_cycle_collector():
    """No reference cycle manifest <-> view: reference counting alone frees a dropped
    view (a cycle would keep megabytes of a large Revision until a full collection)."""
    import gc
    import weakref

    manifest = MemoryManifest(entries=(MemoryManifestEntry("e1", "v1", "a" * 64, "active"),))
    enabled = gc.isenabled()
    gc.disable()
    try:
        held = view(manifest)
        grown = splice(held, {"e2": MemoryManifestEntry("e2", "v2", "b" * 64, "active")})
        refs = [weakref.ref(held), weakref.ref(grown), weakref.ref(grown.manifest)]
        del held, grown
        assert [r() for r in refs] == [None, None, None]
    finally:
        if enabled:
            gc.enable()
    assert view(manifest).manifest is manifest  # recomputed on demand
