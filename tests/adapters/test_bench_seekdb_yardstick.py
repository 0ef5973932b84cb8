"""The benchmark's raw seekdb yardstick (bench/perf/engines.py ``SeekdbEngine``) returns
the admitted candidates MemoryService.search returns, in the same order, for fts, vector
and hybrid, on one Memory and on ten (issue 14: at 100k x10 the vector yardstick had
asked one ``APPROXIMATE LIMIT 40`` scan where the library reads scans of a growing
``k`` with an exact rerun of a short answer, so the two differed on 32 of 40 queries)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from bench_samples import assert_raw_channels_match, write_tiny_locomo
from oceanbase_server import seekdb_available

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import perf  # noqa: E402

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]


@pytest.mark.parametrize("memories", [1, 10])
def test_the_seekdb_yardstick_returns_the_library_hits(tmp_path, seekdb_url, memories):
    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

    data = write_tiny_locomo(tmp_path / "locomo.json", unanswerable=True)
    turns, questions = perf.load_corpus(data)
    turns = [*turns, "Ana: the the the the", "Ben: is is of of the"]
    model = DeterministicEmbedding(perf.DIM)
    engine = perf.SeekdbEngine(model, seekdb_url)

    async def go() -> None:
        ds = await perf.load_dataset(engine, turns, 150, memories)
        ids = sorted(h.artifact_id for h in ds.heads)
        try:
            sample = await assert_raw_channels_match(engine, ds, model, questions)
            engine.open_raw(ds.svc)
            recall = [engine.ann_recall(ids, s[2], 32) for s in sample]
            assert all(r is not None and 0.0 <= r <= 1.0 for r in recall)
        finally:
            engine.close_raw()
            await ds.svc.close()
            engine.close()

    asyncio.run(go())
