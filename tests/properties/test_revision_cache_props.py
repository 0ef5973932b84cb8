"""The Revision cache's bounds hold after any sequence of puts and gets: at most
``max_revisions`` Revisions, at most ``max_items`` manifest items unless one Revision
alone is larger, at most ``max_bytes`` of canonical bytes (issue 14), a Memory counted
once, by its largest cached Revision (its Revisions share their manifest chunks), the
Revision put last always kept, the least recently used evicted first (a model LRU run
beside it agrees)."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given
from hypothesis import strategies as st

from powercontext.adapters.revision_cache import (
    MEMORY_FAMILY,
    ParsedRevision,
    RevisionCache,
    revision_bytes,
)
from powercontext.adapters.storage import RevisionRow
from powercontext.core import canonical
from powercontext.core.models import (
    MemoryChange,
    MemoryContent,
    MemoryManifest,
    MemoryManifestEntry,
    RevisionLineage,
)


def _per_memory(model: OrderedDict[tuple[str, int], int]) -> int:
    """What the model's cached Revisions hold: per Memory, its largest."""
    per: dict[str, int] = {}
    for (artifact_id, _), n in model.items():
        per[artifact_id] = max(per.get(artifact_id, 0), n)
    return sum(per.values())


_PARSED: dict[tuple[str, int, int], ParsedRevision] = {}


def parsed(artifact_id: str, revision: int, items: int) -> ParsedRevision:
    key = (artifact_id, revision, items)
    if key not in _PARSED:
        entries = tuple(MemoryManifestEntry(f"e{i:04d}", f"v{i:04d}", "0" * 64, "active")
                        for i in range(items))
        content = MemoryContent(MemoryManifest(entries),
                                (MemoryChange("add", "e0000", None, "v0000"),))
        body = canonical.content_bytes(content)
        _PARSED[key] = RevisionCache.parse_row(RevisionRow(
            artifact_id, revision, MEMORY_FAMILY, body, canonical.artifact_content_hash(body),
            canonical.lineage_bytes(RevisionLineage())))
    return _PARSED[key]


keys = st.tuples(st.sampled_from("abc"), st.integers(1, 4))
ops = st.lists(st.one_of(st.tuples(st.just("put"), keys, st.integers(1, 6)),
                         st.tuples(st.just("get"), keys, st.just(0))), max_size=40)


@given(ops, st.integers(1, 5), st.integers(1, 12))
def test_the_cache_stays_within_its_bounds_and_evicts_the_least_recent(sequence, max_revisions,
                                                                       max_items):
    cache = RevisionCache(max_revisions=max_revisions, max_items=max_items)
    model: OrderedDict[tuple[str, int], int] = OrderedDict()  # key -> items, LRU order
    for op, key, items in sequence:
        if op == "get":
            hit = cache.get(key)
            assert (hit is not None) == (key in model)
            if key in model:
                model.move_to_end(key)
            continue
        cache.put(key, parsed(*key, items))
        model[key] = items
        model.move_to_end(key)
        while len(model) > 1 and (len(model) > max_revisions or _per_memory(model) > max_items):
            model.popitem(last=False)
        assert cache.keys() == list(model)  # same Revisions, same LRU order
        assert cache.keys()[-1] == key  # the last put stays
        assert len(cache) <= max_revisions
        assert cache.items() <= max_items or len(cache) == 1


@given(ops, st.integers(1, 5), st.integers(2_000, 20_000))
def test_the_cache_stays_within_its_byte_bound(sequence, max_revisions, max_bytes):
    # issue 14: the count bounds let four 100k-entry Revisions (~140 MB) stay cached
    cache = RevisionCache(max_revisions=max_revisions, max_items=10**9, max_bytes=max_bytes)
    model: OrderedDict[tuple[str, int], int] = OrderedDict()  # key -> bytes, LRU order
    for op, key, items in sequence:
        if op == "get":
            if cache.get(key) is not None:
                model.move_to_end(key)
            continue
        p = parsed(*key, items * 10)
        cache.put(key, p)
        model[key] = revision_bytes(p)
        model.move_to_end(key)
        while len(model) > 1 and (len(model) > max_revisions or _per_memory(model) > max_bytes):
            model.popitem(last=False)
        assert cache.keys() == list(model)
        assert cache.nbytes() <= max_bytes or len(cache) == 1


def test_revision_bytes_counts_the_canonical_bytes_of_the_items():
    p = parsed("big", 1, 2_000)
    assert revision_bytes(p) == len(p.view.joined) == len(
        canonical.manifest_items_bytes(p.revision.content.manifest))
