"""The family-neutral storage of the SQL Artifact backends: the worker thread,
transactions with bounded retries, driver-error mapping, the deployment metadata table
and the open/close lifecycle (:class:`StorageBackend`), the Source store composed on it
(:class:`SourceJournal`), plus the decoders of the rows every family shares (Artifact
Revisions, Sources). A family's backend (the Memory family's
:class:`~powercontext.adapters.database.DatabaseMemoryBackend`, the Topic family's
:class:`~powercontext.adapters.topic_database.SQLTopicBackend`) subclasses
:class:`StorageBackend`, holds a :class:`SourceJournal` over itself, and adds its own
tables and rules."""

from powercontext.adapters.storage.base import RetryableError, StorageBackend
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.adapters.storage.sources import SourceHost, SourceJournal

__all__ = ["RetryableError", "RevisionRow", "SourceHost", "SourceJournal", "StorageBackend"]

# SQLStorage (powercontext.adapters.storage.sql_storage), the engine-neutral storage
# over a composed SQLEngine, is imported from its module: it needs the engine port.
