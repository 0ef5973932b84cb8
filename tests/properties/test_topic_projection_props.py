"""Properties of Topic projections (Topic Memory RFC, "Storage, Head, and atomic
activation"): what build_projection makes passes check_projection under its shape, and
each kind of forgery of it is refused with IntegrityError."""

from __future__ import annotations

import math

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import analyzer
from powercontext.core.errors import IntegrityError
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic import projection as pj
from powercontext.core.topic.content import make_content
from powercontext.core.topic.models import TopicMemoryContent, TopicProjection

PROFILE = EmbeddingProfile("p", "m", 3)
A = analyzer.V1
WORDS = st.sampled_from(["alpha", "beta ", "中文", "# Heading\n", "- item\n", "\n\n",
                         "Sentence one. ", "```\ncode\n```\n", "\r\n", "x" * 700])


@st.composite
def contents(draw: st.DrawFn) -> TopicMemoryContent:
    def text(n: int, words: st.SearchStrategy[str] = WORDS) -> str:
        return "".join(draw(st.lists(words, min_size=1, max_size=n))) + "z"
    short = st.sampled_from(["alpha", "beta ", "中文", "\n\n", "ADR-0005 "])
    return make_content(text(5, short), text(20, short), text(60))


def unit(seed: int) -> tuple[float, float, float]:
    a, b = seed * 0.37 + 0.1, seed * 0.11 + 0.2
    return (math.cos(a) * math.cos(b), math.sin(a) * math.cos(b), math.sin(b))


def build(c: TopicMemoryContent, hybrid: bool) -> TopicProjection:
    if not hybrid:
        return pj.build_projection(c, A)
    return pj.build_projection(c, A, [unit(i) for i in range(len(pj.embedding_texts(c)))],
                               PROFILE)


@given(contents(), st.booleans())
def test_built_projection_passes_its_shape(c: TopicMemoryContent, hybrid: bool) -> None:
    p = build(c, hybrid)
    pj.check_projection(c, p, A, "hybrid" if hybrid else "fts", PROFILE)
    assert len(p.chunks) + 1 == len(pj.embedding_texts(c))


FORGERIES = ["drop", "duplicate", "swap", "text", "offsets", "ordinal", "chunk_fts",
             "topic_fts", "policy", "fts_vector", "hybrid_missing", "hybrid_dimension",
             "hybrid_nan", "hybrid_norm", "hybrid_fingerprint", "hybrid_topic_missing"]


def forge(p: TopicProjection, kind: str, at: int) -> tuple[TopicProjection, str] | None:
    cs = list(p.chunks)
    i = at % len(cs)
    cp = cs[i]
    shape = "hybrid" if kind.startswith("hybrid") else "fts"
    if kind == "drop":
        del cs[i]
    elif kind == "duplicate":
        cs.insert(i, cp)
    elif kind == "swap":
        if len(cs) < 2:
            return None
        j = (i + 1) % len(cs)
        cs[i], cs[j] = cs[j], cs[i]
    elif kind == "text":
        cs[i] = attrs.evolve(cp, chunk=attrs.evolve(cp.chunk, text=cp.chunk.text + " "))
    elif kind == "offsets":
        cs[i] = attrs.evolve(cp, chunk=attrs.evolve(cp.chunk, end=cp.chunk.end + 1))
    elif kind == "ordinal":
        cs[i] = attrs.evolve(cp, chunk=attrs.evolve(cp.chunk, ordinal=cp.chunk.ordinal + 1))
    elif kind == "chunk_fts":
        cs[i] = attrs.evolve(cp, fts_text=cp.fts_text + " forged")
    elif kind == "topic_fts":
        return attrs.evolve(p, topic_text=p.topic_text + " x"), shape
    elif kind == "policy":
        return attrs.evolve(p, chunk_policy="topic-chunks-v2"), shape
    elif kind == "fts_vector":
        cs[i] = attrs.evolve(cp, vector=unit(1))
    elif kind == "hybrid_missing":
        cs[i] = attrs.evolve(cp, vector=None)
    elif kind == "hybrid_dimension":
        cs[i] = attrs.evolve(cp, vector=(1.0, 0.0))
    elif kind == "hybrid_nan":
        cs[i] = attrs.evolve(cp, vector=(math.nan, 0.0, 1.0))
    elif kind == "hybrid_norm":
        cs[i] = attrs.evolve(cp, vector=(1.0, 1.0, 0.0))
    elif kind == "hybrid_fingerprint":
        return attrs.evolve(p, embedding_fingerprint="f" * 64), shape
    elif kind == "hybrid_topic_missing":
        return attrs.evolve(p, topic_vector=None), shape
    return attrs.evolve(p, chunks=tuple(cs)), shape


@given(contents(), st.sampled_from(FORGERIES), st.integers(0, 100))
def test_each_kind_of_forged_projection_is_refused(c: TopicMemoryContent, kind: str,
                                                   at: int) -> None:
    forged = forge(build(c, kind.startswith("hybrid")), kind, at)
    if forged is None:
        return
    p, shape = forged
    with pytest.raises(IntegrityError):
        pj.check_projection(c, p, A, shape, PROFILE)  # type: ignore[arg-type]
