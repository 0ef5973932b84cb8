"""Search results are the spec's, never a shortcut's (issue 9, items 1 and 2; Memory RFC,
"Search and reads"; ARCHITECTURE.md, "Decisions").

Each channel contributes the first ``max(limit * 4, 32)`` *admitted* candidates in the
backend's order, so:

* no query term is ever left out of the full-text query (a common term still counts);
* the full-text hit set equals a reference computed in Python from Analyzer v1 tokens
  and the admission rule of :mod:`powercontext.core.search_admission`, on SQLite and seekdb
  alike, over a 5,000-entry Memory with a skewed (Zipf-like) vocabulary;
* the list at a smaller limit is a prefix of the list at a larger one (fts, vector), or
  at least as long as it can be (hybrid, auto), on SQLite, seekdb and the in-memory fake.

The big Memories are built once per engine (module fixtures, written in batches);
Hypothesis generates the queries and limits.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oceanbase_server import fresh_database, seekdb_available
from support.fakes import InMemoryBackend

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import analyzer, search_admission
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.service import MAX_SEARCH_LIMIT, MemoryService

_SEEKDB = [pytest.mark.oceanbase,
           pytest.mark.skipif(not seekdb_available(),
                              reason="needs pylibseekdb or POWERCONTEXT_TEST_OCEANBASE_URL")]
ENGINES = ["sqlite", pytest.param("oceanbase", marks=_SEEKDB), "fake"]
BIG = 5000  # entries of the generated Memory on the real engines
SMALL = 400  # the fake copies its whole state per transaction: a smaller Memory
BATCH = 500
MODES = ("fts", "vector", "hybrid", "auto")

# ----------------------------------------------------------------------------- corpus

_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def _vocabulary(n: int, rnd: random.Random) -> list[str]:
    """``n`` distinct pseudo-words, none of them a stopword and none changed by the
    stemmer (so a word is its own term), in rank order (rank 0 is the most common)."""
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        w = "".join(rnd.choice(_SYLLABLES) for _ in range(rnd.randint(2, 3)))
        if w in seen or analyzer.query_terms(w) != (w,):
            continue
        seen.add(w)
        out.append(w)
    return out


VOCAB = _vocabulary(600, random.Random(9))
_ZIPF = [1.0 / (rank + 1) ** 1.1 for rank in range(len(VOCAB))]


def corpus(n: int, seed: int = 1) -> list[str]:
    """``n`` distinct entry texts: 2..24 words drawn with Zipf-like weights (a few words
    occur in a large share of the rows), each ending in a unique id word."""
    rnd = random.Random(seed)
    texts = []
    for i in range(n):
        k = rnd.choice((2, 3, 4, 5, 6, 8, 12, 24))
        words = rnd.choices(VOCAB, weights=_ZIPF, k=k)
        texts.append(" ".join(words) + f" id{i}")
    return texts


async def _build(svc: MemoryService, texts: list[str]) -> ArtifactRef:
    ref: ArtifactRef | None = None
    for start in range(0, len(texts), BATCH):
        ref = await svc.remember(ref, mode="append", entries=tuple(
            MemoryEntryInput("fact", t) for t in texts[start:start + BATCH]))
    assert ref is not None
    return ref


class Corpus:
    """A Memory of generated texts on one engine, with the reference tokens."""

    def __init__(self, svc: MemoryService, ref: ArtifactRef, texts: list[str]) -> None:
        self.svc, self.ref, self.texts = svc, ref, texts
        self.tokens = [set(analyzer.analyze(t)) for t in texts]

    def search(self, query: str, limit: int, mode: str) -> Any:
        return asyncio.run(self.svc.search(query, (self.ref,), limit=limit, mode=mode))

    def admitted(self, query: str) -> set[str]:
        """The reference: every entry the FTS admission rule admits for ``query``."""
        terms = analyzer.query_terms(query)
        return {t for t, toks in zip(self.texts, self.tokens, strict=True)
                if search_admission.fts_admits(terms, toks)}


def _clock() -> Any:
    counter = itertools.count(1_700_000_000_000)
    return lambda: next(counter)


def _entropy() -> Any:
    counter = itertools.count(1)
    return lambda n: next(counter).to_bytes(n, "big")


@pytest.fixture(scope="module")
def seekdb_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """The database of the big Memory (its schema has the vector column)."""
    url = request.getfixturevalue("seekdb_url")
    with fresh_database(url, "pc_exact") as db:
        yield db


@pytest.fixture
def seekdb_fresh(request: pytest.FixtureRequest) -> Iterator[str]:
    url = request.getfixturevalue("seekdb_url")
    with fresh_database(url, "pc_exact_small") as db:
        yield db


def _corpus_fixture(engine: str, request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    model = DeterministicEmbedding(dimension=32)
    backend: Any
    if engine == "sqlite":
        path = tmp_path_factory.mktemp("exact") / "m.db"
        backend = SQLiteMemoryBackend(str(path), profile=model.profile)
    elif engine == "oceanbase":
        backend = OceanBaseMemoryBackend(request.getfixturevalue("seekdb_db"),
                                         profile=model.profile)
    else:
        backend = InMemoryBackend(profile=model.profile)
    svc = MemoryService(backend, embedding_model=model, clock=_clock(), entropy=_entropy())
    texts = corpus(SMALL if engine == "fake" else BIG)
    ref = asyncio.run(_build(svc, texts))
    try:
        yield Corpus(svc, ref, texts)
    finally:
        asyncio.run(svc.close())


@pytest.fixture(scope="module", params=ENGINES)
def big(request: pytest.FixtureRequest) -> Corpus:
    """The generated Memory on each engine (built once per module and engine)."""
    name = {"sqlite": "big_sqlite", "oceanbase": "big_seekdb", "fake": "big_fake"}
    corpus: Corpus = request.getfixturevalue(name[request.param])
    return corpus


@pytest.fixture(scope="module")
def big_fake(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Corpus]:
    yield from _corpus_fixture("fake", request, tmp_path_factory)


@pytest.fixture(scope="module")
def big_sqlite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[Corpus]:
    yield from _corpus_fixture("sqlite", request, tmp_path_factory)


@pytest.fixture(scope="module")
def big_seekdb(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[Corpus]:
    yield from _corpus_fixture("oceanbase", request, tmp_path_factory)


# ----------------------------------------------------------------------------- queries

_word = st.one_of(
    st.sampled_from(VOCAB[:8]),  # in a large share of the rows
    st.sampled_from(VOCAB[:80]),
    st.sampled_from(VOCAB),
    st.sampled_from(("the", "of", "zzqx", "id7", "id4242")),  # stopwords, unknown, ids
)
queries = st.lists(_word, min_size=1, max_size=12).map(" ".join)
# Every example runs up to eight searches of a 5,000-entry Memory per engine: a quarter
# of the profile's examples (at least 12) keeps a CI run within minutes.
_SETTINGS = settings(max_examples=max(12, settings.default.max_examples // 4),
                     suppress_health_check=[HealthCheck.too_slow,
                                            HealthCheck.function_scoped_fixture])


def _keys(result: Any) -> list[tuple[Any, ...]]:
    return [(h.memory_ref, h.entry_id, h.entry_version_id, h.score, h.matched_by)
            for h in result.hits]


# ----------------------------------------------------------------------------- item 1


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("oceanbase", marks=_SEEKDB)])
def test_common_terms_are_never_left_out_of_the_query(engine, request, tmp_path):
    """2,002 entries where "alpha" and "bravo" each occur in about half the rows: the
    one entry holding both is the only admitted one for a four-term query."""
    if engine == "sqlite":
        backend: Any = SQLiteMemoryBackend(str(tmp_path / "m.db"))
    else:
        backend = OceanBaseMemoryBackend(request.getfixturevalue("seekdb_fresh"))
    svc = MemoryService(backend)

    async def body() -> list[str]:
        try:
            texts = ([f"alpha note {i}" for i in range(1000)]
                     + [f"bravo item {i}" for i in range(1001)] + ["alpha bravo together"])
            ref = await _build(svc, texts)
            res = await svc.search("alpha bravo charlie delta", (ref,), mode="fts")
            return [h.text for h in res.hits]
        finally:
            await svc.close()

    assert asyncio.run(body()) == ["alpha bravo together"]


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("oceanbase", marks=_SEEKDB)])
@_SETTINGS
@given(query=queries)
def test_fts_hits_are_the_reference_admitted_set(engine, request, query):
    """Every engine's full-text hits at the largest limit are exactly the entries the
    spec's rules admit (when they fit in one result), else that many of them."""
    c: Corpus = request.getfixturevalue("big_sqlite" if engine == "sqlite" else "big_seekdb")
    expected = c.admitted(query)
    got = [h.text for h in c.search(query, MAX_SEARCH_LIMIT, "fts").hits]
    assert len(got) == len(set(got))
    if len(expected) <= MAX_SEARCH_LIMIT:
        assert set(got) == expected
    else:
        assert len(got) == MAX_SEARCH_LIMIT and set(got) <= expected


