"""The SQLite vector channel's ANN path (issue 14; Memory RFC, "Search and reads": the
vector channel performs ANN retrieval; sql/sqlite.py, ``vector_ann_search``).

* A Memory no larger than the first pass's candidate count (``ANN_FIRST_K *
  ANN_OVERFETCH`` = 512) is searched exactly: ANN + rescore gives exactly the exact-KNN
  answer, admission and order included, at every limit and mode (Hypothesis).
* A larger Memory keeps the channel's rules: a smaller limit is a prefix, hits are in
  ascending distance, admitted only.
* The sign-bit rows follow the float rows in every write (no orphan, none missing).
* A database made before the first pass existed searches exactly and is upgraded by
  ``rebuild``; the deterministic hash embedder's (sparse) vectors stay exact by default.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
import random
from pathlib import Path
from typing import Any

import apsw
import pytest
import sqlite_vec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    EmbeddingResult,
    MemoryEntryInput,
)
from powercontext.service import MemoryService
from powercontext.sql import sqlite as frag

DIM = 16


class _DenseVectors:
    """An EmbeddingModel of dense unit vectors seeded by the text's hash; texts ending in
    the same ``#<n>`` share a vector (equal distances: ties for the tie-break)."""

    def __init__(self, distinct: int = 0) -> None:
        self.profile = EmbeddingProfile(f"dense-{DIM}", "test/dense", DIM)
        self.distinct = distinct

    async def embed(self, texts: tuple[str, ...]) -> Any:
        return EmbeddingResult(tuple(self.vector(t) for t in texts))

    def vector(self, text: str) -> tuple[float, ...]:
        seed = text.rsplit("#", 1)[-1] if self.distinct else text
        rnd = random.Random(hashlib.sha256(seed.encode()).digest())
        v = [rnd.gauss(0.0, 1.0) for _ in range(DIM)]
        n = math.sqrt(sum(x * x for x in v))
        return tuple(x / n for x in v)


def _service(path: Path, model: Any, vector_index: str) -> MemoryService:
    clock = itertools.count(1_700_000_000_000)
    entropy = itertools.count(1)
    return MemoryService(
        SQLiteMemoryBackend(str(path), profile=model.profile,
                            vector_index=vector_index),  # type: ignore[arg-type]
        embedding_model=model, clock=lambda: next(clock),
        entropy=lambda n: next(entropy).to_bytes(n, "big"))


async def _build(svc: MemoryService, texts: list[str]) -> ArtifactRef:
    ref: ArtifactRef | None = None
    for start in range(0, len(texts), 250):
        ref = await svc.remember(ref, mode="append", entries=tuple(
            MemoryEntryInput("fact", t) for t in texts[start:start + 250]))
    assert ref is not None
    return ref


def _keys(result: Any) -> list[tuple[str, str, float, tuple[str, ...]]]:
    return [(h.entry_id, h.entry_version_id, h.score, h.matched_by) for h in result.hits]


