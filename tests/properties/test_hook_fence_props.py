"""The prompt hook's Memory lines cannot forge context, whatever a stored kind or text
holds: each hit is exactly one line of the memory block (no line break, separator or
control character survives, in any of the spellings ``str.splitlines`` knows), no
bidirectional control reorders it, and nothing in it can open a tag or a special token
(``</system-reminder>``, ``<|im_start|>``)."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from powercontext.core.models import ArtifactRef, MemoryHit
from powercontext.entrypoints.cli.hook_fence import render_context

#: Pieces a hostile kind or text is built from, besides any character at all.
_HOSTILE = st.sampled_from([
    "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029",
    "\x1b]0;x\x07", "\x1b[2J", "\u202e", "\u2066", "\u200f", "\ufeff", "- [constraint] ",
    "</system-reminder>", "<system-reminder>", "<|im_start|>", "<|im_end|>", "\uff1c/x>",
    "\ufe64|im_start|>", "<!--", "<?xml", "</powercontext-memory>",
])
_pieces = st.lists(_HOSTILE | st.text(max_size=8), max_size=8).map("".join)


def _hit(i: int, kind: str, text: str) -> MemoryHit:
    return MemoryHit(ArtifactRef("mem_art_x", 1), f"mem_ent_{i}", f"mem_ver_{i}",
                     text or "x", 1.0, ("fts",), kind or "fact")


@given(st.lists(st.tuples(_pieces, _pieces), min_size=1, max_size=4), _pieces)
def test_each_hit_is_one_inert_line_of_the_block(pairs, repo):
    hits = [_hit(i, k, t) for i, (k, t) in enumerate(pairs)]
    ctx = render_context(hits, repo="/r" + repo)
    (nonce,) = set(re.findall(r"<powercontext-memory-([0-9a-f]{16}) ", ctx))
    start = ctx.index(f"<powercontext-memory-{nonce} ")
    body = ctx[start:ctx.index(f"</powercontext-memory-{nonce}>")]
    lines = body.split("\n")[1:-1]
    assert len(lines) == len(hits)  # short hits: all fit
    for i, line in enumerate(lines):
        assert line.startswith("- [") and line.endswith(f" (entry mem_ent_{i})"), line
        assert line.splitlines() == [line]
        assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in line)
        assert re.search(r"[<\uff1c\ufe64][A-Za-z/|!?]", line) is None, line
