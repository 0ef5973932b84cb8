"""Writes of the Memory service: ``remember()`` (append and extract, through a business key
or an exact head), ``forget()``, ``reactivate()`` and ``organize()``. Each reads the exact
base, asks the pure planners in :mod:`powercontext.core.planning` for a plan, embeds the
changed texts outside the transaction and commits through the backend's unit of work
(Memory RFC, "remember()", "forget()", "reactivate()", "organize()"); ``edit()`` commits
a person's edit of an exported Memory (adds, revisions and forgets) as one Revision."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from powercontext.business_keys import BusinessKeys
from powercontext.core import keys, planning
from powercontext.core.errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    InvalidInputError,
    RevisionConflictError,
)
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import (
    Artifact,
    ArtifactRef,
    MemoryEntryInput,
    MemoryEntryVersion,
    Source,
)
from powercontext.core.plan import MemoryPlan, NoChange
from powercontext.ids import IdFactory
from powercontext.memory_embedding import MemoryEmbedding
from powercontext.memory_reads import MemoryReads
from powercontext.ports import CandidatePipeline, MemoryBackend
from powercontext.secret_check import SecretCheck

__all__ = ["MemoryWrites", "RememberMode", "key_retry_delay"]

RememberMode = Literal["append", "extract", "auto"]


def key_retry_delay(attempt: int, jitter: float) -> float:
    """Seconds to wait before retry ``attempt`` (1, 2, ...) of a write through a business
    key: ``min(0.2, 0.002 * attempt)`` times ``jitter`` (drawn from [1, 2])."""
    return min(0.2, 0.002 * attempt) * jitter


class MemoryWrites:
    """The write operations over ``backend``; every one ends in :meth:`commit`. Reads the
    head through ``reads``, the keys through ``business_keys``, checks secrets with ``secrets``,
    draws ids from ``ids``, embeds with ``embedding``, extracts with
    ``candidate_pipeline`` (optional, may be replaced at any time) and waits between the
    retries of a keyed write with ``sleep``."""

    #: How many times a write through a business key rereads the key and the head
    #: after a concurrent writer moved them (each retry means another write landed).
    KEY_WRITE_ATTEMPTS = 40

    def __init__(
        self,
        backend: MemoryBackend,
        *,
        reads: MemoryReads,
        business_keys: BusinessKeys,
        secrets: SecretCheck,
        ids: IdFactory,
        embedding: MemoryEmbedding,
        candidate_pipeline: CandidatePipeline | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._backend = backend
        self._reads = reads
        self._keys = business_keys
        self._secrets = secrets
        self._ids = ids
        self._embedding = embedding
        self.candidate_pipeline = candidate_pipeline
        self._sleep = sleep

    async def base(
        self, memory: ArtifactRef, entry_ids: Sequence[str] | None
    ) -> planning.MemoryBase:
        """The exact base a plan starts from: ``memory`` must be the head (else
        RevisionConflictError); with the versions of ``entry_ids`` (None: all)."""
        if not isinstance(memory, ArtifactRef):
            raise InvalidInputError("memory", "must be an ArtifactRef or None")
        head = await self._reads.head(memory)
        if head.revision != memory.revision:
            raise RevisionConflictError(
                f"Memory {memory.artifact_id!r} is at Revision {head.revision}, "
                f"not {memory.revision}: reread the head and retry"
            )
        rev = await self._backend.load_revision(memory)
        view = manifest_view(rev.content.manifest)  # memoized per Revision
        ids = (None if entry_ids is None
               else [i for i in dict.fromkeys(entry_ids) if view.get(i) is not None])
        versions = await self._backend.load_entry_versions(memory, ids) if ids != [] else {}
        return planning.MemoryBase(memory, rev.content, versions)

    async def commit(
        self, plan: MemoryPlan | NoChange, current: ArtifactRef | None, key: str | None = None
    ) -> ArtifactRef | None:
        """Embed the plan's changed texts, then commit it in one unit of work (a
        NoChange returns ``current``); ``key`` is claimed in the same transaction."""
        if isinstance(plan, NoChange):
            return current
        vectors = await self._embedding.plan_vectors(plan)
        async with self._backend.begin() as uow:
            if key is None:
                return await uow.commit(plan, vectors)
            return await uow.commit(plan, vectors, key=key)

    async def remember(
        self,
        memory: ArtifactRef | None = None,
        *,
        sources: Sequence[Source] = (),
        artifacts: Sequence[Artifact] = (),
        entries: Sequence[MemoryEntryInput] = (),
        mode: RememberMode = "auto",
        providers: Sequence[str] | None = None,
        key: str | None = None,
    ) -> ArtifactRef | None:
        """See :meth:`powercontext.service.MemoryService.remember`."""
        if key is None:
            return await self._remember(memory, sources=sources, artifacts=artifacts,
                                        entries=entries, mode=mode, providers=providers)
        if memory is not None:
            raise InvalidInputError("key", "name the Memory or its key, not both")
        key = keys.normalize_key(key)
        self._secrets.check(key=key)  # a key is stored and shown: never a secret
        await self._keys.ready()
        conflict: RevisionConflictError | None = None
        for attempt in range(self.KEY_WRITE_ATTEMPTS):
            if attempt:  # another writer landed first: back off a little, with jitter
                await self._sleep(key_retry_delay(attempt, random.uniform(1, 2)))
            artifact_id = await self._backend.memory_key(key)
            base = await self._reads.head(artifact_id) if artifact_id is not None else None
            try:
                return await self._remember(
                    base, sources=sources, artifacts=artifacts, entries=entries, mode=mode,
                    providers=providers, key=key if base is None else None)
            except RevisionConflictError as exc:
                conflict = exc
        raise RevisionConflictError(
            f"the Memory of key {key!r} kept moving ({self.KEY_WRITE_ATTEMPTS} attempts): "
            f"{conflict}") from conflict

    async def _remember(
        self,
        memory: ArtifactRef | None,
        *,
        sources: Sequence[Source],
        artifacts: Sequence[Artifact],
        entries: Sequence[MemoryEntryInput],
        mode: RememberMode,
        providers: Sequence[str] | None,
        key: str | None = None,
    ) -> ArtifactRef | None:
        if mode not in ("append", "extract", "auto"):
            raise InvalidInputError("mode", "must be append, extract or auto")
        entries = tuple(entries)
        sources = tuple(sources)
        artifacts = tuple(artifacts)
        self._secrets.check(sources, entries)
        if mode == "auto":
            if entries:
                mode = "append"
            elif sources or artifacts:
                mode = "extract"
            else:
                raise InvalidInputError(
                    "entries", "nothing to remember: no entries and no evidence"
                )
        if mode == "append" and not entries:
            raise InvalidInputError("entries", "append needs at least one entry")
        if mode == "extract":
            if entries:
                raise InvalidInputError("entries", "extract takes evidence, not entries")
            if not sources and not artifacts:
                raise InvalidInputError("sources", "extract needs at least one Source or Artifact")
        revised = [
            e.entry.entry_id
            for e in entries
            if isinstance(e, MemoryEntryInput) and e.entry is not None
        ]
        if mode == "extract":
            if self.candidate_pipeline is None:
                raise CapabilityNotSupportedError(
                    "remember(mode='extract') needs a candidate pipeline; none is configured"
                )
            base = await self.base(memory, None) if memory is not None else None
            if sources:  # the evidence is kept even when extraction yields nothing
                await self._backend.put_sources(sources)
            current: tuple[MemoryEntryVersion, ...] = ()
            if base is not None:
                manifest = base.manifest
                current = tuple(v for e, v in base.versions.items()
                                if manifest[e].state == "active")
            entries = await self.candidate_pipeline.extract(
                sources, current, tuple(providers) if providers is not None else None
            )
            if not entries:
                return memory
        else:
            base = await self.base(memory, revised) if memory is not None else None
        plan = planning.plan_remember(
            base, entries, sources=sources, artifacts=artifacts, new_id=self._ids.new_id,
            analyzer=await self._backend.analyzer(),
        )
        if mode == "append" and sources and not isinstance(plan, NoChange):
            # stored only once the input has validated (the commit re-checks them)
            await self._backend.put_sources(sources)
        return await self.commit(plan, memory, key)

    async def edit(
        self,
        memory: ArtifactRef,
        entries: Sequence[MemoryEntryInput],
        forget: Sequence[MemoryEntryVersion],
        *,
        reason: str | None = "user_edit",
        sources: Sequence[Source] = (),
    ) -> ArtifactRef:
        """See :meth:`powercontext.service.MemoryService.edit`."""
        entries = tuple(entries)
        self._secrets.check(sources, entries)
        named = [*(e.entry.entry_id for e in entries
                   if isinstance(e, MemoryEntryInput) and e.entry is not None),
                 *(v.entry_id for v in forget if isinstance(v, MemoryEntryVersion))]
        base = await self.base(memory, named)
        plan = planning.plan_edit(base, entries, tuple(forget), reason=reason,
                                  sources=tuple(sources), new_id=self._ids.new_id,
                                  analyzer=await self._backend.analyzer())
        if sources and not isinstance(plan, NoChange):
            await self._backend.put_sources(tuple(sources))
        result = await self.commit(plan, memory)
        assert result is not None
        return result

    async def forget(
        self,
        memory: ArtifactRef,
        entries: Sequence[MemoryEntryVersion | str],
        reason: str | None = None,
    ) -> ArtifactRef:
        """See :meth:`powercontext.service.MemoryService.forget`."""
        self._secrets.check(reason=reason)
        base, versions = await self._state_base(memory, entries)
        result = await self.commit(
            planning.plan_forget(base, versions, reason, analyzer=await self._backend.analyzer()),
            memory,
        )
        assert result is not None
        return result

    async def reactivate(
        self,
        memory: ArtifactRef,
        entries: Sequence[MemoryEntryVersion | str],
        reason: str | None = None,
    ) -> ArtifactRef:
        """See :meth:`powercontext.service.MemoryService.reactivate`."""
        self._secrets.check(reason=reason)
        base, versions = await self._state_base(memory, entries)
        result = await self.commit(
            planning.plan_reactivate(
                base, versions, reason, analyzer=await self._backend.analyzer()
            ),
            memory,
        )
        assert result is not None
        return result

    async def _state_base(
        self, memory: ArtifactRef, entries: Sequence[MemoryEntryVersion | str]
    ) -> tuple[planning.MemoryBase, list[MemoryEntryVersion]]:
        if not entries:
            raise InvalidInputError("entries", "name at least one entry")
        ids = [e if isinstance(e, str) else e.entry_id for e in entries]
        base = await self.base(memory, [i for i in ids if isinstance(i, str)])
        out: list[MemoryEntryVersion] = []
        for i, e in enumerate(entries):
            if isinstance(e, str):
                v = base.versions.get(e)
                if v is None:
                    raise ArtifactNotFoundError(f"entries[{i}]: no entry {e!r} in this Memory")
                out.append(v)
            else:
                out.append(e)
        return base, out

    async def organize(
        self, memory: ArtifactRef, steps: Sequence[planning.OrganizeStep] = ("default",)
    ) -> ArtifactRef:
        """Memory RFC, "organize()": exact dedupe then reference normalization; returns
        ``memory`` when nothing changes."""
        base = await self.base(memory, None)
        active = [e.entry_id for e in base.content.manifest.entries if e.state == "active"]
        base = planning.MemoryBase(
            base.ref, base.content, {k: v for k, v in base.versions.items() if k in active}
        )
        result = await self.commit(
            planning.plan_organize(
                base, steps=steps, new_id=self._ids.new_id, analyzer=await self._backend.analyzer()
            ),
            memory,
        )
        assert result is not None
        return result
