"""The whole Memory conformance suite as one class a backend's tests subclass."""

from __future__ import annotations

from powercontext.testing.contract_citations import CitationsContract
from powercontext.testing.contract_faults import FaultsContract
from powercontext.testing.contract_history import HistoryContract
from powercontext.testing.contract_integrity import IntegrityContract
from powercontext.testing.contract_keys import KeysContract
from powercontext.testing.contract_rebuild import InventoryContract, RebuildContract
from powercontext.testing.contract_scoped_sources import ScopedSourcesContract
from powercontext.testing.contract_search import SearchContract
from powercontext.testing.contract_vectors import VectorContract
from powercontext.testing.contract_writes import WritesContract

__all__ = ["MemoryBackendContract"]

class MemoryBackendContract(
    WritesContract,
    KeysContract,
    HistoryContract,
    IntegrityContract,
    SearchContract,
    VectorContract,
    RebuildContract,
    InventoryContract,
    FaultsContract,
    ScopedSourcesContract,
    CitationsContract,
):
    """Subclass and override ``memory_backend_factory``; every ``test_*`` of every
    contract group runs. Tests needing a capability beyond ``ports.MemoryBackend``
    (``ports.MemoryRebuild``, ``ports.MemoryInventory``, ``ports.SourceCitations``, a
    vector capability, the kit's ``FaultInjection`` hook) skip with the reason when the
    backend does not declare it."""
