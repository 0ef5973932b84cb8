"""The Work Planner and the Item Evolver (Topic Memory RFC, "Work Planner and direct Work
Items"; TOPIC-MEMORY.md).

The Planner runs only when the global path overflows or cannot bind. It reads only the
Probes (``p1``, ``p2``, ...), the SourceRefs they cite (evidence id, kind, uri) and the
title, summary and snippet of the selected historical Topics (handles ``h1``, ... in
selection order, as for the Global Topic Evolver).

Stage ``plan``: input ``{"probes": [{"id": "p1", "query", "evidence_ids"}], "sources":
[{"id": "s1", "kind", "uri"}], "history": [{"handle": "h1", "title", "summary",
"snippet"}]}``; output ``{"items": [{"operation": "create"|"update", "target": "h2" |
null, "probes": ["p1", ...]}, ...]}``. Refused (``work_plan_invalid``, stage ``plan``):
a Probe in no Item or in two, an unknown Probe id, an Item with no Probe, an UPDATE
Item with no target or a target that is not a given handle, a CREATE Item with a
target, two Items with one target (a historical reference split across Items: one
Item owns a historical Head per wave). Malformed JSON / extra or missing fields:
``model_output_invalid``.

Each Item then loads its Sources (every Window Source its Probes cite, whole) and at
most one complete historical Topic (its target's head) for the Item Evolver: stage
``evolve`` with input ``{"focus": [query, ...], "sources": [{"id", "text"}], "target":
{"title", "summary", "detail"} | null}``, output ``{"topic": TOPIC | null}``. For an
UPDATE Item a TOPIC differing from the head is an UPDATE of that exact head, null or
equal content a NOOP; for a CREATE Item a TOPIC is a CREATE, null a NOOP. Evidence ids
must be the Item's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.history import HistoryCandidate
from powercontext.core.topic.models import TopicRevision
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Evolution, Probe
from powercontext.core.topic.window import Window, WindowSource

__all__ = [
    "CODE_PLANNER_OVER_BUDGET",
    "CODE_PLAN_INVALID",
    "ITEM_INSTRUCTIONS",
    "PLAN_INSTRUCTIONS",
    "WorkItem",
    "item_request",
    "item_schema",
    "item_sources",
    "parse_item",
    "parse_plan",
    "plan_request",
    "plan_schema",
    "probe_handles",
]

CODE_PLAN_INVALID = "work_plan_invalid"
CODE_PLANNER_OVER_BUDGET = "planner_input_over_budget"
PLAN_INSTRUCTIONS = "Stage: plan. (written by p3-planner)"
ITEM_INSTRUCTIONS = "Stage: evolve one Work Item. (written by p3-planner)"


@attrs.frozen
class WorkItem:
    """One Work Item of a plan: ``operation``; ``target`` the complete head the server
    holds for its handle (UPDATE) or None (CREATE); its ``probes`` (plan order) and
    ``evidence_ids``, the union of their evidence ids in Window order."""

    operation: Literal["create", "update"]
    target: TopicRevision | None
    probes: tuple[Probe, ...]
    evidence_ids: tuple[str, ...]

    @property
    def focus(self) -> tuple[str, ...]:
        """The Probe queries (the subject the Item is about)."""
        return tuple(p.query for p in self.probes)


def probe_handles(probes: Sequence[Probe]) -> dict[str, Probe]:
    """``p1``, ``p2``, ... for the Probes in order."""
    return {f"p{i}": p for i, p in enumerate(probes, start=1)}


def plan_schema(probe_ids: Sequence[str], handles: Sequence[str]) -> dict[str, Any]:
    """The strict JSON Schema of the plan output (probe ids and target handles as enums)."""
    raise NotImplementedError


def plan_request(window: Window, probes: Sequence[Probe],
                 candidates: Sequence[HistoryCandidate],
                 settings: ProcessingSettings) -> StageRequest | None:
    """The Planner request; None when it does not fit the context window."""
    raise NotImplementedError


def parse_plan(text: object, window: Window, probes: Sequence[Probe],
               handles: Mapping[str, TopicRevision]) -> tuple[WorkItem, ...]:
    """The checked Work Items (plan order) of a plan output; ``handles`` from
    :func:`powercontext.core.topic.stages.history_handles` over the candidates' heads."""
    raise NotImplementedError


def item_sources(window: Window, item: WorkItem) -> tuple[WindowSource, ...]:
    """The Window Sources the Item's Probes cite, in Window order."""
    raise NotImplementedError


def item_schema() -> dict[str, Any]:
    """The strict JSON Schema of the Item Evolver output ``{"topic": TOPIC | null}``."""
    raise NotImplementedError


def item_request(window: Window, item: WorkItem,
                 settings: ProcessingSettings) -> StageRequest | None:
    """The Item Evolver request (whole Sources + the complete target); None when it does
    not fit (the Item then takes the temporary-Topic path)."""
    raise NotImplementedError


def parse_item(text: object, window: Window, item: WorkItem) -> Evolution:
    """The Item's one operation: an Evolution with at most one CREATE or UPDATE, or one
    NOOP. TopicProcessingError ``model_output_invalid`` (stage ``evolve``)."""
    raise NotImplementedError
