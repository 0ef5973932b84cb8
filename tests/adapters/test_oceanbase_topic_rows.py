"""The OceanBase Topic search projection (``adapters/oceanbase/topic_projection.py``) on a
real seekdb:
active rows replaced whole, each channel within one Scope in its total order, the
vector k cap, the exact rerun of a short ANN answer, the database-UTC clock."""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator

import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.adapters.oceanbase.engine import OceanBaseEngine
from powercontext.adapters.oceanbase.topic_projection import OceanBaseTopicProjection
from powercontext.adapters.storage.rows import utc_text
from powercontext.adapters.storage.sql_storage import SQLStorage
from powercontext.core.errors import CapabilityNotSupportedError, InvalidInputError
from powercontext.core.models import SourceRef
from powercontext.core.topic.models import (
    ChunkProjection,
    DetailChunk,
    TopicMemoryContent,
    TopicProjection,
    TopicRef,
    TopicWrite,
)
from powercontext.sql import oceanbase_topic as tsql
from powercontext.sql import templates

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]
DIM = 4


class _Rows(SQLStorage[None]):
    """The projection (``p``) over a bare connection (no family checks)."""

    def __init__(self, url: str, dimension: int | None) -> None:
        super().__init__()
        self.ob_engine = OceanBaseEngine(url)
        self._use_engine(self.ob_engine)
        self._dimension = dimension
        self.p = OceanBaseTopicProjection(self.ob_engine)

    def _open_sync(self) -> None:
        self._connect_sync()
        self.engine.opening(self._open_checked_sync)

    def _open_checked_sync(self) -> None:
        existing = self.ob_engine.tables()
        for name in templates.SCHEMA:
            if name != "create_memory_entry_heads":
                self.ob_engine.run_ddl(templates.render(name, "oceanbase"))
        self.p.create_tables(existing, self._dimension)

    def sync(self, fn, *args):
        self._ensure_open_sync()
        return self._in_tx(True, fn, *args)


@pytest.fixture
def rows(seekdb_url: str) -> Iterator[_Rows]:
    with fresh_database(seekdb_url, "pc_topic_rows") as url:
        r = _Rows(url, DIM)
        try:
            yield r
        finally:
            r._close_sync()


def _unit(*xs: float) -> tuple[float, ...]:
    n = sum(x * x for x in xs) ** 0.5
    return tuple(x / n for x in xs)


def _write(aid: str, rev: int, scope: str, topic_text: str, chunk_texts: list[str],
           vectors: bool = True) -> TopicWrite:
    chunks, pos = [], 0
    for i, t in enumerate(chunk_texts):
        chunks.append(ChunkProjection(DetailChunk(i, pos, pos + len(t), t), t,
                                      _unit(1.0, i + 1.0, 0.0, 0.5) if vectors else None))
        pos += len(t)
    proj = TopicProjection("chunks-v1", topic_text, tuple(chunks),
                           _unit(1.0, 0.0, 0.0, rev) if vectors else None,
                           "f" * 64 if vectors else None)
    return TopicWrite("create" if rev == 1 else "update", scope, TopicRef(aid, rev),
                      TopicRef(aid, rev - 1) if rev > 1 else None,
                      TopicMemoryContent("T " + aid, "S", "".join(chunk_texts)),
                      (SourceRef("src_1", "0" * 64),), proj)


def _publish(rows: _Rows, w: TopicWrite) -> None:
    def go():
        rows.ob_engine.run(templates.render("revision_insert", "oceanbase"),
                           (w.ref.artifact_id, w.ref.revision, "topic-memory", "identity", b"{}",
                            "0" * 64, "{}"))
        rows.p.delete_active(w.ref.artifact_id)
        rows.p.insert_active(w, w.projection.embedding_fingerprint)
    rows.sync(go)


def test_replacing_a_topic_swaps_all_its_rows_and_channels_stay_in_scope(rows):
    _publish(rows, _write("topic_art_a", 1, "s1", "alpha go", ["alpha one", "beta two"]))
    _publish(rows, _write("topic_art_b", 1, "s2", "alpha go", ["alpha three"]))
    page = rows.sync(rows.p.fts_rows, "topic_fts", "s1", ["alpha", "go"], 10, 0)
    assert [(c.ref, c.ordinal) for c in page] == [(TopicRef("topic_art_a", 1), None)]
    _publish(rows, _write("topic_art_a", 2, "s1", "gamma", ["gamma", "alpha x", "alpha y"]))
    assert rows.sync(rows.p.fts_rows, "topic_fts", "s1", ["alpha"], 10, 0) == []
    detail = rows.sync(rows.p.fts_rows, "detail_fts", "s1", ["alpha"], 10, 0)
    assert [(c.ref.revision, c.ordinal) for c in detail] == [(2, 1), (2, 2)]
    near = rows.sync(rows.p.vector_rows, "detail_vector", "s1", _unit(1, 1, 0, .5), 3840)
    assert [(c.ref.revision, c.ordinal) for c in near] == [(2, 0), (2, 1), (2, 2)]
    assert near[0].distance == pytest.approx(0.0, abs=1e-5)
    assert [c.ref for c in rows.sync(rows.p.vector_rows, "topic_vector", "s2",
                                     _unit(1, 0, 0, 1), 10)] == [TopicRef("topic_art_b", 1)]
    assert rows.sync(rows.p.cards, "s1", ["topic_art_a", "topic_art_b"]) == {
        "topic_art_a": (TopicRef("topic_art_a", 2), "T topic_art_a", "S")}
    assert rows.sync(rows.p.chunk_text, TopicRef("topic_art_a", 2), 2) == "alpha y"
    assert rows.sync(rows.p.chunk_text, TopicRef("topic_art_a", 1), 0) is None
    assert rows.sync(rows.p.missing_vectors, "f" * 64) == 0
    assert rows.sync(rows.p.missing_vectors, "e" * 64) == 6


