"""The state every part of :class:`powercontext.service.MemoryService` shares: the
backend, the optional models, the secret scanner, the id factory, business keys and the
head lookup (Memory RFC, "Code structure and abstraction boundaries").

Private: callers use ``MemoryService`` (the mixins in ``_reads``, ``_citations``,
``_search`` and ``_writes`` add the RFC's operations on top of this class).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Self

from powercontext.core import canonical, keys
from powercontext.core.errors import ArtifactNotFoundError, PowerContextError
from powercontext.core.models import ArtifactRef, MemoryEntryInput, Source
from powercontext.ports import CandidatePipeline, EmbeddingModel, MemoryBackend, SecretScanner

if TYPE_CHECKING:
    from powercontext.service import MemoryService

__all__ = ["ServiceCore"]


def describe(exc: BaseException) -> str:
    """One line naming an exception (its type too, unless it is one of ours)."""
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, PowerContextError) else str(exc)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ServiceCore:
    """Construction, secrets, ids, lifetime, business keys and heads of MemoryService
    (its docstring lists the parameters)."""

    def __init__(
        self,
        backend: MemoryBackend,
        *,
        embedding_model: EmbeddingModel | None = None,
        candidate_pipeline: CandidatePipeline | None = None,
        secret_scanner: SecretScanner | None = None,
        clock: Callable[[], int] = _now_ms,
        entropy: Callable[[int], bytes] = os.urandom,
        key_importer: Callable[[MemoryService], Awaitable[object]] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.backend = backend
        self._key_importer = key_importer
        self.embedding_model = embedding_model
        self.candidate_pipeline = candidate_pipeline
        self._secret_scanner = secret_scanner
        self._clock = clock
        self._entropy = entropy
        self._sleep = sleep

    @property
    def secret_scanner(self) -> SecretScanner:
        """The scanner every write checks Sources and entry texts with."""
        if self._secret_scanner is None:
            from powercontext.adapters.secret_scanner import default_scanner

            self._secret_scanner = default_scanner()
        return self._secret_scanner

    def check_secrets(self, sources: Sequence[Source] = (),
                      entries: Sequence[MemoryEntryInput] = (), key: str | None = None,
                      reason: object = None) -> None:
        """Raise SecretDetectedError (an InvalidInputError naming the field, the kind of
        secret and the line, never the secret) when a Source's content, uri or metadata,
        an entry's text or reason, the business ``key`` a write stores or the
        operation's ``reason`` (forget, reactivate: field ``reason``) holds a secret.
        Nothing has been stored at that point."""
        from powercontext.core import secrets  # writes only: reads never compile its rules

        scan = self.secret_scanner.scan
        if key is not None:
            secrets.check_text("key", key, scan)
        secrets.check_sources(sources, scan)
        for i, e in enumerate(entries):
            if isinstance(e, MemoryEntryInput) and isinstance(e.text, str):
                secrets.check_text(f"entries[{i}].text", e.text, scan)
                if isinstance(e.reason, str):
                    secrets.check_text(f"entries[{i}].reason", e.reason, scan)
        if isinstance(reason, str):
            secrets.check_text("reason", reason, scan)

    def new_id(self, prefix: str) -> str:
        """A fresh time-ordered ASCII id with ``prefix`` (e.g. ``mem_ent_``)."""
        return canonical.make_id(prefix, self._clock(), self._entropy(10))

    async def close(self) -> None:
        await self.backend.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ business keys

    async def _keys_ready(self) -> None:
        importer, self._key_importer = self._key_importer, None
        if importer is not None:
            await importer(self)  # type: ignore[arg-type]

    async def memory_key(self, key: str) -> str | None:
        """The Memory Artifact id the business ``key`` names (stored in the database, see
        :meth:`powercontext.ports.MemoryBackend.memory_key`), or None. InvalidInputError
        (field ``key``) for a malformed key (:func:`powercontext.core.keys.normalize_key`)."""
        key = keys.normalize_key(key)
        await self._keys_ready()
        return await self.backend.memory_key(key)

    async def memory_keys(self) -> dict[str, str]:
        """Every business key -> Memory Artifact id, sorted by key."""
        await self._keys_ready()
        return await self.backend.memory_keys()

    async def remove_memory_key(self, key: str, artifact_id: str) -> bool:
        """Delete the business ``key`` when it names ``artifact_id`` (see
        :meth:`powercontext.ports.MemoryBackend.remove_memory_key`); True when it did."""
        key = keys.normalize_key(key)
        await self._keys_ready()
        return await self.backend.remove_memory_key(key, artifact_id)

    async def keys_by_memory(self) -> dict[str, list[str]]:
        """The inverse of :meth:`memory_keys`: Memory Artifact id -> its business keys,
        each list sorted by key (a Memory without a key is absent)."""
        out: dict[str, list[str]] = {}
        for key, artifact_id in (await self.memory_keys()).items():
            out.setdefault(artifact_id, []).append(key)
        return out

    async def head(self, memory: ArtifactRef | str) -> ArtifactRef:
        """The current head of a Memory. ArtifactNotFoundError when there is none."""
        artifact_id = memory if isinstance(memory, str) else memory.artifact_id
        head = await self.backend.head(artifact_id)
        if head is None:
            raise ArtifactNotFoundError(f"no Memory Artifact {artifact_id!r}")
        return head

