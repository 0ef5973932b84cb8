"""Oversized Work Items: Source Batches, temporary Topics and the final operation
(Topic Memory RFC, "Oversized Work Items and temporary Topics"; TOPIC-MEMORY.md).

Only a Work Item whose Sources plus its historical Topic do not fit one Item Evolver
request takes this path:

1. :func:`source_batches`: the Item's Sources in Window order packed greedily into
   Batches that fit a ``temporary`` request; a Source that does not fit alone is
   split by :func:`powercontext.core.topic.window.fragments` (every character kept, one
   Batch per fragment, each carrying the Source's evidence id and offsets).
2. Stage ``temporary`` per Batch, WITHOUT the historical Topic: input ``{"focus":
   [query, ...], "max_result_chars": int, "sources": [{"id", "text"} | {"id", "start",
   "end", "text"}]}``; output ``{"topic": TEMPORARY | null}`` (null: the Batch adds
   nothing to this topic), TEMPORARY = ``{"title", "summary", "detail",
   "evidence_ids"}`` citing only the Batch's ids.
3. The temporaries stream through the accumulator (:mod:`.accumulate`), reduced before
   overflow, and again until the final request fits with the historical Topic.
4. Stage ``evolve`` (final, schema ``topic_item_final``): input ``{"focus": [...],
   "temporaries": [{"id": "t1", "title", "summary", "detail"}], "target": {"title",
   "summary", "detail"} | null}``; output ``{"topic": TOPIC | null}`` whose
   ``evidence_ids`` name temporaries (``t1``...): the final lineage is the union of the
   SourceRefs of the temporaries it cites. UPDATE/CREATE/NOOP as for the Item Evolver.

If one reduced temporary plus the historical Topic still does not fit the final
request, the Window fails closed (``work_item_over_budget``): no truncation, no split
of history, no further loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from powercontext.core.topic.accumulate import Live, TemporaryTopic
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.planner import WorkItem
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Evolution
from powercontext.core.topic.window import Fragment, Window, WindowSource

__all__ = [
    "CODE_ITEM_OVER_BUDGET",
    "FINAL_INSTRUCTIONS",
    "TEMPORARY_INSTRUCTIONS",
    "SourceBatch",
    "final_request",
    "final_schema",
    "parse_final",
    "parse_temporary",
    "source_batches",
    "temporary_handles",
    "temporary_request",
    "temporary_schema",
]

CODE_ITEM_OVER_BUDGET = "work_item_over_budget"
TEMPORARY_INSTRUCTIONS = "Stage: temporary. (written by p3-temporary)"
FINAL_INSTRUCTIONS = "Stage: evolve from temporary Topics. (written by p3-temporary)"


@attrs.frozen
class SourceBatch:
    """One Source Batch (``position`` 1-based, in Window order): whole Sources or one
    fragment of an oversized Source."""

    position: int
    parts: tuple[WindowSource | Fragment, ...]

    @property
    def evidence_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.evidence_id for p in self.parts))


def source_batches(window: Window, item: WorkItem, settings: ProcessingSettings,
                   max_result_chars: int) -> tuple[SourceBatch, ...]:
    """The Item's Batches, each fitting a temporary request. InvalidInputError /
    TopicProcessingError ``work_item_over_budget`` when not even one character fits."""
    raise NotImplementedError


def temporary_schema() -> dict[str, Any]:
    raise NotImplementedError


def temporary_request(batch: SourceBatch, item: WorkItem, settings: ProcessingSettings,
                      max_result_chars: int) -> StageRequest:
    raise NotImplementedError


def parse_temporary(text: object, window: Window, batch: SourceBatch,
                    max_tokens: int) -> TemporaryTopic | None:
    """The checked temporary Topic of one Batch (None: nothing); TopicProcessingError
    ``model_output_invalid`` (stage ``temporary``) for bad output, evidence outside the
    Batch, or a result estimating over ``max_tokens``."""
    raise NotImplementedError


def temporary_handles(live: Sequence[Live]) -> dict[str, Live]:
    """``t1``, ``t2``, ... for the live temporaries in order."""
    return {f"t{i}": item for i, item in enumerate(live, start=1)}


def final_schema(handles: Sequence[str]) -> dict[str, Any]:
    raise NotImplementedError


def final_request(live: Sequence[Live], item: WorkItem,
                  settings: ProcessingSettings) -> StageRequest | None:
    """The final request (temporaries + the Item's complete target or null); None when
    it does not fit."""
    raise NotImplementedError


def parse_final(text: object, window: Window, live: Sequence[Live], item: WorkItem) -> Evolution:
    """The Item's one operation from a final output; lineage = union of the cited
    temporaries' SourceRefs. TopicProcessingError ``model_output_invalid``."""
    raise NotImplementedError
