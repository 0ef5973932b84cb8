"""The SQLite vector channel's approximate index: an inverted file (IVF) on sqlite-vec
(Memory RFC, "Search and reads": the vector channel performs ANN retrieval; layout and
statements in :mod:`powercontext.sql.sqlite_vector_index`).

Per Memory, centroids split its vectors into lists of :data:`LIST_SIZE` to twice that;
each vector is also stored in the vec0 table partitioned by (Memory scope, list), so a
search reads only the ``nprobe`` lists whose centroids are nearest the query, of that
Memory only, and ranks them by the exact L2 distance.

* **Transactional.** Every row and centroid lives in the database file and is written
  by the caller's transaction: the Revision's commit writes a new vector into its
  nearest list, a rollback or a crash takes it back with the Revision. Nothing is cached
  across transactions, so a second process's write is seen at once.
* **Grown by splits, never retrained by a write.** A Memory's first vector makes its
  one list; a list that outgrows :data:`SPLIT` x LIST_SIZE vectors is split in two by
  2-means over its own vectors (:func:`_bisect`): the list keeps one half and its
  centroid, a new list takes the other. A write's index work is its vectors' nearest
  lists and at most a split per vector: proportional to one list, whatever the
  Memory's size. Vectors of other lists are not moved by a split, so a vector is in the
  list that was nearest when it was placed (the nearest of all after a training).
* **Calibrated, and kept honest per split.** The commit that brings a Memory to
  :data:`TRAIN_AT` vectors calibrates it (:func:`_calibrate`, over those TRAIN_AT
  vectors: a fixed cost): the smallest ``nprobe`` whose recall@10 against the exact
  answer reaches :data:`CALIBRATION_RECALL` (at most :data:`MAX_PROBE_SHARE` of the
  lists) and the recall reached. Each later split measures :data:`SPLIT_QUERIES`
  queries made from the split list's vectors (the search's probes against
  :data:`WIDE` times as many lists) and moves the stored recall towards it by
  :data:`RECALL_STEP`; while that falls below CALIBRATION_RECALL, ``nprobe`` grows by
  one. ``vector_index="auto"`` searches a Memory through its lists only once it is
  calibrated and its recall is at least :data:`AUTO_RECALL`; below, exactly.
* **Rebuildable.** The index is a projection of the float vectors: :meth:`VectorIndex.
  train` makes a Memory's lists again from them by k-means (``memory rebuild`` trains
  every Memory, :meth:`VectorIndex.rebuild`); a database without the tables searches
  exactly until a rebuild makes them.

Splits and training are deterministic: their samples and first centroids come from
generators seeded by the Memory's scope token, the list and its size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from powercontext.sql import sqlite_vector_index as ivf_sql

__all__ = ["AUTO_RECALL", "CALIBRATION_RECALL", "LIST_SIZE", "MAX_PROBE_SHARE", "SPLIT",
           "TRAIN_AT", "Lists", "VectorIndex"]

#: A Memory is calibrated, and may be searched through its lists, from this many vectors
#: (below, exact KNN is cheap).
TRAIN_AT = 4096
#: Vectors per list at training (``lists = round(vectors / LIST_SIZE)``) ...
LIST_SIZE = 256
#: ... and a list holding more than SPLIT x LIST_SIZE vectors is split in two.
SPLIT = 2
#: Vectors the k-means of a training runs on (a seeded sample of the Memory's).
SAMPLE_MAX = 32_768
#: Lloyd iterations of the k-means (training) and of the 2-means (a split).
KMEANS_ITERATIONS = 10
#: Held-out vectors that calibrate ``nprobe`` and the neighbours each one counts.
CALIBRATION_QUERIES = 200
CALIBRATION_K = 10
#: The recall@10 calibration aims at (above AUTO_RECALL: a margin for real queries).
CALIBRATION_RECALL = 0.99
#: The largest share of a Memory's lists a search probes at ``k`` = BASE_K; a Memory that
#: needs more for CALIBRATION_RECALL keeps the recall it reaches there.
MAX_PROBE_SHARE = 0.25
#: The calibrated recall at which ``vector_index="auto"`` trusts a Memory's lists.
AUTO_RECALL = 0.97
#: ``k`` of a search's first query (ANN_FIRST_K): a larger ``k`` probes proportionally
#: more lists.
BASE_K = 64
#: Queries a split measures, the reference's lists per probed list, and the weight of
#: one split's measure in the stored recall.
SPLIT_QUERIES = 2
WIDE = 2
RECALL_STEP = 1 / 32
#: Relative gap of two centroid distances below which vec0's float32 order is checked
#: in float64 (ties go to the lower list, as :func:`_nearest`).
_NEAR_TIE = 1e-4
#: vec0's largest ``k``: a list never holds more (SPLIT x LIST_SIZE is far below).
_MAX_K = 4096

Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


@attrs.frozen
class Lists:
    """One Memory's row of the lists table: ``lists`` = 0 means no list yet, ``nprobe``
    = 0 not calibrated (searched exactly)."""

    lists: int
    nprobe: int
    trained: int
    added: int
    recall: float

    def probes(self, k: int) -> int:
        """Lists a query for ``k`` rows probes: ``nprobe``, proportionally more for a
        ``k`` above :data:`BASE_K`, at most every list."""
        return min(self.lists, self.nprobe * max(1, -(-k // BASE_K)))


class VectorIndex:
    """The IVF index of one SQLite database, over the connection's ``run(sql, params)``
    (every call inside the caller's transaction). ``dimension``: the embedding
    profile's; ``train_at`` and ``list_size``: TRAIN_AT and LIST_SIZE unless a test
    wants small Memories with lists. Public methods raise what the connection raises
    (apsw errors, mapped by the backend)."""

    def __init__(self, run: Run, dimension: int, *, train_at: int = TRAIN_AT,
                 list_size: int = LIST_SIZE) -> None:
        self._run = run
        self.dimension = dimension
        self.train_at = train_at  # the library's are TRAIN_AT and LIST_SIZE
        self.list_size = list_size

    # ------------------------------------------------------------------ tables

    def create(self) -> None:
        """Create the tables if missing (an empty index: every Memory exact)."""
        self._run(ivf_sql.ivf_ddl(self.dimension), ())
        self._run(ivf_sql.centroids_ddl(self.dimension), ())
        self._run(ivf_sql.statement("create_lists"), ())
        self._run(ivf_sql.statement("create_sizes"), ())

    def drop(self) -> None:
        """Drop every table (a new embedding profile; a rebuild makes them again)."""
        for name in ("drop_ivf", "drop_lists", "drop_centroids", "drop_sizes"):
            self._run(ivf_sql.statement(name), ())

    def rebuild(self) -> None:
        """Make the tables again, empty, and train every Memory that holds float vectors
        (the end of ``memory rebuild``; also upgrades an index of an older layout)."""
        self.drop()
        self.create()
        for (scope,) in self._run(ivf_sql.statement("vector_scopes"), ()):
            self.train(str(scope))

    # ------------------------------------------------------------------ writes

    def lists(self, scope: str) -> Lists | None:
        """The Memory's row, or None when it has none."""
        rows = self._run(ivf_sql.statement("lists_head"), (scope,))
        if not rows:
            return None
        n, nprobe, trained, added, recall = rows[0]
        return Lists(int(n), int(nprobe), int(trained), int(added), float(recall))

    def add(self, scope: str, rows: Sequence[tuple[int, bytes]]) -> None:
        """Index new float vectors ``(projection id, float32 blob)`` of one Memory, each
        into its nearest list, splitting a list that outgrows SPLIT x list_size; then
        calibrate the Memory if this brings it to ``train_at`` (module docstring)."""
        if not rows:
            return
        state = self.lists(scope) or Lists(0, 0, 0, 0, 0.0)
        insert, bump = ivf_sql.statement("ivf_insert"), ivf_sql.statement("sizes_bump")
        for pid, blob in rows:
            if state.lists == 0:  # the Memory's first list, centred on its first vector
                self._run(ivf_sql.statement("centroids_insert"), (scope, 0, blob))
                state = attrs.evolve(state, lists=1)
                lst = 0
            else:
                lst = self._nearest_list(scope, blob)
            self._run(insert, (pid, scope, lst, blob))
            size = int(self._run(bump, (scope, lst, 1))[0][0])
            if size > SPLIT * self.list_size:
                state = self._split(scope, lst, state)
        state = attrs.evolve(state, added=state.added + len(rows))
        if state.nprobe == 0 and state.trained == 0:
            total = int(self._run(ivf_sql.statement("sizes_total"), (scope,))[0][0])
            if total >= self.train_at:
                state = self._calibrated(scope, state, total)
        self._put(scope, state)

    def delete(self, pids: Sequence[int]) -> None:
        """Remove these projection ids' rows (any that are absent are no error)."""
        where, delete = ivf_sql.statement("ivf_where"), ivf_sql.statement("ivf_delete")
        bump = ivf_sql.statement("sizes_bump")
        for pid in pids:
            for scope, lst in self._run(where, (pid,)):
                self._run(delete, (pid,))
                self._run(bump, (scope, lst, -1))

    def clear(self, scope: str) -> None:
        """Remove one Memory's rows and its lists (a rebuild makes them again)."""
        for name in ("ivf_delete_scope", "centroids_delete_scope", "lists_delete",
                     "sizes_delete_scope"):
            self._run(ivf_sql.statement(name), (scope,))

    def train(self, scope: str) -> Lists:
        """Make one Memory's lists again from its float vectors: k-means on a seeded
        sample, every vector into its nearest list (a list left above SPLIT x
        list_size split as a write would), ``nprobe`` calibrated from ``train_at``
        vectors (module docstring). Returns the stored row."""
        import numpy as np

        found = self._run(ivf_sql.statement("scope_vectors"), (scope,))
        self.clear(scope)
        n = len(found)
        if n == 0:
            return Lists(0, 0, 0, 0, 0.0)
        pids = [int(r[0]) for r in found]
        x = np.frombuffer(b"".join(r[1] for r in found), dtype="<f4").reshape(n, self.dimension)
        rng = np.random.default_rng(_seed(f"{scope}:{n}"))
        centroids = _kmeans(x, max(1, round(n / self.list_size)), rng)
        assigned = _nearest(x, centroids)
        centroids, assigned = _split_large(x, centroids, assigned, SPLIT * self.list_size, rng)
        nprobe, recall = _calibrate(x, centroids, assigned, rng) if n >= self.train_at else (0, 0.0)
        insert = ivf_sql.statement("ivf_insert")
        for pid, lst, i in zip(pids, assigned.tolist(), range(n), strict=True):
            self._run(insert, (pid, scope, int(lst), x[i].tobytes()))
        sizes = np.bincount(assigned, minlength=len(centroids))
        for lst, centroid in enumerate(centroids):
            self._run(ivf_sql.statement("centroids_insert"), (scope, lst, centroid.tobytes()))
            self._run(ivf_sql.statement("sizes_set"), (scope, lst, int(sizes[lst])))
        state = Lists(len(centroids), nprobe, n, 0, recall)
        self._put(scope, state)
        return state

    # ------------------------------------------------------------------ search

    def search(self, scope: str, vector_blob: bytes, k: int,
               state: Lists) -> list[tuple[Any, ...]]:
        """The ``k`` nearest head rows of one Memory by (L2 distance, projection id)
        among its ``state.probes(k)`` lists whose centroids are nearest the query: one
        statement, no numpy (a new process's first search imports nothing more)."""
        return self._run(ivf_sql.statement("ivf_search"),
                         (vector_blob, k, scope, state.probes(k), k))

    def rows(self) -> list[tuple[int, str, int]]:
        """Every ``(projection id, scope, list)`` of the index (checks and tests)."""
        return [(int(p), str(s), int(lst)) for p, s, lst in
                self._run(ivf_sql.statement("ivf_rows"), ())]

    def centroids(self, scope: str) -> list[tuple[int, bytes]]:
        """``(list, float32 blob)`` of every centroid of one Memory (checks and tests)."""
        return [(int(lst), bytes(b)) for lst, b in
                self._run(ivf_sql.statement("centroids_of"), (scope,))]

    def sizes(self, scope: str) -> dict[int, int]:
        """The stored size of each list of one Memory (checks and tests)."""
        return {int(lst): int(n) for lst, n in self._run(ivf_sql.statement("sizes_get"),
                                                         (scope,))}

    def nearest(self, scope: str, vectors: Sequence[bytes]) -> list[int]:
        """The list each float32 blob is nearest of one Memory's (checks and tests)."""
        import numpy as np

        if not vectors:
            return []
        c = _centroids(b"".join(b for _, b in self.centroids(scope)), self.dimension)
        x = np.frombuffer(b"".join(vectors), dtype="<f4").reshape(len(vectors), self.dimension)
        return [int(i) for i in _nearest(x, c)]

    # ------------------------------------------------------------------ private

    def _put(self, scope: str, s: Lists) -> None:
        self._run(ivf_sql.statement("lists_put"),
                  (scope, s.lists, s.nprobe, s.trained, s.added, s.recall, b""))

    def _nearest_list(self, scope: str, blob: bytes) -> int:
        """The list whose centroid is nearest ``blob`` (vec0's KNN; a near tie of its two
        nearest decided in float64, the lower list among equals)."""
        found = sorted(self._run(ivf_sql.statement("centroids_nearest"), (blob, scope)),
                       key=lambda r: (r[1], r[0]))
        if len(found) < 2 or found[1][1] - found[0][1] > _NEAR_TIE * (1.0 + found[0][1]):
            return int(found[0][0])
        import numpy as np

        lists = [int(r[0]) for r in found]
        c = np.frombuffer(b"".join(r[2] for r in found), dtype="<f4").reshape(2, self.dimension)
        d = _sq_distances(np.frombuffer(blob, dtype="<f4")[None, :], c)[0]
        return min(zip(d.tolist(), lists, strict=True))[1]

    def _members(self, scope: str, lst: int) -> list[tuple[Any, ...]]:
        """``(projection id, blob)`` of one list's vectors (a KNN inside its partition)."""
        return self._run(ivf_sql.statement("ivf_members"),
                         (bytes(4 * self.dimension), _MAX_K, scope, lst))

    def _split(self, scope: str, lst: int, state: Lists) -> Lists:
        """Split list ``lst`` in two by 2-means over its vectors: it keeps the first half
        and the first centroid, list ``state.lists`` takes the rest; then measure the
        recall there when the Memory is calibrated. Returns the new state."""
        import numpy as np

        found = self._members(scope, lst)
        x = np.frombuffer(b"".join(r[1] for r in found), dtype="<f4").reshape(
            len(found), self.dimension)
        rng = np.random.default_rng(_seed(f"{scope}:{lst}:{len(found)}"))
        pair, side = _bisect(x, rng)
        new = state.lists
        self._run(ivf_sql.statement("centroids_delete_list"), (scope, lst))
        self._run(ivf_sql.statement("centroids_insert"), (scope, lst, pair[0].tobytes()))
        self._run(ivf_sql.statement("centroids_insert"), (scope, new, pair[1].tobytes()))
        delete, insert = ivf_sql.statement("ivf_delete"), ivf_sql.statement("ivf_insert")
        for (pid, blob), moved in zip(found, side.tolist(), strict=True):
            if moved:
                self._run(delete, (pid,))
                self._run(insert, (pid, scope, new, blob))
        moved_n = int(side.sum())
        self._run(ivf_sql.statement("sizes_set"), (scope, lst, len(found) - moved_n))
        self._run(ivf_sql.statement("sizes_set"), (scope, new, moved_n))
        state = attrs.evolve(state, lists=new + 1)
        if state.nprobe == 0:
            return state
        recall = state.recall + RECALL_STEP * (self._local_recall(scope, x, state, rng)
                                               - state.recall)
        nprobe = state.nprobe
        if recall < CALIBRATION_RECALL and nprobe < max(1, int(state.lists * MAX_PROBE_SHARE)):
            nprobe += 1
        return attrs.evolve(state, recall=recall, nprobe=nprobe)

    def _local_recall(self, scope: str, x: Any, state: Lists, rng: Any) -> float:
        """The share of the 10 nearest among WIDE x the search's probes whose list the
        search probes (within its lists the search is exact), for SPLIT_QUERIES midpoints
        of two of ``x`` (the split list's vectors)."""
        import numpy as np

        probes = state.probes(BASE_K)
        wide = min(state.lists, WIDE * probes)
        found = 0
        for _ in range(SPLIT_QUERIES):
            i, j = rng.choice(len(x), 2)
            q = x[i].astype("f8") + x[j].astype("f8")
            q *= (np.linalg.norm(x[i]) + np.linalg.norm(x[j])) / 2 / max(
                float(np.linalg.norm(q)), 1e-12)
            blob = q.astype("<f4").tobytes()
            truth = self._run(ivf_sql.statement("ivf_knn"),
                              (blob, CALIBRATION_K, scope, wide, CALIBRATION_K))
            probed = {int(r[0]) for r in self._run(ivf_sql.statement("centroids_knn"),
                                                   (blob, probes, scope))}
            found += sum(1 for lst, _ in truth if int(lst) in probed)
            found += CALIBRATION_K - len(truth)  # fewer than 10 in the Memory: all found
        return found / (SPLIT_QUERIES * CALIBRATION_K)

    def _calibrated(self, scope: str, state: Lists, total: int) -> Lists:
        """``state`` with ``nprobe`` and recall calibrated over the Memory's vectors as
        its lists hold them (the commit that brings it to ``train_at``)."""
        import numpy as np

        blobs: list[bytes] = []
        assigned: list[int] = []
        for lst in range(state.lists):
            found = self._members(scope, lst)
            blobs.extend(r[1] for r in found)
            assigned.extend([lst] * len(found))
        x = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), self.dimension)
        c = _centroids(b"".join(b for _, b in self.centroids(scope)), self.dimension)
        rng = np.random.default_rng(_seed(f"{scope}:{total}"))
        nprobe, recall = _calibrate(x, c, np.asarray(assigned, dtype=np.int64), rng)
        return attrs.evolve(state, nprobe=nprobe, recall=recall, trained=total, added=0)


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _centroids(blob: bytes, dimension: int) -> Any:
    import numpy as np

    return np.frombuffer(blob, dtype="<f4").reshape(-1, dimension)


