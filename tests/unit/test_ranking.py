"""core.ranking without a database (Memory RFC, "Search and reads": manifest filtering,
admission, RRF with its tie-break, hits)."""

from __future__ import annotations

from fractions import Fraction

import attrs
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import canonical, ranking
from powercontext.core.models import (
    ArtifactRef,
    MemoryEntryVersion,
    MemoryHit,
    MemoryManifestEntry,
)
from powercontext.core.ranking import RankKey, SearchCandidate, SearchHead


def version(memory: str, entry: str, text: str) -> MemoryEntryVersion:
    return MemoryEntryVersion(
        memory, entry, f"ver_{entry}", 1, None, "fact", text, (), (),
        canonical.entry_content_hash("fact", text, (), ()), 1)


def world(n: int, memories: tuple[str, ...] = ("mem_a",)) -> tuple[
    dict[str, SearchHead], dict[str, MemoryEntryVersion], list[SearchCandidate]
]:
    """``n`` active entries per Memory, their stored versions and projection rows."""
    heads: dict[str, SearchHead] = {}
    versions: dict[str, MemoryEntryVersion] = {}
    rows: list[SearchCandidate] = []
    for m in memories:
        items = {}
        for i in range(n):
            v = version(m, f"{m}_e{i:03d}", f"entry {i} of {m}")
            versions[v.entry_version_id] = v
            items[v.entry_id] = MemoryManifestEntry(
                v.entry_id, v.entry_version_id, v.entry_content_hash, "active")
            rows.append(SearchCandidate(m, v.entry_id, v.entry_version_id,
                                        v.entry_content_hash, v.text, 0.1 * i))
        heads[m] = SearchHead(ArtifactRef(m, 3), items)
    return heads, versions, rows


def test_one_channel_scores_are_one_over_60_plus_rank_in_the_backend_order() -> None:
    heads, versions, rows = world(3)
    hits = ranking.rank({"fts": rows[::-1]}, heads, versions, 10)
    assert [h.entry_id for h in hits] == [r.entry_id for r in rows[::-1]]
    assert [h.score for h in hits] == [1 / 61, 1 / 62, 1 / 63]
    v = versions[rows[-1].entry_version_id]
    assert hits[0] == MemoryHit(ArtifactRef("mem_a", 3), v.entry_id, v.entry_version_id,
                                v.text, 1 / 61, ("fts",), "fact")


def test_equal_scores_fall_to_memory_then_utf8_entry_id_then_version() -> None:
    heads, versions, rows = world(2, ("mem_b", "mem_a"))
    b0, b1, a0, a1 = rows
    # a0 and b0 are first in one channel each; b1 and a1 second: equal sums pairwise
    hits = ranking.rank({"fts": [b0, a1], "vector": [a0, b1]}, heads, versions, 10)
    assert [(h.memory_ref.artifact_id, h.entry_id) for h in hits] == [
        ("mem_a", a0.entry_id), ("mem_b", b0.entry_id),
        ("mem_a", a1.entry_id), ("mem_b", b1.entry_id)]
    assert hits[0].score == hits[1].score == 1 / 61
    assert [h.matched_by for h in hits] == [("vector",), ("fts",), ("fts",), ("vector",)]


def test_ties_of_exact_sums_are_not_broken_by_float_rounding() -> None:
    # ranks 6 + 39 and 12 + 28 sum to the same fraction: the tie-break decides
    assert Fraction(1, 66) + Fraction(1, 99) == Fraction(1, 72) + Fraction(1, 88)
    heads, versions, rows = world(60)
    x, y, f = rows[0], rows[1], rows[2:]  # x has the smaller entry id
    fts = [*f[0:5], y, *f[5:10], x]  # y at 6, x at 12
    vector = [*f[10:37], x, *f[37:47], y]  # x at 28, y at 39
    hits = ranking.rank({"fts": fts, "vector": vector}, heads, versions, 100)
    order = [h.entry_id for h in hits]
    i = order.index(x.entry_id)
    assert order[i + 1] == y.entry_id
    assert hits[i].score == hits[i + 1].score == float(Fraction(1, 72) + Fraction(1, 88))


