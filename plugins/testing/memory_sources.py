"""The Source store of the in-memory backends (Memory and Topic): the three synchronous
primitives of :class:`powercontext.adapters.storage.sources.SourceStore` over a plain
dict state with ``sources`` (source_id -> (position, Source)) and ``journal`` (Sources
in store order; a Source's position is its index + 1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from powercontext.core.models import Source

__all__ = ["InMemorySources"]


class InMemorySources:
    """Mixin: ``_put_sources_sync``, ``_get_sources_sync``, ``_journal_sync`` over
    ``self._state`` (the class it is mixed into provides it)."""

    _state: Any

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        out = []
        for s in sources:
            if s.source_id not in self._state["sources"]:
                self._state["journal"].append(s)
                self._state["sources"][s.source_id] = (len(self._state["journal"]), s)
            out.append(self._state["sources"][s.source_id][0])
        return out

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        return [self._state["sources"][i] for i in source_ids if i in self._state["sources"]]

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        return [(i + 1, s) for i, s in enumerate(self._state["journal"])][after:after + limit]
