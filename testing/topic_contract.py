"""The whole Topic conformance suite as one class a Topic backend's tests subclass."""

from __future__ import annotations

from powercontext.testing.topic_contract_budget import TopicBudgetContract
from powercontext.testing.topic_contract_faults import TopicFaultsContract
from powercontext.testing.topic_contract_forged import TopicForgedContract
from powercontext.testing.topic_contract_get import TopicGetContract
from powercontext.testing.topic_contract_guards import TopicGuardsContract
from powercontext.testing.topic_contract_operator import TopicOperatorContract
from powercontext.testing.topic_contract_publish import TopicPublishContract
from powercontext.testing.topic_contract_search import TopicSearchContract
from powercontext.testing.topic_contract_shape import TopicShapeContract
from powercontext.testing.topic_contract_sources import TopicSourcesContract
from powercontext.testing.topic_contract_supervision import TopicSupervisionContract
from powercontext.testing.topic_contract_uris import TopicUrisContract

__all__ = ["TopicBackendContract"]


class TopicBackendContract(
    TopicPublishContract,
    TopicGetContract,
    TopicSearchContract,
    TopicShapeContract,
    TopicForgedContract,
    TopicFaultsContract,
    TopicSourcesContract,
    TopicBudgetContract,
    TopicGuardsContract,
    TopicSupervisionContract,
    TopicOperatorContract,
    TopicUrisContract,
):
    """Subclass and override ``topic_backend_factory`` (``factory(profile) ->
    TopicMemoryBackend``, a fresh empty database per call) and ``topic_backend_reopen``
    (``reopen(backend, profile)``, that database opened again); every ``test_*`` of
    every group runs, the ``shape``-parametrized ones for ``fts`` and ``hybrid``. Tests
    skip, with the reason, only where the backend does not declare what they need (a
    vector capability for ``hybrid``, ``topic_backend_reopen``, the kit's
    ``FaultInjection`` hook)."""
