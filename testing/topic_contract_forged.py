"""Topic contract group: forged or incomplete projections (Topic Memory RFC, "Storage,
Head, and atomic activation": the repository recomputes the chunk sequence and the
title + summary text at its write boundary and refuses any incomplete or forged
projection before writing the Artifact). Each forgery is IntegrityError, nothing
written, and the honest write still publishes afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import attrs
import pytest

from powercontext.core.errors import IntegrityError
from powercontext.core.topic.models import TopicProjection, TopicWrite
from powercontext.testing.base import run
from powercontext.testing.topic_base import TopicContractBase

__all__ = ["FORGERIES", "TopicForgedContract"]

_DETAIL = "\n\n".join(
    f"Paragraph {i} of the kiwi notes: the vines, the trellis, the pruning and the "
    f"harvest calendar of season {i}, with the soil readings and the irrigation plan."
    for i in range(60))

Forgery = Callable[[TopicProjection], TopicProjection]


def _chunks(p: TopicProjection, chunks) -> TopicProjection:
    return attrs.evolve(p, chunks=tuple(chunks))


def _edit_chunk(i: int, **kw) -> Forgery:
    def forge(p: TopicProjection) -> TopicProjection:
        c = list(p.chunks)
        if "chunk" in kw:
            c[i] = attrs.evolve(c[i], chunk=attrs.evolve(c[i].chunk, **kw["chunk"]))
        else:
            c[i] = attrs.evolve(c[i], **kw)
        return _chunks(p, c)
    return forge


def _swap(p: TopicProjection) -> TopicProjection:
    c = list(p.chunks)
    c[0], c[1] = c[1], c[0]
    return _chunks(p, c)


def _extra(p: TopicProjection) -> TopicProjection:
    last = p.chunks[-1]
    extra = attrs.evolve(last, chunk=attrs.evolve(last.chunk, ordinal=last.chunk.ordinal + 1))
    return _chunks(p, (*p.chunks, extra))


def _scaled(v):
    """Not unit length (a vector's direction cannot be checked without re-embedding)."""
    return None if v is None else tuple(2.0 * x for x in v)


#: Every kind of forged projection, by name: shape -> name -> forgery.
FORGERIES: dict[str, dict[str, Forgery]] = {
    "both": {
        "a missing chunk": lambda p: _chunks(p, p.chunks[:-1]),
        "a missing first chunk": lambda p: _chunks(p, p.chunks[1:]),
        "no chunks": lambda p: _chunks(p, ()),
        "an extra chunk": _extra,
        "reordered chunks": _swap,
        "wrong chunk text": _edit_chunk(0, chunk={"text": "forged text"}),
        "wrong chunk start": _edit_chunk(1, chunk={"start": 1}),
        "wrong chunk end": _edit_chunk(0, chunk={"end": 3}),
        "wrong ordinal": _edit_chunk(1, chunk={"ordinal": 7}),
        "wrong chunk FTS field": _edit_chunk(0, fts_text="kiwi kiwi forged"),
        "empty chunk FTS field": _edit_chunk(1, fts_text=""),
        "wrong topic FTS field": lambda p: attrs.evolve(p, topic_text="forged"),
        "wrong chunk policy": lambda p: attrs.evolve(p, chunk_policy="topic-chunks-v0"),
    },
    "hybrid": {
        "a missing topic vector": lambda p: attrs.evolve(p, topic_vector=None),
        "a missing chunk vector": _edit_chunk(0, vector=None),
        "a scaled topic vector": lambda p: attrs.evolve(
            p, topic_vector=_scaled(p.topic_vector)),
        "a scaled chunk vector": lambda p: _edit_chunk(1, vector=_scaled(p.chunks[1].vector))(p),
        "a list, not a tuple": lambda p: attrs.evolve(
            p, topic_vector=cast(Any, list(p.topic_vector or ()))),
        "a short vector": _edit_chunk(0, vector=(1.0,)),
        "a NaN vector": lambda p: attrs.evolve(
            p, topic_vector=(float("nan"),) * len(p.topic_vector or ())),
        "a wrong fingerprint": lambda p: attrs.evolve(p, embedding_fingerprint="0" * 64),
        "no fingerprint": lambda p: attrs.evolve(p, embedding_fingerprint=None),
    },
    "fts": {
        "a topic vector in an FTS-only deployment": lambda p: attrs.evolve(
            p, topic_vector=(1.0,) + (0.0,) * 63),
        "a chunk vector in an FTS-only deployment": _edit_chunk(0, vector=(1.0,) + (0.0,) * 63),
        "a fingerprint in an FTS-only deployment": lambda p: attrs.evolve(
            p, embedding_fingerprint="0" * 64),
    },
}


class TopicForgedContract(TopicContractBase):
    """Forged projections of every kind are refused with nothing written."""

    def test_forged_projections_are_refused_and_write_nothing(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                base = await kit.create("s", "Kiwi", "kiwi notes", _DETAIL)
                before = await kit.observe(["s"], ("kiwi", "forged", "paragraph"))
                honest: dict[str, TopicWrite] = {
                    "create": await kit.write("s", "Plum", "plum notes", _DETAIL),
                    "update": await kit.write("s", "Kiwi 2", "kiwi notes 2", _DETAIL,
                                              base=base.ref),
                }
                assert len(honest["create"].projection.chunks) >= 3
                forgeries = {**FORGERIES["both"], **FORGERIES[shape]}
                for name, forge in forgeries.items():
                    for op, w in honest.items():
                        forged = attrs.evolve(w, projection=forge(w.projection))
                        assert forged.projection != w.projection, name
                        with pytest.raises(IntegrityError):
                            await kit.publish(forged)
                        assert await kit.observe(["s"], ("kiwi", "forged", "paragraph")) \
                            == before, (name, op)
                revs = await kit.publish(*honest.values())
                assert [r.ref for r in revs] == [w.ref for w in honest.values()]

        run(body())