@pytest.mark.oceanbase
@pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb")
@_SETTINGS
@given(query=queries)
def test_sqlite_and_seekdb_return_the_same_fts_hit_set(big_sqlite, big_seekdb, query):
    expected = big_sqlite.admitted(query)
    expected_len = min(len(expected), MAX_SEARCH_LIMIT)
    lite = {h.text for h in big_sqlite.search(query, MAX_SEARCH_LIMIT, "fts").hits}
    ob = {h.text for h in big_seekdb.search(query, MAX_SEARCH_LIMIT, "fts").hits}
    assert len(lite) == len(ob) == expected_len
    if expected_len == len(expected):
        assert lite == ob == expected


# ----------------------------------------------------------------------------- item 2

LONG = ("During the quarterly planning meeting the procurement group reviewed at length how "
        "the regional distributors negotiated the apple and banana supply contracts, "
        "including delivery windows, refrigerated transport, insurance clauses, payment "
        "schedules, penalties for late arrival, seasonal price adjustments and the audit "
        "rights that both parties keep for years")


@pytest.mark.parametrize("engine", ENGINES)
def test_candidates_refused_by_admission_never_crowd_out_an_admitted_one(
        engine, request, tmp_path):
    """Rows matching one term of three fill the first 32 places of the backend's order;
    the long entry matching two is still found at ``limit=8``."""
    if engine == "sqlite":
        backend: Any = SQLiteMemoryBackend(str(tmp_path / "m.db"))
    elif engine == "oceanbase":
        backend = OceanBaseMemoryBackend(request.getfixturevalue("seekdb_fresh"))
    else:
        backend = InMemoryBackend()
    svc = MemoryService(backend)

    async def body() -> dict[int, list[str]]:
        try:
            texts = ([f"zebra crossing note {i}" for i in range(40)]
                     + [f"apple harvest report number {i} for the orchard team"
                        for i in range(60)]
                     + [f"banana shipment record number {i} for the warehouse team"
                        for i in range(60)] + [LONG])
            ref = await _build(svc, texts)
            return {limit: [h.text for h in (await svc.search(
                "zebra apple banana", (ref,), limit=limit, mode="fts")).hits]
                for limit in (1, 8, 50)}
        finally:
            await svc.close()

    assert asyncio.run(body()) == {1: [LONG], 8: [LONG], 50: [LONG]}


