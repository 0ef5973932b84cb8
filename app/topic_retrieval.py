"""History retrieval for a Window: the first retrieval of historical Topics for its
Probes, and the second retrieval and related-group reconciliation of its CREATEs
(Topic Memory RFC, "Probe and historical Topic selection", "Second retrieval and
related-group reconciliation").

- History selection: each Probe query searched through the enabled channels (hybrid:
  the query embedded through the Topic service's processing port, one reserved request
  each), scores normalised, 20 / 70 / 5 (:mod:`~powercontext.core.topic.history`).
- Second retrieval (:mod:`~powercontext.core.topic.reconcile`; skipped when the Window
  has no CREATE): every CREATE's complete content searched as bounded queries like
  Probe queries, its candidates selected, related groups formed and one ``reconcile``
  call per group that fits; folded CREATEs become one CREATE or one UPDATE of one
  historical Topic, never a merge of two.
"""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.core.errors import InvalidInputError
from powercontext.core.topic import history as topic_history
from powercontext.core.topic import reconcile, stages
from powercontext.core.topic.models import (
    TopicCapabilities,
    TopicHit,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
)
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.window import estimate_tokens
from powercontext.ports.topic_publisher import TopicPublisher
from powercontext.topic_attempt import Attempt, StageCalls

__all__ = ["HistoryRetrieval"]


class HistoryRetrieval:
    """Searches the Scope's Topics for a Window's Probes and CREATEs through
    ``publisher`` (its backend, and its query vector in a hybrid deployment), under
    ``settings``; reconciliation calls are reserved calls of ``calls``."""

    def __init__(self, publisher: TopicPublisher, settings: ProcessingSettings,
                 calls: StageCalls) -> None:
        self.publisher = publisher
        self.settings = settings
        self.calls = calls

    async def _search_all(self, attempt: Attempt, scope: str, queries: Sequence[str],
                          caps: TopicCapabilities) -> tuple[list[tuple[TopicHit, ...]], int]:
        """Each query searched through the enabled channels (hybrid: the query embedded,
        one reserved request each): the hit lists and the channel count."""
        backend = self.publisher.backend
        per_query: list[tuple[TopicHit, ...]] = []
        channels = len(caps.channels)
        for query in queries:
            request = TopicSearchRequest(scope, query, self.settings.history_max_candidates)
            vector = None
            if "topic_vector" in caps.channels:
                await backend.reserve(attempt.grant, 1, estimate_tokens(query),
                                      through=attempt.through)
                attempt.reserved += 1
                vector = await self.publisher.query_vector(query, caps)
            result = await backend.search(request, vector)
            channels = len(result.channels)
            per_query.append(result.hits)
        return per_query, channels

    async def history(self, attempt: Attempt, scope: str, probes: Sequence[stages.Probe]
                      ) -> tuple[tuple[topic_history.HistoryCandidate, ...],
                                 list[TopicRevision], tuple[TopicRef | None, ...]]:
        """The selected history candidates for the Probes, their complete heads (in
        candidate order) and, per Probe, the candidate its search found first
        (:func:`~powercontext.core.topic.history.probe_hits`; None: none, or the Probe
        was not searched, being over the search bounds)."""
        backend, settings = self.publisher.backend, self.settings
        none: tuple[TopicRef | None, ...] = (None,) * len(probes)
        if not probes or not await backend.heads(scope):
            return (), [], none
        caps = await backend.topic_capabilities()
        analyzer = await backend.analyzer()
        queries: list[str | None] = []
        for probe in probes:
            try:
                queries.append(next(iter(topic_history.probe_queries([probe.query],
                                                                     analyzer)), None))
            except InvalidInputError:
                queries.append(None)  # over the search bounds (64 terms): not searched
        searched = topic_history.probe_queries([q for q in queries if q], analyzer)
        per_probe, channels = await self._search_all(attempt, scope, searched, caps)
        if not per_probe:
            return (), [], none
        candidates = topic_history.select_history(per_probe, channels, settings)
        first = dict(zip(searched, topic_history.probe_hits(per_probe, channels, candidates,
                                                            settings), strict=True))
        found = tuple(first.get(q) if q else None for q in queries)
        return candidates, [await backend.get(scope, c.ref) for c in candidates], found

    async def reconcile(self, attempt: Attempt, scope: str,
                        evolution: stages.Evolution) -> stages.Evolution:
        """Second retrieval for every CREATE (its complete content as bounded queries,
        searched like Probe queries), the related groups, one ``reconcile`` call per
        group that fits, and the folded operations. The Scope without Topics: the
        evolution unchanged."""
        backend, settings = self.publisher.backend, self.settings
        attempt.stage = "history"
        if not await backend.heads(scope):
            return evolution
        caps = await backend.topic_capabilities()
        analyzer = await backend.analyzer()
        second: list[tuple[topic_history.HistoryCandidate, ...]] = []
        heads: dict[str, TopicRevision] = {}
        for create in evolution.creates:
            queries = reconcile.second_queries(create.content, analyzer)
            per_query, channels = await self._search_all(attempt, scope, queries, caps)
            found = (topic_history.select_history(per_query, channels, settings)
                     if per_query else ())
            second.append(found)
            for candidate in found:
                if candidate.ref.artifact_id not in heads:
                    heads[candidate.ref.artifact_id] = await backend.get(scope, candidate.ref)
        groups = reconcile.related_groups(evolution, second, heads, settings)
        decisions = []
        for group in groups:
            attempt.stage = "reconcile"
            request = reconcile.reconcile_request(group, evolution, settings)
            if request is None:
                continue  # reconciliation is a safeguard: the group stays as it is
            response = await self.calls.call(attempt, request)
            decisions.append(reconcile.parse_reconcile(response.output_text, group,
                                                       evolution))
        return reconcile.apply_reconciliations(evolution, decisions)
