"""TopicHost: what the Topic family's collaborators use of the storage they are composed
on (the "host": the backend object itself, a
:class:`~powercontext.adapters.storage.sql_storage.SQLStorage`): the worker thread, one
retried transaction, the capability report, the metadata table, the Source primitives'
Scope-journal and processing rows, and the shared Artifact rows. Nothing else of the
host is called from a collaborator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from powercontext.adapters.storage.rows import RevisionRow
from powercontext.core.topic.models import TopicCapabilities
from powercontext.core.topic.processing import BudgetRow, JournalEntry, PendingRow

__all__ = ["TopicArtifactHost", "TopicHost"]

T = TypeVar("T")


class TopicHost(Protocol):
    """The host's names a Topic collaborator calls (see the module docstring)."""

    _db_caps: TopicCapabilities | None

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the worker thread, the database opened first."""
        ...

    def _in_tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in one retried transaction."""
        ...

    async def capabilities(self) -> TopicCapabilities:
        """The capability report (opens the database)."""
        ...

    def _meta_get_sync(self, key: str) -> str | None: ...
    def _meta_set_sync(self, key: str, value: str | None) -> None: ...

    # the Source store's Scope journal and processing reads
    def _scope_lock_sync(self, scope_id: str) -> None: ...
    def _scope_head_sync(self, scope_id: str) -> int: ...
    def _scope_journal_sync(self, scope_id: str, after: int,
                            limit: int) -> list[JournalEntry]: ...
    def _cursor_get_sync(self, binding_name: str, scope_id: str) -> int: ...
    def _pending_get_sync(self, binding_name: str, scope_id: str) -> PendingRow | None: ...
    def _pending_flush_sync(self, binding_name: str, scope_id: str, head: int) -> None: ...
    def _budget_get_sync(self, scope_id: str, binding_name: str,
                         source_after: int) -> BudgetRow | None: ...
    def _processing_scopes_sync(self, binding_name: str) -> list[str]: ...


class TopicArtifactHost(TopicHost, Protocol):
    """A :class:`TopicHost` that also writes the Artifact rows every family shares
    (the SQL storage; the publication runs them)."""

    def _insert_revision_sync(self, row: RevisionRow) -> None: ...
    def _insert_head_sync(self, artifact_id: str, revision: int) -> None: ...
    def _cas_head_sync(self, artifact_id: str, base_revision: int, revision: int) -> bool: ...

