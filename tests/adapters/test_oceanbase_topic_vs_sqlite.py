"""One analyzer, one answer for Topic Memory (issue 12): the same publications give the
same hits on SQLite (FTS5 + vec0) and OceanBase (FULLTEXT WITH PARSER SPACE + HNSW) --
the same admitted Topic sets per query (FTS-only), and in a hybrid deployment the same
sets within float tolerance (a Topic whose cosine sits at the admission bar is left out
of the comparison, as in the Memory version of this test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from oceanbase_server import fresh_database, seekdb_available
from support.topic_ob import make_write, run, search

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.oceanbase import OceanBaseTopicBackend
from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core.errors import InvalidInputError
from powercontext.core.search_admission import VECTOR_MIN_COSINE
from powercontext.core.topic.models import TopicPublication

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]

TOPICS = (
    ("Go and CI", "short terms go ci db uv", "The ci runs go test on every push.\n\n"
     "Use uv to sync the venv."),
    ("中文记录", "中文和English混合 go", "中文记录偏好。日本語のテキストです。"),
    ("한국어", "문장을 검색합니다", "한국어 문장을 검색합니다. カタカナ テスト"),
    ("Café notes", "café résumé naïve", "x86_64 build_id v1.2.3 and ADR-0005 in "
     "src/app/main.py"),
    ("Thai", "ฐานข้อมูล", "ทีมของเราใช้ฐานข้อมูลโพสต์เกรส"),
    ("Release process", "How we cut releases", "## Steps\n\nTag the commit. Run the "
     "pipeline.\n\n## Rollback\n\nRevert the deploy with kubectl rollout undo."),
    ("Database migrations", "Schema changes", "Run alembic upgrade head. Never edit a "
     "merged migration.\n\n" + "Background on migrations and the pipeline. " * 120),
    ("Stopwords", "a of the and", "the of a and"),
)
QUERIES = ("go", "ci", "db uv", "中文", "テキ", "문장", "café", "RESUME", "x86_64",
           "ADR-0005", "src/app/main.py", "ฐานข้อมูล", "kubectl rollback", "pipeline",
           "alembic migrations", "the of", "\"unbalanced", "go AND NOT ci", "releases steps")
MODEL = DeterministicEmbedding(dimension=32)


@pytest.fixture
def ob_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_topic_vs") as url:
        yield url


async def _answers(ob, lite, model) -> tuple[dict, dict, dict]:
    writes = [await make_write(ob, "repo:/vs", t, s, d, model=model) for t, s, d in TOPICS]
    sources = sorted({s for w in writes for s in w.sources})
    await lite.put_sources(await ob.get_sources([s.source_id for s in sources]))
    for backend in (ob, lite):
        await backend.publish(TopicPublication(tuple(writes)))
    out: tuple[dict, dict] = ({}, {})
    for i, backend in enumerate((ob, lite)):
        for q in QUERIES:
            try:
                res = await search(backend, "repo:/vs", q, limit=20, model=model)
            except InvalidInputError as exc:  # a query without terms: refused on both
                out[i][q] = {"refused": exc.field}
                continue
            out[i][q] = {h.ref: set(h.matched_by) for h in res.hits}
    return out[0], out[1], await _edges(writes, model)


async def _edges(writes, model) -> dict:
    """query -> refs with a vector whose cosine with the query is within 1e-6 of the
    admission bar (admitted or not depending on each engine's float32 rounding)."""
    if model is None:
        return {}
    out: dict = {}
    for q in QUERIES:
        (qv,) = (await model.embed((q,))).vectors
        for w in writes:
            vecs = [w.projection.topic_vector, *(c.vector for c in w.projection.chunks)]
            for v in vecs:
                cos = sum(a * b for a, b in zip(qv, v, strict=True))
                if abs(cos - VECTOR_MIN_COSINE) < 1e-6:
                    out.setdefault(q, set()).add(w.ref)
    return out


def _run_both(ob_url: str, tmp_path, model):
    async def go():
        ob = OceanBaseTopicBackend(ob_url, profile=model.profile if model else None)
        lite = SQLiteTopicBackend(str(tmp_path / "t.db"),
                                  profile=model.profile if model else None)
        try:
            return await _answers(ob, lite, model)
        finally:
            await ob.close()
            await lite.close()
    return run(go())


def test_fts_answers_are_the_same_on_both_engines(ob_url, tmp_path):
    ob, lite, _ = _run_both(ob_url, tmp_path, None)
    assert ob == lite
    by_title = {q: len(hits) for q, hits in ob.items()}
    assert by_title["go"] >= 2 and by_title["中文"] == 1 and by_title["문장"] == 1
    assert ob["the of"] == {"refused": "query"}
    # the default analyzer folds accents: RESUME finds the résumé Topic (v1 did not)
    assert by_title["RESUME"] == 1 and by_title["kubectl rollback"] == 1


def test_hybrid_answers_are_the_same_within_float_tolerance(ob_url, tmp_path):
    ob, lite, edges = _run_both(ob_url, tmp_path, MODEL)
    assert set(ob) == set(lite)
    for q in QUERIES:
        skip = edges.get(q, set())
        mine = {ref: chans for ref, chans in ob[q].items() if ref not in skip}
        theirs = {ref: chans for ref, chans in lite[q].items() if ref not in skip}
        assert mine == theirs, q
    assert any("topic_vector" in chans or "detail_vector" in chans
               for hits in ob.values() for chans in hits.values() if isinstance(chans, set))
