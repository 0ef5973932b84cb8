"""The contract kit: the Memory conformance suite any backend runs.

A backend passes by subclassing :class:`MemoryBackendContract` in its own test module
and overriding one fixture, ``memory_backend_factory``, that returns a callable
``factory(profile) -> MemoryBackend`` giving a fresh, empty database each call, opened
with that embedding ``profile`` (an EmbeddingProfile or None; pass it through, or the
vector tests skip).
The SQLite and OceanBase backends of powercontext run exactly this suite, and so does
the shipped :class:`InMemoryBackend`, the worked example of a backend.

The kit needs only powercontext's base dependencies plus the ``testing`` extra
(``pip install -e '.[testing]'`` from a checkout: pytest, hypothesis). It tests what a
backend declares: ``ports.MemoryBackend`` is required; the rebuild tests run only for a
backend that implements ``ports.MemoryRebuild``, the inventory test for
``ports.MemoryInventory``, the reverse-evidence tests for ``ports.SourceCitations``,
the fault test for the kit's :class:`FaultInjection`
(``fault_points()``, ``inject_fault(point)``), the vector tests only where
``capabilities()`` reports vector search; the others skip with the reason.

Tests call ``asyncio.run`` themselves; no asyncio plugin is needed. Strategies for
Sources and entries are public here for third parties' own properties, and
:func:`state_machine_test` binds :class:`MemoryStateMachine` to a backend factory.

Modules: ``strategies`` (Hypothesis strategies, fixed queries), ``base`` (fixtures,
helpers, test models), ``contract_*`` (one contract group each), ``contract`` (all of
them), ``state_machine``, ``memory_backend`` (the in-memory backend).

The Topic Memory kit (Topic Memory RFC; ``topic_*`` modules) works the same way for a
``powercontext.ports.topic.TopicMemoryBackend``: subclass
:class:`TopicBackendContract` and override ``topic_backend_factory``
(``factory(profile) -> TopicMemoryBackend``, a fresh empty database per call; profile
None is an FTS-only deployment, an EmbeddingProfile a hybrid one) and
``topic_backend_reopen`` (``reopen(backend, profile)``: a new backend on the same
database, for the retrieval-shape tests)::

    import pytest
    from powercontext.testing import (
        InMemoryTopicBackend, TopicBackendContract, topic_state_machine_test)

    class TestMyTopicBackend(TopicBackendContract):
        @pytest.fixture
        def topic_backend_factory(self):
            return lambda profile: InMemoryTopicBackend(profile=profile)

        @pytest.fixture
        def topic_backend_reopen(self):
            return lambda backend, profile: InMemoryTopicBackend(
                profile=profile, database=backend.database)

    TestMyTopicStateMachine = topic_state_machine_test(
        lambda profile: InMemoryTopicBackend(profile=profile))

Every test taking the ``shape`` fixture runs FTS-only and hybrid (the hybrid run uses
``topic_embedding_model``, by default the deterministic 64-dimension model; override the
fixture to use another). Groups: ``topic_contract_publish`` (CREATE/UPDATE chains, batch
atomicity, conflicts, Sources, Scopes, malformed guards), ``topic_contract_get`` (exact and
historical Revisions, bad refs), ``topic_contract_search`` (collapse, one slot per
Topic, channels, snippets, limit prefixes, Scopes, bad queries, CJK/NFD/syntax, readers
racing a writer), ``topic_contract_shape`` (the retrieval shape), ``topic_contract_forged``
(forged projections), ``topic_contract_faults`` (the ``FaultInjection`` hook; a backend
with ``async topic_integrity() -> list[str]`` is also checked after each fault),
``topic_contract_budget`` (the durable allowance: attempts, reservations, terminal
frontiers, supersession) and ``topic_contract_guards`` (Cursor CAS and advance, Pending
update, budget-row delete, NOOP Windows, a fault at every guard step of a backend with
``guard_fault_points()``, two workers on one Window).
:class:`InMemoryTopicBackend` is the worked example; ``topic_strategies`` holds the
Topic strategies and adversarial inputs, :class:`TopicKit` the publication builder.
"""

from __future__ import annotations

from hypothesis.stateful import consumes

from powercontext.testing.base import BackendFactory, ContractBase, run
from powercontext.testing.contract import MemoryBackendContract
from powercontext.testing.contract_faults import FaultInjection, FaultsContract
from powercontext.testing.contract_history import HistoryContract
from powercontext.testing.contract_integrity import IntegrityContract
from powercontext.testing.contract_keys import KeysContract
from powercontext.testing.contract_rebuild import InventoryContract, RebuildContract
from powercontext.testing.contract_search import SearchContract
from powercontext.testing.contract_vectors import VectorContract
from powercontext.testing.contract_writes import WritesContract
from powercontext.testing.memory_backend import InMemoryBackend
from powercontext.testing.state_machine import MemoryStateMachine, state_machine_test
from powercontext.testing.strategies import NASTY_QUERIES, VOCABULARY, entry_texts, sources
from powercontext.testing.topic_backend import InMemoryTopicBackend, TopicDatabase
from powercontext.testing.topic_base import TopicContractBase, TopicKit
from powercontext.testing.topic_contract import TopicBackendContract
from powercontext.testing.topic_processing_machine import (
    TopicProcessingStateMachine,
    topic_processing_state_machine_test,
)
from powercontext.testing.topic_state_machine import (
    TopicStateMachine,
    topic_state_machine_test,
)
from powercontext.testing.topic_supervision_machine import (
    TopicSupervisionStateMachine,
    topic_supervision_state_machine_test,
)

__all__ = [
    "NASTY_QUERIES",
    "VOCABULARY",
    "BackendFactory",
    "ContractBase",
    "FaultInjection",
    "FaultsContract",
    "HistoryContract",
    "InMemoryBackend",
    "InMemoryTopicBackend",
    "IntegrityContract",
    "InventoryContract",
    "KeysContract",
    "MemoryBackendContract",
    "MemoryStateMachine",
    "RebuildContract",
    "SearchContract",
    "TopicBackendContract",
    "TopicContractBase",
    "TopicDatabase",
    "TopicKit",
    "TopicProcessingStateMachine",
    "TopicStateMachine",
    "TopicSupervisionStateMachine",
    "VectorContract",
    "WritesContract",
    "consumes",
    "entry_texts",
    "run",
    "sources",
    "state_machine_test",
    "topic_processing_state_machine_test",
    "topic_state_machine_test",
    "topic_supervision_state_machine_test",
]