def _raw(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    return conn


def _rowids(path: Path) -> tuple[list[int], list[int]]:
    """(float vec0 rowids, sign-bit vec0 rowids), sorted."""
    conn = _raw(path)
    try:
        return ([r for (r,) in conn.execute(f"SELECT rowid FROM {frag.VECTOR_TABLE} "
                                             "ORDER BY rowid")],
                [r for (r,) in conn.execute(f"SELECT rowid FROM {frag.BITS_TABLE} "
                                             "ORDER BY rowid")])
    finally:
        conn.close()


class _Pair:
    """The same Memory on an ANN and an exact SQLite database (same ids)."""

    def __init__(self, root: Path, texts: list[str], model: Any) -> None:
        self.svcs = {ix: _service(root / f"{ix}.db", model, ix) for ix in ("ann", "exact")}
        self.refs = {ix: asyncio.run(_build(svc, texts)) for ix, svc in self.svcs.items()}
        assert self.refs["ann"] == self.refs["exact"]
        assert self.svcs["ann"].backend._ann  # type: ignore[attr-defined]
        assert not self.svcs["exact"].backend._ann  # type: ignore[attr-defined]

    def search(self, ix: str, query: str, limit: int, mode: str) -> Any:
        return asyncio.run(self.svcs[ix].search(query, (self.refs[ix],), limit=limit,
                                                mode=mode))

    def close(self) -> None:
        for svc in self.svcs.values():
            asyncio.run(svc.close())


WORDS = ["kiwi", "plum", "fig", "lime", "pear", "date", "yuzu", "sloe"]


def _texts(n: int, distinct: int) -> list[str]:
    rnd = random.Random(5)
    return [f"{' '.join(rnd.choices(WORDS, k=rnd.randint(1, 4)))} n{i} #{i % distinct}"
            for i in range(n)]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # 400 entries, 150 distinct vectors: within one first pass, so ANN is exact
    pair = _Pair(tmp_path_factory.mktemp("ann_small"), _texts(400, 150), _DenseVectors(150))
    yield pair
    pair.close()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # 2,000 entries: the first pass sees a quarter of the Memory
    pair = _Pair(tmp_path_factory.mktemp("ann_big"), _texts(2000, 2000), _DenseVectors())
    yield pair
    pair.close()


_SETTINGS = settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
queries = st.text(alphabet="abcdefghij kiwplum", min_size=1, max_size=20).filter(
    lambda s: s.strip() != "")


@_SETTINGS
@given(query=queries, limit=st.integers(1, 120))
def test_ann_is_exact_when_the_first_pass_covers_the_memory(small, query, limit):
    for mode in ("vector", "hybrid"):
        assert _keys(small.search("ann", query, limit, mode)) == \
            _keys(small.search("exact", query, limit, mode)), mode


@_SETTINGS
@given(query=queries, ab=st.tuples(st.integers(1, 120), st.integers(1, 120)))
def test_ann_on_a_large_memory_keeps_the_channel_rules(big, query, ab):
    a, b = sorted(ab)
    at_a, at_b = (big.search("ann", query, n, "vector") for n in (a, b))
    assert _keys(at_a) == _keys(at_b)[:a]
    assert all(h.matched_by == ("vector",) for h in at_b.hits)
    scores = [h.score for h in at_b.hits]
    assert scores == sorted(scores, reverse=True)


def test_ann_candidates_are_in_exact_distance_order(big):
    backend = big.svcs["ann"].backend
    model = _DenseVectors()
    q = model.vector("kiwi plum")
    found = backend.projection.vector_candidates([big.refs["ann"].artifact_id], q, 40)
    assert len(found) == 40
    exact = {c.entry_version_id: c.distance for c in
             big.svcs["exact"].backend.projection.vector_candidates(
                 [big.refs["exact"].artifact_id], q, 2000)}
    for c in found:  # the rescored distance is the exact one
        assert c.distance == pytest.approx(exact[c.entry_version_id], abs=1e-6)
    assert [c.distance for c in found] == sorted(c.distance for c in found)


def test_sign_bit_rows_follow_every_write(tmp_path: Path) -> None:
    model = _DenseVectors()
    svc = _service(tmp_path / "w.db", model, "auto")

    async def body() -> None:
        try:
            ref = await _build(svc, [f"fig note {i}" for i in range(30)])
            heads = await svc.search("fig", (ref,), limit=10, mode="vector")
            gone = [h.entry_id for h in heads.hits[:5]]
            ref = await svc.forget(ref, gone)
            ref = await svc.remember(ref, mode="append", entries=(
                MemoryEntryInput("fact", "fig late"),))
            ref = await svc.reactivate(ref, gone[:2])
        finally:
            await svc.close()

    asyncio.run(body())
    floats, bits = _rowids(tmp_path / "w.db")
    assert len(floats) == 30 - 5 + 1 + 2
    assert floats == bits


def test_an_older_database_searches_exactly_until_a_rebuild(tmp_path: Path) -> None:
    model = _DenseVectors()
    texts = [f"{w} row {i}" for i, w in enumerate(WORDS * 90)]  # 720 > 512
    exact = _service(tmp_path / "exact.db", model, "exact")
    old_path = tmp_path / "old.db"
    old = _service(old_path, model, "ann")
    refs = [asyncio.run(_build(svc, texts)) for svc in (exact, old)]
    asyncio.run(old.close())
    conn = _raw(old_path)  # a database made before the first pass existed
    conn.execute(f"DROP TABLE {frag.BITS_TABLE}")
    conn.close()

    def hits(svc: MemoryService, ref: ArtifactRef) -> Any:
        return _keys(asyncio.run(svc.search("kiwi row", (ref,), limit=30, mode="vector")))

    reopened = _service(old_path, model, "ann")
    try:
        backend: Any = reopened.backend
        assert hits(reopened, refs[1]) == hits(exact, refs[0])
        assert not backend._bits and not backend._ann
        ref = asyncio.run(reopened.remember(refs[1], mode="append", entries=(
            MemoryEntryInput("fact", "kiwi after"),)))  # writes need no first pass
        report = asyncio.run(backend.rebuild(model))
        assert report.entries == 721 and not report.missing
        assert backend._bits and backend._ann
        floats, bits = _rowids(old_path)
        assert len(floats) == 721 and floats == bits
        assert hits(reopened, ref)[0][3] == ("vector",)
    finally:
        asyncio.run(reopened.close())
        asyncio.run(exact.close())


def test_auto_searches_exactly_and_ann_is_asked_for(tmp_path: Path) -> None:
    model = DeterministicEmbedding(dimension=32)
    auto = SQLiteMemoryBackend(str(tmp_path / "a.db"), profile=model.profile)
    forced = SQLiteMemoryBackend(str(tmp_path / "b.db"), profile=model.profile,
                                 vector_index="ann")
    try:
        asyncio.run(auto.capabilities())
        asyncio.run(forced.capabilities())
        assert auto._bits and not auto._ann  # the first pass is kept, but not used
        assert forced._ann
    finally:
        asyncio.run(auto.close())
        asyncio.run(forced.close())
    with pytest.raises(ValueError):
        SQLiteMemoryBackend(str(tmp_path / "c.db"), vector_index="fast")  # type: ignore[arg-type]


def test_a_dimension_not_a_multiple_of_8_has_no_first_pass(tmp_path: Path) -> None:
    assert frag.vector_bits_ddl(12) is None
    assert "bit[16]" in (frag.vector_bits_ddl(16) or "")
    profile = EmbeddingProfile("odd-12", "test/odd", 12)
    b = SQLiteMemoryBackend(str(tmp_path / "o.db"), profile=profile, vector_index="ann")
    try:
        asyncio.run(b.capabilities())
        assert not b._bits and not b._ann
    finally:
        asyncio.run(b.close())
