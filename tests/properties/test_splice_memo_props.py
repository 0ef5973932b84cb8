"""The splice memo and the in-place byte comparison of verify (issue 14: a commit
spliced and serialized a 50k-entry manifest twice) answer exactly what the full
computation answers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.manifest import _splice, splice, view
from powercontext.core.models import (
    MemoryChange,
    MemoryContent,
    MemoryManifest,
    MemoryManifestEntry,
)

ids = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=4)
items = st.builds(
    MemoryManifestEntry,
    ids,
    ids.map(lambda s: "mem_ver_" + s),
    st.sampled_from(["a" * 64, "b" * 64]),
    st.sampled_from(["active", "inactive"]),
)


def _view(entries):
    by_id = {e.entry_id: e for e in entries}
    return view(MemoryManifest(tuple(sorted(by_id.values(), key=lambda e: e.entry_id.encode()))))


@given(st.lists(items, max_size=10), st.lists(items, min_size=1, max_size=5),
       st.lists(items, min_size=1, max_size=5))
def test_a_second_splice_equals_a_fresh_one(base_items, first, second):
    base = _view(base_items)
    upd = {e.entry_id: e for e in first}
    made = splice(base, upd)
    again = splice(base, dict(reversed(list(upd.items()))))  # equal items, other order
    assert again is made  # the memo: computed once
    fresh = _splice(base, upd)
    assert again.manifest == fresh.manifest and again.item_bytes == fresh.item_bytes
    assert again.joined == fresh.joined and dict(again.as_dict) == dict(fresh.as_dict)
    assert splice(base, upd) is not made  # taken once: a third call computes afresh
    other = {e.entry_id: e for e in second}
    splice(base, upd)
    got = splice(base, other)  # other items never get the memo
    assert got.manifest == _splice(base, other).manifest
    if other != upd:
        assert got is not made


class _Lying(MemoryManifestEntry):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = MemoryManifestEntry.__hash__


def test_items_that_are_not_manifest_entries_are_never_memoized():
    base = _view([MemoryManifestEntry("a", "mem_ver_a", "a" * 64, "active")])
    lying = {"b": _Lying("b", "mem_ver_b", "a" * 64, "active")}
    made = splice(base, lying)
    assert splice(base, lying) is not made
    honest = {"b": MemoryManifestEntry("b", "mem_ver_b", "b" * 64, "active")}
    splice(base, honest)
    assert splice(base, honest).manifest.entries[1].entry_content_hash == "b" * 64


@given(st.lists(items, max_size=8), st.integers(0, 3), st.data())
def test_in_place_comparison_equals_building_the_bytes(entries, n_changes, data):
    v = _view(entries)
    changes = tuple(sorted(
        {e.entry_id: MemoryChange("add", e.entry_id, None, e.entry_version_id)
         for e in entries[:n_changes]}.values(), key=lambda c: c.entry_id.encode()))
    content = MemoryContent(v.manifest, changes)
    body = canonical.content_bytes(content, v.joined)
    assert canonical.content_bytes_equal(content, v.joined, body)
    assert canonical.content_bytes_equal(content, v.joined, bytearray(body))
    # any other candidate: one byte changed, cut, extended, or moved
    if body:
        i = data.draw(st.integers(0, len(body) - 1))
        flipped = body[:i] + bytes([body[i] ^ 1]) + body[i + 1:]
        candidates = [flipped, body[:i], body + b" ", body[1:] + body[:1]]
    else:
        candidates = [b"x"]
    for c in candidates:
        assert canonical.content_bytes_equal(content, v.joined, c) == (c == body)