def _sq_distances(x: Any, c: Any) -> Any:
    """Squared L2 distances, ``len(x)`` x ``len(c)``, in float64 (ties resolve alike)."""
    x64, c64 = x.astype("f8"), c.astype("f8")
    return (x64 * x64).sum(1)[:, None] - 2.0 * (x64 @ c64.T) + (c64 * c64).sum(1)[None, :]


def _nearest(x: Any, c: Any, block: int = 4096) -> Any:
    """The index of each row's nearest centroid (the lowest index among equals)."""
    import numpy as np

    out = np.empty(len(x), dtype=np.int64)
    for i in range(0, len(x), block):
        out[i:i + block] = _sq_distances(x[i:i + block], c).argmin(axis=1)
    return out


def _kmeans(x: Any, lists: int, rng: Any) -> Any:
    """Lloyd's k-means on a sample of at most SAMPLE_MAX rows; an emptied list takes a
    random sample row."""
    import numpy as np

    sample = x[rng.choice(len(x), min(SAMPLE_MAX, len(x)), replace=False)]
    c = sample[rng.choice(len(sample), lists, replace=False)].astype("f8")
    for _ in range(KMEANS_ITERATIONS):
        a = _nearest(sample, c)
        sums = np.zeros_like(c)
        np.add.at(sums, a, sample)
        counts = np.bincount(a, minlength=lists)
        empty = counts == 0
        c = np.where(empty[:, None], c, sums / np.maximum(counts, 1)[:, None])
        if empty.any():
            c[empty] = sample[rng.choice(len(sample), int(empty.sum()), replace=False)]
    return c.astype("<f4")


