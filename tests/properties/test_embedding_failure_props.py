"""A failing embedding model never breaks a write or a search (Memory RFC, "Backend
capabilities" and "Vector integrity and offline rebuilds"; issue 9 item 6), as a
property over any sequence of writes with the model up or down and any mix of good and
bad vectors. Runs the shared DatabaseMemoryBackend logic on the in-memory fake.

Invariants: every write commits; an entry has a vector exactly when the model was up
and its own vector was usable; ``auto`` runs fts exactly when it reports a
``fallback_reason``; explicit ``vector`` raises exactly when it cannot be served; a
rebuild with the model back fills every entry whose vector is usable and lists the
others."""

from __future__ import annotations

import asyncio
import itertools
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fakes import InMemoryBackend

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.core.errors import CapabilityNotSupportedError
from powercontext.core.models import EmbeddingProfile, EmbeddingResult, MemoryEntryInput
from powercontext.service import MemoryService

GOOD = ("ok", "scaled")
FATES = ("ok", "scaled", "nan", "zero", "short", "empty")


class _Model:
    """A third-party-style model: ConnectionError when down; the vector a text asks for."""

    def __init__(self) -> None:
        self.inner = DeterministicEmbedding(dimension=16)
        self.down = False

    @property
    def profile(self) -> EmbeddingProfile:
        return self.inner.profile

    async def embed(self, texts: tuple[str, ...]) -> Any:
        if self.down:
            raise ConnectionError("connection refused (test)")
        vectors = (await self.inner.embed(texts)).vectors
        out = []
        for text, v in zip(texts, vectors, strict=True):
            fate = text.split()[-1] if text.split()[-1] in FATES else "ok"  # queries: ok
            out.append({"ok": list(v), "scaled": [2.5 * x for x in v],
                        "nan": [math.nan] * len(v), "zero": [0.0] * len(v),
                        "short": list(v[1:]), "empty": []}[fate])
        return EmbeddingResult(tuple(out))  # type: ignore[arg-type]


steps = st.lists(
    st.tuples(st.booleans(), st.lists(st.sampled_from(FATES), min_size=1, max_size=4)),
    min_size=1, max_size=4,
)


@given(steps, st.booleans())
def test_writes_commit_and_vectors_and_search_modes_follow_the_model(plan, down_at_query):
    asyncio.run(_check(plan, down_at_query))


async def _check(plan: list[tuple[bool, list[str]]], down_at_query: bool) -> None:
    model = _Model()
    counter = itertools.count(1)
    svc = MemoryService(InMemoryBackend(profile=model.profile), embedding_model=model,
                        entropy=lambda n: next(counter).to_bytes(n, "big"))
    n = itertools.count()
    expected: dict[str, bool] = {}  # entry text -> has a vector
    ref = None
    try:
        for i, (down, fates) in enumerate(plan):
            model.down = down
            texts = [f"entry {next(n)} {f}" for f in fates]
            ref = await svc.remember(ref, entries=[MemoryEntryInput("fact", t) for t in texts])
            assert ref is not None and ref.revision == i + 1
            for t, f in zip(texts, fates, strict=True):
                expected[t] = not down and f in GOOD
        assert ref is not None
        assert await _with_vectors(svc, ref) == {t for t, ok in expected.items() if ok}

        model.down = down_at_query
        complete = all(expected.values())
        res = await svc.search("entry", (ref,), mode="auto")
        assert len(res.hits) == min(len(expected), 8)
        assert (res.mode == "fts") == (res.fallback_reason is not None)
        assert res.mode == ("hybrid" if complete and not down_at_query else "fts")
        if down_at_query:
            assert "ConnectionError" in res.fallback_reason
        if down_at_query or not complete:
            with pytest.raises(CapabilityNotSupportedError):
                await svc.search("entry", (ref,), mode="vector")
        else:
            assert (await svc.search("entry", (ref,), mode="vector")).mode == "vector"

        model.down = False
        report = await svc.backend.rebuild(model)
        fates_by_text = {t: t.rsplit(" ", 1)[1] for t in expected}
        good = {t for t, f in fates_by_text.items() if f in GOOD}
        assert await _with_vectors(svc, ref) == good
        versions = await svc.entries(ref)
        bad_ids = {e for e, v in versions.items() if v.text not in good}
        assert {e for _, e, _ in report.missing} == bad_ids
        assert report.vectors == len(good) and report.kept == 0
    finally:
        await svc.close()


async def _with_vectors(svc: MemoryService, ref: Any) -> set[str]:
    backend = svc.backend
    assert isinstance(backend, InMemoryBackend)
    stored = await backend._run(backend._in_tx, False, backend.projection.head_vectors,
                                ref.artifact_id)
    versions = await svc.entries(ref)
    return {v.text for v in versions.values() if v.entry_version_id in stored}
