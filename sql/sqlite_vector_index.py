"""SQLite-only statements of the vector channel's inverted-file (IVF) index (Memory RFC,
"Search and reads": the vector channel performs ANN retrieval; used by
:mod:`powercontext.adapters.sqlite.vector_index`).

Layout, in the same database file as the Revisions and written in their transactions:

* ``memory_entry_search_vector_ivf`` -- vec0 with ``rowid = projection_id`` and two
  partition keys, ``scope`` (the Memory's scope token, :func:`powercontext.sql.sqlite.
  scope_token`) and ``ivf_list`` (the number of the list, that is of the nearest
  centroid), plus the same float vector as the float table. A KNN constrained by
  ``scope = ? AND ivf_list IN (...)`` visits only those lists' chunks of that Memory:
  the Memory filter is applied inside the index. vec0 answers ``k`` rows per partition
  value, so the search statement orders and cuts them (``ivf_search``).
* ``memory_entry_vector_ivf_centroids`` -- vec0 partitioned by ``scope`` holding each
  list's centroid and its number (metadata column ``ivf_list``): a search finds the
  lists to probe with a KNN of its own, inside the same statement.
* ``memory_entry_vector_ivf_lists`` -- one row per Memory with vectors: its number of
  lists, the number a search probes (0: not calibrated yet, searched exactly), the
  vector count it was trained on, the vectors added since (an upper bound of the
  growth: deletes are not counted) and its recall@10 (measured by the calibration, then
  kept up by each split). Its ``centroids`` BLOB is written empty: the centroids live in
  the centroids' vec0 table only (an index made before the splits kept a copy here).
* ``memory_entry_vector_ivf_sizes`` -- the number of vectors in each list of each
  Memory: a list that outgrows twice its size is split in two.

Identifiers are fixed constants written quoted; every value is a bound parameter; the
only numbers written into the text are the dimension and the chunk size, checked ints.
"""

from __future__ import annotations

import functools

from powercontext.sql.sqlite import CANDIDATE_COLUMNS, VECTOR_TABLE

__all__ = ["CENTROIDS_TABLE", "IVF_CHUNK_SIZE", "IVF_TABLE", "LISTS_TABLE", "SIZES_TABLE",
           "centroids_ddl",
           "ivf_ddl", "statement"]

IVF_TABLE = "memory_entry_search_vector_ivf"
LISTS_TABLE = "memory_entry_vector_ivf_lists"
CENTROIDS_TABLE = "memory_entry_vector_ivf_centroids"
SIZES_TABLE = "memory_entry_vector_ivf_sizes"
#: Vectors per vec0 chunk of one list (lists hold about 256 vectors when trained).
IVF_CHUNK_SIZE = 64


def _q(name: str) -> str:
    return '"' + name + '"'


_IVF, _LISTS, _VEC = _q(IVF_TABLE), _q(LISTS_TABLE), _q(VECTOR_TABLE)
_CENT, _SIZES = _q(CENTROIDS_TABLE), _q(SIZES_TABLE)
_HEADS, _META = _q("memory_entry_heads"), _q("memory_entry_vector_metadata")
_COLS = ", ".join(f"h.{_q(c)}" for c in CANDIDATE_COLUMNS)

