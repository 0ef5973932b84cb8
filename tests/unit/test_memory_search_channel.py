"""The order of a channel's filters (adapters.memory_search ``_channel_sync``): fts checks
admission before trust (issue 14: trust on the admitted rows only); the vector channel
checks trust first and ends only at a trusted row's refusal (an ANN stream is not
monotone across its growing k, so ending at a stale row lost a nearer one)."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from powercontext.adapters.memory_search import MemorySearch
from powercontext.core import ranking
from powercontext.core.ranking import SearchCandidate, SearchHead

HASH = "h" * 64


def _cand(entry: str, version: str, distance: float | None = None,
          text: str = "t") -> SearchCandidate:
    return SearchCandidate("mem", entry, version, HASH, text, distance)


def _heads(entries: str) -> dict[str, SearchHead]:
    manifest = {e: NS(state="active", entry_version_id=e + "1", entry_content_hash=HASH)
                for e in entries}
    return {"mem": SearchHead(NS(artifact_id="mem"), manifest)}  # type: ignore[arg-type]


def _backend(pages: Any) -> MemorySearch:
    """A MemorySearch over a projection answering ``pages(k)`` and rows that hold every
    version asked for (nothing else is called)."""
    projection = NS(vector_k_cap=None, vector_first_k=lambda first: 3,
                    vector_candidates=lambda ids, vector, k: pages(k))
    rows = NS(entry_versions=lambda wanted: [NS(entry_version_id=w) for w in wanted])
    return MemorySearch(NS(), NS(rows=rows), projection, NS(), NS())  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _confirm_every_read_version(monkeypatch: pytest.MonkeyPatch) -> None:
    # the version check is not what these tests are about
    monkeypatch.setattr(ranking, "confirmed", lambda c, v, heads: v is not None)


def test_an_ann_stream_keeps_a_nearer_row_found_after_a_stale_refused_one() -> None:
    a, t, x = _cand("a", "a1", 0.5), _cand("t", "t1", 0.6), _cand("x", "x1", 1.4)
    stale = _cand("u", "u-old", 1.3)  # the manifest names u1: an untrusted projection row

    def pages(k: int) -> list[SearchCandidate]:  # T is found only at the larger k
        return [a, stale, x][:k] if k <= 3 else [a, t, stale, x][:k]

    b = _backend(pages)
    stream = b.vector_stream(["mem"], None, 32)  # type: ignore[arg-type]
    got = b._channel_sync("vector", stream, 32, _heads("atxu"), {})
    assert [c.entry_id for c in got] == ["a", "t"]


def test_fts_keeps_the_trusted_admitted_rows_in_stream_order() -> None:
    rows = [_cand("a", "a1", text="alpha beta"), _cand("b", "b-old", text="alpha beta"),
            _cand("c", "c1", text="gamma"), _cand("d", "d1", text="beta alpha")]
    b = _backend(lambda k: [])
    got = b._channel_sync("fts", iter(rows), 32, _heads("abcd"), {}, ("alpha", "beta"))
    assert [c.entry_id for c in got] == ["a", "d"]  # b untrusted, c not admitted
