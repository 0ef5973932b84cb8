"""Contract group: business keys (ARCHITECTURE.md, Decisions: "Keys live in the database")."""

from __future__ import annotations

import asyncio

import pytest

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.testing.base import ContractBase, run


class KeysContract(ContractBase):
    """Business keys are stored with the Memory they name, validated and imported
    (Memory RFC, "Memory identity"; ARCHITECTURE.md, Decisions: "Keys live in the
    database")."""

    def test_concurrent_writers_of_one_new_key_get_one_memory_and_lose_nothing(
            self, memory_backend_factory):
        async def body():
            from powercontext import MemoryService

            backend = memory_backend_factory(None)
            services = [MemoryService(backend) for _ in range(4)]
            try:
                assert await backend.memory_key("repo:/w/demo") is None
                refs = await asyncio.gather(*(
                    svc.remember(None, mode="append", key="repo:/w/demo",
                                 entries=(MemoryEntryInput("fact", f"writer {i} was here"),))
                    for i, svc in enumerate(services)))
                mapped = await backend.memory_key("repo:/w/demo")
                assert mapped is not None and None not in refs
                assert {r.artifact_id for r in refs if r is not None} == {mapped}
                head = await backend.head(mapped)
                assert head is not None and head.revision == 4
                texts = {v.text for v in (await backend.load_entry_versions(head)).values()}
                assert texts == {f"writer {i} was here" for i in range(4)}
                assert await backend.memory_keys() == {"repo:/w/demo": mapped}
                # NFC: two spellings of one key are one key
                assert await backend.memory_key("caf\u00e9") is None
                ref = await services[0].remember(
                    None, mode="append", key="cafe\u0301",
                    entries=(MemoryEntryInput("fact", "a key in NFD form"),))
                assert ref is not None
                assert await backend.memory_key("caf\u00e9") == ref.artifact_id
            finally:
                await services[0].close()

        run(body())

    def test_keys_are_validated_and_stored_only_with_a_new_memory(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                for bad in ("", "a\nb", "x" * 1025, 7):
                    with pytest.raises(InvalidInputError) as err:
                        await svc.backend.memory_key(bad)
                    assert err.value.field == "key"
                    with pytest.raises(InvalidInputError):
                        await svc.remember(None, mode="append", key=bad,
                                           entries=(MemoryEntryInput("fact", "never"),))
                with pytest.raises(InvalidInputError):  # a key with an explicit base
                    await svc.remember(r1, mode="append", key="k",
                                       entries=(MemoryEntryInput("fact", "never"),))
                assert await svc.backend.memory_keys() == {}
                assert (await svc.head(r1.artifact_id)) == r1
                # import: only absent keys of existing Memories; idempotent
                stored = await svc.backend.import_memory_keys(
                    {"old": r1.artifact_id, "ghost": "mem_art_missing"})
                assert stored == {"old": r1.artifact_id}
                assert await svc.backend.import_memory_keys({"old": "mem_art_other"}) == {}
                assert await svc.backend.memory_keys() == {"old": r1.artifact_id}
                # a key write goes to the current head of the key's Memory
                r2 = await svc.remember(None, mode="append", key="old",
                                        entries=(MemoryEntryInput("fact", "via the key"),))
                assert r2 == ArtifactRef(r1.artifact_id, r1.revision + 1)

        run(body())


    def test_a_key_is_removed_only_from_the_memory_it_names(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                a = await svc.remember(None, mode="append", key="k:a",
                                       entries=(MemoryEntryInput("fact", "first"),))
                b = await svc.remember(None, mode="append", key="k:b",
                                       entries=(MemoryEntryInput("fact", "second"),))
                assert a is not None and b is not None
                assert await svc.backend.remove_memory_key("k:a", b.artifact_id) is False
                assert await svc.backend.remove_memory_key("k:none", a.artifact_id) is False
                assert await svc.backend.remove_memory_key("k:a", a.artifact_id) is True
                assert await svc.backend.memory_keys() == {"k:b": b.artifact_id}
                assert await svc.head(a.artifact_id) == a  # the Memory is untouched
                # the key can name another Memory now
                c = await svc.remember(None, mode="append", key="k:a",
                                       entries=(MemoryEntryInput("fact", "third"),))
                assert c is not None and c.artifact_id not in (a.artifact_id, b.artifact_id)
                with pytest.raises(InvalidInputError):
                    await svc.backend.remove_memory_key("a\nb", a.artifact_id)

        run(body())