_STATEMENTS = {
    "create_lists": (f"CREATE TABLE IF NOT EXISTS {_LISTS} (scope TEXT PRIMARY KEY, "
                     "lists INTEGER NOT NULL, nprobe INTEGER NOT NULL, "
                     "trained INTEGER NOT NULL, added INTEGER NOT NULL, "
                     "recall REAL NOT NULL, centroids BLOB NOT NULL)"),
    "create_sizes": (f"CREATE TABLE IF NOT EXISTS {_SIZES} (scope TEXT NOT NULL, "
                     "ivf_list INTEGER NOT NULL, size INTEGER NOT NULL, "
                     "PRIMARY KEY (scope, ivf_list)) WITHOUT ROWID"),
    "drop_sizes": f"DROP TABLE IF EXISTS {_SIZES}",
    # a list's size moved by ?3; the new size
    "sizes_bump": (f"INSERT INTO {_SIZES} (scope, ivf_list, size) VALUES (?1, ?2, ?3) "
                   "ON CONFLICT (scope, ivf_list) DO UPDATE SET size = size + ?3 "
                   "RETURNING size"),
    "sizes_set": (f"INSERT INTO {_SIZES} (scope, ivf_list, size) VALUES (?, ?, ?) "
                  "ON CONFLICT (scope, ivf_list) DO UPDATE SET size = excluded.size"),
    "sizes_total": f"SELECT coalesce(sum(size), 0) FROM {_SIZES} WHERE scope = ?",
    "sizes_get": f"SELECT ivf_list, size FROM {_SIZES} WHERE scope = ? ORDER BY ivf_list",
    "sizes_delete_scope": f"DELETE FROM {_SIZES} WHERE scope = ?",
    "drop_ivf": f"DROP TABLE IF EXISTS {_IVF}",
    "drop_lists": f"DROP TABLE IF EXISTS {_LISTS}",
    "drop_centroids": f"DROP TABLE IF EXISTS {_CENT}",
    "centroids_insert": f"INSERT INTO {_CENT} (scope, ivf_list, embedding) VALUES (?, ?, ?)",
    "centroids_delete_list": (f"DELETE FROM {_CENT} WHERE rowid IN (SELECT rowid FROM {_CENT} "
                              "WHERE scope = ? AND ivf_list = ?)"),
    # the two lists whose centroids are nearest a vector (?1) in one Memory (?2)
    "centroids_nearest": (f"SELECT ivf_list, distance, embedding FROM {_CENT} "
                          "WHERE embedding MATCH ?1 AND k = 2 AND scope = ?2"),
    # every centroid of one Memory, by list (checks and tests; a scan of the table)
    "centroids_of": (f"SELECT ivf_list, embedding FROM {_CENT} WHERE scope = ? "
                     "ORDER BY ivf_list"),
    "centroids_delete_scope": (f"DELETE FROM {_CENT} WHERE rowid IN "
                               f"(SELECT rowid FROM {_CENT} WHERE scope = ?)"),
    # the Memory's row without its centroids (what a search needs)
    "lists_head": (f"SELECT lists, nprobe, trained, added, recall FROM {_LISTS} "
                   "WHERE scope = ?"),
    "lists_get": (f"SELECT lists, nprobe, trained, added, recall, centroids FROM {_LISTS} "
                  "WHERE scope = ?"),
    "lists_put": (f"INSERT INTO {_LISTS} (scope, lists, nprobe, trained, added, recall, "
                  "centroids) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE SET "
                  "lists = excluded.lists, nprobe = excluded.nprobe, "
                  "trained = excluded.trained, added = excluded.added, "
                  "recall = excluded.recall, centroids = excluded.centroids"),
    "lists_added": f"UPDATE {_LISTS} SET added = added + ? WHERE scope = ?",
    "lists_delete": f"DELETE FROM {_LISTS} WHERE scope = ?",
    "lists_scopes": f"SELECT scope FROM {_LISTS} ORDER BY scope",
    "ivf_insert": (f"INSERT INTO {_IVF} (rowid, scope, ivf_list, embedding) "
                   "VALUES (?, ?, ?, ?)"),
    "ivf_delete": f"DELETE FROM {_IVF} WHERE rowid = ?",
    "ivf_where": f"SELECT scope, ivf_list FROM {_IVF} WHERE rowid = ?",
    # the members of one list (?3, ?4), at most ?2, by a KNN constrained to that
    # partition (a plain scan would read the whole table); ?1 any vector
    "ivf_members": (f"SELECT rowid, embedding FROM {_IVF} WHERE embedding MATCH ?1 "
                    "AND k = ?2 AND scope = ?3 AND ivf_list = ?4"),
    "ivf_delete_scope": (f"DELETE FROM {_IVF} WHERE rowid IN "
                         f"(SELECT rowid FROM {_IVF} WHERE scope = ?)"),
    # the float vectors of one Memory (training input; vec0 scans with the partition key)
    "scope_vectors": f"SELECT rowid, embedding FROM {_VEC} WHERE scope = ?",
    # the scopes that hold float vectors (a rebuild makes every Memory's row)
    "vector_scopes": f"SELECT DISTINCT scope FROM {_VEC}",
    "ivf_rows": f"SELECT rowid, scope, ivf_list FROM {_IVF} ORDER BY rowid",
}