def test_an_untrusted_row_is_never_ranked() -> None:
    heads, versions, rows = world(5)
    good, stale_hash, missing, inactive, other_version = rows
    heads["mem_a"].manifest[inactive.entry_id] = attrs.evolve(  # type: ignore[index]
        heads["mem_a"].manifest[inactive.entry_id], state="inactive")
    forged = [
        attrs.evolve(stale_hash, entry_content_hash="0" * 64),  # stale projection hash
        attrs.evolve(missing, entry_id="mem_a_not_in_manifest"),  # not in the manifest
        inactive,  # forgotten in the head
        attrs.evolve(other_version, entry_version_id="ver_older"),  # not the head's version
        attrs.evolve(good, artifact_id="mem_elsewhere"),  # a Memory not searched
    ]
    for row in forged:
        assert not ranking.trusted(row, heads)
    hits = ranking.rank({"fts": [*forged, good], "vector": forged}, heads, versions, 10)
    assert [(h.entry_id, h.score, h.matched_by) for h in hits] == [
        (good.entry_id, 1 / 61, ("fts",))]


def test_a_row_without_its_stored_version_is_never_ranked() -> None:
    heads, versions, rows = world(2)
    del versions[rows[0].entry_version_id]
    hits = ranking.rank({"fts": rows}, heads, versions, 10)
    assert [h.entry_id for h in hits] == [rows[1].entry_id]
    assert hits[0].score == 1 / 61  # ranks count the rows that are ranked


def test_confirmed_requires_the_stored_version_to_hash_to_the_manifest() -> None:
    heads, versions, rows = world(1)
    (row,) = rows
    v = versions[row.entry_version_id]
    assert ranking.confirmed(row, v, heads)
    assert not ranking.confirmed(row, None, heads)
    assert not ranking.confirmed(row, attrs.evolve(v, text="tampered"), heads)
    assert not ranking.confirmed(row, attrs.evolve(v, memory_artifact_id="mem_b"), heads)


def test_admission_per_channel_and_where_a_refusal_ends_the_channel() -> None:
    row = SearchCandidate("mem_a", "e", "v", "0" * 64, "redis cache lives", None)
    assert ranking.admit("fts", row, ("redis",))
    assert not ranking.admit("fts", row, ("postgres",))
    assert not ranking.admit("vector", row)  # no distance
    assert ranking.admit("vector", attrs.evolve(row, distance=0.1))
    assert not ranking.admit("vector", attrs.evolve(row, distance=1.4))
    assert ranking.refusal_ends_channel("vector") and not ranking.refusal_ends_channel("fts")


def test_candidate_budget_is_max_of_four_times_limit_and_32() -> None:
    assert [ranking.candidate_budget(n) for n in (1, 8, 9, 100)] == [32, 32, 36, 400]


def test_the_rank_key_is_named_and_equal_to_its_tuple() -> None:
    key = SearchCandidate("m", "e", "v", "h", "t").key
    assert key == RankKey("m", "e", "v") == ("m", "e", "v")
    assert (key.memory_artifact_id, key.entry_id, key.entry_version_id) == ("m", "e", "v")


channel_orders = st.lists(st.integers(0, 29), unique=True, max_size=30)


@given(channel_orders, channel_orders, st.integers(0, 40), st.integers(0, 40))
def test_a_smaller_limit_gives_a_prefix_of_a_larger_one(
    fts: list[int], vector: list[int], small: int, large: int
) -> None:
    small, large = sorted((small, large))
    heads, versions, rows = world(15, ("mem_a", "mem_b"))
    channels = {"fts": [rows[i] for i in fts], "vector": [rows[i] for i in vector]}
    few = ranking.rank(channels, heads, versions, small)  # type: ignore[arg-type]
    many = ranking.rank(channels, heads, versions, large)  # type: ignore[arg-type]
    assert many[: len(few)] == few
    assert len(few) == min(small, len(set(fts) | set(vector)))
    scores = [h.score for h in many]
    assert scores == sorted(scores, reverse=True)


@given(channel_orders, channel_orders, st.sets(st.integers(0, 29)), st.integers(1, 40))
def test_untrusted_rows_are_as_if_the_backend_never_returned_them(
    fts: list[int], vector: list[int], stale: set[int], limit: int
) -> None:
    heads, versions, rows = world(15, ("mem_a", "mem_b"))
    tampered = [attrs.evolve(r, entry_content_hash="f" * 64) if i in stale else r
                for i, r in enumerate(rows)]
    got = ranking.rank({"fts": [tampered[i] for i in fts],
                        "vector": [tampered[i] for i in vector]}, heads, versions, limit)
    clean = ranking.rank({"fts": [rows[i] for i in fts if i not in stale],
                          "vector": [rows[i] for i in vector if i not in stale]},
                         heads, versions, limit)
    assert got == clean
    assert not {h.entry_id for h in got} & {rows[i].entry_id for i in stale}
