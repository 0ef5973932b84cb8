"""One analyzer, one answer (issue 3, point 5): the same corpus and queries give the same
hit sets on SQLite (FTS5 + vec0) and OceanBase (FULLTEXT WITH PARSER SPACE + HNSW)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService
from powercontext.testing import run

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]

CORPUS = (
    "go and ci are short terms", "db uv a of", "a of the and", "use uv to sync the venv",
    "the ci runs go test", "中文记录偏好", "中文和English混合 go", "日本語のテキストです",
    "カタカナ テスト", "한국어 문장을 검색합니다", "com www und la de en how",
    "café résumé naïve", "x86_64 build_id v1.2.3", "Достопримечательностьиисследованиепроекта",
    # the analyzers' newer token kinds: clusters, joined identifiers, hashed long words
    "ทีมของเราใช้ฐานข้อมูลโพสต์เกรส", "ADR-0005 in src/app/main.py",
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 2, "ΟΔΥΣΣΕΥΣ ᏣᎳᎩ Straße",
)
QUERIES = (
    "go", "ci", "db", "uv", "a", "of", "the", "go ci db uv", "中文", "偏好", "テキ", "テスト",
    "문장", "검색", "English", "com", "www", "how", "café", "RESUME", "résumé", "x86_64",
    "build_id", "v1", "Достопримечательностьиисследованиепроекта", "multi-agent",
    "\"unbalanced", "go AND NOT ci", "", "ฐานข้อมูล", "ADR-0005", "src/app/main.py",
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 2, "οδυσσευς", "ꮳꮃꭹ", "STRASSE",
)


@pytest.fixture(scope="module")
def oceanbase_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_vs") as db:
        yield db


def _ids():
    counter = itertools.count(1)
    return lambda n: next(counter).to_bytes(n, "big")


async def _hit_sets(backend, model) -> dict[tuple[str, str], set[str]]:
    clock = itertools.count(1_700_000_000_000)
    svc = MemoryService(backend, embedding_model=model, clock=lambda: next(clock),
                        entropy=_ids())
    try:
        ref = await svc.remember(None, entries=tuple(MemoryEntryInput("fact", t)
                                                     for t in CORPUS))
        out = {}
        for q in QUERIES:
            for mode in ("fts", "vector"):
                if mode == "vector" and not q:
                    continue
                res = await svc.search(q, (ref,), mode=mode, limit=len(CORPUS))
                out[(mode, q)] = {h.text for h in res.hits}
        return out
    finally:
        await svc.close()


async def _threshold_ties(model) -> dict[str, set[str]]:
    """query -> corpus texts whose cosine with it is within 1e-6 of the admission bar."""
    from powercontext.core.search_admission import VECTOR_MIN_COSINE

    docs = (await model.embed(CORPUS)).vectors
    out: dict[str, set[str]] = {}
    for q in QUERIES:
        if not q:
            continue
        (qv,) = (await model.embed((q,))).vectors
        for text, dv in zip(CORPUS, docs, strict=True):
            cos = sum(a * b for a, b in zip(qv, dv, strict=True))
            if abs(cos - VECTOR_MIN_COSINE) < 1e-6:
                out.setdefault(q, set()).add(text)
    return out


def test_sqlite_and_oceanbase_return_the_same_hit_sets(oceanbase_url, tmp_path):
    model = DeterministicEmbedding(dimension=32)
    ob = run(_hit_sets(OceanBaseMemoryBackend(oceanbase_url, profile=model.profile), model))
    lite = run(_hit_sets(SQLiteMemoryBackend(str(tmp_path / "m.db"), profile=model.profile),
                         model))
    # An entry exactly at the vector admission threshold (cosine 0.25 exactly: the hashing
    # embedder produces such rational cosines) is admitted or not depending on float32
    # rounding inside each engine; leave those out of the vector comparison.
    edge = run(_threshold_ties(model))
    def same(key: tuple[str, str]) -> bool:
        ties = edge.get(key[1], set()) if key[0] == "vector" else set()
        return lite[key] - ties == ob[key] - ties

    assert set(lite) == set(ob)
    differ = {k: (lite[k], ob[k]) for k in lite if not same(k)}
    assert not differ, differ
    # and the answers are the intended ones
    assert ob[("fts", "go")] == {"go and ci are short terms", "the ci runs go test",
                                 "中文和English混合 go"}
    assert ob[("fts", "uv")] == {"db uv a of", "use uv to sync the venv"}
    assert ob[("fts", "中文")] == {"中文记录偏好", "中文和English混合 go"}
    assert ob[("fts", "문장")] == {"한국어 문장을 검색합니다"}
    assert ob[("fts", "of")] == ob[("fts", "the")] == ob[("fts", "com")] == set()
    # the default analyzer folds accents: RESUME finds résumé (Analyzer v1 did not)
    assert ob[("fts", "RESUME")] == ob[("fts", "résumé")] == {"café résumé naïve"}
    assert len(ob[("fts", "Достопримечательностьиисследованиепроекта")]) == 1
    assert ob[("fts", "ฐานข้อมูล")] == {"ทีมของเราใช้ฐานข้อมูลโพสต์เกรส"}
    assert ob[("fts", "ADR-0005")] == ob[("fts", "src/app/main.py")] == {
        "ADR-0005 in src/app/main.py"}
    assert len(ob[("fts", "pneumonoultramicroscopicsilicovolcanoconiosis" * 2)]) == 1
    assert ob[("fts", "οδυσσευς")] == ob[("fts", "ꮳꮃꭹ")] == ob[("fts", "STRASSE")] == {
        "ΟΔΥΣΣΕΥΣ ᏣᎳᎩ Straße"}