def test_fts_pages_at_growing_offsets_are_the_whole_ordered_answer(rows):
    for i in range(7):
        _publish(rows, _write(f"topic_art_{i}", 1, "s", "alpha", ["alpha"] * 3))
    whole = rows.sync(rows.p.fts_rows, "detail_fts", "s", ["alpha"], 100, 0)
    pages = [c for off in range(0, 21, 4)
             for c in rows.sync(rows.p.fts_rows, "detail_fts", "s", ["alpha"], 4, off)]
    assert pages == whole and len(whole) == 21
    assert [(c.ref.artifact_id, c.ordinal) for c in whole] == sorted(
        (c.ref.artifact_id, c.ordinal) for c in whole)  # equal scores: keys decide


def test_raw_text_never_reaches_match_and_k_is_capped(rows):
    for bad in (["alpha beta"], ['"x'], ["Alpha"], ["k" * 85]):
        with pytest.raises(InvalidInputError):
            rows.sync(rows.p.fts_rows, "topic_fts", "s", bad, 10, 0)
    with pytest.raises(InvalidInputError):
        rows.sync(rows.p.vector_rows, "detail_vector", "s", _unit(1, 0, 0, 0),
                  tsql.MAX_APPROXIMATE_K + 1)
    with pytest.raises(InvalidInputError):
        rows.sync(rows.p.vector_rows, "topic_vector", "s", (1.0, 0.0), 10)


def test_a_short_ann_answer_is_rerun_exactly(rows, monkeypatch):
    for i in range(5):
        _publish(rows, _write(f"topic_art_{i}", 1, "s", "alpha", ["alpha"]))
    exact = rows.sync(rows.p.vector_rows, "topic_vector", "s", _unit(1, 0, 0, 1), 10)
    real = tsql.topic_vector_search

    def lossy(approximate=True):  # an ANN plan that loses rows
        sql = real(approximate)
        lost = sql.replace("WHERE", "WHERE artifact_id <> 'topic_art_0' AND")
        return lost if approximate else sql

    monkeypatch.setattr(tsql, "topic_vector_search", lossy)
    assert rows.sync(rows.p.vector_rows, "topic_vector", "s", _unit(1, 0, 0, 1), 10) == exact
    assert len(exact) == 5


def test_a_hybrid_write_needs_every_vector_of_the_right_dimension(rows):
    w = _write("topic_art_v", 1, "s", "alpha", ["alpha", "beta"], vectors=False)

    def go():
        rows.ob_engine.run(templates.render("revision_insert", "oceanbase"),
                           ("topic_art_v", 1, "topic-memory", "identity", b"{}", "0" * 64, "{}"))
        rows.p.insert_active(w, "f" * 64)
    with pytest.raises(InvalidInputError):
        rows.sync(go)
    assert rows.sync(rows.p.cards, "s", ["topic_art_v"]) == {}


def test_no_vector_column_refuses_vector_work(seekdb_url):
    with fresh_database(seekdb_url, "pc_topic_rows_fts") as url:
        r = _Rows(url, None)
        try:
            r._ensure_open_sync()
            assert r.p.vector_column is None
            with pytest.raises(CapabilityNotSupportedError):
                r.sync(r.p.vector_rows, "topic_vector", "s", _unit(1, 0, 0, 0), 5)
            r.p.reshape_tables(DIM)
            assert r.p.vector_column == DIM
            r.p.reshape_tables(None)
            assert r.p.vector_column is None
        finally:
            r._close_sync()


def test_publication_time_is_database_utc_with_microseconds(rows):
    now = rows.sync(rows.engine.database_now)  # the engine port's database clock
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", now)
    stamp = datetime.datetime.strptime(now, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.UTC)
    assert abs((datetime.datetime.now(datetime.UTC) - stamp).total_seconds()) < 3600
    assert utc_text(datetime.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05.000000Z"
