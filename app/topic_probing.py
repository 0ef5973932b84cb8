"""The Probe stage of a Window (Topic Memory RFC, "Probe and historical Topic
selection", "Work Planner and direct Work Items": Probe).

Probe calls over the Window's eligible Sources, grouped so each request fits: all
Sources in one request when they fit, else greedy consecutive groups. A Source that
does not fit one Probe request is probed fragment by fragment, and its fragments'
Probes stream through a ``probe`` accumulator (:mod:`~powercontext.core.topic.
accumulate`: exact duplicates coalesced, at most 20 live items and the reduce budget, a
checked private ``reduce`` call before overflow). Every fragment finishes before the
Window goes on; a failed fragment fails the Window.
"""

from __future__ import annotations

import attrs

from powercontext import topic_reduction
from powercontext.core.errors import InvalidInputError, TopicProcessingError
from powercontext.core.topic import accumulate, result_room, stages
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.window import (
    Window,
    WindowSource,
    fragments,
    window_token_budget,
)
from powercontext.topic_attempt import CODE_FRAGMENT, Attempt, StageCalls

__all__ = ["ProbeRequest", "ProbeStage"]


@attrs.frozen
class ProbeRequest:
    """One Probe request, the evidence ids it shows, and its fragment index (1-based)
    when it holds one fragment of an oversized Source."""

    request: StageRequest
    ids: tuple[str, ...]
    fragment: int | None = None


class ProbeStage:
    """The Probes of a Window, under ``settings``, each request a reserved call of
    ``calls``."""

    def __init__(self, settings: ProcessingSettings, calls: StageCalls) -> None:
        self.settings = settings
        self.calls = calls

    def requests(self, window: Window) -> list[ProbeRequest]:
        """The Probe requests of a Window, each with the evidence ids it shows: all
        Sources in one request when they fit, else greedy consecutive groups; a Source
        that does not fit alone is probed fragment by fragment. TopicProcessingError
        ``probe_fragment_over_budget`` when a fragment cannot fit a Probe request."""
        settings = self.settings
        if window.oversized:
            return self._fragment_requests(window.sources[0])
        whole = stages.probe_request(window.sources, settings)
        if whole is not None:
            return [ProbeRequest(whole, tuple(s.evidence_id for s in window.sources))]
        out: list[ProbeRequest] = []
        group: list[WindowSource] = []

        def close() -> None:
            if group:
                req = stages.probe_request(group, settings)
                assert req is not None
                out.append(ProbeRequest(req, tuple(s.evidence_id for s in group)))
                group.clear()

        for source in window.sources:
            if stages.probe_request([*group, source], settings) is not None:
                group.append(source)
                continue
            close()
            if stages.probe_request([source], settings) is not None:
                group.append(source)
                continue
            out.extend(self._fragment_requests(source))
        close()
        return out

    def _fragment_requests(self, source: WindowSource) -> list[ProbeRequest]:
        """One Probe request per fragment of ``source`` (each within the Window token
        budget and the Probe request's room), fragment index 1-based."""
        settings = self.settings
        budget = min(stages.probe_fragment_budget(settings), window_token_budget(settings))
        try:
            pieces = fragments(source.evidence_id, source.text, budget)
        except InvalidInputError as exc:
            raise TopicProcessingError(
                CODE_FRAGMENT, f"a Probe request cannot hold a fragment: {exc}",
                stage="probe") from None
        out: list[ProbeRequest] = []
        for k, piece in enumerate(pieces, start=1):
            req = stages.probe_request([piece], settings)
            if req is None:
                raise TopicProcessingError(CODE_FRAGMENT,
                                           "a fragment does not fit a Probe request",
                                           stage="probe")
            out.append(ProbeRequest(req, (source.evidence_id,), k))
        return out

    async def probes(self, attempt: Attempt, window: Window) -> tuple[stages.Probe, ...]:
        """The Window's Probes in request order. The Probes of one Source's fragments
        stream through a ``probe`` accumulator (position = fragment index; exact
        duplicates coalesced, reduced before overflow); every fragment finishes before
        the Window goes on, and any failure aborts it (TopicProcessingError)."""
        probes: list[stages.Probe] = []
        acc: accumulate.Accumulator | None = None
        owner: str | None = None
        call = self.calls.stage_call(attempt)

        def drain() -> None:
            nonlocal acc, owner
            if acc is not None:
                probes.extend(live.item for live in acc.live)  # type: ignore[misc]
            acc, owner = None, None

        requests = self.requests(window)
        if any(pr.fragment is not None for pr in requests):
            # fragment Probes are reduced: fail closed before any call when no reduced
            # Probe fits the reduce result budget
            result_room.check_result_room(
                "probe", accumulate.reduce_budget("probe", self.settings), "probe")
        for pr in requests:
            attempt.stage = "probe"
            response = await self.calls.call(attempt, pr.request)
            found = stages.parse_probes(response.output_text, window, pr.ids)
            if pr.fragment is None:
                drain()
                probes.extend(found)
                continue
            if acc is None or owner != pr.ids[0] or pr.fragment == 1:
                drain()
                owner = pr.ids[0]
                acc = accumulate.Accumulator(
                    "probe", accumulate.reduce_budget("probe", self.settings))
            for probe in found:
                await topic_reduction.push(acc, probe, pr.fragment, call, window, self.settings)
        drain()
        attempt.stage = "probe"
        return tuple(probes)
