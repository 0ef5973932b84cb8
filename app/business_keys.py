"""Business keys of the Memory service: the key -> Memory mapping stored in the database
(``repo:/abs/path`` and the like), read and removed through the backend, after the one-time
import of an earlier release's keys (Memory RFC, "Code structure and abstraction
boundaries"; the keys themselves are :mod:`powercontext.core.keys`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from powercontext.core import keys
from powercontext.ports import MemoryBackend

__all__ = ["BusinessKeys"]


class BusinessKeys:
    """The business keys of one database. ``importer`` (optional, no arguments) runs once,
    before the first use of a key."""

    def __init__(self, backend: MemoryBackend,
                 importer: Callable[[], Awaitable[object]] | None = None) -> None:
        self._backend = backend
        self._importer = importer

    async def ready(self) -> None:
        """Run the importer if it has not run yet (it runs at most once)."""
        importer, self._importer = self._importer, None
        if importer is not None:
            await importer()

    async def memory_key(self, key: str) -> str | None:
        """The Memory id ``key`` names, or None (see ``MemoryService.memory_key``)."""
        key = keys.normalize_key(key)
        await self.ready()
        return await self._backend.memory_key(key)

    async def memory_keys(self) -> dict[str, str]:
        """Every business key -> Memory Artifact id, sorted by key."""
        await self.ready()
        return await self._backend.memory_keys()

    async def remove_memory_key(self, key: str, artifact_id: str) -> bool:
        """Delete ``key`` when it names ``artifact_id``; True when it did."""
        key = keys.normalize_key(key)
        await self.ready()
        return await self._backend.remove_memory_key(key, artifact_id)

    async def keys_by_memory(self) -> dict[str, list[str]]:
        """Memory Artifact id -> its business keys, each list sorted by key."""
        out: dict[str, list[str]] = {}
        for key, artifact_id in (await self.memory_keys()).items():
            out.setdefault(artifact_id, []).append(key)
        return out
