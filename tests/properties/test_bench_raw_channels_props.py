"""Property: the performance benchmark's raw yardstick (bench/perf/) returns exactly
the hits of ``MemoryService.search`` (issue 9: the same admitted candidates in the same
order, the budget counted after admission, every term searched), for any small corpus
over a small vocabulary (so ties in bm25 and admission refusals are common), any query
and one or three Memories, on the real SQLite engine."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from bench_samples import raw_channel_checks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import perf  # noqa: E402
from powercontext.adapters.embedding.deterministic import (  # noqa: E402
    DeterministicEmbedding,
)

WORDS = ["lake", "puppy", "paint", "sunset", "the", "is", "of", "name", "ben", "ana"]
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(text, min_size=1, max_size=60),
    queries=st.lists(text, min_size=1, max_size=4),
    memories=st.sampled_from([1, 3]),
)
def test_raw_channels_equal_the_library_channels(
    turns: list[str], queries: list[str], memories: int
) -> None:
    model = DeterministicEmbedding(perf.DIM)
    with tempfile.TemporaryDirectory() as tmp:
        engine = perf.SQLiteEngine(Path(tmp), model)

        async def go() -> None:
            ds = await perf.load_dataset(engine, turns, max(len(turns), memories), memories)
            try:
                _sample, checks = await raw_channel_checks(engine, ds, model, queries)
                for check in checks.values():
                    assert check["mismatches"] == 0, check
            finally:
                await ds.svc.close()

        asyncio.run(go())
