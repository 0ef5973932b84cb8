"""Properties of the hook's JSON boundary (``entrypoints/cli/json_bounds.py``): whatever
the chunking, a document whose strings fit comes out byte for byte; a longer string
keeps an exact prefix and suffix of itself around the marker, and the document still
parses to the same shape; nesting deeper than the limit is refused without recursion."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.entrypoints.cli.json_bounds import bounded_json, check_depth

_MARK = re.compile(r"\n\[\.\.\. (\d+) bytes cut at the input boundary \.\.\.\]\n")

#: Strings rich in what a cut must not split: escapes, surrogate pairs, multi-byte UTF-8.
_texts = st.text(st.sampled_from(["a", "\\", '"', "\n", "\x01", "\u00e9", "\u65e5",
                                  "\U0001f600", "\u2028", "/"]) | st.characters(),
                 max_size=60)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=16,
)


def _chunks(raw: bytes, sizes: list[int]):
    pos, i = 0, 0
    while pos < len(raw):
        n = sizes[i % len(sizes)] if sizes else len(raw)
        yield raw[pos:pos + n]
        pos, i = pos + n, i + 1


def _same_shape(a, b) -> bool:
    """``b`` is ``a`` with some strings (keys too) replaced by a cut of themselves."""
    if isinstance(a, str):
        if a == b:
            return True
        m = _MARK.search(b)
        if m is None:
            return False
        return a.startswith(b[:m.start()]) and a.endswith(b[m.end():]) \
            and len(b[:m.start()]) + len(b[m.end():]) < len(a)
    if isinstance(a, list):  # arrays, and objects as lists of [key, value] pairs
        return isinstance(b, list) and len(a) == len(b) and all(
            _same_shape(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _pairs(raw: bytes | str):
    """The document with every object as a list of its [key, value] pairs (a cut may
    make two long keys equal; the pairs keep both)."""
    return json.loads(raw, object_pairs_hook=lambda pairs: [list(p) for p in pairs])


@given(_values, st.booleans(), st.lists(st.integers(1, 9), max_size=4))
def test_short_strings_come_out_byte_for_byte(value, ascii_only, sizes):
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    assert bounded_json(_chunks(raw, sizes), head=1 << 20, tail=1 << 20) == raw


@settings(max_examples=400)
@given(_values, st.booleans(), st.lists(st.integers(1, 9), max_size=4),
       st.integers(0, 40), st.integers(0, 40))
def test_long_strings_keep_an_exact_head_and_tail(value, ascii_only, sizes, head, tail):
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    out = bounded_json(_chunks(raw, sizes), head=head, tail=tail)
    assert _same_shape(_pairs(raw), _pairs(out.decode("utf-8")))  # strict: whole chars


@given(st.integers(65, 3000), st.sampled_from(["[", "{\"a\":"]))
def test_nesting_deeper_than_the_limit_is_refused_without_recursion(depth, opener):
    closer = "]" if opener == "[" else "}"
    deep = json.loads(opener * min(depth, 900) + "1" + closer * min(depth, 900))
    with pytest.raises(ValueError, match="nested more than 64 levels deep"):
        check_depth(deep)
    ok = json.loads(opener * 64 + "1" + closer * 64)
    assert check_depth(ok) is ok
