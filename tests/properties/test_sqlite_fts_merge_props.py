"""Property: the SQLite fts candidate stream, one MATCH per Memory merged by
``(bm25, rowid)`` (adapters/sqlite/backend.py, issue 14), gives exactly the rows, order
and bm25 scores of the single MATCH over the OR of every Memory's scoped terms that it
replaced, for any small multi-Memory corpus over a small vocabulary (ties in bm25 are
common), any query terms, any first page size, with entries forgotten in between."""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService
from powercontext.sql import sqlite as frag

WORDS = ["lake", "puppy", "paint", "sunset", "the", "is", "of", "name", "ben", "ana"]
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


def _single_match(b: SQLiteMemoryBackend, ids: list[str], terms: list[str]
                  ) -> list[tuple[float, int, str, str]]:
    """The former query: one MATCH over every Memory's scoped terms, every row."""
    match = frag.fts_match_expression([frag.scope_token(a) for a in ids], terms)
    rows = b.sqlite_engine.rows(frag.statement("fts_search"), [match, 1_000_000, 0])
    return [(float(s), int(pid), a, v) for pid, a, _e, v, _h, _t, s in rows]


def _merged(b: SQLiteMemoryBackend, ids: list[str], terms: list[str], first: int
            ) -> list[tuple[float, int, str, str]]:
    out = []
    for a in ids:
        out.extend(b.projection._fts_memory_stream(a, terms, first))
    streamed = [(c.artifact_id, c.entry_version_id)
                for c in b.projection.fts_stream(ids, terms, first)]
    merged = sorted((s, pid, c.artifact_id, c.entry_version_id) for s, pid, c in out)
    assert [(a, v) for _s, _p, a, v in merged] == streamed
    return merged


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    memories=st.lists(st.lists(text, min_size=1, max_size=12), min_size=1, max_size=4),
    queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
                     min_size=1, max_size=3),
    forget=st.lists(st.integers(0, 40), max_size=4),
    first=st.integers(1, 5),
)
def test_merged_per_memory_matches_equal_the_single_match(
    memories: list[list[str]], queries: list[list[str]], forget: list[int], first: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        backend = SQLiteMemoryBackend(str(Path(tmp) / "m.db"))
        svc = MemoryService(backend)

        async def go() -> None:
            refs = []
            for texts in memories:
                ref = await svc.remember(
                    None, entries=[MemoryEntryInput("turn", t) for t in texts], mode="append")
                refs.append(ref)
            for i, n in enumerate(forget):  # tombstones in the contentless-delete index
                ref = refs[i % len(refs)]
                current = sorted(await svc.entries(ref))
                if len(current) > 1:
                    refs[i % len(refs)] = await svc.forget(ref, [current[n % len(current)]])
            ids = sorted({r.artifact_id for r in refs})
            for q in queries:
                terms = list(dict.fromkeys(q))

                def both(terms: list[str] = terms) -> tuple[list, list]:  # type: ignore[type-arg]
                    return (_single_match(backend, ids, terms),
                            _merged(backend, ids, terms, first))

                old, new = await backend._run(backend._in_tx, False, both)
                assert new == old  # same rows, same order, bit-identical bm25 scores
                page = await backend._run(
                    backend._in_tx, False,
                    lambda terms=terms: backend.projection.fts_candidates(
                        ids, terms, 3, offset=first))
                assert [c.entry_version_id for c in page] == [v for *_r, v in old][first:first + 3]
            await svc.close()

        asyncio.run(go())


def _former_token_check(t: str) -> bool:
    """The per-character check :func:`frag._check_tokens` made before issue 14."""
    return bool(t) and all(c.isascii() and (c.isalnum() or c == "_") for c in t) \
        and t == t.lower()


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet="abcXYZ019_ \n\"*é٣ß", max_size=6)))
def test_token_check_accepts_exactly_what_the_former_check_accepted(t: str) -> None:
    try:
        frag.fts_match_tokens([t])
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == _former_token_check(t)


def _all_matches(b: SQLiteMemoryBackend, artifact_id: str, terms: list[str]
                 ) -> list[tuple[float, str]]:
    """(bm25, searchable text) of every match, in (bm25, projection id) order."""
    match = frag.fts_match_expression([frag.scope_token(artifact_id)], terms)
    rows = b.sqlite_engine.rows(frag.statement("fts_search"), [match, 1_000_000, 0])
    return [(float(s), t) for _p, _a, _e, _v, _h, t, s in rows]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(text, min_size=1, max_size=40, unique=True),
    cuts=st.lists(st.integers(1, 6), min_size=1, max_size=40),
    queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
                     min_size=1, max_size=4),
    merge_at=st.sampled_from([2, frag.FTS_SMALL_SEGMENTS]),
)
def test_segment_upkeep_keeps_every_answer(
    texts: list[str], cuts: list[int], queries: list[list[str]], merge_at: int
) -> None:
    """The entries written in commits of any sizes (the tiered merge and the small-index
    merge into one segment, sql/sqlite.py FTS_SMALL_SEGMENTS) answer every MATCH with the
    rows and bm25 scores of the same entries written in one commit (in bm25 order; the
    projection ids, which break ties, differ between the two files); a small index
    ends every write with fewer than FTS_SMALL_SEGMENTS segments. ``merge_at`` 2 makes
    the merge into one run at nearly every write (tiny commits rarely reach 4)."""
    with tempfile.TemporaryDirectory() as tmp, \
            mock.patch.object(frag, "FTS_SMALL_SEGMENTS", merge_at):
        piecewise = SQLiteMemoryBackend(str(Path(tmp) / "p.db"))
        whole = SQLiteMemoryBackend(str(Path(tmp) / "w.db"))
        svc_p, svc_w = MemoryService(piecewise), MemoryService(whole)

        async def go() -> None:
            ref = None
            i = 0
            for n in itertools.cycle(cuts):  # until every text is written
                if i >= len(texts):
                    break
                ref = await svc_p.remember(ref, entries=[
                    MemoryEntryInput("turn", t) for t in texts[i:i + n]], mode="append")
                i += n
                segments = (await piecewise._run(
                    piecewise.sqlite_engine.rows, frag.statement("fts_segments")))[0][0]
                assert segments < frag.FTS_SMALL_SEGMENTS
            one = await svc_w.remember(
                None, entries=[MemoryEntryInput("turn", t) for t in texts], mode="append")
            assert ref is not None
            assert len(await svc_p.entries(ref)) == len(await svc_w.entries(one)) == len(texts)
            for q in queries:
                terms = list(dict.fromkeys(q))
                got = await piecewise._run(_all_matches, piecewise, ref.artifact_id, terms)
                want = await whole._run(_all_matches, whole, one.artifact_id, terms)
                assert [s for s, _t in got] == [s for s, _t in want]  # bit-identical bm25
                assert sorted(got) == sorted(want)
            await piecewise._run(piecewise.sqlite_engine.rows,
                                 frag.statement("fts_integrity_check"))
            await svc_p.close()
            await svc_w.close()

        asyncio.run(go())
