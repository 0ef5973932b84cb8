"""Hypothesis strategies and fixed inputs of the Topic contract kit, public for third
parties' own properties (Topic Memory RFC, "Detail chunks and deployment-enabled
retrieval channels"; issue 12, "Bad input and faults to test")."""

from __future__ import annotations

import unicodedata

from hypothesis import strategies as st

from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_SCOPE_CHARS
from powercontext.testing.strategies import VOCABULARY

__all__ = [
    "ADVERSARIAL_DETAILS",
    "BAD_LIMITS",
    "BAD_SCOPE_IDS",
    "TOPIC_VOCABULARY",
    "topic_contents",
    "topic_words",
]

#: Words of generated Topics: a search for one word has a known answer.
TOPIC_VOCABULARY = VOCABULARY

#: ``limit`` values a Topic search refuses (InvalidInputError naming ``limit``).
BAD_LIMITS: tuple[object, ...] = (0, 21, -1, True, False, "10", 10.0, None)

#: ``scope_id`` values every Topic call refuses (InvalidInputError naming ``scope_id``).
BAD_SCOPE_IDS: tuple[object, ...] = ("", "x" * (MAX_SCOPE_CHARS + 1), "a\nb", "a\x00b",
                                     "\x7f", None, 7)


def _adversarial() -> dict[str, str]:
    limit = MAX_DETAIL_CHARS
    unpunctuated = ("word " * (limit // 5))[:limit].strip()
    headings = ("#\n" * (limit // 2))[:limit].strip() or "#"
    deep_list = "".join(f"{'  ' * (i % 30)}- item {i}\n" for i in range(2000))[:limit]
    fence = ("```\n" + "x = 1\n" * ((limit - 10) // 6) + "```")[:limit]
    crlf = "\r\n".join(f"Line {i} of the CRLF notes." for i in range(2000))[:limit]
    zero_width = "\u200b".join(f"zw{i}" for i in range(4000))[:limit]
    return {
        "no punctuation": "x" * limit,
        "words without punctuation": unpunctuated,
        "only headings": headings,
        "deep lists": deep_list.strip(),
        "huge code fence": fence,
        "CRLF": crlf,
        "zero-width characters": zero_width,
        "mixed CJK": ("检索主题记忆。" * (limit // 7))[:limit],
    }


#: Details at the size limit that attack the chunk policy; each is published whole,
#: read back exactly and chunked within the policy's bounds.
ADVERSARIAL_DETAILS: dict[str, str] = _adversarial()


def topic_words(min_size: int = 1, max_size: int = 4) -> st.SearchStrategy[str]:
    """A text of :data:`TOPIC_VOCABULARY` words joined by spaces."""
    return st.lists(st.sampled_from(TOPIC_VOCABULARY), min_size=min_size,
                    max_size=max_size).map(" ".join)


def topic_contents() -> st.SearchStrategy[tuple[str, str, str]]:
    """(title, summary, detail) triples valid after NFC: vocabulary words, and a detail
    of a few Markdown blocks (headings, paragraphs, list items)."""
    block = st.one_of(
        topic_words(1, 12).map(lambda t: t.capitalize() + "."),
        topic_words(1, 4).map(lambda t: "## " + t),
        topic_words(1, 6).map(lambda t: "- " + t),
    )
    detail = st.lists(block, min_size=1, max_size=6).map("\n\n".join)
    return st.tuples(topic_words(1, 3), topic_words(1, 8), detail).filter(
        lambda c: all(unicodedata.normalize("NFC", x).strip() for x in c))
