"""The family-neutral storage base of the SQL Artifact backends: the worker thread,
transactions with bounded retries, driver-error mapping, the deployment metadata table,
the open/close lifecycle and the Source store, plus the decoders of the rows every
family shares (Artifact Revisions, Sources). A family's backend (the Memory family's
:class:`~powercontext.adapters.database.DatabaseMemoryBackend`; later Topic Memory)
subclasses :class:`SourceStore` and adds its own tables and rules."""

from powercontext.adapters.storage.base import RetryableError, StorageBackend
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.adapters.storage.sources import SourceStore

__all__ = ["RetryableError", "RevisionRow", "SourceStore", "StorageBackend"]

# SQLStorage (powercontext.adapters.storage.sql_storage), the engine-neutral storage
# over a composed SQLEngine, is imported from its module: it needs the engine port.
