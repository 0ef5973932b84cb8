"""The private reduction stage's loop: it calls the model (Topic Memory RFC, "Oversized
Work Items and temporary Topics": bounded intermediate reduction; "Window selection and
context budgets": fragment results).

The rules are pure, in :mod:`powercontext.core.topic.accumulate` (the bounds, the step
rule, the checks of each result); this module only runs them: it asks for the next span
to reduce, sends the reduce request through ``call`` and checks the answer, until the
rules say the live items are done.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from powercontext.core.topic import accumulate
from powercontext.core.topic.accumulate import Accumulator, Item, Live, StageCall
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.window import Window

__all__ = ["compact", "push"]


async def compact(acc: Accumulator, call: StageCall, window: Window,
                  settings: ProcessingSettings, *, incoming: Live | None = None,
                  fits: Callable[[Sequence[Live]], bool] | None = None,
                  focus: Sequence[str] = ()) -> int:
    """Reduce until the live items (with ``incoming`` appended at the end) are within
    both bounds and, when given, ``fits(live)`` holds (e.g. the final request with the
    historical Topic fits), by the step rule of
    :func:`~powercontext.core.topic.accumulate.next_span`; returns the reduce calls made
    (<= 2n + 1, n = live items at the start counting ``incoming``). When only ``fits``
    fails and the one live item left is a reduction result, stops there (the caller
    decides; :data:`~powercontext.core.topic.temporary.CODE_ITEM_OVER_BUDGET`).

    All or nothing: the accumulator changes only on success (``incoming`` then live).
    TopicProcessingError (stage ``reduce``): a
    :func:`~powercontext.core.topic.accumulate.parse_reduction` code,
    ``reduction_over_budget`` (an item cannot fit a reduce request alone),
    ``reduction_attempt_limit``; what ``call`` raises propagates unchanged."""
    work = list(acc.live)
    alone = incoming is not None and accumulate.reduce_alone_first(acc, incoming)
    limit = accumulate.attempt_limit(len(work) + (incoming is not None))
    calls = 0

    async def reduce(items: Sequence[Live]) -> Live:
        nonlocal calls
        request = accumulate.reduction_call(acc, items, settings, focus, calls=calls,
                                            limit=limit)
        calls += 1
        return accumulate.parse_reduction(await call(request), acc.kind, items, window,
                                          acc.budget_tokens)

    if incoming is not None:
        work.append(await reduce([incoming]) if alone else incoming)
    while (span := accumulate.next_span(acc, work, settings, focus, fits)) is not None:
        i, j = span
        work[i:j] = [await reduce(work[i:j])]
    acc.settle(work)
    return calls


async def push(acc: Accumulator, item: Item, position: int, call: StageCall, window: Window,
               settings: ProcessingSettings, focus: Sequence[str] = ()) -> int:
    """Add ``item`` at stream ``position`` (1-based; the Probes of one fragment share
    its index): coalesced into an exact duplicate (same
    :func:`~powercontext.core.topic.accumulate.item_json`; positions joined, no call),
    else appended, compacted first (:func:`compact`) when it would overflow; returns the
    reduce calls made. All or nothing, like :func:`compact`. InvalidInputError for an
    item of another kind or a position that is not an integer >= 1."""
    incoming = accumulate.admit(acc, item, position)
    if incoming is None:
        return 0
    return await compact(acc, call, window, settings, incoming=incoming, focus=focus)
