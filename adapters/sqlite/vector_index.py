"""The SQLite vector channel's approximate index: an inverted file (IVF) on sqlite-vec
(Memory RFC, "Search and reads": the vector channel performs ANN retrieval; layout and
statements in :mod:`powercontext.sql.sqlite_vector_index`).

Per Memory, k-means centroids split its vectors into lists of about
:data:`LIST_SIZE`; each vector is also stored in the vec0 table partitioned by
(Memory scope, list), so a search reads only the ``nprobe`` lists whose centroids are
nearest the query, of that Memory only, and ranks them by the exact L2 distance.

* **Transactional.** Every row and centroid lives in the database file and is written
  by the caller's transaction: the Revision's commit writes a new vector into its
  nearest list, a rollback or a crash takes it back with the Revision. Nothing is cached
  across transactions, so a second process's write is seen at once.
* **Rebuildable.** The index is a projection of the float vectors: :meth:`VectorIndex.
  train` makes a Memory's lists again from them (``memory rebuild`` trains every
  Memory); a database without the tables searches exactly until a rebuild makes them.
* **When it trains.** A commit trains a Memory when it reaches :data:`TRAIN_AT` vectors
  and again each time it has doubled (:data:`GROWTH`), while it holds at most
  :data:`AUTO_TRAIN_MAX` (a training reads, clusters and rewrites all the Memory's
  vectors); past that its lists keep growing until ``memory rebuild``. A Memory below
  TRAIN_AT has no lists and is searched exactly.
* **Calibrated.** Training picks the smallest ``nprobe`` whose recall@10 against the
  exact answer reaches :data:`CALIBRATION_RECALL` for queries made from the Memory's
  vectors (:func:`_calibrate`), at most :data:`MAX_PROBE_SHARE` of the lists, and stores
  the recall reached; ``vector_index="auto"`` searches a Memory through its lists only
  when it is at least :data:`AUTO_RECALL`.

Training is deterministic: the sample and the first centroids come from a generator
seeded by the Memory's scope token and its vector count.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from powercontext.sql import sqlite_vector_index as ivf_sql

__all__ = ["AUTO_RECALL", "AUTO_TRAIN_MAX", "CALIBRATION_RECALL", "GROWTH", "LIST_SIZE",
           "MAX_PROBE_SHARE", "TRAIN_AT", "Lists", "VectorIndex"]

#: A Memory gets lists once it holds this many vectors (below, exact KNN is cheap).
TRAIN_AT = 4096
#: Vectors per list at training: ``lists = round(vectors / LIST_SIZE)``.
LIST_SIZE = 256
#: A commit trains a Memory again once its vectors have grown by this factor ...
GROWTH = 2
#: ... while it holds at most this many (beyond, ``memory rebuild`` trains it).
AUTO_TRAIN_MAX = 131_072
#: Vectors the k-means runs on (a seeded sample of the Memory's).
SAMPLE_MAX = 32_768
#: Lloyd iterations of the k-means.
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

Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


@attrs.frozen
class Lists:
    """One Memory's row of the lists table: ``lists`` = 0 means no index yet."""

    lists: int
    nprobe: int
    trained: int
    added: int
    recall: float
    centroids: bytes

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
        """Create the two tables if missing (an empty index: every Memory exact)."""
        self._run(ivf_sql.ivf_ddl(self.dimension), ())
        self._run(ivf_sql.centroids_ddl(self.dimension), ())
        self._run(ivf_sql.statement("create_lists"), ())

    def drop(self) -> None:
        """Drop both tables (a new embedding profile; a rebuild makes them again)."""
        self._run(ivf_sql.statement("drop_ivf"), ())
        self._run(ivf_sql.statement("drop_lists"), ())
        self._run(ivf_sql.statement("drop_centroids"), ())

    # ------------------------------------------------------------------ writes

    def lists(self, scope: str, *, centroids: bool = True) -> Lists | None:
        """The Memory's row, or None when it has none; ``centroids=False`` leaves its
        centroids out (b"": a search reads them from the centroids' vec0 table)."""
        if not centroids:
            rows = self._run(ivf_sql.statement("lists_head"), (scope,))
            if not rows:
                return None
            n, nprobe, trained, added, recall = rows[0]
            return Lists(int(n), int(nprobe), int(trained), int(added), float(recall), b"")
        rows = self._run(ivf_sql.statement("lists_get"), (scope,))
        if not rows:
            return None
        n, nprobe, trained, added, recall, blob = rows[0]
        return Lists(int(n), int(nprobe), int(trained), int(added), float(recall),
                     bytes(blob))

    def add(self, scope: str, rows: Sequence[tuple[int, bytes]]) -> None:
        """Index new float vectors ``(projection id, float32 blob)`` of one Memory: each
        into its nearest list when the Memory has lists; then count them and train when
        it is due (see the module docstring)."""
        if not rows:
            return
        state = self.lists(scope)
        if state is None:
            self._put(scope, Lists(0, 0, 0, len(rows), 0.0, b""))
        else:
            if state.lists:
                self._insert(scope, rows, _centroids(state.centroids, self.dimension))
            self._run(ivf_sql.statement("lists_added"), (len(rows), scope))
        size = (state.trained + state.added if state else 0) + len(rows)
        trained = state.trained if state and state.lists else 0
        due = size >= self.train_at and (
            trained == 0 or (size >= GROWTH * trained and size <= AUTO_TRAIN_MAX))
        if due and (trained or size <= AUTO_TRAIN_MAX):
            self.train(scope)

    def delete(self, pids: Sequence[int]) -> None:
        """Remove these projection ids' rows (any that are absent are no error)."""
        statement = ivf_sql.statement("ivf_delete")
        for pid in pids:
            self._run(statement, (pid,))

    def clear(self, scope: str) -> None:
        """Remove one Memory's rows and its lists (a rebuild makes them again)."""
        self._run(ivf_sql.statement("ivf_delete_scope"), (scope,))
        self._run(ivf_sql.statement("centroids_delete_scope"), (scope,))
        self._run(ivf_sql.statement("lists_delete"), (scope,))

    def train_all(self) -> None:
        """Train every Memory that holds float vectors (the end of ``memory rebuild``),
        whatever its size; a Memory below TRAIN_AT keeps only its count."""
        for (scope,) in self._run(ivf_sql.statement("vector_scopes"), ()):
            self.train(str(scope))

    def train(self, scope: str) -> Lists:
        """Make one Memory's lists again from its float vectors: k-means on a seeded
        sample, every vector into its nearest list, ``nprobe`` calibrated (module
        docstring). Returns the stored row."""
        import numpy as np

        found = self._run(ivf_sql.statement("scope_vectors"), (scope,))
        self._run(ivf_sql.statement("ivf_delete_scope"), (scope,))
        self._run(ivf_sql.statement("centroids_delete_scope"), (scope,))
        n = len(found)
        if n < self.train_at:
            state = Lists(0, 0, n, 0, 0.0, b"")
            self._put(scope, state)
            return state
        pids = [int(r[0]) for r in found]
        x = np.frombuffer(b"".join(r[1] for r in found), dtype="<f4").reshape(n, self.dimension)
        rng = np.random.default_rng(
            int.from_bytes(hashlib.sha256(f"{scope}:{n}".encode()).digest()[:8], "big"))
        centroids = _kmeans(x, max(2, round(n / self.list_size)), rng)
        assigned = _nearest(x, centroids)
        nprobe, recall = _calibrate(x, centroids, assigned, rng)
        insert = ivf_sql.statement("ivf_insert")
        for pid, lst, i in zip(pids, assigned.tolist(), range(n), strict=True):
            self._run(insert, (pid, scope, int(lst), x[i].tobytes()))
        for lst, centroid in enumerate(centroids):
            self._run(ivf_sql.statement("centroids_insert"), (scope, lst, centroid.tobytes()))
        state = Lists(len(centroids), nprobe, n, 0, recall,
                      centroids.astype("<f4").tobytes())
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

    def nearest(self, state: Lists, vectors: Sequence[bytes]) -> list[int]:
        """The list each float32 blob belongs in (checks and tests)."""
        return self._nearest(_centroids(state.centroids, self.dimension), vectors)

    # ------------------------------------------------------------------ private

    def _put(self, scope: str, s: Lists) -> None:
        self._run(ivf_sql.statement("lists_put"),
                  (scope, s.lists, s.nprobe, s.trained, s.added, s.recall, s.centroids))

    def _insert(self, scope: str, rows: Sequence[tuple[int, bytes]], centroids: Any) -> None:
        statement = ivf_sql.statement("ivf_insert")
        lists = self._nearest(centroids, [b for _, b in rows])
        for (pid, blob), lst in zip(rows, lists, strict=True):
            self._run(statement, (pid, scope, lst, blob))

    def _nearest(self, centroids: Any, vectors: Sequence[bytes]) -> list[int]:
        import numpy as np

        if not vectors:
            return []
        x = np.frombuffer(b"".join(vectors), dtype="<f4").reshape(len(vectors), self.dimension)
        return [int(i) for i in _nearest(x, centroids)]


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
