"""SourceStore: the append-only Source store and its journal, shared by every family
(Memory RFC, "Sources"). Sources are validated and scanned for secrets before the
transaction; the adapter implements three synchronous primitives over the shared
``sources`` table."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TypeVar

from powercontext.adapters.secret_scanner import default_scanner
from powercontext.adapters.storage.base import StorageBackend
from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import Source
from powercontext.core.secrets import check_sources

__all__ = ["SourceStore"]

C = TypeVar("C")


class SourceStore(StorageBackend[C]):
    """:class:`StorageBackend` with the Source store: ``put_sources``, ``get_sources``
    and ``journal`` (implements :class:`powercontext.ports.SourceStore`)."""

    @abc.abstractmethod
    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        """Insert Sources not yet stored; return each one's journal position."""

    @abc.abstractmethod
    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        """Stored Sources with their journal positions (missing ids left out)."""

    @abc.abstractmethod
    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        """Sources after a journal position, ascending."""

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        """Persist Sources atomically; identical ones are kept once. Returns each one's
        journal position. ValueError for a different Source under an existing id or a
        Source whose hash is wrong; SecretDetectedError (a ValueError) for a Source
        holding a secret in its content, uri or metadata: nothing is stored (Sources are
        append-only)."""
        for s in sources:
            if not isinstance(s, Source):
                raise InvalidInputError("sources", "must be Source values")
            canonical.check_id(s.source_id, "source_id")
            if canonical.make_source(s.source_id, s.kind, s.content, s.uri, s.metadata) != s:
                raise InvalidInputError(
                    "sources",
                    f"Source {s.source_id!r} is not normalized (build it with make_source)",
                )
            if (
                canonical.source_content_hash(s.kind, s.content, s.uri, s.metadata)
                != s.content_hash
            ):
                raise InvalidInputError(
                    "source.content_hash", f"does not match the content of {s.source_id!r}"
                )
        check_sources(sources, default_scanner().scan)
        return tuple(await self._run(self._in_tx, True, self._put_sources_checked, list(sources)))

    def _put_sources_checked(self, sources: list[Source]) -> list[int]:
        existing = dict(
            (s.source_id, s) for _, s in self._get_sources_sync([s.source_id for s in sources])
        )
        for s in sources:
            old = existing.get(s.source_id)
            if old is not None and old != s:
                raise InvalidInputError(
                    "source_id", f"{s.source_id!r} is already stored with other content"
                )
        return self._put_sources_sync(sources)

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        """The stored Sources with these ids, in this order. ArtifactNotFoundError names
        the first id that is not stored."""
        rows = dict(
            (s.source_id, s)
            for _, s in await self._run(
                self._in_tx, False, self._get_sources_sync, list(source_ids)
            )
        )
        missing = [i for i in source_ids if i not in rows]
        if missing:
            raise ArtifactNotFoundError(f"no stored Source {missing[0]!r}")
        return tuple(rows[i] for i in source_ids)

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        """``(position, Source)`` pairs after journal position ``after`` (exclusive),
        ascending, at most ``limit``."""
        return tuple(await self._run(self._in_tx, False, self._journal_sync, after, limit))
