"""Reciprocal rank fusion (Memory RFC, "Search and reads")."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.core.rrf import RRF_K, FusedCandidate, fuse

A = ("m1", "a", "va")
B = ("m1", "b", "vb")
C = ("m1", "c", "vc")
D = ("m2", "d", "vd")


def test_k_is_60() -> None:
    assert RRF_K == 60


def test_single_channel_scores_are_one_over_60_plus_rank() -> None:
    out = fuse({"fts": [A, B, C]})
    assert out == [
        FusedCandidate(A, 1 / 61, ("fts",)),
        FusedCandidate(B, 1 / 62, ("fts",)),
        FusedCandidate(C, 1 / 63, ("fts",)),
    ]


def test_two_channels_sum_and_absent_gets_one_contribution() -> None:
    out = fuse({"fts": [A, B], "vector": [B, C]})
    by_key = {c.key: c for c in out}
    # Exact sum rounded once (a float sum 1/62 + 1/61 is one ulp off).
    assert by_key[B].score == float(Fraction(1, 62) + Fraction(1, 61)) == 0.03252247488101533
    assert by_key[B].matched_by == ("fts", "vector")
    assert by_key[A].score == 1 / 61
    assert by_key[A].matched_by == ("fts",)
    assert by_key[C].score == 1 / 62
    assert by_key[C].matched_by == ("vector",)
    assert [c.key for c in out] == [B, A, C]


def test_exact_values_for_known_ranks() -> None:
    out = fuse({"fts": [A], "vector": [D, D, A]})  # repeat of D counts at its first rank
    by_key = {c.key: c for c in out}
    assert by_key[A].score == float(Fraction(1, 61) + Fraction(1, 62))
    assert by_key[D].score == float(Fraction(1, 61))
    assert len(out) == 2


def test_empty_channels_give_nothing() -> None:
    assert fuse({}) == []
    assert fuse({"fts": [], "vector": []}) == []


def test_matched_by_follows_channel_order() -> None:
    out = fuse({"fts": [A], "vector": [A]})
    assert out[0].matched_by == ("fts", "vector")
    out = fuse({"vector": [A], "fts": [A]})
    assert out[0].matched_by == ("vector", "fts")


def test_equal_scores_break_by_memory_id_then_entry_id_then_version() -> None:
    x = ("m2", "a", "v1")
    y = ("m1", "z", "v1")
    z = ("m1", "a", "v2")
    w = ("m1", "a", "v1")
    # Each is rank 1 in some channel: all scores 1/61.
    out = fuse({"fts": [x], "vector": [y]})
    assert [c.key for c in out] == [y, x]
    out = fuse({"fts": [z], "vector": [w]})
    assert [c.key for c in out] == [w, z]
    assert out[0].score == out[1].score == 1 / 61


def test_tie_break_uses_utf8_byte_order_not_utf16_order() -> None:
    # UTF-8 byte order equals code point order: U+FFFF (EF BF BF) < U+10000 (F0 90 80 80).
    # UTF-16 order (JavaScript, Java, utf16 collations) puts U+10000 (D800 DC00) first.
    lo = ("m", "\uffff", "v")
    hi = ("m", "\U00010000", "v")
    assert "\uffff".encode() < "\U00010000".encode()
    assert "\U00010000".encode("utf-16-be") < "\uffff".encode("utf-16-be")
    assert [c.key for c in fuse({"fts": [hi], "vector": [lo]})] == [lo, hi]
    assert [c.key for c in fuse({"fts": [lo], "vector": [hi]})] == [lo, hi]
    # The memory id decides before the entry id, and the entry id before the version id.
    assert [c.key for c in fuse({"fts": [("b", "a", "a")], "vector": [("a", "z", "z")]})] == [
        ("a", "z", "z"),
        ("b", "a", "a"),
    ]


def test_mathematically_equal_sums_tie_break_by_key() -> None:
    # 1/66 + 1/99 == 1/72 + 1/88 exactly, but summed as floats they differ in the last bit.
    assert 1 / 66 + 1 / 99 != 1 / 72 + 1 / 88
    assert Fraction(1, 66) + Fraction(1, 99) == Fraction(1, 72) + Fraction(1, 88)
    late = ("m1", "z", "v")  # ranks 6 and 39
    early = ("m1", "a", "v")  # ranks 12 and 28
    filler = [("f", str(i), "v") for i in range(100)]
    fts = [*filler[0:5], late, *filler[5:10], early]
    vec = [*filler[10:37], early, *filler[37:47], late]
    assert fts.index(late) + 1 == 6 and fts.index(early) + 1 == 12
    assert vec.index(early) + 1 == 28 and vec.index(late) + 1 == 39
    out = fuse({"fts": fts, "vector": vec})
    keys = [c.key for c in out]
    assert keys.index(early) + 1 == keys.index(late)
    by_key = {c.key: c for c in out}
    assert by_key[early].score == by_key[late].score


keys = st.tuples(
    st.sampled_from(["m1", "m2", "\uffff", "\U00010000"]),
    st.text(alphabet="ab\uffff\U00010000é", min_size=1, max_size=3),
    st.sampled_from(["v1", "v2"]),
)


def _tie(key: tuple[str, str, str]) -> tuple[bytes, ...]:
    return tuple(part.encode() for part in key)


@settings(deadline=None)
@given(st.lists(keys, max_size=40), st.lists(keys, max_size=40))
def test_output_sorted_unique_and_scores_exact(fts: list, vec: list) -> None:
    out = fuse({"fts": fts, "vector": vec})
    out_keys = [c.key for c in out]
    assert len(out_keys) == len(set(out_keys))
    assert set(out_keys) == set(fts) | set(vec)
    order = [(-Fraction(c.score), _tie(c.key)) for c in out]
    assert order == sorted(order)
    for cand in out:
        exact = Fraction(0)
        names = []
        for name, chan in (("fts", fts), ("vector", vec)):
            dedup = list(dict.fromkeys(chan))
            if cand.key in dedup:
                exact += Fraction(1, 60 + dedup.index(cand.key) + 1)
                names.append(name)
        assert cand.score == float(exact)
        assert cand.matched_by == tuple(names)


@settings(deadline=None)
@given(st.lists(keys, max_size=40), st.sampled_from(["fts", "vector"]), st.booleans())
def test_one_channel_is_its_order_with_exact_scores(chan: list, name: str,
                                                    with_empty: bool) -> None:
    """The one-channel path (issue 14: no fractions when a single channel has
    candidates) gives the channel's first-occurrence order, 1 / (60 + rank) exactly as
    the fraction rounds, and only that channel in matched_by, with or without an empty
    second channel."""
    other = "vector" if name == "fts" else "fts"
    channels = {name: chan, other: []} if with_empty else {name: chan}
    out = fuse(channels)
    dedup = list(dict.fromkeys(chan))
    assert [c.key for c in out] == dedup
    assert [c.score for c in out] == [float(Fraction(1, 61 + i)) for i in range(len(dedup))]
    assert all(c.matched_by == (name,) for c in out)
