"""The OceanBase plugin: registers the ``oceanbase`` Memory and Topic Memory backends
through the same hooks a third-party plugin implements (ARCHITECTURE.md, "Plugins").

``oceanbase://user:password@host:port/database`` (a MySQL-mode tenant, or seekdb). The
backend reads the URL itself. Importing this module imports neither mysqlclient nor the
backend modules: each factory imports its backend when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from powercontext.plugins.hookspecs import RegisterBackend, RegisterTopicBackend, hookimpl

if TYPE_CHECKING:
    from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend
    from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend
    from powercontext.core.models import EmbeddingProfile

__all__ = [
    "memory_backend",
    "powercontext_register_backends",
    "powercontext_register_topic_backends",
    "topic_backend",
]


def memory_backend(url: str, *, profile: EmbeddingProfile | None,
                   analyzer: str | None = None,
                   vector_index: str | None = None) -> OceanBaseMemoryBackend:
    """The :class:`OceanBaseMemoryBackend` of an ``oceanbase:`` URL; its errors (a
    malformed URL, a missing mysqlclient) pass through. ``vector_index`` is SQLite's
    choice and ignored: OceanBase answers the vector channel by its own vector index."""
    from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend

    return OceanBaseMemoryBackend(url, profile=profile, analyzer=analyzer)


def topic_backend(url: str, *, profile: EmbeddingProfile | None,
                  analyzer: str | None = None) -> OceanBaseTopicBackend:
    """The :class:`OceanBaseTopicBackend` of an ``oceanbase:`` URL (the same database
    as :func:`memory_backend`); the same errors."""
    from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend

    return OceanBaseTopicBackend(url, profile=profile, analyzer=analyzer)


@hookimpl
def powercontext_register_backends(register: RegisterBackend) -> None:
    register("oceanbase", memory_backend)


@hookimpl
def powercontext_register_topic_backends(register: RegisterTopicBackend) -> None:
    register("oceanbase", topic_backend)
