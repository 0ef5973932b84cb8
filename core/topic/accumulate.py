"""The streaming accumulator (Topic Memory RFC, "Window selection and context budgets":
fragment results; "Oversized Work Items and temporary Topics": bounded intermediate
reduction; TOPIC-MEMORY.md).

Fragment results (Probes of an oversized Source's fragments) and temporary Topics (one
per Source Batch of an oversized Work Item) stream through an :class:`Accumulator`
bounded by :data:`MAX_LIVE_ITEMS` live items AND a stage input token budget. Exact
duplicates are coalesced (their positions joined). Before an item would overflow
either bound, a compaction runs the ``reduce`` stage on a fitting prefix of the live
items and replaces it by the one result. The stage itself (its items, request, schema,
budget ``B`` and the checks of its output) is :mod:`powercontext.core.topic.reduce_stage`;
its names are kept here too.

The rules are here, pure (:func:`admit`, :func:`next_span`, :func:`reduction_call`,
:func:`parse_reduction`); the loop that calls the model is the application's
(:mod:`powercontext.topic_reduction`: ``compact``, ``push``).

Each compaction (over ``n`` live items counting the incoming one) makes at most
``2 * n + 1`` reduce calls (``reduction_attempt_limit``, :func:`attempt_limit`).
Any violation aborts the Window (nothing is published, the Cursor stays). Items live in
Worker memory only.

Compaction step (:func:`next_span`), while the live items (with ``incoming`` appended)
hold more than ``max_items`` items or more than ``B`` tokens, or ``fits(live)`` is
False: when the first two live items fit one reduce request together, reduce the
LONGEST prefix that fits; otherwise singleton-reduce the larger of the first two (or
the only one). An ``incoming`` item over ``B`` alone is singleton-reduced first. A
live item that cannot fit a reduce request even alone: ``reduction_over_budget``. When
only ``fits`` fails and the one live item left is already a reduction result,
compaction stops there (the caller fails closed: a reduced result plus the historical
Topic does not fit). Termination: the larger of two items that do not fit together
estimates over ``B // 8``, so it is an original item, never a result; each original is
singleton-reduced at most once (n calls) and every prefix reduction removes at least
one item (n - 1 calls): a model whose every output passes the checks finishes within
``2n - 1`` calls; the ``2n + 1`` bound stops everything else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.reduce_stage import (
    CODE_REDUCTION_COVERAGE,
    CODE_REDUCTION_EVIDENCE,
    CODE_REDUCTION_NO_PROGRESS,
    CODE_REDUCTION_OVERSIZED,
    REDUCE_INSTRUCTIONS,
    RESULT_FRACTION,
    Item,
    ItemKind,
    Live,
    StageCall,
    TemporaryTopic,
    _check_items,
    _check_kind,
    _error,
    _kind_of,
    item_json,
    item_tokens,
    max_result_chars,
    parse_reduction,
    reduce_budget,
    reduce_request,
    reduce_schema,
)

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
    "admit",
    "attempt_limit",
    "item_json",
    "item_tokens",
    "max_result_chars",
    "next_span",
    "parse_reduction",
    "reduce_alone_first",
    "reduce_budget",
    "reduce_request",
    "reduce_schema",
    "reduction_call",
]

MAX_LIVE_ITEMS = 20
CODE_REDUCTION_LIMIT = "reduction_attempt_limit"
#: One live item cannot fit a reduce request even alone.
CODE_REDUCTION_OVER_BUDGET = "reduction_over_budget"


class Accumulator:
    """Live items of one kind in stream order, bounded by ``max_items`` and
    ``budget_tokens`` (the sum of the live items' ``tokens``; normally
    :func:`reduce_budget`). Changed only by :func:`admit` and a whole compaction
    (:meth:`settle`), each all or nothing. A budget <= 0 (:func:`reduce_budget` of a
    tiny context window) holds nothing: the first push fails closed with
    ``reduction_over_budget``.
    InvalidInputError naming ``kind``, ``budget_tokens`` (not an integer) or
    ``max_items`` (not an integer >= 1)."""

    def __init__(self, kind: ItemKind, budget_tokens: int,
                 max_items: int = MAX_LIVE_ITEMS) -> None:
        self.kind: ItemKind = _check_kind(kind)
        if type(budget_tokens) is not int:
            raise InvalidInputError("budget_tokens", f"must be an integer: {budget_tokens!r}")
        if type(max_items) is not int or max_items < 1:
            raise InvalidInputError("max_items", f"must be an integer >= 1: {max_items!r}")
        self.budget_tokens = budget_tokens
        self.max_items = max_items
        self._live: list[Live] = []

    @property
    def live(self) -> tuple[Live, ...]:
        return tuple(self._live)

    @property
    def tokens(self) -> int:
        return sum(live.tokens for live in self._live)

    def duplicate(self, item: Item) -> int | None:
        """Index of a live item exactly equal to ``item`` (same JSON), else None."""
        shown = item_json(item)
        for i, live in enumerate(self._live):
            if item_json(live.item) == shown:
                return i
        return None

    def settle(self, live: Sequence[Live]) -> None:
        """Take ``live`` as the live items: the result of a whole compaction."""
        self._live = list(live)

    def overflows(self, incoming: Live | None = None) -> bool:
        """Whether the live items (plus ``incoming``) pass either bound."""
        return _overflows(self._live + ([incoming] if incoming is not None else []),
                          self.budget_tokens, self.max_items)


def _overflows(live: Sequence[Live], budget_tokens: int, max_items: int) -> bool:
    return len(live) > max_items or sum(x.tokens for x in live) > budget_tokens


def attempt_limit(count: int) -> int:
    """The reduce calls a compaction of ``count`` live items (counting the incoming
    one) may make."""
    return 2 * count + 1


def reduction_call(acc: Accumulator, items: Sequence[Live], settings: ProcessingSettings,
                   focus: Sequence[str], *, calls: int, limit: int) -> StageRequest:
    """The reduce request the next call of a compaction sends over ``items``, after
    ``calls`` calls out of ``limit``. TopicProcessingError (stage ``reduce``):
    ``reduction_over_budget`` when the items cannot fit a reduce request (even one
    alone), ``reduction_attempt_limit`` when ``calls`` reached ``limit``."""
    request = reduce_request(acc.kind, items, acc.budget_tokens, settings, focus)
    if request is None:
        raise _error(CODE_REDUCTION_OVER_BUDGET, f"an item of {items[0].tokens} "
                     "estimated tokens cannot fit a reduce request even alone")
    if calls >= limit:
        raise _error(CODE_REDUCTION_LIMIT, f"compaction of {(limit - 1) // 2} items needs "
                     f"more than {limit} reduce calls")
    return request


def reduce_alone_first(acc: Accumulator, incoming: Live) -> bool:
    """Whether ``incoming`` is singleton-reduced before it joins the live items (it
    estimates over the budget alone). InvalidInputError for an item of another kind."""
    _check_items(acc.kind, [incoming])
    return incoming.tokens > acc.budget_tokens


def next_span(acc: Accumulator, work: Sequence[Live], settings: ProcessingSettings,
              focus: Sequence[str] = (),
              fits: Callable[[Sequence[Live]], bool] | None = None) -> tuple[int, int] | None:
    """The next step of a compaction of the live items ``work`` (the step rule of the
    module docstring): the span ``(i, j)`` one reduce call replaces by its result, or
    None when done (``work`` within both bounds of ``acc`` and ``fits(work)`` holding,
    or only ``fits`` failing on one item that is already a reduction result)."""
    over = _overflows(work, acc.budget_tokens, acc.max_items)
    if not over and (fits is None or fits(work)):
        return None
    k = _longest_prefix(
        lambda items: reduce_request(acc.kind, items, acc.budget_tokens, settings, focus)
        is not None, work)
    if k:
        return 0, k
    if len(work) == 1 and work[0].reduced and not over:
        return None  # only ``fits`` fails: a reduced result that still does not fit
    i = 0 if len(work) == 1 or work[0].tokens >= work[1].tokens else 1
    return i, i + 1


def _longest_prefix(fits: Callable[[Sequence[Live]], bool], work: Sequence[Live]) -> int:
    # The longest k >= 2 whose prefix fits one reduce request (fitting is monotone in k:
    # each item only adds to the input and the schema); 0 when work[:2] does not fit.
    if len(work) < 2 or not fits(work[:2]):
        return 0
    lo, hi = 2, len(work)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(work[:mid]) else (lo, mid - 1)
    return lo


def admit(acc: Accumulator, item: Item, position: int) -> Live | None:
    """The first half of a push of ``item`` at stream ``position`` (1-based; the Probes
    of one fragment share its index): coalesced into an exact duplicate (same
    :func:`item_json`; positions joined) or appended when it fits both bounds, and then
    None; else the :class:`Live` item a compaction must take in (the accumulator is
    unchanged). InvalidInputError for an item of another kind or a position that is not
    an integer >= 1."""
    kind = _kind_of(item)
    if kind != acc.kind:
        raise InvalidInputError("item", f"must be a {acc.kind} item, got "
                                f"{type(item).__name__}")
    if isinstance(position, bool) or not isinstance(position, int) or position < 1:
        raise InvalidInputError("position", f"must be an integer >= 1, got {position!r}")
    same = acc.duplicate(item)
    if same is not None:
        live = acc._live[same]
        acc._live[same] = attrs.evolve(live, positions=live.positions | {position})
        return None
    incoming = Live(item, frozenset({position}), item_tokens(item))
    if not acc.overflows(incoming):
        acc._live.append(incoming)
        return None
    return incoming
