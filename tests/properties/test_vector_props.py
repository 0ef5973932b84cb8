"""Properties of :func:`powercontext.core.vectors.prepare_vector` (Memory RFC,
"Normalization, hashing, and the search analyzer"; issue 9 item 6): every vector it
returns is storable (right dimension, finite, unit length), points the way the model's
did, and everything it cannot make storable is refused with InvalidInputError."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import EmbeddingProfile
from powercontext.core.vectors import UNIT_TOLERANCE, check_vector, prepare_vector

DIM = 6
UNIT = EmbeddingProfile("p", "m", DIM, "l2", "unit")
NONE = EmbeddingProfile("p", "m", DIM, "l2", "none")

finite = st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False)
vectors = st.lists(finite, min_size=DIM, max_size=DIM)


@given(vectors)
@example([0.0, 0.0, 0.0, 0.0, 0.0, 0.99999])  # unit within tolerance: kept as given
def test_a_finite_nonzero_vector_becomes_a_unit_vector_in_the_same_direction(v):
    norm = math.hypot(*v)
    assume(norm > 1e-150)  # directions from subnormal noise are not a model's output
    out = prepare_vector(v, UNIT)
    check_vector(out, UNIT)  # storable
    assert all(type(x) is float for x in out)
    # the cosine of the angle between out and v (out is unit only within UNIT_TOLERANCE)
    cosine = (sum(a * b for a, b in zip(out, (x / norm for x in v), strict=True))
              / math.hypot(*out))
    assert cosine == pytest.approx(1.0, abs=1e-9)
    if abs(norm - 1.0) <= UNIT_TOLERANCE:
        assert out == tuple(v)  # already unit: kept as given


@given(vectors, st.integers(0, DIM - 1), st.sampled_from([math.nan, math.inf, -math.inf]))
def test_a_non_finite_value_is_refused(v, i, bad):
    v[i] = bad
    with pytest.raises(InvalidInputError) as info:
        prepare_vector(v, UNIT)
    assert info.value.field == "vector"


@given(st.lists(finite, max_size=2 * DIM).filter(lambda v: len(v) != DIM))
def test_a_wrong_dimension_or_empty_vector_is_refused(v):
    with pytest.raises(InvalidInputError, match=r"is empty|dimensions"):
        prepare_vector(v, UNIT)


@pytest.mark.parametrize("bad", [[0.0] * DIM, [True] * DIM, ["1"] * DIM, "abcdef", None, 3.0])
def test_zero_booleans_strings_and_non_sequences_are_refused(bad):
    with pytest.raises(InvalidInputError):
        prepare_vector(bad, UNIT)


@given(vectors)
def test_without_unit_normalization_only_unit_vectors_pass(v):
    norm = math.hypot(*v)
    if norm and abs(norm - 1.0) <= UNIT_TOLERANCE:
        assert prepare_vector(v, NONE) == tuple(v)
    else:
        with pytest.raises(InvalidInputError):
            prepare_vector(v, NONE)