def _bisect(x: Any, rng: Any) -> tuple[Any, Any]:
    """2-means of ``x`` (at least 2 rows): (the two centroids, float32; a bool per row,
    True for the second). Each row is nearest its side's centroid (the first among
    equals); rows that 2-means cannot separate (all equal) are cut in halves around one
    centroid given to both."""
    import numpy as np

    c = x[rng.choice(len(x), 2, replace=False)].astype("f8")
    side = np.zeros(len(x), dtype=bool)
    for _ in range(KMEANS_ITERATIONS):
        side = _nearest(x, c) == 1
        if side.all() or not side.any():
            break
        c = np.stack([x[~side].mean(0), x[side].mean(0)])
    pair = c.astype("<f4")
    side = _nearest(x, pair) == 1
    if side.all() or not side.any():
        mean = x.astype("f8").mean(0).astype("<f4")
        return np.stack([mean, mean]), np.arange(len(x)) >= len(x) // 2
    return pair, side


def _split_large(x: Any, c: Any, assigned: Any, limit: int, rng: Any) -> tuple[Any, Any]:
    """A training's lists with none above ``limit`` rows: lists above it are split
    (:func:`_bisect`, new lists numbered after the others) and every row assigned to its
    nearest centroid again, a few rounds; if some list is still above (rows 2-means
    cannot separate), the last round's splits keep their halves."""
    import numpy as np

    for _ in range(4):
        if not (np.bincount(assigned) > limit).any():
            return c, assigned
        c, _ = _split_lists(x, c, assigned, limit, rng)
        assigned = _nearest(x, c)
    return _split_lists(x, c, assigned, limit, rng)


