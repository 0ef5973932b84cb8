"""The streaming accumulator and the private reduction stage (Topic Memory RFC, "Window
selection and context budgets": fragment results; "Oversized Work Items and temporary
Topics": bounded intermediate reduction; TOPIC-MEMORY.md).

Fragment results (Probes of an oversized Source's fragments) and temporary Topics (one
per Source Batch of an oversized Work Item) stream through an :class:`Accumulator`
bounded by :data:`MAX_LIVE_ITEMS` live items AND a stage input token budget. Exact
duplicates are coalesced (their positions joined). Before an item would overflow
either bound, :func:`compact` runs the ``reduce`` stage on a fitting prefix of the live
items and replaces it by the one result, which must:

- account for every input position (the output's ``positions`` are exactly the
  request's ``1..k``): ``reduction_coverage_mismatch``;
- keep the exact union of the inputs' evidence ids (none dropped, none invented):
  ``reduction_evidence_mismatch``;
- be one item of the input's kind: no historical identity, no NOOP (the output schema
  has no target slot and ``result`` is never null; anything else is
  ``model_output_invalid``);
- estimate at most ``budget_tokens // RESULT_FRACTION`` tokens:
  ``reduction_result_oversized``;
- make progress: a singleton reduction must lower the item's estimate, any other lowers
  the item count by construction: ``reduction_no_progress``.

Each compaction (one call of :func:`compact`, over ``n`` live items counting the
incoming one) makes at most ``2 * n + 1`` reduce calls (``reduction_attempt_limit``).
Any violation aborts the Window (nothing is published, the Cursor stays). Items live in
Worker memory only.

Stage ``reduce``: input ``{"kind": "probe"|"temporary", "focus": [str, ...],
"max_result_chars": int, "items": [{"position": 1, ...ITEM}, ...]}``; output
``{"positions": [int, ...], "result": ITEM}``, ITEM = ``{"query", "evidence_ids"}``
(probe) or ``{"title", "summary", "detail", "evidence_ids"}`` (temporary).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import attrs

from powercontext.core.models import SourceRef
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.models import TopicMemoryContent
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Probe
from powercontext.core.topic.window import Window

__all__ = [
    "CODE_REDUCTION_COVERAGE",
    "CODE_REDUCTION_EVIDENCE",
    "CODE_REDUCTION_LIMIT",
    "CODE_REDUCTION_NO_PROGRESS",
    "CODE_REDUCTION_OVERSIZED",
    "CODE_REDUCTION_OVER_BUDGET",
    "MAX_LIVE_ITEMS",
    "REDUCE_INSTRUCTIONS",
    "RESULT_FRACTION",
    "Accumulator",
    "Item",
    "ItemKind",
    "Live",
    "StageCall",
    "TemporaryTopic",
    "compact",
    "item_json",
    "item_tokens",
    "parse_reduction",
    "push",
    "reduce_request",
    "reduce_schema",
]

MAX_LIVE_ITEMS = 20
RESULT_FRACTION = 8
CODE_REDUCTION_COVERAGE = "reduction_coverage_mismatch"
CODE_REDUCTION_EVIDENCE = "reduction_evidence_mismatch"
CODE_REDUCTION_OVERSIZED = "reduction_result_oversized"
CODE_REDUCTION_NO_PROGRESS = "reduction_no_progress"
CODE_REDUCTION_LIMIT = "reduction_attempt_limit"
#: One live item cannot fit a reduce request even alone.
CODE_REDUCTION_OVER_BUDGET = "reduction_over_budget"

REDUCE_INSTRUCTIONS = "Stage: reduce. (written by p3-accumulate)"

ItemKind = Literal["probe", "temporary"]


@attrs.frozen
class TemporaryTopic:
    """A temporary Topic: the new information one Source Batch contributes to the
    current Work Item's topic, with the evidence ids it cites (window order) and their
    exact SourceRefs (sorted). No identity; never stored or searched."""

    content: TopicMemoryContent
    evidence_ids: tuple[str, ...]
    sources: tuple[SourceRef, ...]


Item = Probe | TemporaryTopic
#: One stage call: the request in, the raw output text back (reserved, logged and
#: raised as TopicProcessingError by the caller's pipeline).
StageCall = Callable[[StageRequest], Awaitable[str]]


@attrs.frozen
class Live:
    """One live accumulator item: the ``item``, the stream ``positions`` it accounts
    for (fragment or batch indexes, 1-based), and ``tokens``, its estimate as shown in
    a stage input (:func:`item_tokens`)."""

    item: Item
    positions: frozenset[int]
    tokens: int


def item_json(item: Item) -> dict[str, Any]:
    """The item as a stage input shows it: probe ``{"query", "evidence_ids"}``;
    temporary ``{"title", "summary", "detail", "evidence_ids"}``."""
    raise NotImplementedError


def item_tokens(item: Item) -> int:
    """``estimate_tokens`` of the item's canonical JSON (:func:`item_json`)."""
    raise NotImplementedError


class Accumulator:
    """Live items of one kind in stream order, bounded by ``max_items`` and
    ``budget_tokens`` (the sum of the live items' ``tokens``)."""

    def __init__(self, kind: ItemKind, budget_tokens: int,
                 max_items: int = MAX_LIVE_ITEMS) -> None:
        raise NotImplementedError

    @property
    def live(self) -> tuple[Live, ...]:
        raise NotImplementedError

    @property
    def tokens(self) -> int:
        raise NotImplementedError

    def duplicate(self, item: Item) -> int | None:
        """Index of a live item exactly equal to ``item`` (same JSON), else None."""
        raise NotImplementedError

    def overflows(self, incoming: Live | None = None) -> bool:
        """Whether the live items (plus ``incoming``) pass either bound."""
        raise NotImplementedError


def reduce_schema(kind: ItemKind) -> dict[str, Any]:
    """The strict JSON Schema of a reduce output for ``kind``."""
    raise NotImplementedError


def reduce_request(kind: ItemKind, items: Sequence[Live], budget_tokens: int,
                   settings: ProcessingSettings, focus: Sequence[str] = ()) -> StageRequest | None:
    """The reduce request over ``items`` (local positions 1..k), or None when it does not
    fit ``settings.context_window_tokens``."""
    raise NotImplementedError


def parse_reduction(text: object, kind: ItemKind, inputs: Sequence[Live], window: Window,
                    budget_tokens: int) -> Live:
    """The checked result of a reduce output over ``inputs``: positions = the union of
    the inputs' positions. TopicProcessingError with the codes of the module docstring
    (stage ``reduce``)."""
    raise NotImplementedError


async def compact(acc: Accumulator, call: StageCall, window: Window,
                  settings: ProcessingSettings, *, incoming: Live | None = None,
                  fits: Callable[[Sequence[Live]], bool] | None = None,
                  focus: Sequence[str] = ()) -> int:
    """Reduce until the live items (plus ``incoming``) are within both bounds and, when
    given, ``fits(live)`` holds (e.g. the final request with the historical Topic fits);
    returns the reduce calls made (<= 2n + 1). TopicProcessingError on any violation."""
    raise NotImplementedError


async def push(acc: Accumulator, item: Item, position: int, call: StageCall, window: Window,
               settings: ProcessingSettings, focus: Sequence[str] = ()) -> int:
    """Add ``item`` at stream ``position``: coalesced into an exact duplicate, else
    compacted first when it would overflow; returns the reduce calls made."""
    raise NotImplementedError
