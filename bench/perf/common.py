"""Constants, benchmark profiles, percentiles, and the LoCoMo corpus (entries, queries)
of the performance benchmark."""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peer.protocol import percentile as percentile  # the one definition (stdlib only)
from powercontext.core import analyzer

DEFAULT_DATA = Path("/work/shared/data/locomo-dev.json")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results"  # bench/results
ROOT = Path(__file__).resolve().parents[2]  # the repository
LIMIT = 10
MODES = ("fts", "vector", "hybrid")
DIM = 384
SMALL_BATCH = 100  # one-Memory datasets up to BIG_SIZE are loaded in batches of 100
BIG_BATCH = 500
BIG_SIZE = 10_000
#: Seconds one search cell (dataset x mode) may take before its queries are cut.
CELL_BUDGET_S = 150.0
WARM_BUDGET_S = 5.0
#: Queries per search cell whose hits are compared, ours against raw (untimed).
CHECK_QUERIES = 20
#: The ANN vector channel's recall@RECALL_K against exact KNN, over this many queries
#: of the vector cell (untimed; only when the library searches by ANN).
RECALL_K = 32
RECALL_QUERIES = 50
#: The plain FTS5 anchor (the yardstick of fts search on SQLite): the tokenizer the
#: library's FTS5 table uses for Analyzer v1 text (``_`` kept inside tokens).
ANCHOR_FTS = "plain_fts"
ANCHOR_TOKENIZE = "unicode61 remove_diacritics 0 tokenchars '_'"


def _scope(artifact_id: str) -> str:
    """The vec0 partition value (and the plain anchor's scope prefix) of a Memory."""
    from powercontext.sql import sqlite as frag

    return frag.scope_token(artifact_id)


#: Characters of a scope token (``m_`` + 24 hex digits).
SCOPE_CHARS = 26


def _scoped_text(scope: str, searchable_text: str) -> str:
    """The anchor's document of one row: each analyzed token as ``<scope>_<token>``."""
    return " ".join(f"{scope}_{t}" for t in searchable_text.split())


@dataclass(frozen=True)
class Profile:
    """Sizes (entries), layouts (Memories per dataset), queries per pass, passes,
    write repetitions, batch-of-100 repetitions, sentences for the local model, and
    the Topic counts of the Topic search cells (:mod:`bench.perf.topic`)."""

    name: str
    sizes: tuple[int, ...]
    layouts: tuple[int, ...]
    queries: int
    runs: int
    write_runs: int
    batch_runs: int
    embed_sentences: int
    topic_sizes: tuple[int, ...] = ()
    #: the Topic cells' retrieval shapes (``fts``, ``hybrid``, ``local`` = hybrid with
    #: the local model at the smallest size, run when the model is installed)
    topic_shapes: tuple[str, ...] = ("fts", "hybrid", "local")
    #: False (``--writes-only``): load the datasets and run only the write cells
    search: bool = True


PROFILES = {
    # quick: Topic cells at 1k in both shapes, no local-model Topic cell (it is slow)
    "quick": Profile(
        "quick", (1_000, 10_000), (1, 10), 100, 3, 20, 3, 128, (1_000,), ("fts", "hybrid")
    ),
    "full": Profile(
        "full", (1_000, 10_000, 100_000), (1, 10), 150, 3, 40, 5, 512, (1_000, 10_000)
    ),
}


def log(msg: str) -> None:
    print(f"[perf {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------- data


def load_corpus(path: Path) -> tuple[list[str], list[str]]:
    """(turn texts ``"speaker: text"`` in file order, questions in file order)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for sample in data:
        conv = sample["conversation"]
        keys = sorted(
            (k for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)),
            key=lambda k: int(k.split("_")[1]),
        )
        for k in keys:
            for t in conv[k]:
                text = str(t.get("text", "")).strip()
                if text:
                    turns.append(f"{t.get('speaker', '?')}: {text}")
        for qa in sample.get("qa", []):
            q = str(qa.get("question", "")).strip()
            if q and analyzer.query_terms(q):
                questions.append(q)
    return turns, questions


def make_entries(turns: Sequence[str], n: int) -> list[str]:
    """``n`` distinct entry texts built from ``turns`` (see the module docstring)."""
    out: list[str] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        base = turns[i % len(turns)]
        rep = i // len(turns)
        i += 1
        text = base if rep == 0 else f"{base} xr{rep}"
        while text in seen:
            rep += 1_000
            text = f"{base} xr{rep}"
        seen.add(text)
        out.append(text)
    return out


def fresh_entries(turns: Sequence[str], n: int, tag: str) -> list[str]:
    """``n`` texts for timed writes, distinct from every :func:`make_entries` text and
    from other tags: turn ``i`` + ``" <tag>w<i>"`` (``tag`` alphanumeric)."""
    return [f"{turns[i % len(turns)]} {tag}w{i}" for i in range(n)]


#: UTF-8 bytes of the long entries of the ``remember_1_8kb`` write cell (the entry text
#: limit is 8192).
LONG_ENTRY_BYTES = 8000


def long_entries(turns: Sequence[str], n: int, tag: str) -> list[str]:
    """``n`` distinct texts of about :data:`LONG_ENTRY_BYTES` UTF-8 bytes: consecutive
    turns joined by spaces, cut at a word boundary, prefixed ``<tag>l<i>``."""
    out = []
    for i in range(n):
        words, size, j = [f"{tag}l{i}"], 0, i * 37
        while size < LONG_ENTRY_BYTES:
            words.append(turns[j % len(turns)])
            size += len(words[-1].encode("utf-8")) + 1
            j += 1
        text = " ".join(words).encode("utf-8")[:LONG_ENTRY_BYTES].decode("utf-8", "ignore")
        out.append(text.rsplit(" ", 1)[0])
    return out


def pick_queries(questions: Sequence[str], n: int) -> list[str]:
    if n >= len(questions):
        return list(questions)
    step = len(questions) / n
    return [questions[int(i * step)] for i in range(n)]


# ---------------------------------------------------------------------- engines


def fit_cell(prepared: list[Any], runs: int, per_query: float, cell_budget_s: float,
             label: str, timed: str) -> tuple[list[Any], int, str | None]:
    """``(queries, passes, cut)`` of a search cell: all ``prepared`` queries x ``runs``
    when ``per_query`` seconds (measured while warming, for the ``timed`` paths) fit the
    budget, else the first queries that fit (at least 5) x 1 pass and the cut, worded
    for the report. A pathological cell is cut to its budget, not run for an hour."""
    if per_query * len(prepared) * runs <= cell_budget_s:
        return prepared, runs, None
    n = max(5, min(len(prepared), int(cell_budget_s / per_query)))
    return prepared[:n], 1, (f"{label}: cut to {n} queries x 1 pass ({per_query * 1e3:.0f} "
                             f"ms per query for {timed}; cell budget {cell_budget_s:.0f} s)")