def statement(name: str) -> str:
    """A fixed statement by name; KeyError."""
    return _STATEMENTS[name]


@functools.cache
def ivf_ddl(dimension: int) -> str:
    """CREATE VIRTUAL TABLE of the IVF vec0 table; ValueError for a bad dimension."""
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= 8192:
        raise ValueError(f"vector dimension must be an int in 1..8192, not {dimension!r}")
    return (f"CREATE VIRTUAL TABLE IF NOT EXISTS {_IVF} USING vec0(scope text partition key, "
            f"ivf_list integer partition key, embedding float[{dimension:d}] "
            f"distance_metric=l2, chunk_size={IVF_CHUNK_SIZE:d})")


@functools.cache
def centroids_ddl(dimension: int) -> str:
    """CREATE VIRTUAL TABLE of the centroids' vec0 table; ValueError for a bad dimension."""
    ivf_ddl(dimension)  # the same checks
    return (f"CREATE VIRTUAL TABLE IF NOT EXISTS {_CENT} USING vec0(scope text partition key, "
            f"ivf_list integer, embedding float[{dimension:d}] distance_metric=l2, "
            f"chunk_size={IVF_CHUNK_SIZE:d})")


# The ?5 nearest (list, distance) of one Memory (?3) among its ?4 lists whose centroids
# are nearest the query (?1), ``k`` = ?2 per list (a split's recall check).
_STATEMENTS["ivf_knn"] = (
    f"WITH knn AS MATERIALIZED (SELECT rowid AS pid, ivf_list, distance FROM {_IVF} "
    f"WHERE embedding MATCH ?1 AND k = ?2 AND scope = ?3 AND ivf_list IN "
    f"(SELECT ivf_list FROM {_CENT} WHERE embedding MATCH ?1 AND k = ?4 AND scope = ?3)) "
    f"SELECT ivf_list, distance FROM knn ORDER BY distance, pid LIMIT ?5")
# The ?2 lists of one Memory (?3) whose centroids are nearest ?1.
_STATEMENTS["centroids_knn"] = (
    f"SELECT ivf_list FROM {_CENT} WHERE embedding MATCH ?1 AND k = ?2 AND scope = ?3")

# The KNN over the ?4 lists of one Memory (?3) whose centroids are nearest the query
# (?1), ``k`` = ?2 per list, then the ?5 nearest by (distance, projection id). Rows as
# ``vector_search`` (powercontext.sql.sqlite): the head row's columns and the L2
# distance, a vector whose metadata does not name the head row's exact version and hash
# left out. vec0 runs the IN list one partition value at a time, inside its scan.
_STATEMENTS["ivf_search"] = (
    f"WITH knn AS MATERIALIZED (SELECT rowid AS pid, distance FROM {_IVF} "
    f"WHERE embedding MATCH ?1 AND k = ?2 AND scope = ?3 AND ivf_list IN "
    f"(SELECT ivf_list FROM {_CENT} WHERE embedding MATCH ?1 AND k = ?4 AND scope = ?3)), "
    f"top AS MATERIALIZED (SELECT pid, distance FROM knn ORDER BY distance, pid LIMIT ?5) "
    f"SELECT {_COLS}, top.distance FROM top JOIN {_HEADS} AS h "
    f"ON h.{_q('projection_id')} = top.pid JOIN {_META} AS m "
    f"ON m.{_q('projection_id')} = h.{_q('projection_id')} "
    f"AND m.{_q('entry_version_id')} = h.{_q('entry_version_id')} "
    f"AND m.{_q('entry_content_hash')} = h.{_q('entry_content_hash')}")
