"""MemoryService: the public async facade of the Memory family (Memory RFC,
"Code structure and abstraction boundaries": remember, forget, reactivate, organize,
changes, search, expand, and Handoff citations).

The service resolves modes, reads the exact base, asks the pure planners in
:mod:`powercontext.core.planning` for a plan, embeds changed texts outside the
transaction, and hands the plan to the backend's unit of work. One class, assembled from
one module per concept: shared state and keys (``_service_core``), reads (``_reads``),
citations (``_citations``), search and the query embedding (``_search``), and the
remember/forget/reactivate/organize pipeline (``_writes``).
"""

from __future__ import annotations

from powercontext._citations import CitationOps
from powercontext._reads import ReadOps
from powercontext._search import MAX_SEARCH_LIMIT, SearchOps
from powercontext._writes import RememberMode, WriteOps

__all__ = ["MAX_SEARCH_LIMIT", "MemoryService", "RememberMode"]


class MemoryService(WriteOps, SearchOps, CitationOps, ReadOps):
    """The Memory family service.

    ``backend`` implements :class:`powercontext.ports.MemoryBackend`;
    ``embedding_model`` (optional) embeds entries and queries for vector and hybrid
    search; ``candidate_pipeline`` (optional) serves ``remember(mode="extract")``.
    ``secret_scanner`` (optional; default: the core rules plus detect-secrets, see
    :mod:`powercontext.adapters.secret_scanner`) refuses secrets before anything is stored.
    ``clock`` (milliseconds) and ``entropy`` (n -> n random bytes) feed the id factory.
    ``key_importer`` (optional) runs once, before the first use of business keys (the
    runtime imports the keys of an earlier release's JSON manifest with it).
    ``sleep`` (an awaitable of seconds; default :func:`asyncio.sleep`) waits between the
    retries of a write through a business key (:attr:`KEY_WRITE_ATTEMPTS`).
    An async context manager: leaving it closes the backend.
    """
