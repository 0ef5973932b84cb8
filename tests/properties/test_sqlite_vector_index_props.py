"""The IVF index's invariants under any sequence of writes, trainings and rolled-back
transactions (adapters/sqlite/vector_index.py), on a real SQLite file with sqlite-vec:
the index driven directly over the float table, with small Memories given lists
(``train_at`` 24, lists of 6 to 12).

* Every float vector of a Memory with lists is in exactly one list of that Memory; one
  centroid per list; the stored sizes are the lists' and none outgrows SPLIT x 6.
* A write moves no vector of the Memory but those of the lists it splits (no
  retraining by a write): at most one list per added vector; once calibrated, a
  Memory's ``trained`` changes only by a training.
* A training puts every vector in the list whose centroid is nearest.
* A Memory without lists has no rows; no row outlives its float vector or changes Memory.
* A rolled-back transaction leaves every table as it was.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import apsw
import sqlite_vec
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from powercontext.adapters.sqlite.vector_index import SPLIT, VectorIndex
from powercontext.sql import sqlite as frag
from powercontext.sql import sqlite_vector_index as ivf_sql

DIM = 8
SCOPES = ("m_a", "m_b")
LIST_SIZE = 6


def _blob(seed: int) -> bytes:
    rnd = random.Random(seed)
    return struct.pack(f"<{DIM}f", *(rnd.gauss(0.0, 1.0) for _ in range(DIM)))


class IndexMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.dir = tempfile.TemporaryDirectory()
        self.conn = apsw.Connection(str(Path(self.dir.name) / "ivf.db"))
        self.conn.enable_load_extension(True)
        self.conn.load_extension(sqlite_vec.loadable_path())
        self.conn.execute(frag.vector_ddl(DIM))
        self.index = VectorIndex(self._run, DIM, train_at=24, list_size=LIST_SIZE)
        self.index.create()
        self.next_pid = 1

    def _run(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def _floats(self) -> dict[int, tuple[str, bytes]]:
        return {p: (s, b) for p, s, b in self._run(
            f"SELECT rowid, scope, embedding FROM {frag.VECTOR_TABLE}")}

    def _snapshot(self) -> Any:
        return (sorted(self._floats().items()), self.index.rows(),
                [self.index.lists(s) for s in SCOPES],
                self._run(f"SELECT scope, ivf_list, embedding FROM "
                          f"{ivf_sql.CENTROIDS_TABLE} ORDER BY scope, ivf_list"))

    def _add(self, scope: str, seeds: list[int]) -> None:
        rows = []
        for seed in seeds:
            pid, self.next_pid = self.next_pid, self.next_pid + 1
            blob = _blob(seed)
            self._run(frag.statement("vector_insert"), (pid, scope, blob))
            rows.append((pid, blob))
        self.index.add(scope, rows)

    @rule(scope=st.sampled_from(SCOPES), seeds=st.lists(st.integers(0, 10**6), min_size=1,
                                                        max_size=12))
    def add(self, scope: str, seeds: list[int]) -> None:
        before = {p: lst for p, _, lst in self.index.rows()}
        state = self.index.lists(scope)
        with self.conn:
            self._add(scope, seeds)
        moved = [p for p, _, lst in self.index.rows() if p in before and before[p] != lst]
        assert len(moved) <= len(seeds) * (SPLIT * LIST_SIZE + 1)
        after = self.index.lists(scope)
        if state is not None and state.nprobe:
            assert after is not None and after.trained == state.trained

    @rule(data=st.data())
    @precondition(lambda self: self.next_pid > 1)
    def delete(self, data: Any) -> None:
        pids = data.draw(st.lists(st.integers(1, self.next_pid - 1), max_size=6))
        with self.conn:
            for pid in pids:
                self._run(frag.statement("vector_delete"), (pid,))
            self.index.delete(pids)

    @rule(scope=st.sampled_from(SCOPES))
    def train(self, scope: str) -> None:
        with self.conn:
            self.index.train(scope)
        floats = self._floats()
        mine = sorted((p, lst) for p, s, lst in self.index.rows() if s == scope)
        if mine:  # a nearest centroid (equal vectors may be cut in halves around one)
            centroids = dict(self.index.centroids(scope))
            for p, lst in mine:
                v = struct.unpack(f"<{DIM}f", floats[p][1])
                d = {k: sum((a - b) ** 2 for a, b in zip(
                    v, struct.unpack(f"<{DIM}f", c), strict=True)) for k, c in centroids.items()}
                assert d[lst] <= min(d.values()) + 1e-9

    @rule(scope=st.sampled_from(SCOPES), seeds=st.lists(st.integers(0, 10**6), min_size=1,
                                                        max_size=30))
    def rolled_back(self, scope: str, seeds: list[int]) -> None:
        before, pid = self._snapshot(), self.next_pid
        try:
            with self.conn:
                self._add(scope, seeds)
                self.index.train(scope)
                self.index.delete([1, 2, 3])
                raise RuntimeError("injected failure")
        except RuntimeError:
            pass
        self.next_pid = pid
        assert self._snapshot() == before

    @invariant()
    def lists_match_the_vectors(self) -> None:
        floats = self._floats()
        rows = self.index.rows()
        assert len({p for p, _, _ in rows}) == len(rows)
        for pid, scope, _ in rows:
            assert floats[pid][0] == scope
        centroids = self._run(f"SELECT scope, ivf_list, embedding FROM "
                              f"{ivf_sql.CENTROIDS_TABLE} ORDER BY scope, ivf_list")
        for scope in SCOPES:
            state = self.index.lists(scope)
            mine = sorted((p, lst) for p, s, lst in rows if s == scope)
            theirs = [(lst, b) for s, lst, b in centroids if s == scope]
            sizes = self.index.sizes(scope)
            if state is None or state.lists == 0:
                assert mine == [] and theirs == [] and sizes == {}
                continue
            assert [p for p, _ in mine] == sorted(p for p, (s, _) in floats.items()
                                                  if s == scope)
            assert [lst for lst, _ in theirs] == list(range(state.lists))
            counts = {lst: 0 for lst in range(state.lists)}
            for _, lst in mine:
                counts[lst] += 1
            assert sizes == counts and max(counts.values()) <= SPLIT * LIST_SIZE
            assert 0 <= state.nprobe <= state.lists and 0.0 <= state.recall <= 1.0

    def teardown(self) -> None:
        self.conn.close()
        self.dir.cleanup()


IndexMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25,
                                          deadline=None)
test_ivf_index_invariants = IndexMachine.TestCase
