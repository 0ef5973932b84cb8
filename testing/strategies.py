"""Hypothesis strategies and fixed inputs of the contract kit, public for third parties'
own properties."""

from __future__ import annotations

import unicodedata
from typing import Literal

from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.models import Source
from powercontext.core.query import MAX_QUERY_CHARS

_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)


#: Queries that must never reach MATCH as syntax; each returns hits or nothing.
NASTY_QUERIES = (
    '"unbalanced',
    '"balanced"',
    "multi-agent",
    "TODO: fix",
    "*",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "a AND b OR NOT c",
    "(parens) (",
    "@name",
    "50%",
    "3.11.7",
    "🙂🚀",
    "x" * MAX_QUERY_CHARS,  # the longest query allowed (powercontext.core.query)
    "",
    "   ",
    "-leading",
    "col:value",
    "^start",
    "{braces}",
    "NEAR(a b)",
    "'single'",
)


def entry_texts() -> st.SearchStrategy[str]:
    """Entry texts valid after NFC and trimming (1..200 code points, no surrogates)."""
    chars = st.characters(blacklist_categories=_SURROGATES)
    return st.text(chars, min_size=1, max_size=200).filter(
        lambda t: bool(unicodedata.normalize("NFC", t).strip())
    )


def sources(prefix: str = "src_") -> st.SearchStrategy[Source]:
    """Persistable Sources with ASCII ids."""
    return st.builds(
        lambda n, kind, body: canonical.make_source(f"{prefix}{n}", kind, body),
        st.integers(0, 10_000),
        st.sampled_from(["file", "user_note", "task_outcome"]),
        st.text(st.characters(blacklist_categories=_SURROGATES), max_size=80),
    )


#: Small vocabulary so searches for one word have a known answer.
VOCABULARY = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")

