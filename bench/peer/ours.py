"""Our side of the peer benchmark: :class:`OurStore`, one Memory of
:class:`powercontext.service.MemoryService` on a fresh SQLite file (APSW + sqlite-vec,
the 384-dimension deterministic embedder, default analyzer), driven by the same
:mod:`bench.peer.protocol` loop as the peer. By default the database has no embedding
profile (full text only, no vectors written), like the peer's "Basic memory" without a
configured embedding model; ``embed=True`` adds the deterministic embedder's vectors to
every write (what ``bench perf`` measures)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from bench.peer import protocol
from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.core import canonical
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.service import MemoryService

DIM = 384


class OurStore:
    """One Memory on a fresh SQLite file. ``add`` is ``remember(mode="append")`` of the
    texts as ``turn`` entries (one Revision per call); ``search`` is ``search(mode=
    "fts")``. With ``keys=True`` (LoCoMo ranking) ``add`` returns entry ids (read after
    the write, untimed there); without, it returns ``[]`` and does nothing more than the
    write (the timed perf path)."""

    def __init__(self, path: Path, *, keys: bool = False, embed: bool = False) -> None:
        from powercontext.adapters.sqlite import SQLiteMemoryBackend

        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{path}{suffix}")
        self.path = path
        self.keys = keys
        model = DeterministicEmbedding(DIM) if embed else None
        self.svc = MemoryService(
            SQLiteMemoryBackend(str(path), profile=model.profile if model else None),
            embedding_model=model,
        )
        self.ref: ArtifactRef | None = None
        self._forget: list[str] = []

    async def add(self, texts: Sequence[str]) -> list[str]:
        self.ref = await self.svc.remember(
            self.ref, entries=[MemoryEntryInput("turn", t) for t in texts], mode="append"
        )
        if not self.keys:
            return []
        by_text = {e.text: e.entry_id for e in (await self.svc.entries(self.ref)).values()}
        return [by_text[canonical.normalize_text(t, "text")] for t in texts]

    async def search(self, query: str, limit: int) -> list[str]:
        if self.ref is None:
            return []
        result = await self.svc.search(query, [self.ref], limit=limit, mode="fts")
        return [h.entry_id for h in result.hits]

    async def pick_forget(self, n: int) -> None:
        """``n`` active entries spread over the head (entry id order), to forget."""
        if self.ref is None:
            return
        rev = await self.svc.revision(self.ref)
        active = [e.entry_id for e in rev.content.manifest.entries if e.state == "active"]
        step = max(1, len(active) // max(1, n))
        self._forget = active[::step][:n]

    async def forget_next(self) -> None:
        """``forget`` of one chosen entry: one Revision."""
        assert self.ref is not None
        self.ref = await self.svc.forget(self.ref, [self._forget.pop(0)], reason="bench")

    def size_bytes(self) -> int:
        return protocol.file_bytes(str(self.path))

    async def close(self) -> None:
        await self.svc.close()
