"""The SQLite plugin: registers the ``sqlite`` Memory and Topic Memory backends through
the same hooks a third-party plugin implements (ARCHITECTURE.md, "Plugins").

``sqlite:///abs/path/to/memory.db`` or ``sqlite://:memory:`` (a bare path becomes this
form in the registry, :mod:`powercontext.plugins.urls`). Importing this module imports
neither APSW nor the backend modules: each factory imports its backend when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from powercontext.plugins.hookspecs import RegisterBackend, RegisterTopicBackend, hookimpl
from powercontext.plugins.urls import sqlite_path_from_url

if TYPE_CHECKING:
    from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend
    from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend
    from powercontext.core.models import EmbeddingProfile

__all__ = [
    "memory_backend",
    "powercontext_register_backends",
    "powercontext_register_topic_backends",
    "topic_backend",
]


def memory_backend(url: str, *, profile: EmbeddingProfile | None,
                   analyzer: str | None = None,
                   vector_index: str | None = None) -> SQLiteMemoryBackend:
    """The :class:`SQLiteMemoryBackend` of the file a ``sqlite:`` URL names
    (``vector_index``: the backend's, None its default ``"auto"``). Raises
    InvalidInputError for a malformed URL; the backend's own errors pass through."""
    from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend

    return SQLiteMemoryBackend(sqlite_path_from_url(url), profile=profile, analyzer=analyzer,
                               vector_index=vector_index or "auto")  # type: ignore[arg-type]


def topic_backend(url: str, *, profile: EmbeddingProfile | None,
                  analyzer: str | None = None) -> SQLiteTopicBackend:
    """The :class:`SQLiteTopicBackend` of the file a ``sqlite:`` URL names (the same
    database as :func:`memory_backend`); the same errors."""
    from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend

    return SQLiteTopicBackend(sqlite_path_from_url(url), profile=profile, analyzer=analyzer)


@hookimpl
def powercontext_register_backends(register: RegisterBackend) -> None:
    register("sqlite", memory_backend)


@hookimpl
def powercontext_register_topic_backends(register: RegisterTopicBackend) -> None:
    register("sqlite", topic_backend)
