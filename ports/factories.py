"""The factories a plugin registers a backend with (ARCHITECTURE.md, "Plugins"): the
host's :class:`~powercontext.plugins.registry.Registry` calls one with a database URL
whose scheme it was registered under. typing.Protocols only; the hooks that take them
are in :mod:`powercontext.plugins.hookspecs`, which re-exports both names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from powercontext.core.models import EmbeddingProfile
    from powercontext.ports import MemoryBackend
    from powercontext.ports.topic import TopicMemoryBackend

__all__ = ["BackendFactory", "TopicBackendFactory"]


class BackendFactory(Protocol):
    """Builds a MemoryBackend for ``url`` (its scheme is the one it was registered
    under); ``profile`` is the deployment's embedding profile or None. A factory may also
    take ``analyzer`` (a search analyzer version, for a new database); the registry passes
    it only when one was chosen."""

    def __call__(self, url: str, *, profile: EmbeddingProfile | None) -> MemoryBackend: ...


class TopicBackendFactory(Protocol):
    """Builds a TopicMemoryBackend (Topic Memory RFC, "Storage, Head, and atomic
    activation") for ``url`` (its scheme is the one it was registered under);
    ``profile`` is the deployment's embedding profile or None (None: an FTS-only
    deployment). A factory may also take ``analyzer`` like :class:`BackendFactory`."""

    def __call__(self, url: str, *, profile: EmbeddingProfile | None
                 ) -> TopicMemoryBackend: ...
