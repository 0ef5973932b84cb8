"""powercontext: versioned, citable, searchable memory for coding agents.

The public API of the Memory family (Memory RFC, "Code structure and abstraction
boundaries"). Open a service on a database and use it as an async context manager::

    from powercontext import MemoryEntryInput, make_source, open_service

    async with open_service("memory.db") as svc:  # or an "oceanbase://..." URL
        note = make_source("src_note_1", "user_note", "Use uv, not pip.")
        ref = await svc.remember(None, sources=(note,), entries=(
            MemoryEntryInput("preference", "Use uv.", sources=(note,)),))

- :func:`open_service` and :class:`MemoryService`, the Memory family's service;
- :func:`open_topic_service` and :class:`TopicMemoryService`, Topic Memory's reads
  (``search``, exact ``get``), its processing surface (``add_sources``, ``flush``,
  ``status``, ``process``; :func:`open_topic_processor` wires the configured provider)
  and their values (:class:`TopicRef`, :class:`TopicHit`,
  :class:`TopicSearchResult`, :class:`TopicRevision`, :class:`TopicMemoryContent`);
- the values a caller builds or reads (:class:`ArtifactRef`, :class:`CurrentHead`,
  :class:`Source` and :func:`make_source`, :class:`MemoryEntryInput`,
  :class:`HandoffCitation`, ...) and the modes (:data:`SearchMode`, :data:`RememberMode`,
  :data:`OrganizeStep`);
- the error hierarchy rooted at :class:`PowerContextError`.

Importing this package loads nothing else: each name is imported on first use (PEP 562),
so ``import powercontext.core.models`` (and the CLI that hooks start once per event) never
pays for the service, and no connection, model or plugin manager is ever built at import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "AnalyzerMismatchError",
    "Artifact",
    "ArtifactNotFoundError",
    "ArtifactRef",
    "BackendError",
    "CapabilityNotSupportedError",
    "CommitOutcomeUnknownError",
    "CurrentHead",
    "EmbeddingProfile",
    "HandoffCitation",
    "IntegrityError",
    "InvalidCitationError",
    "InvalidInputError",
    "MemoryCapabilities",
    "MemoryChange",
    "MemoryEntryInput",
    "MemoryEntryVersion",
    "MemoryHit",
    "MemoryRevision",
    "MemoryRevisionChanges",
    "MemorySearchRequest",
    "MemorySearchResult",
    "MemoryService",
    "OrganizeStep",
    "PowerContextError",
    "ProfileMismatchError",
    "RememberMode",
    "RetrievalShapeError",
    "RevisionConflictError",
    "SearchMode",
    "SecretDetectedError",
    "Source",
    "SourceRef",
    "SupervisorTermError",
    "SupervisorUnavailableError",
    "TopicHit",
    "TopicMemoryContent",
    "TopicMemoryService",
    "TopicProcessingError",
    "TopicProcessingUnavailableError",
    "TopicRef",
    "TopicRevision",
    "TopicSearchResult",
    "UpgradeRequiredError",
    "WritesPausedError",
    "make_source",
    "open_service",
    "open_topic_processor",
    "open_topic_service",
]

if TYPE_CHECKING:
    from powercontext.core.canonical import make_source
    from powercontext.core.errors import (
        AnalyzerMismatchError,
        ArtifactNotFoundError,
        BackendError,
        CapabilityNotSupportedError,
        CommitOutcomeUnknownError,
        IntegrityError,
        InvalidCitationError,
        InvalidInputError,
        PowerContextError,
        ProfileMismatchError,
        RetrievalShapeError,
        RevisionConflictError,
        SecretDetectedError,
        SupervisorTermError,
        SupervisorUnavailableError,
        TopicProcessingError,
        TopicProcessingUnavailableError,
        UpgradeRequiredError,
        WritesPausedError,
    )
    from powercontext.core.models import (
        Artifact,
        ArtifactRef,
        CurrentHead,
        EmbeddingProfile,
        HandoffCitation,
        MemoryCapabilities,
        MemoryChange,
        MemoryEntryInput,
        MemoryEntryVersion,
        MemoryHit,
        MemoryRevision,
        MemoryRevisionChanges,
        MemorySearchRequest,
        MemorySearchResult,
        SearchMode,
        Source,
        SourceRef,
    )
    from powercontext.core.planning import OrganizeStep
    from powercontext.core.topic.models import (
        TopicHit,
        TopicMemoryContent,
        TopicRef,
        TopicRevision,
        TopicSearchResult,
    )
    from powercontext.runtime import open_service, open_topic_processor, open_topic_service
    from powercontext.service import MemoryService, RememberMode
    from powercontext.topic_service import TopicMemoryService

_ERRORS = "powercontext.core.errors"
_MODELS = "powercontext.core.models"
#: public name -> the module that defines it (imported on first access).
_HOMES: dict[str, str] = {
    **{name: _ERRORS for name in (
        "AnalyzerMismatchError", "ArtifactNotFoundError", "BackendError",
        "CapabilityNotSupportedError", "CommitOutcomeUnknownError", "IntegrityError",
        "InvalidCitationError", "InvalidInputError", "PowerContextError",
        "ProfileMismatchError", "RetrievalShapeError", "RevisionConflictError",
        "SecretDetectedError", "SupervisorTermError", "SupervisorUnavailableError",
        "TopicProcessingError", "TopicProcessingUnavailableError",
        "UpgradeRequiredError", "WritesPausedError")},
    **{name: _MODELS for name in (
        "Artifact", "ArtifactRef", "CurrentHead", "EmbeddingProfile", "HandoffCitation",
        "MemoryCapabilities", "MemoryChange", "MemoryEntryInput", "MemoryEntryVersion",
        "MemoryHit", "MemoryRevision", "MemoryRevisionChanges", "MemorySearchRequest",
        "MemorySearchResult", "SearchMode", "Source", "SourceRef")},
    "make_source": "powercontext.core.canonical",
    "OrganizeStep": "powercontext.core.planning",
    "MemoryService": "powercontext.service",
    "RememberMode": "powercontext.service",
    "open_service": "powercontext.runtime",
    **{name: "powercontext.core.topic.models" for name in (
        "TopicHit", "TopicMemoryContent", "TopicRef", "TopicRevision", "TopicSearchResult")},
    "TopicMemoryService": "powercontext.topic_service",
    "open_topic_service": "powercontext.runtime",
    "open_topic_processor": "powercontext.runtime",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'powercontext' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