limits = st.tuples(st.integers(1, 160), st.integers(1, 160)).filter(lambda t: t[0] != t[1])


@_SETTINGS
@given(query=queries, ab=limits)
def test_a_smaller_limit_returns_a_prefix_never_less(big, query, ab):
    a, b = sorted(ab)
    for mode in MODES:
        at_a, at_b = big.search(query, a, mode), big.search(query, b, mode)
        assert at_a.mode == at_b.mode
        if mode in ("fts", "vector"):
            assert _keys(at_a) == _keys(at_b)[:a], mode
        else:  # RRF over deeper channel lists may reorder the tail, never shorten it
            assert len(at_a.hits) == min(a, len(at_b.hits)), mode


class _FewVectors:
    """An EmbeddingModel with only three distinct unit vectors: most distances tie, so
    nearest-neighbour answers cut through runs of equal distances."""

    def __init__(self) -> None:
        from powercontext.core.models import EmbeddingProfile

        self.profile = EmbeddingProfile("few-vectors-4", "test/few-vectors", 4)

    async def embed(self, texts: tuple[str, ...]) -> Any:
        from powercontext.core.models import EmbeddingResult

        basis = ((1.0, 0.0, 0.0, 0.0), (0.6, 0.8, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0))
        return EmbeddingResult(tuple(basis[len(t) % 3] for t in texts))


@pytest.mark.parametrize("engine", ENGINES)
def test_equal_distances_never_break_the_prefix(engine, request, tmp_path):
    model = _FewVectors()
    if engine == "sqlite":
        backend: Any = SQLiteMemoryBackend(str(tmp_path / "m.db"), profile=model.profile)
    elif engine == "oceanbase":
        backend = OceanBaseMemoryBackend(request.getfixturevalue("seekdb_fresh"),
                                         profile=model.profile)
    else:
        backend = InMemoryBackend(profile=model.profile)
    svc = MemoryService(backend, embedding_model=model, clock=_clock(), entropy=_entropy())

    async def body() -> None:
        try:
            ref = await _build(svc, [f"kiwi note {i}" for i in range(300)])
            for mode in ("vector", "hybrid"):
                res = {limit: _keys(await svc.search("kiwi", (ref,), limit=limit, mode=mode))
                       for limit in (1, 5, 8, 9, 33, 100)}
                for a, b in itertools.combinations(sorted(res), 2):
                    if mode == "vector":
                        assert res[a] == res[b][:a], (mode, a, b)
                    else:
                        assert len(res[a]) == min(a, len(res[b])), (mode, a, b)
        finally:
            await svc.close()

    asyncio.run(body())
