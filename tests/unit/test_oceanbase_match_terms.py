"""What reaches OceanBase's MATCH: both families' full-text channels check their terms
through one function (adapters/oceanbase/match_terms.py); no server needed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.adapters.oceanbase.match_terms import match_terms
from powercontext.core.errors import InvalidInputError
from powercontext.sql.oceanbase import MAX_TOKEN_CHARS

TOKENS = st.text("abcxyz019_", min_size=1, max_size=MAX_TOKEN_CHARS)


@given(st.lists(TOKENS, max_size=8))
def test_tokens_pass_once_each_in_order(terms: list[str]) -> None:
    assert match_terms(terms) == list(dict.fromkeys(terms))


@pytest.mark.parametrize(
    "bad", ["Upper", "two words", "", "semi;colon", "é", "k" * (MAX_TOKEN_CHARS + 1)])
def test_a_term_the_index_cannot_hold_is_refused(bad: str) -> None:
    with pytest.raises(InvalidInputError) as e:
        match_terms(["fine", bad])
    assert e.value.field == "terms"


def test_both_projections_use_it() -> None:
    from powercontext.adapters.oceanbase import memory_projection, topic_projection

    assert memory_projection.match_terms is match_terms
    assert topic_projection.match_terms is match_terms
