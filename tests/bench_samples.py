"""A tiny LoCoMo-format dataset for the benchmark smoke tests (bench/perf, bench/peer,
bench/locomo reports): one conversation of two dated sessions, seven turns, and three
answerable questions (plus, on request, one unanswerable question of category 5 with no
evidence). Small enough that a whole benchmark run takes seconds."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

__all__ = ["assert_raw_channels_match", "raw_channel_checks", "tiny_locomo", "write_tiny_locomo"]

_SAMPLE: list[dict[str, Any]] = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! How are you?"},
                {"speaker": "Ben", "dia_id": "D1:2",
                 "text": "Great, I adopted a puppy named Biscuit."},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "I started painting sunsets."},
                {"speaker": "Ben", "dia_id": "D1:4", "text": "Thanks!"},
            ],
            "session_2_date_time": "2:10 pm on 9 May, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "Biscuit loves the lake."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "My lake painting won a prize."},
                {"speaker": "Ben", "dia_id": "D2:3", "text": "Thanks!"},
            ],
        },
        "qa": [
            {"question": "What is the name of Ben's puppy?", "evidence": ["D1:2"], "category": 4},
            {"question": "What does Ana paint?", "evidence": ["D1:3"], "category": 1},
            {"question": "Where does Biscuit swim?", "evidence": ["D2:1"], "category": 4},
        ],
    }
]

_UNANSWERABLE = {"question": "What?", "evidence": [], "category": 5}


def tiny_locomo(*, unanswerable: bool = False) -> list[dict[str, Any]]:
    """A fresh copy of the dataset (a list of one LoCoMo sample)."""
    sample = copy.deepcopy(_SAMPLE)
    if unanswerable:
        sample[0]["qa"].append(dict(_UNANSWERABLE))
    return sample


def write_tiny_locomo(path: Path, *, unanswerable: bool = False) -> Path:
    """Write :func:`tiny_locomo` as JSON to ``path``; returns ``path``."""
    path.write_text(json.dumps(tiny_locomo(unanswerable=unanswerable)), encoding="utf-8")
    return path


async def raw_channel_checks(engine: Any, ds: Any, model: Any, queries: list[str]
                             ) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """The bench's untimed ``same_hits`` check of each mode for ``queries`` on the loaded
    dataset ``ds``, raw channels against the library (bench/perf/measure.py): the
    sample (query, terms, vector parameter, vector) and ``{mode: check}``. Opens and
    closes the engine's raw connection."""
    from bench import perf
    from powercontext.core import query as query_bounds

    ids = sorted(h.artifact_id for h in ds.heads)
    engine.open_raw(ds.svc)
    try:
        analyzer = ds.svc.backend._db_analyzer
        sample = []
        for q in queries:
            (vec,) = model.embed_sync((q,)).vectors
            sample.append((q, query_bounds.search_terms(q, analyzer),
                           engine.vector_param(vec), vec))
        checks = {}
        for mode in perf.MODES:
            checks[mode] = await perf.same_hits(
                engine, ds.svc, ds, sample, mode,
                lambda t, b, mode=mode: perf.raw_channels(engine, ids, t, b, mode))
        return sample, checks
    finally:
        engine.close_raw()


async def assert_raw_channels_match(engine: Any, ds: Any, model: Any, questions: list[str]
                                    ) -> list[Any]:
    """:func:`raw_channel_checks` for ``questions`` and two queries whose common terms
    admission refuses; asserts no mode has a mismatch; returns the sample."""
    queries = [*questions, "the name of the lake", "what is the puppy"]
    sample, checks = await raw_channel_checks(engine, ds, model, queries)
    for check in checks.values():
        assert check == {"queries": len(sample), "mismatches": 0, "examples": []}
    return sample
