"""The layered evolution of a Window (Topic Memory RFC, "Layered evolution flow",
"Global direct evolution", "Work Planner and direct Work Items", "Oversized Work Items
and temporary Topics").

The Global Topic Evolver runs when the Window is not oversized, the Window and its
history fit one request, and its checked result is not ambiguous
(:func:`~powercontext.core.topic.stages.ambiguous`). Otherwise the global result (if
any) is discarded whole and the Work Planner runs (:mod:`~powercontext.core.topic.
planner`): zero Probes is a NOOP Window with no call; a plan request that does not fit
is ``planner_input_over_budget``. Work Items run in plan order: the Item Evolver when
the Item's whole Sources and its complete target fit one request, else temporary
Topics (:mod:`~powercontext.core.topic.temporary`: Source Batches, one ``temporary``
call each, pushed through a ``temporary`` accumulator, compacted until the final
request fits, the final ``evolve`` call); one temporary that still does not fit with
the target is ``work_item_over_budget``; no temporary at all is a NOOP.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from powercontext import topic_reduction
from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic import accumulate, planner, result_room, stages, temporary
from powercontext.core.topic import history as topic_history
from powercontext.core.topic.models import TopicRef, TopicRevision
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.window import Window
from powercontext.topic_attempt import Attempt, StageCalls, attempt_fields

__all__ = ["LayeredEvolution"]

_log = logging.getLogger("powercontext.topic")


class LayeredEvolution:
    """The CREATE / UPDATE / NOOP operations of a Window from its Probes and history,
    under ``settings``, each model request a reserved call of ``calls``. Every method
    raises TopicProcessingError for a failed or over-budget stage."""

    def __init__(self, settings: ProcessingSettings, calls: StageCalls) -> None:
        self.settings = settings
        self.calls = calls

    async def global_evolution(self, attempt: Attempt, window: Window,
                               history: Sequence[TopicRevision],
                               handles: dict[str, TopicRevision]
                               ) -> stages.Evolution | None:
        """The Global Topic Evolver's checked result, or None when the Work Planner
        must run instead: the Window is oversized, the Window and its history do not
        fit one request, or the result is ambiguous (:func:`stages.ambiguous`; it is
        then discarded whole, never mixed with the planned result)."""
        if window.oversized:
            return None
        attempt.stage = "evolve"
        request = stages.evolve_request(window, history, self.settings)
        if request is None:
            return None
        response = await self.calls.call(attempt, request)
        evolution = stages.parse_evolution(response.output_text, window, handles)
        why = stages.ambiguous(evolution, handles)
        if why is None:
            return evolution
        _log.info("topic global evolution ambiguous (%s): the Work Planner runs", why,
                  extra=attempt_fields(attempt, "evolve"))
        return None

    async def planned(self, attempt: Attempt, window: Window,
                      probes: Sequence[stages.Probe],
                      candidates: Sequence[topic_history.HistoryCandidate],
                      handles: dict[str, TopicRevision],
                      found: Sequence[TopicRef | None]) -> stages.Evolution:
        """The Work Planner path: the plan (Probes that found the same historical Topic
        in one Work Item), then every Work Item in plan order (Item Evolver, else
        temporary Topics). Zero Probes: no call, a NOOP Window."""
        if not probes:
            return stages.Evolution((), (), 0)
        attempt.stage = "plan"
        request = planner.plan_request(window, probes, candidates, self.settings, found)
        if request is None:
            raise TopicProcessingError(
                planner.CODE_PLANNER_OVER_BUDGET, f"{len(probes)} Probes and "
                f"{len(candidates)} history Topics do not fit one Work Planner request of "
                f"{self.settings.context_window_tokens} tokens", stage="plan")
        response = await self.calls.call(attempt, request)
        items = planner.parse_plan(response.output_text, window, probes, handles,
                                   planner.found_handles(candidates, found, len(probes)))
        creates: list[stages.TopicCreate] = []
        updates: list[stages.TopicUpdate] = []
        noops = 0
        for item in items:
            done = await self._item(attempt, window, item)
            creates.extend(done.creates)
            updates.extend(done.updates)
            noops += done.noops
        return stages.Evolution(tuple(creates), tuple(updates), noops)

    async def _item(self, attempt: Attempt, window: Window,
                    item: planner.WorkItem) -> stages.Evolution:
        """One Work Item's operation: the Item Evolver when its whole Sources and its
        complete target fit one request, else the temporary-Topic path."""
        settings = self.settings
        attempt.stage = "evolve"
        request = planner.item_request(window, item, settings)
        if request is not None:
            response = await self.calls.call(attempt, request)
            return planner.parse_item(response.output_text, window, item)
        budget = accumulate.reduce_budget("temporary", settings, item.focus)
        attempt.stage = "temporary"
        # no temporary Topic fits its result budget: fail closed before any call
        result_room.check_result_room("temporary", budget, "temporary")
        max_chars = accumulate.max_result_chars(budget)
        attempt.condensed.update(item.evidence_ids)
        batches = temporary.source_batches(window, item, settings, max_chars)
        acc = accumulate.Accumulator("temporary", budget)
        call = self.calls.stage_call(attempt)
        for batch in batches:
            attempt.stage = "temporary"
            request = temporary.temporary_request(batch, item, settings, max_chars)
            if request is None:  # never for a Batch of source_batches: fail closed
                raise TopicProcessingError(
                    temporary.CODE_ITEM_OVER_BUDGET, f"Source Batch {batch.position} does "
                    "not fit a temporary request", stage="temporary")
            text = await call(request)
            made = temporary.parse_temporary(text, window, batch,
                                             budget // accumulate.RESULT_FRACTION)
            if made is not None:
                await topic_reduction.push(acc, made, batch.position, call, window, settings,
                                      item.focus)
        if not acc.live:  # every Batch added nothing
            return stages.Evolution((), (), 1)

        def fits(live: Sequence[accumulate.Live]) -> bool:
            # one temporary left: reducing it further cannot make room for the target
            return len(live) <= 1 or temporary.final_request(live, item, settings) is not None

        await topic_reduction.compact(acc, call, window, settings, fits=fits, focus=item.focus)
        attempt.stage = "evolve"
        final = temporary.final_request(acc.live, item, settings)
        if final is None:
            raise TopicProcessingError(
                temporary.CODE_ITEM_OVER_BUDGET, "the reduced temporary Topic and the "
                "Work Item's historical Topic do not fit one request of "
                f"{settings.context_window_tokens} tokens", stage="evolve")
        text = await call(final)
        return temporary.parse_final(text, window, acc.live, item)
