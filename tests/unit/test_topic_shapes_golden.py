"""The JSON shape of every Topic value, processing value and prepared context, byte for
byte (``json.dumps`` keeps key order): a Topic ref, hit, search result and Revision; a
ScopeStatus, WindowOutcome, ProcessReport, BlockedFrontier and OperatorDecision; a
prepared context with a Memory and a Topic item. The shapes are those the CLI, HTTP
and MCP print (tests/adapters/test_topic_json_golden.py checks the surfaces)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from powercontext.core.models import SourceRef
from powercontext.core.prepared import ContextItem, MemoryEntryRef, PreparedContext
from powercontext.core.topic.insight import (
    CitingRevision,
    ScopeSummary,
    SupervisionView,
    TopicListing,
    WaveProgress,
)
from powercontext.core.topic.models import (
    TopicHit,
    TopicMemoryContent,
    TopicRef,
    TopicRevision,
    TopicSearchResult,
)
from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
from powercontext.core.topic.processing import BudgetRow, PendingRow, ScopeStatus
from powercontext.core.topic.report import LeftOut, ProcessReport, WindowOutcome
from powercontext.core.topic.scope import SourceScope

A = TopicRef("topic_art_01jb0000000000000000000000", 3)
B = TopicRef("topic_art_01jb0000000000000000000001", 1)
S = SourceRef("src_1", "ab" * 32)
HIT = TopicHit(A, "Release process", "How we cut a release.", "Tag \u00e9 <b>", 0.5,
               ("topic_fts", "detail_fts"))
HIT_NO_SNIPPET = TopicHit(B, "Deploy", "Deploy it.", None, 0.25, ("topic_vector",))
REV = TopicRevision("repo:/w", A, TopicMemoryContent("T", "S", "D\n\nE"), "cd" * 32,
                    (S, SourceRef("src_2", "ef" * 32)), B, "2026-12-07T17:00:00.123Z")
REV_FIRST = TopicRevision("repo:/w", B, TopicMemoryContent("T", "S", "D"), "cd" * 32, (S,),
                          None, "2026-12-07T17:00:00Z")
PENDING = PendingRow("topic-memory-source-window", "repo:/w", 7, 2, 1)
BUDGET = BudgetRow("repo:/w", "topic-memory-source-window", 3, 7, "att_secret", 2, 5, 900,
                   "window_attempt_limit")
BUDGET_OPEN = BudgetRow("repo:/w", "topic-memory-source-window", 3, 7, "att_secret", 1, 1, 90)
STATUS = ScopeStatus("repo:/w", "topic-memory-source-window", 7, 3, PENDING, BUDGET)
STATUS_BARE = ScopeStatus("repo:/w", "topic-memory-source-window", 0, 0, None, None)
STATUS_OPEN = ScopeStatus("repo:/w", "topic-memory-source-window", 7, 7, None, BUDGET_OPEN)
LEFT = LeftOut(4, "src_4", "uncited")
WINDOW = WindowOutcome("repo:/w", 0, 3, (A,), (B,), 1, 4,
                       (LEFT, LeftOut(5, "src_5", "condensed")))
WINDOW_BARE = WindowOutcome("repo:/w", 3, 4)
REPORT = ProcessReport("repo:/w", (WINDOW, WINDOW_BARE), STATUS, "window_attempt_limit",
                       "three attempts failed")
REPORT_DONE = ProcessReport("repo:/w", (), STATUS_BARE)
FRONTIER = BlockedFrontier("repo:/w", 3, 7, "window_attempt_limit", 4, "src_4", "file",
                           None, "three attempts", ("powercontext topic unblock x",
                                                    "powercontext topic status"))
DECISION = OperatorDecision("dec_1", "repo:/w", "topic-memory-source-window", 3, "skip", 4,
                            "src_4", "window_attempt_limit", 3, 5, 900, "ops", "bad input",
                            "2026-12-07T17:00:00Z")
GRANT = OperatorDecision("dec_2", "repo:/w", "topic-memory-source-window", 3, "grant", None,
                         None, "window_provider_budget_exceeded", 3, 5, 900, "ops", "more")
MEMORY_ITEM = ContextItem("memory", 1, "fact", "make release", None,
                          MemoryEntryRef("mem_art_1", 2, "mem_ent_1", "mem_ver_1"))
TOPIC_ITEM = ContextItem("topic-memory", 1, "Release", "How \u00e9", "snip", A)
PREPARED = PreparedContext("repo:/w", "release", (MEMORY_ITEM, TOPIC_ITEM), 2, 400)
PREPARED_EMPTY = PreparedContext("repo:/w", "q", (), 0, 70)
# the dashboard's read-only views (their golden lines were written by the rows the
# dashboard built by hand before they went through the converter)
CITING = CitingRevision("repo:/w", A, "2026-12-07T17:00:00.123Z")
SCOPE_SUMMARY = ScopeSummary("repo:/w", 7, 2, 5)
SOURCE_SCOPE = SourceScope("repo:/w", 4, True)
SUPERVISION = SupervisionView("3f2b", 4, "2026-12-07T17:00:30Z", "2026-12-07T16:59:00Z",
                              (WaveProgress("wave_1", 3, 1), WaveProgress("wave_2", 0, 0)))
SUPERVISION_BARE = SupervisionView(None, None, None, None, ())
LISTING = TopicListing.of(TopicRevision("repo:/w", A, TopicMemoryContent("T", "S", "D"),
                                        "cd" * 32, (S, SourceRef("src_2", "ef" * 32)), B,
                                        "2026-12-07T17:00:00.123Z"))

GOLDEN = Path(__file__).parent / "golden" / "topic_shapes.txt"
#: name -> the exact ``json.dumps(shape, ensure_ascii=False)`` (one ``NAME<TAB>JSON`` a line)
EXPECTED = dict(line.split("\t", 1) for line in
                GOLDEN.read_text(encoding="utf-8").splitlines())


def shaped(name: str) -> Any:
    from powercontext.context_prepare import context_json
    from powercontext.core.shapes import to_json
    from powercontext.topic_shapes import left_out_json, processing_json, topic_json

    if name == "SEARCH":
        return topic_json(TopicSearchResult((HIT, HIT_NO_SNIPPET), ("topic_fts", "detail_fts")))
    if name == "LEFT":
        return left_out_json(LEFT)
    value = globals()[name]
    if isinstance(value, CitingRevision | ScopeSummary | SourceScope | SupervisionView
                  | TopicListing):
        return to_json(value)
    if isinstance(value, PreparedContext):
        return context_json(value)
    if isinstance(value, TopicRef | TopicHit | TopicRevision):
        return topic_json(value)
    return processing_json(value)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_json_shape_is_unchanged_byte_for_byte(name: str) -> None:
    assert json.dumps(shaped(name), ensure_ascii=False) == EXPECTED[name]
