"""Hard wrapping never changes which rules a Markdown document gives (issue 11 item 4):
the rules of a document are those of the same document with every paragraph and list
item on one line, whatever the wrap width."""

from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core import extraction as C

_WORDS = st.sampled_from(["the", "tests", "build", "code", "docs", "release", "branch",
                          "main", "review", "commit", "`make test`", "`pnpm lint`", "CI",
                          "changes", "files", "small", "every", "before", "after"])
_LEADS = st.sampled_from(["Run", "Always run", "Never push", "Use", "Prefer", "Keep",
                          "Do not edit", "The team likes", "Write"])
_sentence = st.builds(lambda lead, words: f"{lead} {' '.join(words)}.", _LEADS,
                      st.lists(_WORDS, min_size=3, max_size=14))
_block = st.tuples(st.booleans(), st.lists(_sentence, min_size=1, max_size=3).map(" ".join))


def _doc(blocks, width: int | None) -> str:
    parts = []
    for is_item, text in blocks:
        if width is None:
            parts.append(("- " if is_item else "") + text)
        elif is_item:
            parts.append(textwrap.fill(text, width, initial_indent="- ",
                                       subsequent_indent="  ", break_on_hyphens=False))
        else:
            parts.append(textwrap.fill(text, width, break_on_hyphens=False))
    return "\n\n".join(parts) + "\n"


def _rules(markdown: str) -> list[tuple[str, str]]:
    src = canonical.make_source("src_doc", "file", markdown, "file:///r/AGENTS.md",
                                {"path": "AGENTS.md"})
    return [(c.kind, c.text) for c in C.rule_candidates((src,)).candidates]


@given(st.lists(_block, min_size=1, max_size=5), st.integers(24, 90))
def test_rules_do_not_depend_on_the_wrap_width(blocks, width):
    assert _rules(_doc(blocks, width)) == _rules(_doc(blocks, None))
