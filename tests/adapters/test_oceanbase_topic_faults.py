"""Atomic activation on seekdb (Topic Memory RFC, "Storage, Head, and atomic
activation"): a fault injected at every statement of the publication transaction
leaves every table, Head and search answer as before; a reader searching while
Revisions are published never sees a mixed or partial Revision (REPEATABLE READ)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from oceanbase_server import fresh_database, seekdb_available
from support.statement_faults import hook_statements
from support.topic_ob import make_write, publish, run, search, sql

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.oceanbase import OceanBaseTopicBackend
from powercontext.core.errors import BackendError
from powercontext.core.topic.projection import profile_fingerprint
from powercontext.sql import oceanbase_topic as tsql

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]
MODEL = DeterministicEmbedding(dimension=8)
TABLES = ("artifact_revisions", "artifact_heads", "pc_artifact_lineage_sources",
          "pc_artifact_lineage_artifacts", "pc_topic_memory_retrieval_shape",
          "pc_topic_memory_revision_publications", "pc_topic_memory_active_topics",
          "pc_topic_memory_active_chunks", "sources")


@pytest.fixture
def db_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_topic_faults") as url:
        yield url


class _FailAt(OceanBaseTopicBackend):
    """Raises a server error instead of running statement number ``fail_at``."""

    counting = False
    seen = 0
    fail_at = 0

    def _maybe_fail(self) -> None:
        if not self.counting:
            return
        self.seen += 1
        if self.seen == self.fail_at:
            import MySQLdb

            raise MySQLdb.OperationalError(1105, f"injected fault at statement {self.seen}")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        hook_statements(self, self._hook)

    def _hook(self, sql, params, send):
        self._maybe_fail()
        return send()


def _state(url: str) -> dict[str, object]:
    """Every row of every Topic table (and the Sources), in key order."""
    out: dict[str, object] = {}
    for table in TABLES:
        cols = [r[0] for r in sql(url, f"SHOW COLUMNS FROM {table}") if r[0] != "embedding"]
        out[table] = sql(url, f"SELECT {', '.join(cols)} FROM {table} ORDER BY 1, 2")
    out["vectors"] = sql(url, f"SELECT artifact_id, ordinal, embedding IS NULL FROM "
                              f"{tsql.ACTIVE_CHUNKS_TABLE} ORDER BY 1, 2")
    return out


def test_a_fault_at_each_statement_of_a_publication_leaves_everything_as_before(db_url):
    b = _FailAt(db_url, profile=MODEL.profile)
    long_detail = "\n\n".join(f"Section {i} covers rollout wave {i} of the pipeline. " * 8
                              for i in range(8))

    async def setup():
        a = await make_write(b, "s", "Pipeline", "Rollout waves", long_detail, model=MODEL)
        c = await make_write(b, "s", "Coffee", "Machine", "Descale monthly.", model=MODEL)
        await publish(b, a, c)
        upd = await make_write(b, "s", "Pipeline", "Rollout waves, revised",
                               long_detail.replace("wave", "stage"), base=a.ref, model=MODEL)
        new = await make_write(b, "s", "Canary", "Canary stage",
                               "The canary stage takes one percent.", model=MODEL)
        return a, upd, new

    a, upd, new = run(setup())
    before = _state(db_url)
    before_hits = [h.ref for h in run(search(b, "s", "rollout wave", model=MODEL)).hits]
    assert before_hits == [a.ref]
    heads_before = set(run(b.heads("s")))
    n, failures = 1, 0
    while True:
        b.counting, b.seen, b.fail_at = True, 0, n
        try:
            run(publish(b, upd, new))
        except BackendError as exc:
            assert "injected fault" in str(exc)
            failures += 1
        else:
            break  # fail_at is past the last statement: it went through
        finally:
            b.counting = False
        assert _state(db_url) == before, f"a fault at statement {n} left rows behind"
        assert [h.ref for h in run(search(b, "s", "rollout wave", model=MODEL)).hits] == (
            before_hits)
        assert set(run(b.heads("s"))) == heads_before
        n += 1
    total = b.seen
    assert failures == total >= 20  # every statement, COMMIT included, was tried
    after = _state(db_url)
    assert len(after["artifact_revisions"]) == len(before["artifact_revisions"]) + 2
    assert {h.ref for h in run(search(b, "s", "rollout stage", model=MODEL)).hits} >= {upd.ref}
    fp = profile_fingerprint(MODEL.profile)
    assert sql(db_url, tsql.missing_vectors(), (fp, fp)) == [(0,)]
    assert set(run(b.heads("s"))) >= {upd.ref, new.ref}
    run(b.close())


def test_a_reader_never_sees_a_mixed_or_partial_revision(db_url):
    rounds = 12

    def detail(rev: int) -> str:
        return "\n\n".join(f"Paragraph {i}: common text carrying mark{rev} here." * 10
                           for i in range(6))

    async def go():
        writer = OceanBaseTopicBackend(db_url)
        reader = OceanBaseTopicBackend(db_url)
        try:
            first = await make_write(writer, "s", "Topic mark1", "Summary mark1", detail(1))
            (head,) = await publish(writer, first)
            assert len(first.projection.chunks) > 1
            done = asyncio.Event()
            seen: list[int] = []

            async def write_loop():
                nonlocal head
                try:
                    for rev in range(2, rounds + 1):
                        w = await make_write(writer, "s", f"Topic mark{rev}",
                                             f"Summary mark{rev}", detail(rev), base=head.ref)
                        (head,) = await publish(writer, w)
                finally:
                    done.set()

            async def read_loop():
                while not done.is_set():
                    res = await search(reader, "s", "common text")
                    assert len(res.hits) == 1, res
                    hit = res.hits[0]
                    rev = hit.ref.revision
                    assert hit.title == f"Topic mark{rev}" and hit.summary == f"Summary mark{rev}"
                    assert hit.snippet is None or f"mark{rev}" in hit.snippet
                    got = await reader.get("s", hit.ref)
                    assert got.content.detail == detail(rev)
                    seen.append(rev)

            await asyncio.gather(write_loop(), read_loop())
            assert seen and seen == sorted(seen)  # the reader only ever moves forward
            assert (await reader.heads("s")) == (head.ref,) and head.ref.revision == rounds
        finally:
            await writer.close()
            await reader.close()
    run(go())
