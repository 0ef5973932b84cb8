"""The SQLite vector channel's IVF index (adapters/sqlite/vector_index.py): its invariants
on a real database, through the service.

* Every head vector of a Memory with lists is in exactly one list of that Memory (after
  growth, forget, reactivate and rebuild alike), the stored list sizes are the lists'
  sizes, no list outgrows SPLIT x LIST_SIZE, and no row outlives its head vector; after
  a rebuild each vector is in the list whose centroid is nearest.
* A rolled-back transaction leaves the lists as they were (they are written in the
  Revision's transaction).
* The Memory filter runs inside the index: a search never returns another Memory's
  entry, even one holding the very same vectors (Hypothesis).
* Results keep the channel's rules (distance order, exact distances; a smaller limit is
  a prefix); a Memory searched through all its lists answers exactly as the exact scan.
* A database made before the index existed searches exactly until ``memory rebuild``.

Recall is a benchmark figure (bench/perf/vector_index.py), never asserted here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.adapters.sqlite import vector_index as vi
from powercontext.adapters.sqlite.schema import pack
from powercontext.core.errors import BackendError
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.sql import sqlite as frag
from powercontext.sql import sqlite_vector_index as ivf_sql
from tests.adapters.test_sqlite_ann import _build, _DenseVectors, _keys, _raw, _service, _texts

SIZE = vi.TRAIN_AT + 250  # the commit that crosses TRAIN_AT trains the lists


def _sync(backend: Any, fn: Any, write: bool = False) -> Any:
    return asyncio.run(backend._run(backend._in_tx, write, fn))


def _state(backend: Any, ref: ArtifactRef) -> tuple[Any, list[tuple[int, str, int]]]:
    """(the Memory's lists row, every IVF row) in one read transaction."""
    def read() -> Any:
        index = backend.projection.ivf_index()
        return index.lists(frag.scope_token(ref.artifact_id)), index.rows()
    return _sync(backend, read)


def _check_lists(backend: Any, refs: list[ArtifactRef], *, nearest: bool = False) -> None:
    """Every float vector of a Memory with lists is in exactly one list of it (with
    ``nearest``: the one whose centroid is nearest); the stored sizes are the lists';
    no IVF row without its float row; a Memory without lists has no rows."""
    def read() -> Any:
        index = backend.projection.ivf_index()
        floats = {pid: (scope, blob) for pid, scope, blob in backend.sqlite_engine.rows(
            f"SELECT rowid, scope, embedding FROM {frag.VECTOR_TABLE}")}
        centroids = backend.sqlite_engine.rows(
            f"SELECT scope, ivf_list, embedding FROM {ivf_sql.CENTROIDS_TABLE} "
            "ORDER BY scope, ivf_list")
        scopes = [frag.scope_token(r.artifact_id) for r in refs]
        return index, floats, index.rows(), {s: index.lists(s) for s in scopes}, centroids, {
            s: index.sizes(s) for s in scopes}
    index, floats, rows, states, centroids, sizes = _sync(backend, read)
    pids = [pid for pid, _, _ in rows]
    assert len(pids) == len(set(pids))  # one list per vector
    for pid, scope, _ in rows:
        assert pid in floats and floats[pid][0] == scope  # the vector's own Memory
    for scope, state in states.items():
        mine = sorted((pid, lst) for pid, s, lst in rows if s == scope)
        wanted = sorted(pid for pid, (s, _) in floats.items() if s == scope)
        theirs = [(lst, blob) for s, lst, blob in centroids if s == scope]
        if state is None or state.lists == 0:
            assert mine == [] and theirs == [] and sizes[scope] == {}
            continue
        # one searched centroid per list, and each list's stored size is its own
        assert [lst for lst, _ in theirs] == list(range(state.lists))
        assert [pid for pid, _ in mine] == wanted
        counts = {lst: 0 for lst in range(state.lists)}
        for _, lst in mine:
            counts[lst] += 1
        assert sizes[scope] == counts
        assert max(counts.values()) <= vi.SPLIT * vi.LIST_SIZE
        if nearest:
            blobs = [floats[pid][1] for pid, _ in mine]
            got = _sync(backend, lambda s=scope, b=blobs: index.nearest(s, b))
            assert [lst for _, lst in mine] == got


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two Memories past TRAIN_AT (ivf and exact databases, same ids and vectors)."""
    root = tmp_path_factory.mktemp("ivf")
    model = _DenseVectors()
    texts = _texts(SIZE, SIZE)
    svcs = {ix: _service(root / f"{ix}.db", model, ix) for ix in ("ivf", "exact")}
    refs = {ix: asyncio.run(_build(svc, texts)) for ix, svc in svcs.items()}
    assert refs["ivf"] == refs["exact"]
    yield svcs, refs, model
    for svc in svcs.values():
        asyncio.run(svc.close())


def test_a_memory_past_train_at_gets_lists_holding_each_vector_once(grown):
    svcs, refs, _ = grown
    backend = svcs["ivf"].backend
    state, rows = _state(backend, refs["ivf"])
    # calibrated by the commit that crossed TRAIN_AT; the lists came from splits
    assert vi.TRAIN_AT <= state.trained < vi.TRAIN_AT + 250
    assert state.lists >= SIZE // (vi.SPLIT * vi.LIST_SIZE)
    assert 0 < state.nprobe <= max(1, int(state.lists * vi.MAX_PROBE_SHARE))
    assert 0.0 < state.recall <= 1.0
    assert len(rows) == SIZE
    _check_lists(backend, [refs["ivf"]])


def test_ivf_hits_keep_the_channel_rules_and_exact_distances(grown):
    svcs, refs, model = grown
    backend, exact = svcs["ivf"].backend, svcs["exact"].backend
    q = model.vector("kiwi plum")
    aid = refs["ivf"].artifact_id
    found = _sync(backend, lambda: backend.projection.vector_candidates([aid], q, 40))
    truth = {c.entry_version_id: c.distance for c in
             _sync(exact, lambda: exact.projection.vector_candidates([aid], q, SIZE))}
    assert len(found) == 40
    for c in found:
        assert c.distance == pytest.approx(truth[c.entry_version_id], abs=1e-6)
    assert [c.distance for c in found] == sorted(c.distance for c in found)
    at_10 = _keys(asyncio.run(svcs["ivf"].search("kiwi plum", (refs["ivf"],), limit=10,
                                                 mode="vector")))
    at_30 = _keys(asyncio.run(svcs["ivf"].search("kiwi plum", (refs["ivf"],), limit=30,
                                                 mode="vector")))
    assert at_10 == at_30[:10]


def test_writes_keep_every_vector_in_one_list(grown, tmp_path):
    svcs, refs, _ = grown
    svc = svcs["ivf"]

    async def body() -> ArtifactRef:
        ref = refs["ivf"]
        hits = await svc.search("fig lime", (ref,), limit=20, mode="vector")
        gone = [h.entry_id for h in hits.hits[:12]]
        ref = await svc.forget(ref, gone)
        ref = await svc.remember(ref, mode="append", entries=tuple(
            MemoryEntryInput("fact", f"fig late {i}") for i in range(7)))
        return await svc.reactivate(ref, gone[:5])

    ref = asyncio.run(body())
    refs["ivf"] = ref
    _check_lists(svc.backend, [ref])
    state, rows = _state(svc.backend, ref)
    assert len(rows) == SIZE - 12 + 7 + 5 and state.added == SIZE - state.trained + 7 + 5


def test_a_rolled_back_transaction_leaves_the_lists_as_they_were(grown):
    svcs, refs, model = grown
    backend = svcs["ivf"].backend
    before = _state(backend, refs["ivf"])
    scope = frag.scope_token(refs["ivf"].artifact_id)

    def write_then_fail() -> None:
        index = backend.projection.ivf_index()
        index.add(scope, [(10**9, pack(model.vector("boom")))])
        index.delete([pid for pid, _, _ in index.rows()[:50]])
        index.train(scope)
        raise BackendError("injected failure after the index writes")

    with pytest.raises(BackendError, match="injected"):
        _sync(backend, write_then_fail, write=True)
    assert _state(backend, refs["ivf"]) == before
    _check_lists(backend, [refs["ivf"]])


def test_a_rebuild_trains_the_lists_again_with_the_same_invariant(grown):
    svcs, refs, model = grown
    backend = svcs["ivf"].backend
    report = asyncio.run(backend.rebuild(model))
    assert not report.missing
    state, rows = _state(backend, refs["ivf"])
    assert state.lists > 0 and state.added == 0 and state.trained == len(rows)
    _check_lists(backend, [refs["ivf"]], nearest=True)


_SETTINGS = settings(max_examples=20, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two Memories in one database holding the same vectors, both with lists."""
    model = _DenseVectors(distinct=vi.TRAIN_AT)
    svc = _service(tmp_path_factory.mktemp("ivf_twins") / "t.db", model, "ivf")
    texts = _texts(SIZE, vi.TRAIN_AT)
    refs = [asyncio.run(_build(svc, texts)), asyncio.run(_build(svc, texts))]
    yield svc, refs, model
    asyncio.run(svc.close())


@_SETTINGS
@given(seed=st.text(alphabet="abcdefghij#0123456789", min_size=1, max_size=12),
       limit=st.integers(1, 200), which=st.integers(0, 1))
def test_the_memory_filter_runs_inside_the_index(twins, seed, limit, which):
    svc, refs, model = twins
    backend = svc.backend
    aid = refs[which].artifact_id
    assert all(_state(backend, r)[0].lists > 0 for r in refs)
    found = _sync(backend, lambda: backend.projection.vector_candidates(
        [aid], model.vector(seed), limit))
    assert len(found) == limit
    assert {c.artifact_id for c in found} == {aid}


def test_probing_every_list_answers_as_the_exact_scan(grown):
    svcs, refs, model = grown
    backend = svcs["ivf"].backend
    aid = refs["ivf"].artifact_id
    scope = frag.scope_token(aid)
    for text in ("kiwi", "plum fig", "sloe yuzu date"):
        blob = pack(model.vector(text))

        def both(blob: bytes = blob) -> Any:
            index = backend.projection.ivf_index()
            every = attrs.evolve(index.lists(scope), nprobe=10**6)  # every list
            return (index.search(scope, blob, 50, every),
                    backend.sqlite_engine.rows(frag.statement("vector_search"), [blob, 50, scope]))

        got, want = _sync(backend, both)
        assert got == sorted(want, key=lambda r: (r[-1], r[0]))


@pytest.mark.parametrize("dropped", [("drop_ivf", "drop_lists", "drop_centroids", "drop_sizes"),
                                     ("drop_sizes",)], ids=["no-index", "trained-by-commits"])
def test_an_older_database_searches_exactly_until_a_rebuild(tmp_path: Path, dropped) -> None:
    model = _DenseVectors()
    path = tmp_path / "old.db"
    svc = _service(path, model, "ivf")
    ref = asyncio.run(_build(svc, _texts(SIZE, SIZE)))
    asyncio.run(svc.close())
    # a database made before the index existed, or by the index that commits retrained
    # (no list sizes)
    conn = _raw(path)
    for name in dropped:
        conn.execute(ivf_sql.statement(name))
    conn.close()
    reopened = _service(path, model, "ivf")
    backend: Any = reopened.backend
    try:
        hits = asyncio.run(reopened.search("kiwi", (ref,), limit=5, mode="vector"))
        assert len(hits.hits) == 5 and backend.projection.ivf_index() is None
        ref = asyncio.run(reopened.remember(ref, mode="append", entries=(
            MemoryEntryInput("fact", "kiwi after"),)))  # writes need no index
        asyncio.run(backend.rebuild(model))
        assert backend.projection.ivf_index() is not None
        _check_lists(backend, [ref], nearest=True)
        assert _state(backend, ref)[0].lists > 0
    finally:
        asyncio.run(reopened.close())


def test_a_small_memory_is_not_calibrated_and_a_bad_setting_is_refused(tmp_path: Path) -> None:
    model = _DenseVectors()
    svc = _service(tmp_path / "s.db", model, "ivf")
    try:
        ref = asyncio.run(_build(svc, _texts(700, 700)))
        state, rows = _state(svc.backend, ref)
        # lists from the first vector (one split past 512), no calibration below TRAIN_AT
        assert state.lists == 2 and state.nprobe == 0 and state.added == 700
        assert len(rows) == 700
        _check_lists(svc.backend, [ref])
        assert not svc.backend.projection.ivf_trusted(state, vi.BASE_K)  # searched exactly
    finally:
        asyncio.run(svc.close())
    with pytest.raises(ValueError):
        SQLiteMemoryBackend(str(tmp_path / "x.db"), vector_index="fast")  # type: ignore[arg-type]


def test_auto_trusts_the_lists_only_where_their_recall_holds(tmp_path: Path) -> None:
    def lists(recall: float, nprobe: int = 4) -> vi.Lists:
        return vi.Lists(lists=20, nprobe=nprobe, trained=5000, added=0, recall=recall)

    backends = {ix: SQLiteMemoryBackend(str(tmp_path / f"{ix}.db"), vector_index=ix)
                for ix in ("auto", "ivf", "exact")}
    auto, ivf = backends["auto"], backends["ivf"]
    assert auto.projection.ivf_trusted(lists(vi.AUTO_RECALL), vi.BASE_K)
    assert not auto.projection.ivf_trusted(lists(vi.AUTO_RECALL - 0.001), vi.BASE_K)
    assert ivf.projection.ivf_trusted(lists(0.5), vi.BASE_K)
    # probing every list is the exact scan: that one is run instead
    assert not ivf.projection.ivf_trusted(lists(1.0, nprobe=20), vi.BASE_K)
    assert not ivf.projection.ivf_trusted(lists(1.0, nprobe=5), 4 * vi.BASE_K)
    assert not ivf.projection.ivf_trusted(vi.Lists(0, 0, 100, 0, 0.0), vi.BASE_K)
    # lists not calibrated yet (below TRAIN_AT): exact, even when "ivf" is asked for
    assert not ivf.projection.ivf_trusted(vi.Lists(3, 0, 0, 700, 0.0), vi.BASE_K)


def test_the_exact_choice_returns_the_exact_hits(grown):
    """``vector_index="exact"`` through the registry (what ``--vector-index exact`` and
    ``$POWERCONTEXT_VECTOR_INDEX`` reach) answers every query by the exact scan over a
    Memory whose lists ``auto`` searches: the same rows and order as vec0's exact KNN."""
    from powercontext.plugins.registry import Registry
    from powercontext.service import MemoryService

    svcs, refs, model = grown
    aid = refs["ivf"].artifact_id
    scope = frag.scope_token(aid)
    backend: Any = svcs["ivf"].backend
    state = _state(backend, refs["ivf"])[0]
    ivf = SQLiteMemoryBackend(backend.filename, profile=model.profile, vector_index="ivf")
    assert ivf.projection.ivf_trusted(state, vi.BASE_K)  # "ivf" would take the lists
    exact: Any = Registry().backend_for_url(backend.filename, profile=model.profile,
                                            vector_index="exact")
    svc = MemoryService(exact, embedding_model=model)
    try:
        assert exact.projection.vector_index == "exact"
        for text in ("kiwi", "plum fig", "sloe yuzu date", "lime"):
            q = model.vector(text)
            got = _sync(exact, lambda q=q: exact.projection.vector_candidates([aid], q, 30))
            want = _sync(exact, lambda q=q: exact.sqlite_engine.rows(
                frag.statement("vector_search"), [pack(q), 30, scope]))
            want = sorted(want, key=lambda r: (r[-1], r[0]))
            assert [(c.entry_version_id, c.distance) for c in got] == [
                (r[3], pytest.approx(r[-1])) for r in want]
    finally:
        asyncio.run(svc.close())
        asyncio.run(ivf.close())
