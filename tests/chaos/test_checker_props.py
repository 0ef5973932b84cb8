"""Hypothesis properties of the quiescence checker's publication rule
(:func:`support.chaos_check.publication_overlaps`): Windows that tile a journal give one
publication each and no problem, in any row order; citing any position of one Window
again from another publication is always caught."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.chaos_check import publication_overlaps

pytestmark = pytest.mark.chaos


@st.composite
def tiled(draw):
    """Windows tiling positions 1..n: [(published_at, [cited positions])], each Window
    citing a non-empty subset of its own interval."""
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=8))
    windows, start = [], 1
    for i, size in enumerate(sizes):
        own = list(range(start, start + size))
        cited = draw(st.lists(st.sampled_from(own), min_size=1, unique=True))
        windows.append((f"t{i:03d}", cited))
        start += size
    return windows


def _rows(windows, scope="s"):
    return [(scope, at, pos) for at, cited in windows for pos in cited]


@given(tiled(), st.randoms())
def test_tiling_windows_are_one_publication_each(windows, rnd):
    rows = _rows(windows)
    rnd.shuffle(rows)
    counted, problems = publication_overlaps(rows)
    assert problems == []
    assert counted == {"s": len(windows)}


@given(tiled().filter(lambda w: len(w) >= 2), st.data())
def test_a_window_cited_again_by_another_publication_is_caught(windows, data):
    i, j = data.draw(st.sampled_from([(i, j) for i in range(len(windows))
                                      for j in range(len(windows)) if i != j]))
    position = data.draw(st.sampled_from(windows[i][1]))
    again = [*windows[:j], (windows[j][0], [*windows[j][1], position]), *windows[j + 1:]]
    _counted, problems = publication_overlaps(_rows(again))
    assert problems, (windows, i, j, position)
