"""Second retrieval and related-group reconciliation (Topic Memory RFC, "Second retrieval
and related-group reconciliation"; TOPIC-MEMORY.md).

Before publication every CREATE of the Window (any path) searches history again with
its complete content (:func:`second_queries`: title, summary and detail as bounded
search queries). From those results the server forms bounded related groups
(:func:`related_groups`, deterministic):

- a group around ONE historical Topic D: the CREATEs whose best strong hit (normalised
  score >= ``history_rrf_threshold``) is D, at most :data:`MAX_GROUP_CREATES`, plus this
  Window's own UPDATE of D when it has one (its content stands for D's);
- a group of CREATEs with no strong hit that share one normalised title (two or more).

Never two historical Topics in one group; a CREATE is in at most one group.

Stage ``reconcile`` per group: input ``{"target": {"title", "summary", "detail"} |
null, "candidates": [{"id": "c1", "title", "summary", "detail"}, ...]}``; output
``{"merged": {"title", "summary", "detail", "evidence_ids": ["c1", ...]} | null}``.
null keeps every CREATE as it is. With a target, ``merged`` is one UPDATE of D's exact
head folding the cited candidates (lineage: the union of theirs, and of this Window's
UPDATE of D when there was one); without a target it is one CREATE folding at least two
cited candidates. Uncited candidates stay CREATEs. An extra field (a second target, an
``artifact_id``, ...) is refused: ``model_output_invalid`` (stage ``reconcile``). Two
existing Topic identities are never merged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from powercontext.core.analyzer import Analyzer
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.history import HistoryCandidate
from powercontext.core.topic.models import TopicMemoryContent, TopicRevision
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Evolution

__all__ = [
    "MAX_GROUP_CREATES",
    "MAX_SECOND_QUERIES",
    "RECONCILE_INSTRUCTIONS",
    "Reconciliation",
    "RelatedGroup",
    "apply_reconciliations",
    "parse_reconcile",
    "reconcile_request",
    "reconcile_schema",
    "related_groups",
    "second_queries",
]

MAX_SECOND_QUERIES = 8
MAX_GROUP_CREATES = 8
RECONCILE_INSTRUCTIONS = "Stage: reconcile. (written by p3-reconcile)"


def second_queries(content: TopicMemoryContent, analyzer: Analyzer | None = None
                   ) -> tuple[str, ...]:
    """The second-retrieval queries of one CREATE's complete content: title, summary
    and detail in order, cut into queries within the search bounds (8,192 characters,
    64 distinct Analyzer terms), at most :data:`MAX_SECOND_QUERIES`."""
    raise NotImplementedError


@attrs.frozen
class RelatedGroup:
    """One related group: ``target`` the historical head (None: CREATE-only group);
    ``update`` the index of this Window's UPDATE of the target in ``Evolution.updates``
    (None: none); ``creates`` indexes into ``Evolution.creates`` (ascending)."""

    target: TopicRevision | None
    update: int | None
    creates: tuple[int, ...]


def related_groups(evolution: Evolution, second: Sequence[Sequence[HistoryCandidate]],
                   heads: Mapping[str, TopicRevision],
                   settings: ProcessingSettings) -> tuple[RelatedGroup, ...]:
    """The bounded related groups; ``second[i]`` is CREATE i's second-retrieval
    candidates (:func:`powercontext.core.topic.history.select_history` over its
    queries), ``heads`` the complete heads by artifact_id for every candidate."""
    raise NotImplementedError


def reconcile_schema(candidate_ids: Sequence[str]) -> dict[str, Any]:
    raise NotImplementedError


def reconcile_request(group: RelatedGroup, evolution: Evolution,
                      settings: ProcessingSettings) -> StageRequest | None:
    """The reconcile request of one group; None when it does not fit (the group is
    then left as it is: reconciliation is a safeguard)."""
    raise NotImplementedError


@attrs.frozen
class Reconciliation:
    """One group's checked decision: ``content`` None (keep all) or the merged content
    and the ``folded`` CREATE indexes it replaces."""

    group: RelatedGroup
    content: TopicMemoryContent | None
    folded: tuple[int, ...]


def parse_reconcile(text: object, group: RelatedGroup, evolution: Evolution) -> Reconciliation:
    """TopicProcessingError ``model_output_invalid`` (stage ``reconcile``)."""
    raise NotImplementedError


def apply_reconciliations(evolution: Evolution,
                          decisions: Sequence[Reconciliation]) -> Evolution:
    """The Window's final operations: folded CREATEs removed, a target group's merge an
    UPDATE of its head (replacing this Window's UPDATE of it), a CREATE-only merge one
    CREATE. Never two UPDATEs of one Topic, never an UPDATE merging two identities.
    InvalidInputError when two decisions overlap."""
    raise NotImplementedError