def _split_lists(x: Any, c: Any, assigned: Any, limit: int, rng: Any) -> tuple[Any, Any]:
    """Split every list holding more than ``limit`` rows until none does."""
    import numpy as np

    c, assigned = c.copy(), assigned.copy()
    todo = [int(lst) for lst in np.flatnonzero(np.bincount(assigned) > limit)]
    while todo:
        lst = todo.pop()
        rows = np.flatnonzero(assigned == lst)
        pair, side = _bisect(x[rows], rng)
        new = len(c)
        c = np.concatenate([c, pair[1:]])
        c[lst] = pair[0]
        assigned[rows[side]] = new
        todo.extend(k for k in (lst, new) if int((assigned == k).sum()) > limit)
    return c, assigned


def _calibrate(x: Any, c: Any, assigned: Any, rng: Any) -> tuple[int, float]:
    """(``nprobe``, its recall@10): the smallest ``nprobe`` whose recall@10 reaches
    CALIBRATION_RECALL, at most MAX_PROBE_SHARE of the lists (then the recall there).
    The queries are midpoints of two random vectors of the Memory, scaled to their mean
    norm: a vector's own neighbours are mostly its near-copies, in its own list, which
    made every probe count look enough (LoCoMo turns, 30k: 3 lists of 117 for 0.995 on
    the vectors themselves, while questions needed 18 for 0.99; midpoints needed 18).
    The recall is the share of a query's exact 10 nearest whose list is among the
    ``nprobe`` nearest centroids (within the probed lists the search is exact)."""
    import numpy as np

    i, j = (rng.choice(len(x), CALIBRATION_QUERIES) for _ in range(2))
    q = x[i].astype("f8") + x[j].astype("f8")
    norms = (np.linalg.norm(x[i], axis=1) + np.linalg.norm(x[j], axis=1)) / 2
    q *= (norms / np.maximum(np.linalg.norm(q, axis=1), 1e-12))[:, None]
    best = np.full((len(q), CALIBRATION_K), np.inf)
    best_i = np.zeros((len(q), CALIBRATION_K), dtype=np.int64)
    for start in range(0, len(x), 16384):  # the exact 10 nearest, block by block
        d = _sq_distances(q, x[start:start + 16384])
        both = np.concatenate([best, d], axis=1)
        idx = np.concatenate(
            [best_i, np.broadcast_to(np.arange(start, start + d.shape[1]), d.shape)], axis=1)
        keep = np.argsort(both, axis=1, kind="stable")[:, :CALIBRATION_K]
        best, best_i = np.take_along_axis(both, keep, 1), np.take_along_axis(idx, keep, 1)
    rank = np.argsort(np.argsort(_sq_distances(q, c), axis=1, kind="stable"), axis=1)
    need = np.take_along_axis(rank, assigned[best_i], axis=1)  # rank of each one's list
    most = max(1, int(len(c) * MAX_PROBE_SHARE))
    recall = 0.0
    for nprobe in range(1, most + 1):
        recall = float((need < nprobe).mean())
        if recall >= CALIBRATION_RECALL:
            return nprobe, recall
    return most, recall
