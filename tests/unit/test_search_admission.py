"""Per-channel search admission (Memory RFC, "Search and reads"; core.search_admission)."""

from __future__ import annotations

import math

import pytest

from powercontext.core.analyzer import analyze, query_terms
from powercontext.core.search_admission import (
    FTS_MIN_COVERAGE,
    FTS_MIN_MATCHED,
    VECTOR_MIN_COSINE,
    cosine_from_l2,
    fts_admits,
    vector_admits,
)


def test_baseline_constants() -> None:
    assert FTS_MIN_MATCHED == 2
    assert FTS_MIN_COVERAGE == 0.25
    assert VECTOR_MIN_COSINE == 0.35


def test_empty_query_admits_nothing() -> None:
    assert not fts_admits((), ["a", "b"])


def test_one_term_query_needs_its_term() -> None:
    assert fts_admits(("uv",), ["we", "use", "uv"])
    assert not fts_admits(("uv",), ["pip"])


def test_two_term_query_needs_one_match() -> None:
    assert fts_admits(("sqlite", "oceanbase"), ["oceanbase"])
    assert fts_admits(("sqlite", "oceanbase"), ["sqlite", "oceanbase"])
    assert not fts_admits(("sqlite", "oceanbase"), ["postgres"])


def test_three_term_query_needs_two_matches() -> None:
    q = ("a1", "b1", "c1")
    assert not fts_admits(q, ["a1"])
    assert fts_admits(q, ["a1", "c1"])
    assert fts_admits(q, ["a1", "b1", "c1"])


def test_coverage_boundary_for_long_queries() -> None:
    q8 = tuple(f"t{i}" for i in range(8))
    assert fts_admits(q8, ["t0", "t7"])  # 2/8 = 0.25 exactly
    q9 = tuple(f"t{i}" for i in range(9))
    assert not fts_admits(q9, ["t0", "t8"])  # 2/9 < 0.25
    assert fts_admits(q9, ["t0", "t4", "t8"])  # 3/9 >= 0.25
    q16 = tuple(f"t{i}" for i in range(16))
    assert fts_admits(q16, ["t0", "t1", "t2", "t3"])  # 4/16 = 0.25 exactly
    assert not fts_admits(q16, ["t0", "t1", "t2"])


@pytest.mark.parametrize("n", range(3, 60))
def test_admission_threshold_is_max_of_two_and_ceil_quarter(n: int) -> None:
    q = tuple(f"t{i}" for i in range(n))
    need = max(FTS_MIN_MATCHED, math.ceil(n * FTS_MIN_COVERAGE - 1e-9))
    assert fts_admits(q, q[:need])
    assert not fts_admits(q, q[: need - 1])


def test_document_token_repeats_do_not_count_twice() -> None:
    assert not fts_admits(("x1", "y1", "z1"), ["x1", "x1", "x1"])


def test_repeated_query_terms_count_once() -> None:
    # Distinct terms (x1, y1, z1): one match of three is not enough.
    assert not fts_admits(("x1", "x1", "y1", "z1"), ["x1"])
    # Distinct terms (x1, y1): one match suffices.
    assert fts_admits(("x1", "x1", "x1", "y1"), ["y1"])
    assert fts_admits(tuple(analyze("go go go")), ["go"])


def test_with_analyzer_output_for_cjk_query() -> None:
    # 中文 -> 3 terms (2 unigrams + 1 bigram): two must match.
    terms = query_terms("中文")
    assert len(terms) == 3
    assert fts_admits(terms, analyze("中文搜索"))
    assert not fts_admits(terms, analyze("中国"))  # only u_4e2d matches
    assert fts_admits(terms, analyze("文中"))  # both unigrams, no bigram


def test_cosine_from_l2_for_unit_vectors() -> None:
    assert cosine_from_l2(0.0) == 1.0
    assert cosine_from_l2(math.sqrt(2)) == pytest.approx(0.0, abs=1e-15)
    assert cosine_from_l2(2.0) == -1.0
    assert cosine_from_l2(1.0) == 0.5


def test_cosine_from_l2_matches_dot_product() -> None:
    a = (0.6, 0.8, 0.0)
    b = (0.0, 0.6, 0.8)
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    dist = math.dist(a, b)
    assert cosine_from_l2(dist) == pytest.approx(dot, abs=1e-12)


def test_vector_admits_at_threshold() -> None:
    d_at = math.sqrt(2 * (1 - VECTOR_MIN_COSINE))  # cosine 0.35
    assert vector_admits(0.0)
    assert vector_admits(d_at - 1e-9)
    # float32 engines land within VECTOR_COSINE_TOLERANCE of the bar: admitted alike
    assert vector_admits(d_at + 1e-9)
    below = math.sqrt(2 * (1 - (VECTOR_MIN_COSINE - 1e-5)))
    assert not vector_admits(below)
    assert not vector_admits(math.sqrt(2))
    assert not vector_admits(float("nan"))

