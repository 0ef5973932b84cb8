"""The OceanBase Memory backend's vector stream (adapters/memory_search.py over
adapters/oceanbase/memory_projection.py), without a server: the HNSW scans it asks for. An HNSW
answer depends on the scan's ``k``, so the first ``k`` is one constant at every limit
(a smaller limit then reads a prefix of the same stream), and ``k`` never passes the
largest one seekdb accepts (``APPROXIMATE LIMIT`` above 16,384 answers 1235)."""

from __future__ import annotations

import pytest

from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
from powercontext.adapters.oceanbase.memory_projection import OceanBaseMemoryProjection
from powercontext.core.ranking import SearchCandidate
from powercontext.sql import oceanbase as obsql


class ScansProjection(OceanBaseMemoryProjection):
    """Answers every scan with ``rows`` candidates at distances ``distance(i)``."""

    def __init__(self, storage, rows: int, distance) -> None:  # type: ignore[no-untyped-def]
        super().__init__(storage)
        self.rows, self.distance, self.ks = rows, distance, []

    def vector_candidates(self, artifact_ids, vector, limit):  # type: ignore[no-untyped-def]
        self.ks.append(limit)
        return [SearchCandidate("m", f"e{i:06d}", f"v{i:06d}", "h", "t", self.distance(i))
                for i in range(min(limit, self.rows))]


class Scans(OceanBaseMemoryBackend):
    """The backend with :class:`ScansProjection` (never connected)."""

    def __init__(self, rows: int, distance) -> None:  # type: ignore[no-untyped-def]
        super().__init__("oceanbase://root:@127.0.0.1:1/unused")
        self.scans = ScansProjection(self, rows, distance)
        self._search._projection = self.scans

    @property
    def ks(self) -> list[int]:
        return self.scans.ks  # type: ignore[no-any-return]

    def _vector_stream_sync(self, ids, vector, first):  # type: ignore[no-untyped-def]
        return self._search.vector_stream(ids, vector, first)


@pytest.mark.parametrize("first", [1, 5, 40, 63, 161])
def test_the_first_scan_asks_the_same_k_at_every_limit(first):
    b = Scans(10_000, lambda i: i / 10_000)
    stream = b._vector_stream_sync(["m"], (1.0, 0.0), first)
    got = [next(stream) for _ in range(first)]
    assert b.ks[0] == obsql.ANN_FIRST_K
    assert [c.entry_id for c in got] == [f"e{i:06d}" for i in range(first)]


def test_rows_tied_past_the_largest_scan_stop_at_the_cap():
    # 20,000 rows at one distance: no row's place is certain below the last one, so the
    # stream doubles k; seekdb refuses k > 16,384, so the largest scan is yielded as given
    b = Scans(20_000, lambda i: 0.5)
    got = list(b._vector_stream_sync(["m"], (1.0, 0.0), 40))
    assert max(b.ks) == obsql.MAX_APPROXIMATE_K == b.ks[-1]
    assert b.ks == sorted(b.ks) and len(got) == obsql.MAX_APPROXIMATE_K
    assert len({c.entry_id for c in got}) == len(got)
