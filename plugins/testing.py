"""The contract kit: the Memory conformance suite any backend runs.

A backend passes by subclassing :class:`MemoryBackendContract` in its own test module
and overriding one fixture, ``memory_backend_factory``, that returns a callable
``factory(profile) -> MemoryBackend`` giving a fresh, empty database each call (call it
again with the same ``path`` to reopen the same database where the backend allows).
The SQLite and OceanBase backends of powercontext run exactly this suite.

Tests call ``asyncio.run`` themselves; no asyncio plugin is needed. Strategies for
Sources and entries are public here for third parties' own properties.
"""

from __future__ import annotations

import asyncio
import itertools
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

import pytest
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    InvalidCitationError,
    InvalidInputError,
    RevisionConflictError,
    SecretDetectedError,
)
from powercontext.core.models import (
    ArtifactRef,
    CurrentHead,
    EmbeddingProfile,
    HandoffCitation,
    MemoryEntryInput,
    Source,
)
from powercontext.core.query import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from powercontext.ports import MemoryBackend

__all__ = [
    "NASTY_QUERIES",
    "MemoryBackendContract",
    "entry_texts",
    "run",
    "sources",
]

T = TypeVar("T")
_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
BackendFactory = Callable[[EmbeddingProfile | None], MemoryBackend]

#: Queries that must never reach MATCH as syntax; each returns hits or nothing.
NASTY_QUERIES = (
    '"unbalanced',
    '"balanced"',
    "multi-agent",
    "TODO: fix",
    "*",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "a AND b OR NOT c",
    "(parens) (",
    "@name",
    "50%",
    "3.11.7",
    "🙂🚀",
    "x" * MAX_QUERY_CHARS,  # the longest query allowed (powercontext.core.query)
    "",
    "   ",
    "-leading",
    "col:value",
    "^start",
    "{braces}",
    "NEAR(a b)",
    "'single'",
)


def run(coro: Awaitable[T]) -> T:
    """Run one coroutine to completion (tests use no asyncio plugin)."""

    async def _wrap() -> T:
        return await coro

    return asyncio.run(_wrap())


def entry_texts() -> st.SearchStrategy[str]:
    """Entry texts valid after NFC and trimming (1..200 code points, no surrogates)."""
    chars = st.characters(blacklist_categories=_SURROGATES)
    return st.text(chars, min_size=1, max_size=200).filter(
        lambda t: bool(unicodedata.normalize("NFC", t).strip())
    )


def sources(prefix: str = "src_") -> st.SearchStrategy[Source]:
    """Persistable Sources with ASCII ids."""
    return st.builds(
        lambda n, kind, body: canonical.make_source(f"{prefix}{n}", kind, body),
        st.integers(0, 10_000),
        st.sampled_from(["file", "user_note", "task_outcome"]),
        st.text(st.characters(blacklist_categories=_SURROGATES), max_size=80),
    )


class _Ids:
    def __init__(self) -> None:
        self._n = itertools.count(1)

    def __call__(self, n: int) -> bytes:
        return next(self._n).to_bytes(n, "big")


class _SwitchableModel:
    """Wraps a model; ``mode`` makes it fail ("down") or return bad vectors."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.mode = "ok"

    @property
    def profile(self) -> EmbeddingProfile:
        return self.inner.profile  # type: ignore[no-any-return]

    async def embed(self, texts: tuple[str, ...]) -> Any:
        from powercontext.core.errors import BackendError
        from powercontext.core.models import EmbeddingResult

        if self.mode == "down":
            raise BackendError("embedding model unavailable (test)")
        result = await self.inner.embed(texts)
        if self.mode == "ok":
            return result
        dim = self.profile.dimension
        bad = {"nan": (float("nan"),) * dim, "short": (1.0,), "long": (1.0,) + (0.0,) * dim}[
            self.mode
        ]
        return EmbeddingResult(tuple(bad for _ in texts))


class _ThirdPartyModel:
    """A plain class implementing the EmbeddingModel port the way a third party might:
    it raises no powercontext error and returns lists. ``down`` (or a text containing
    ``unreachable``) makes the call raise ConnectionError; a text containing ``nanvec``,
    ``infvec``, ``zerovec``, ``shortvec`` or ``emptyvec`` gets that bad vector, and
    ``scaledvec`` a good vector times 3 (not unit length)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.down = False

    @property
    def profile(self) -> EmbeddingProfile:
        return self.inner.profile  # type: ignore[no-any-return]

    async def embed(self, texts: tuple[str, ...]) -> Any:
        from powercontext.core.models import EmbeddingResult

        if self.down or any("unreachable" in t for t in texts):
            raise ConnectionError("[Errno 111] Connection refused (test)")
        result = await self.inner.embed(texts)
        dim = self.profile.dimension
        out: list[list[float]] = []
        for text, vec in zip(texts, result.vectors, strict=True):
            row = list(vec)
            if "nanvec" in text:
                row = [float("nan")] * dim
            elif "infvec" in text:
                row = [float("inf"), *row[1:]]
            elif "zerovec" in text:
                row = [0.0] * dim
            elif "shortvec" in text:
                row = row[:-1]
            elif "emptyvec" in text:
                row = []
            elif "scaledvec" in text:
                row = [3.0 * x for x in row]
            out.append(row)
        return EmbeddingResult(tuple(out))  # type: ignore[arg-type]


class MemoryBackendContract:
    """Subclass and override ``memory_backend_factory``; every ``test_*`` here runs."""

    @pytest.fixture
    def memory_backend_factory(self) -> BackendFactory:
        raise NotImplementedError("override memory_backend_factory in your test class")

    # -- helpers ---------------------------------------------------------------------

    @asynccontextmanager
    async def _service(
        self, factory: BackendFactory, profile: EmbeddingProfile | None = None, model: Any = None
    ) -> AsyncIterator[Any]:
        from powercontext.service import MemoryService

        backend = factory(profile)
        service = MemoryService(backend, embedding_model=model, entropy=_Ids())
        try:
            yield service
        finally:
            await service.close()

    @staticmethod
    def _src(name: str, body: str) -> Source:
        return canonical.make_source(name, "file", body)

    async def _scenario(self, svc: Any) -> dict[str, Any]:
        agents = self._src("src_agents_md", "Use uv. Run make test. Never edit site/.")
        pyproject = self._src("src_pyproject", "[tool.uv]\nbuild-backend = 'hatchling'")
        makefile = self._src("src_makefile", "test:\n\tpytest\ncheck:\n\truff")
        r1 = await svc.remember(
            None,
            sources=(agents, pyproject, makefile),
            entries=(
                MemoryEntryInput(
                    "fact",
                    "powercontext uses uv to manage dependencies and Hatchling to build.",
                    sources=(agents, pyproject),
                ),
                MemoryEntryInput(
                    "preference",
                    "Validation convention: run make test for "
                    "routine code changes; run make check before review.",
                    sources=(agents, makefile),
                ),
                MemoryEntryInput(
                    "constraint",
                    "site/ is generated output and must not be modified as source material.",
                    sources=(agents,),
                ),
            ),
            mode="append",
        )
        return {"r1": r1, "agents": agents, "pyproject": pyproject, "makefile": makefile}

    # -- remember ----------------------------------------------------------------------

    def test_remember_creates_revision_one_with_sorted_manifest(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                s = await self._scenario(svc)
                r1 = s["r1"]
                assert r1.revision == 1
                rev = await svc.revision(r1)
                ids = [e.entry_id for e in rev.content.manifest.entries]
                assert ids == sorted(ids, key=str.encode) and len(ids) == 3
                assert all(e.state == "active" for e in rev.content.manifest.entries)
                assert [c.op for c in rev.content.changes] == ["add"] * 3
                assert rev.content_hash == canonical.artifact_content_hash(
                    canonical.content_bytes(rev.content)
                )
                versions = await svc.entries(r1)
                for e in rev.content.manifest.entries:
                    v = versions[e.entry_id]
                    assert (v.version, v.previous_version_id, v.created_in_revision) == (1, None, 1)
                    assert canonical.version_hash_ok(v)
                assert set(rev.lineage.sources) == {
                    s["agents"].ref,
                    s["pyproject"].ref,
                    s["makefile"].ref,
                }
                assert (await svc.head(r1.artifact_id)) == r1

        run(body())

    def test_revision_links_predecessor_and_unions_evidence(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                s = await self._scenario(svc)
                r1 = s["r1"]
                versions = await svc.entries(r1)
                pref = next(v for v in versions.values() if v.kind == "preference")
                note = self._src("src_user_note", "prefer make docs-test for docs")
                r2 = await svc.remember(
                    r1,
                    sources=(note,),
                    entries=(
                        MemoryEntryInput(
                            "preference",
                            "Validation convention: run make test for routine code "
                            "changes; prefer make docs-test for documentation-only "
                            "changes; run make check before review.",
                            entry=pref,
                            sources=(note,),
                        ),
                    ),
                    mode="append",
                )
                assert r2 == ArtifactRef(r1.artifact_id, 2)
                v2 = (await svc.entries(r2, [pref.entry_id]))[pref.entry_id]
                assert (v2.version, v2.previous_version_id) == (2, pref.entry_version_id)
                assert set(v2.sources) == set(pref.sources) | {note.ref}
                rev2 = await svc.revision(r2)
                assert [
                    (c.op, c.from_entry_version_id, c.to_entry_version_id)
                    for c in rev2.content.changes
                ] == [("revise", pref.entry_version_id, v2.entry_version_id)]
                # the old Revision and version are untouched
                old = (await svc.entries(r1, [pref.entry_id]))[pref.entry_id]
                assert old == pref
                # a stale entry object (the replaced version) is rejected, nothing written
                with pytest.raises(ValueError):
                    await svc.remember(
                        r2,
                        entries=(MemoryEntryInput("preference", "something else", entry=pref),),
                        mode="append",
                    )
                assert (await svc.head(r1.artifact_id)) == r2

        run(body())

    def test_identical_content_is_a_no_op(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                s = await self._scenario(svc)
                r1 = s["r1"]
                versions = await svc.entries(r1)
                fact = next(v for v in versions.values() if v.kind == "fact")
                same = await svc.remember(
                    r1,
                    entries=(MemoryEntryInput(fact.kind, "  " + fact.text + "\n", entry=fact),),
                    mode="append",
                )
                assert same == r1
                again = await svc.remember(
                    r1,
                    sources=(s["agents"], s["pyproject"]),
                    entries=(
                        MemoryEntryInput(
                            fact.kind, fact.text, sources=(s["agents"], s["pyproject"])
                        ),
                    ),
                    mode="append",
                )
                assert again == r1
                assert (await svc.head(r1.artifact_id)) == r1

        run(body())

    def test_stale_base_raises_revision_conflict(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "new fact"),))
                with pytest.raises(RevisionConflictError):
                    await svc.remember(r1, entries=(MemoryEntryInput("fact", "other fact"),))
                assert (await svc.head(r1.artifact_id)) == r2

        run(body())

    # -- business keys (ARCHITECTURE.md, Decisions: "Keys live in the database") --------

    def test_concurrent_writers_of_one_new_key_get_one_memory_and_lose_nothing(
            self, memory_backend_factory):
        async def body():
            from powercontext.service import MemoryService

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

    def test_bad_input_names_the_field_and_writes_nothing(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                bad = [
                    (MemoryEntryInput("fact", "x" * 8193), "text"),
                    (MemoryEntryInput("fact", "é" * 4097), "text"),
                    (MemoryEntryInput("fact", " \n\t "), "text"),
                    (MemoryEntryInput("fact", "ok", reason="r" * 513), "reason"),
                    (MemoryEntryInput("fact", "bad \ud800 text"), "text"),
                    (MemoryEntryInput("", "ok"), "kind"),
                ]
                for entry, field in bad:
                    with pytest.raises(ValueError, match=field):
                        await svc.remember(r1, entries=(entry,))
                outside = self._src("src_outside", "not in the operation")
                with pytest.raises(ValueError, match="sources"):
                    await svc.remember(
                        r1, entries=(MemoryEntryInput("fact", "cites outside", sources=(outside,)),)
                    )
                for bad_id in ("src_é", "s" * 129, "has space"):
                    with pytest.raises(ValueError, match="source_id"):
                        canonical.make_source(bad_id, "file", "x")
                assert (await svc.head(r1.artifact_id)) == r1
                assert len(await svc.changes(r1, 0)) == 1
                assert (
                    await svc.remember(
                        None, entries=(MemoryEntryInput("fact", "ok"),), mode="append"
                    )
                    is not None
                )
                with pytest.raises(ValueError):
                    await svc.remember(None, entries=(), mode="append")
                with pytest.raises(ValueError):
                    await svc.remember(None)
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.remember(None, sources=(outside,), mode="extract")

        run(body())

    def test_batch_rules(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                versions = await svc.entries(r1)
                v = next(iter(versions.values()))
                with pytest.raises(ValueError, match="twice"):
                    await svc.remember(
                        r1,
                        entries=(
                            MemoryEntryInput(v.kind, "one", entry=v),
                            MemoryEntryInput(v.kind, "two", entry=v),
                        ),
                    )
                r2 = await svc.remember(
                    r1, entries=(MemoryEntryInput("fact", "dup"), MemoryEntryInput("fact", "dup"))
                )
                rev = await svc.revision(r2)
                assert len(rev.content.changes) == 1

        run(body())

    # -- forget / reactivate / organize ----------------------------------------------------

    def test_forget_and_reactivate_are_idempotent_and_keep_versions(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                versions = await svc.entries(r1)
                site = next(v for v in versions.values() if v.kind == "constraint")
                r2 = await svc.forget(r1, (site,), reason="user_requested")
                assert r2.revision == 2
                rev2 = await svc.revision(r2)
                item = next(e for e in rev2.content.manifest.entries if e.entry_id == site.entry_id)
                assert (item.state, item.entry_version_id) == ("inactive", site.entry_version_id)
                assert [
                    (c.op, c.from_entry_version_id, c.to_entry_version_id, c.reason)
                    for c in rev2.content.changes
                ] == [("deactivate", site.entry_version_id, None, "user_requested")]
                assert await svc.forget(r2, (site,)) == r2
                hits = await svc.search("site generated output", (r2,), mode="fts")
                assert site.entry_id not in {h.entry_id for h in hits.hits}
                # revising an inactive entry is rejected
                with pytest.raises(ValueError, match="inactive"):
                    await svc.remember(
                        r2, entries=(MemoryEntryInput("constraint", "changed", entry=site),)
                    )
                r3 = await svc.reactivate(r2, (site,), reason="user_restored")
                assert await svc.reactivate(r3, (site,)) == r3
                rev3 = await svc.revision(r3)
                assert [(c.op, c.to_entry_version_id) for c in rev3.content.changes] == [
                    ("reactivate", site.entry_version_id)
                ]
                hits = await svc.search("site generated output", (r3,), mode="fts")
                assert site.entry_id in {h.entry_id for h in hits.hits}
                assert (await svc.entries(r3, [site.entry_id]))[site.entry_id] == site

        run(body())

    def test_organize_dedupes_to_smallest_entry_id(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                a = self._src("src_a", "a")
                b = self._src("src_b", "b")
                r1 = await svc.remember(
                    None,
                    sources=(a, b),
                    entries=(
                        MemoryEntryInput("fact", "same text", sources=(a,)),
                        MemoryEntryInput("fact", "same text", sources=(b,)),
                        MemoryEntryInput("fact", "other text", sources=(a,)),
                    ),
                )
                v1 = await svc.entries(r1)
                other = next(v for v in v1.values() if v.text == "other text")
                # revising "other text" to "same text" keeps its evidence a: an exact
                # duplicate of the first entry
                r2 = await svc.remember(
                    r1, entries=(MemoryEntryInput("fact", "same text", entry=other),)
                )
                r3 = await svc.organize(r2)
                rev = await svc.revision(r3)
                assert [(c.op, c.reason) for c in rev.content.changes] == [("deactivate", "dedupe")]
                exact = sorted(
                    [i for i, v in v1.items() if v.text == "same text" and v.sources == (a.ref,)]
                    + [other.entry_id],
                    key=str.encode,
                )
                assert rev.content.changes[0].entry_id == exact[1]
                # equal text with other evidence stays active: organize never loses evidence
                after = await svc.entries(r3)
                states = {e.entry_id: e.state for e in rev.content.manifest.entries}
                cited = {s for i, v in after.items() if states[i] == "active" for s in v.sources}
                assert cited == {a.ref, b.ref}
                assert await svc.organize(r3) == r3

        run(body())

    # -- changes / expand / citations --------------------------------------------------------

    def test_changes_semantics(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "second"),))
                r3 = await svc.remember(r2, entries=(MemoryEntryInput("fact", "third"),))
                full = await svc.changes(r3, 0)
                assert [c.memory_ref.revision for c in full] == [1, 2, 3]
                assert [c.memory_ref.revision for c in await svc.changes(r3, 1)] == [2, 3]
                assert [c.memory_ref.revision for c in await svc.changes(r3)] == [3]
                assert await svc.changes(r3, 3) == ()
                assert [c.memory_ref.revision for c in await svc.changes(r2, 0)] == [1, 2]
                with pytest.raises(ValueError):
                    await svc.changes(r3, -1)
                with pytest.raises(ValueError):
                    await svc.changes(r2, 3)
                with pytest.raises(ArtifactNotFoundError):
                    await svc.changes(ArtifactRef(r1.artifact_id, 9), 0)
                with pytest.raises(ArtifactNotFoundError):
                    await svc.changes(ArtifactRef("mem_art_missing", 1), 0)

        run(body())

    def test_expand_and_citations(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                hits = (await svc.search("make test review", (r1,), mode="fts")).hits
                assert hits
                (v,) = await svc.expand(hits[:1])
                assert (v.entry_id, v.entry_version_id, v.text) == (
                    hits[0].entry_id,
                    hits[0].entry_version_id,
                    hits[0].text,
                )
                cite = svc.cite(hits[0])
                # the Memory moves on; the old citation still validates
                r2 = await svc.remember(
                    r1,
                    entries=(MemoryEntryInput(v.kind, v.text + " Also run make lint.", entry=v),),
                )
                assert r2.revision == 2
                assert (await svc.validate_citation(cite)) == v
                for bad in (
                    HandoffCitation(r2, cite.entry_id, cite.entry_version_id),
                    HandoffCitation(cite.memory_ref, cite.entry_id, "mem_ver_forged"),
                    HandoffCitation(
                        ArtifactRef(r1.artifact_id, 7), cite.entry_id, cite.entry_version_id
                    ),
                    HandoffCitation(
                        ArtifactRef("mem_art_other", 1), cite.entry_id, cite.entry_version_id
                    ),
                ):
                    with pytest.raises(InvalidCitationError):
                        await svc.validate_citation(bad)

        run(body())

    # -- search ------------------------------------------------------------------------------

    def test_search_reads_only_current_heads(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                other = await svc.remember(
                    None, entries=(MemoryEntryInput("fact", "uv is also used in the other memory"),)
                )
                res = await svc.search("uv dependencies", (r1, r1), mode="auto")
                assert res.mode == "fts"
                assert {h.memory_ref for h in res.hits} == {r1}
                both = await svc.search("uv", (r1, other), mode="fts")
                assert {h.memory_ref for h in both.hits} == {r1, other}
                assert all(h.matched_by == ("fts",) for h in both.hits)
                assert [h.score for h in both.hits] == sorted(
                    (h.score for h in both.hits), reverse=True
                )
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "more"),))
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("uv", (r1,), mode="fts")
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("uv", (r2,), mode="vector")
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("uv", (r2,), mode="hybrid")
                with pytest.raises(ValueError):
                    await svc.search("uv", (), mode="fts")
                limited = await svc.search("make test uv site", (r2,), limit=1, mode="fts")
                assert len(limited.hits) == 1

        run(body())

    def test_nasty_queries_never_reach_match(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput(
                            "fact",
                            "multi-agent TODO: fix 50% of @name in 3.11.7 "
                            'AND OR NOT NEAR (parens) "quoted" 🙂',
                        ),
                    ),
                )
                for q in NASTY_QUERIES:
                    res = await svc.search(q, (r1,), mode="fts")
                    assert isinstance(res.hits, tuple)
                hit = await svc.search("multi-agent", (r1,), mode="fts")
                assert len(hit.hits) == 1
                assert len((await svc.search("TODO: fix", (r1,), mode="fts")).hits) == 1
                assert (await svc.search("", (r1,), mode="fts")).hits == ()

        run(body())

    def test_a_smaller_limit_returns_a_prefix_never_less(self, memory_backend_factory):
        """Candidates refused by admission never crowd out admitted ones: rows matching
        one of three terms fill the top of the backend's order, the long entry matching
        two is found at every limit, and the list at a smaller limit is a prefix."""
        long = ("The procurement group reviewed how the regional distributors negotiated "
                "the apple and banana supply contracts, delivery windows, refrigerated "
                "transport, insurance clauses, payment schedules and seasonal prices")

        async def body():
            async with self._service(memory_backend_factory) as svc:
                texts = ([f"zebra crossing note {i}" for i in range(40)]
                         + [f"apple harvest report number {i} for the orchard team"
                            for i in range(60)]
                         + [f"banana shipment record number {i} for the warehouse team"
                            for i in range(60)] + [long])
                ref = await svc.remember(
                    None, entries=tuple(MemoryEntryInput("fact", t) for t in texts))
                lists = {}
                for limit in (1, 8, 50):
                    res = await svc.search("zebra apple banana", (ref,), limit=limit,
                                           mode="fts")
                    lists[limit] = [h.text for h in res.hits]
                assert lists == {1: [long], 8: [long], 50: [long]}
                wide = [(h.entry_id, h.score) for h in
                        (await svc.search("zebra apple", (ref,), limit=40, mode="fts")).hits]
                for limit in (1, 7, 33):
                    res = await svc.search("zebra apple", (ref,), limit=limit, mode="fts")
                    assert [(h.entry_id, h.score) for h in res.hits] == wide[:limit]

        run(body())

    def test_queries_over_the_bounds_are_bad_input(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "kiwi"),))
                too_many = " ".join(f"kiwi{i}" for i in range(MAX_QUERY_TERMS + 1))
                for q in ("x" * (MAX_QUERY_CHARS + 1), too_many):
                    with pytest.raises(InvalidInputError) as info:
                        await svc.search(q, (r1,), mode="fts")
                    assert info.value.field == "query"

        run(body())

    def test_current_head_is_read_in_the_search(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "kiwi"),))
                assert r1 is not None
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "kiwi vine"),))
                res = await svc.search("kiwi", (CurrentHead(r1.artifact_id),), mode="fts")
                assert {h.memory_ref for h in res.hits} == {r2}
                assert len(res.hits) == 2
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("kiwi", (r1,), mode="fts")
                with pytest.raises(ArtifactNotFoundError):
                    await svc.search("kiwi", (CurrentHead("mem_art_missing"),), mode="fts")

        run(body())

    def test_cjk_and_normalization(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                texts = (
                    "使用中文记录偏好",
                    "日本語のテキストです",
                    "한국어 문장을 검색합니다",
                    unicodedata.normalize("NFD", "café résumé naïve"),
                )
                r1 = await svc.remember(
                    None, entries=tuple(MemoryEntryInput("fact", t) for t in texts)
                )
                for query, expected in (
                    ("中文", texts[0]),
                    ("テキ", texts[1]),
                    ("문장", texts[2]),
                    ("のテ", texts[1]),
                    (unicodedata.normalize("NFC", "résumé"), texts[3]),
                    (unicodedata.normalize("NFD", "CAFÉ"), texts[3]),
                ):
                    hits = (await svc.search(query, (r1,), mode="fts")).hits
                    assert [h.text for h in hits] == [unicodedata.normalize("NFC", expected)], query

        run(body())

    # -- vector, hybrid, auto --------------------------------------------------------------

    @pytest.fixture
    def memory_embedding_model(self) -> Any:
        """The model the vector tests use; override to test another one."""
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        return DeterministicEmbedding(dimension=64)

    async def _vector_ready(self, svc: Any) -> None:
        caps = await svc.capabilities()
        if not caps.vector:
            pytest.skip(f"backend has no vector capability: {caps.reasons}")

    def test_vector_hybrid_and_auto_with_a_model(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = memory_embedding_model

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "the release checklist lives in RELEASING.md"),
                        MemoryEntryInput("fact", "python dependencies are managed with uv"),
                        MemoryEntryInput("preference", "prefer small focused pull requests"),
                    ),
                )
                other = await svc.remember(
                    None,
                    entries=(MemoryEntryInput("fact", "python dependencies are managed with uv"),),
                )
                vec = await svc.search("python dependencies uv", (r1,), mode="vector")
                assert vec.mode == "vector" and vec.hits
                assert vec.hits[0].text == "python dependencies are managed with uv"
                assert all(h.matched_by == ("vector",) for h in vec.hits)
                assert {h.memory_ref for h in vec.hits} == {r1}  # filtered inside the scan
                hyb = await svc.search("python dependencies uv", (r1,), mode="hybrid")
                assert hyb.mode == "hybrid"
                assert hyb.hits[0].matched_by == ("fts", "vector")
                assert hyb.hits[0].score == pytest.approx(2 / 61)
                auto = await svc.search("python dependencies uv", (r1, other), mode="auto")
                assert auto.mode == "hybrid"
                assert {h.memory_ref for h in auto.hits} == {r1, other}
                ties = [h for h in auto.hits if h.score == auto.hits[0].score]
                keys = [
                    (h.memory_ref.artifact_id, h.entry_id.encode(), h.entry_version_id)
                    for h in ties
                ]
                assert keys == sorted(keys)

        run(body())

    def test_without_a_model_explicit_vector_fails_and_auto_falls_back(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = memory_embedding_model

        async def body():
            async with self._service(memory_backend_factory, model.profile, None) as svc:
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "uv rocks"),))
                assert (await svc.search("uv", (r1,), mode="auto")).mode == "fts"
                for mode in ("vector", "hybrid"):
                    with pytest.raises(CapabilityNotSupportedError):
                        await svc.search("uv", (r1,), mode=mode)

        run(body())

    def test_model_down_at_write_leaves_no_vector_and_search_falls_back(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = _SwitchableModel(memory_embedding_model)

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "uv rocks"),))
                assert (await svc.search("uv", (r1,), mode="auto")).mode == "hybrid"
                model.mode = "down"
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "pip is out"),))
                assert r2.revision == 2  # the Revision and its FTS projection commit
                model.mode = "ok"
                assert [h.text for h in (await svc.search("pip", (r2,), mode="fts")).hits] == [
                    "pip is out"
                ]
                assert (await svc.search("pip", (r2,), mode="auto")).mode == "fts"
                with pytest.raises(CapabilityNotSupportedError, match="incomplete"):
                    await svc.search("pip", (r2,), mode="vector")
                # a bad vector (NaN, wrong length, not unit) is never written either
                for bad in ("nan", "short", "long"):
                    model.mode = bad
                    fresh = await svc.remember(None, entries=(MemoryEntryInput("fact", bad),))
                    model.mode = "ok"
                    with pytest.raises(CapabilityNotSupportedError):
                        await svc.search(bad, (fresh,), mode="vector")
                # forgetting the entry without a vector makes the projection complete again
                versions = await svc.entries(r2)
                pip = next(v for v in versions.values() if v.text == "pip is out")
                r3 = await svc.forget(r2, (pip,))
                assert (await svc.search("uv", (r3,), mode="auto")).mode == "hybrid"

        run(body())

    def test_forget_drops_vectors_and_reactivate_restores_them(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = memory_embedding_model

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "deploys go through the staging cluster"),
                        MemoryEntryInput("fact", "unrelated note about lunch"),
                    ),
                )
                versions = await svc.entries(r1)
                deploy = next(v for v in versions.values() if "deploys" in v.text)
                r2 = await svc.forget(r1, (deploy,))
                hits = (await svc.search("staging cluster deploys", (r2,), mode="vector")).hits
                assert deploy.entry_id not in {h.entry_id for h in hits}
                r3 = await svc.reactivate(r2, (deploy,))
                hits = (await svc.search("staging cluster deploys", (r3,), mode="vector")).hits
                assert hits[0].entry_id == deploy.entry_id
                assert hits[0].entry_version_id == deploy.entry_version_id

        run(body())

    # -- a failing model never breaks a write or a search (issue 9 item 6) ----------------

    def test_a_third_party_model_that_raises_never_breaks_a_write_or_a_search(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = _ThirdPartyModel(memory_embedding_model)

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None, entries=(MemoryEntryInput("fact", "uv manages python dependencies"),)
                )
                auto = await svc.search("uv python", (r1,), mode="auto")
                assert (auto.mode, auto.fallback_reason) == ("hybrid", None)
                model.down = True
                r2 = await svc.remember(
                    r1, entries=(MemoryEntryInput("fact", "pip is no longer used"),)
                )
                assert r2.revision == 2  # the Revision and its full-text projection commit
                fts = await svc.search("pip", (r2,), mode="fts")
                assert [h.text for h in fts.hits] == ["pip is no longer used"]
                assert fts.fallback_reason is None
                auto = await svc.search("pip", (r2,), mode="auto")
                assert auto.mode == "fts" and [h.text for h in auto.hits] == [
                    "pip is no longer used"
                ]
                assert "ConnectionError" in auto.fallback_reason
                for mode in ("vector", "hybrid"):
                    with pytest.raises(CapabilityNotSupportedError, match="ConnectionError"):
                        await svc.search("pip", (r2,), mode=mode)
                    with pytest.raises(CapabilityNotSupportedError, match="incomplete"):
                        await svc.search("  ", (r2,), mode=mode)  # blank, still refused
                assert await svc.expand(fts.hits)
                assert len(await svc.changes(r2, 0)) == 2
                pip = fts.hits[0]
                r3 = await svc.forget(r2, (pip.entry_id,))
                r4 = await svc.reactivate(r3, (pip.entry_id,))
                assert r4.revision == 4
                model.down = False
                auto = await svc.search("pip", (r4,), mode="auto")
                assert auto.mode == "fts" and "incomplete" in auto.fallback_reason

        run(body())

    def test_one_bad_vector_costs_only_its_own_entry(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = _ThirdPartyModel(memory_embedding_model)
        bad = ("nanvec beta", "infvec gamma", "zerovec delta", "shortvec epsilon",
               "emptyvec zeta")

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "deploys go through the staging cluster"),
                        *(MemoryEntryInput("fact", t) for t in bad),
                        MemoryEntryInput("fact", "scaledvec the release checklist lives "
                                                 "in RELEASING.md"),
                    ),
                )
                auto = await svc.search("release checklist", (r1,), mode="auto")
                assert auto.mode == "fts" and "incomplete" in auto.fallback_reason
                versions = await svc.entries(r1)
                r2 = await svc.forget(r1, [v for v in versions.values() if v.text in bad])
                # every other entry kept its vector (the non-unit one normalised)
                vec = await svc.search("release checklist RELEASING.md", (r2,), mode="vector")
                assert vec.mode == "vector" and vec.hits[0].text.startswith("scaledvec")
                auto = await svc.search("staging cluster deploys", (r2,), mode="auto")
                assert (auto.mode, auto.fallback_reason) == ("hybrid", None)
                assert auto.hits[0].matched_by == ("fts", "vector")

        run(body())

    def test_a_blank_query_returns_nothing_but_is_checked_like_any_other(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = memory_embedding_model

        async def body():
            async with self._service(memory_backend_factory, model.profile, None) as svc:
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "uv rocks"),))
                for mode in ("vector", "hybrid"):
                    with pytest.raises(CapabilityNotSupportedError):
                        await svc.search(" \t", (r1,), mode=mode)
                res = await svc.search(" ", (r1,), mode="auto")
                assert (res.hits, res.mode) == ((), "fts") and "blank" in res.fallback_reason
                res = await svc.search("", (r1,), mode="fts")
                assert (res.hits, res.mode, res.fallback_reason) == ((), "fts", None)
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "uv rocks"),))
                for mode in ("vector", "hybrid"):
                    res = await svc.search("  ", (r1,), mode=mode)
                    assert (res.hits, res.mode, res.fallback_reason) == ((), mode, None)

        run(body())

    # -- offline rebuild ---------------------------------------------------------------

    def test_rebuild_fills_missing_vectors_while_writers_wait(
        self, memory_backend_factory, memory_embedding_model
    ):
        from powercontext.core.errors import WritesPausedError

        model = _SwitchableModel(memory_embedding_model)

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                model.mode = "down"
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "the cache lives in redis"),
                        MemoryEntryInput("fact", "logs go to loki"),
                    ),
                )
                r1b = await svc.remember(None, entries=(MemoryEntryInput("fact", "x y z"),))
                model.mode = "ok"
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("redis cache", (r1,), mode="vector")
                blocked: list[str] = []

                class _Probe:
                    profile = model.profile

                    async def embed(self, texts):
                        try:
                            await svc.remember(r1, entries=(MemoryEntryInput("fact", "w"),))
                        except WritesPausedError as exc:
                            blocked.append(str(exc))
                        return await model.embed(texts)

                seen: list[tuple[int, int]] = []
                try:
                    report = await svc.backend.rebuild(
                        _Probe(), progress=lambda d, t, a: seen.append((d, t))
                    )
                except CapabilityNotSupportedError as exc:
                    pytest.skip(f"backend cannot rebuild: {exc}")
                assert blocked, "writers must be paused during a rebuild"
                assert (report.memories, report.entries, report.vectors) == (2, 3, 3)
                assert report.incomplete == [] and seen[-1] == (2, 2)
                hits = await svc.search("redis cache", (r1,), mode="vector")
                assert hits.hits[0].text == "the cache lives in redis"
                assert (await svc.search("x", (r1b,), mode="auto")).mode == "hybrid"
                # writes resume afterwards
                assert (
                    await svc.remember(r1, entries=(MemoryEntryInput("fact", "w"),))
                ).revision == 2

        run(body())

    def test_rebuild_migrates_to_a_new_profile(
        self, memory_backend_factory, memory_embedding_model
    ):
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        model = memory_embedding_model
        new_model = DeterministicEmbedding(
            dimension=model.profile.dimension // 2, profile_id="migrated"
        )

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None, entries=(MemoryEntryInput("fact", "tests run with pytest"),)
                )
                try:
                    report = await svc.backend.rebuild(new_model, new_profile=new_model.profile)
                except CapabilityNotSupportedError as exc:
                    pytest.skip(f"backend cannot migrate: {exc}")
                assert (report.vectors, report.incomplete) == (1, [])
                caps = await svc.backend.capabilities()
                assert caps.embedding_profile == new_model.profile
                svc.embedding_model = new_model
                hits = await svc.search("pytest", (r1,), mode="vector")
                assert hits.hits[0].text == "tests run with pytest"
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "lint: ruff"),))
                assert (await svc.search("ruff", (r2,), mode="auto")).mode == "hybrid"

        run(body())


    def test_rebuild_reports_each_bad_entry_keeps_stored_vectors_and_goes_on(
        self, memory_backend_factory, memory_embedding_model
    ):
        model = _ThirdPartyModel(memory_embedding_model)

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput("fact", "the cache lives in redis"),
                        MemoryEntryInput("fact", "logs go to loki"),
                    ),
                )
                model.down = True
                r2 = await svc.remember(None, entries=(MemoryEntryInput("fact", "traces"),))
                model.down = False
                r2 = await svc.remember(
                    r2, entries=(MemoryEntryInput("fact", "nanvec metrics in prometheus"),)
                )
                ids = {v.text: e for e, v in (await svc.entries(r2)).items()}
                # no model: nothing is removed, what is missing is reported
                try:
                    report = await svc.backend.rebuild(None)
                except CapabilityNotSupportedError as exc:
                    pytest.skip(f"backend cannot rebuild: {exc}")
                assert (report.memories, report.entries, report.vectors, report.kept) == (
                    2, 4, 2, 2)
                assert sorted(e for _, e, _ in report.missing) == sorted(ids.values())
                assert all("no embedding model" in why for _, _, why in report.missing)
                assert report.incomplete == [r2.artifact_id]
                hits = await svc.search("redis cache", (r1,), mode="vector")
                assert hits.hits[0].text == "the cache lives in redis"
                # the model is back but refuses one vector: that entry is reported, the
                # others are filled, and the rebuild goes on to the end
                report = await svc.backend.rebuild(model)
                assert (report.memories, report.vectors, report.kept) == (2, 3, 0)
                [(aid, eid, why)] = report.missing
                assert (aid, eid) == (r2.artifact_id, ids["nanvec metrics in prometheus"])
                assert "NaN" in why
                # the model is down for the whole rebuild: every stored vector is kept
                model.down = True
                report = await svc.backend.rebuild(model)
                assert (report.vectors, report.kept, report.incomplete) == (
                    3, 3, [r2.artifact_id])
                assert {e for _, e, _ in report.missing} == {ids["nanvec metrics in prometheus"]}
                assert all("ConnectionError" in why for _, _, why in report.missing)
                model.down = False
                assert (await svc.search("redis cache", (r1,), mode="auto")).mode == "hybrid"
                r3 = await svc.forget(r2, (ids["nanvec metrics in prometheus"],))
                assert (await svc.search("traces", (r3,), mode="auto")).mode == "hybrid"

        run(body())

    def test_a_migration_with_an_unavailable_model_changes_nothing(
        self, memory_backend_factory, memory_embedding_model
    ):
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
        from powercontext.core.errors import InvalidInputError

        model = memory_embedding_model
        new_model = _ThirdPartyModel(DeterministicEmbedding(
            dimension=model.profile.dimension // 2, profile_id="migrated"))
        new_model.down = True

        async def body():
            async with self._service(memory_backend_factory, model.profile, model) as svc:
                await self._vector_ready(svc)
                r1 = await svc.remember(
                    None, entries=(MemoryEntryInput("fact", "tests run with pytest"),)
                )
                with pytest.raises(InvalidInputError):
                    await svc.backend.rebuild(None, new_profile=new_model.profile)
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.backend.rebuild(new_model, new_profile=new_model.profile)
                caps = await svc.backend.capabilities()
                assert caps.embedding_profile == model.profile
                hits = await svc.search("pytest", (r1,), mode="vector")
                assert hits.hits[0].text == "tests run with pytest"
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "ruff lints"),))
                assert (await svc.search("ruff", (r2,), mode="auto")).mode == "hybrid"

        run(body())

    # -- the unit of work re-validates everything (regressions of forged plans) --------

    def test_forged_plans_are_refused_and_write_nothing(self, memory_backend_factory):
        import attrs

        from powercontext.core import analyzer, planning
        from powercontext.core.models import MemoryChange, MemoryContent, MemoryManifestEntry

        db_analyzer = analyzer.get()  # the backend's, read below
        from powercontext.core.plan import ProjectionRow

        def forge(plan: Any, op: str, **changes: Any) -> Any:
            """``plan`` with its one new version changed, every hash and byte recomputed."""
            old = plan.new_versions[0]
            v = attrs.evolve(old, **changes)
            v = attrs.evolve(v, entry_content_hash=canonical.entry_content_hash(
                v.kind, v.text, v.sources, v.artifacts))
            items = sorted([e for e in plan.content.manifest.entries
                            if e.entry_id not in (old.entry_id, v.entry_id)]
                           + [MemoryManifestEntry(v.entry_id, v.entry_version_id,
                                                  v.entry_content_hash, "active")],
                           key=lambda e: e.entry_id.encode())
            change = MemoryChange(op, v.entry_id, v.previous_version_id,  # type: ignore[arg-type]
                                  v.entry_version_id)
            from powercontext.core.models import MemoryManifest

            content = MemoryContent(MemoryManifest(tuple(items)), (change,))
            body = canonical.canonical_dumps(content)
            row = ProjectionRow(v.entry_id, v.entry_version_id, v.entry_content_hash,
                                db_analyzer.searchable_text(v.text), v.text)
            return attrs.evolve(plan, content=content, content_bytes=body,
                                content_hash=canonical.artifact_content_hash(body),
                                new_versions=(v,), upserts=(row,))

        async def body():
            nonlocal db_analyzer
            async with self._service(memory_backend_factory) as svc:
                db_analyzer = await svc.backend.analyzer()
                other_analyzer = next(a for a in analyzer.ANALYZERS.values()
                                      if a != db_analyzer)
                other = await svc.remember(None, entries=(MemoryEntryInput("fact", "other"),))
                (foreign,) = (await svc.entries(other)).values()
                ref = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha"),))
                base = await svc._base(ref, None)
                (current,) = base.versions.values()
                add = planning.plan_remember(base, [MemoryEntryInput("fact", "new entry")],
                                             new_id=svc.new_id, analyzer=db_analyzer)
                revise = planning.plan_remember(
                    base, [MemoryEntryInput("fact", "alpha two", entry=current)],
                    new_id=svc.new_id, analyzer=db_analyzer)
                # the searchable_text of another analyzer than the database's
                foreign_tokens = planning.plan_remember(
                    base, [MemoryEntryInput("fact", "The painters were painting ADR-0005")],
                    new_id=svc.new_id, analyzer=other_analyzer)
                a, b = self._src("src_a", "a").ref, self._src("src_b", "b").ref
                forged = [
                    forge(revise, "revise", text=current.text),  # a no-op revision
                    forge(add, "add", text="e\u0301cole"),  # not NFC
                    forge(add, "add", text="  padded  "),
                    forge(add, "add", text="x" * 9000),
                    forge(add, "add", kind=""),
                    forge(add, "add", kind="f\u00e4ct"),
                    forge(add, "add", kind=5),
                    forge(add, "add", entry_version_id="mem ver x"),
                    forge(add, "add", entry_version_id="v" * 300),
                    forge(add, "add", entry_version_id=12345),
                    forge(add, "add", sources=(b, a, a)),
                    forge(add, "add", artifacts=(ArtifactRef(ref.artifact_id, True),)),
                    forge(add, "add", text="key sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"),
                    attrs.evolve(add, upserts=add.upserts * 2),  # type: ignore[union-attr,arg-type]
                    forge(add, "add", entry_id=foreign.entry_id),  # ids are globally unique
                    foreign_tokens,
                ]
                for plan in forged:
                    with pytest.raises(ValueError):
                        async with svc.backend.begin() as uow:
                            await uow.commit(plan)
                    assert await svc.head(ref.artifact_id) == ref
                assert len(await svc.changes(ref, 0)) == 1
        run(body())

    def test_artifact_evidence_and_citations_are_checked_exactly(self, memory_backend_factory):
        from powercontext.core.models import Artifact

        async def body():
            async with self._service(memory_backend_factory) as svc:
                ref = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha"),))
                rev = await svc.revision(ref)
                good = Artifact(ref, "memory", rev.content_hash)
                other = await svc.remember(None, artifacts=(good,), entries=(
                    MemoryEntryInput("fact", "cites alpha", artifacts=(good,)),))
                assert other is not None
                for bad in (Artifact(ref, "handoff", rev.content_hash),
                            Artifact(ref, "memory", "0" * 64)):
                    with pytest.raises(ValueError, match="artifacts"):
                        await svc.remember(other, artifacts=(bad,), entries=(
                            MemoryEntryInput("fact", "forged", artifacts=(bad,)),))
                (v,) = (await svc.entries(ref)).values()
                for revision in (True, 1.0, "1", None):
                    with pytest.raises(InvalidCitationError):
                        await svc.validate_citation(HandoffCitation(
                            ArtifactRef(ref.artifact_id, revision),  # type: ignore[arg-type]
                            v.entry_id,
                            v.entry_version_id))
        run(body())

    def test_sources_of_refused_input_are_not_stored(self, memory_backend_factory):
        import attrs

        async def body():
            async with self._service(memory_backend_factory) as svc:
                note = self._src("src_refused", "evidence")
                ref = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha"),))
                r2 = await svc.remember(ref, entries=(MemoryEntryInput("fact", "beta"),))
                with pytest.raises(RevisionConflictError):
                    await svc.remember(ref, sources=(note,), entries=(
                        MemoryEntryInput("fact", "late", sources=(note,)),))
                with pytest.raises(ValueError):
                    await svc.remember(r2, sources=(note,), entries=(
                        MemoryEntryInput("fact", "  ", sources=(note,)),))
                assert await svc.backend.journal() == ()
                unnormalized = attrs.evolve(note, kind=" file ")
                with pytest.raises(ValueError):
                    await svc.backend.put_sources([unnormalized])
        run(body())

    def test_a_source_holding_a_secret_is_never_stored(self, memory_backend_factory):
        """Sources are append-only: the store itself refuses a secret in the content, the
        uri or the metadata (SecretDetectedError, naming the field), storing nothing."""
        sources = (
            self._src("src_secret_1", "deploy with\npassword=hunter2"),
            canonical.make_source("src_secret_2", "file", "see uri", "postgres://app:s3cret@db/a"),
            canonical.make_source("src_secret_3", "file", "note", None, {"token": "zz9yy8xx7ww6"}),
        )

        async def body():
            async with self._service(memory_backend_factory) as svc:
                ok = self._src("src_ok", "ordinary evidence")
                for src in sources:
                    with pytest.raises(SecretDetectedError) as info:
                        await svc.backend.put_sources([ok, src])
                    assert "hunter2" not in str(info.value) and "s3cret" not in str(info.value)
                    with pytest.raises(SecretDetectedError):
                        await svc.remember(None, sources=(src,), entries=(
                            MemoryEntryInput("fact", "an ordinary fact", sources=(src,)),))
                assert await svc.backend.journal() == ()
        run(body())


# ---------------------------------------------------------------------------------------
# The stateful test: MemoryService against a trusted in-memory model.

from hypothesis import settings as _settings  # noqa: E402
from hypothesis.stateful import (  # noqa: E402
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
)

#: Small vocabulary so searches for one word have a known answer.
VOCABULARY = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


class MemoryStateMachine(RuleBasedStateMachine):
    """Drives MemoryService through random remember / revise / forget / reactivate /
    organize / search / stale-base operations and checks every Revision, manifest and
    search result against a trusted model. Subclass and set ``backend_factory``
    (``() -> MemoryBackend``, a fresh empty database per call)."""

    backend_factory: Callable[[], MemoryBackend]

    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        from powercontext.service import MemoryService

        self.loop = asyncio.new_event_loop()
        self.svc = MemoryService(type(self).backend_factory(), entropy=_Ids())
        # model: artifact_id -> list of revisions; a revision maps entry_id ->
        # (entry_version_id, state, kind, text, version)
        self.model: dict[str, list[dict[str, tuple[str, str, str, str, int]]]] = {}
        self.hashes: dict[tuple[str, int], str] = {}

    def teardown(self) -> None:
        self.loop.run_until_complete(self.svc.close())
        self.loop.close()

    def _run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    @staticmethod
    def _text(words: list[str]) -> str:
        return " ".join(words)

    def _head(self, artifact_id: str) -> ArtifactRef:
        return ArtifactRef(artifact_id, len(self.model[artifact_id]))

    def _record(self, ref: ArtifactRef) -> None:
        rev = self._run(self.svc.revision(ref))
        versions = self._run(self.svc.entries(ref))
        state = {
            e.entry_id: (
                e.entry_version_id,
                str(e.state),
                versions[e.entry_id].kind,
                versions[e.entry_id].text,
                versions[e.entry_id].version,
            )
            for e in rev.content.manifest.entries
        }
        self.model.setdefault(ref.artifact_id, []).append(state)
        assert len(self.model[ref.artifact_id]) == ref.revision
        self.hashes[(ref.artifact_id, ref.revision)] = rev.content_hash

    def _expect(
        self,
        artifact_id: str,
        after: ArtifactRef | None,
        expected: dict[str, tuple[str | None, str, str, str, int]],
    ) -> None:
        """Check the new Revision against the expected entries (version id None = new)."""
        prev = self.model[artifact_id][-1]
        changed = any(
            e not in prev or prev[e][1:] != v[1:] or (v[0] is not None and prev[e][0] != v[0])
            for e, v in expected.items()
        )
        if not changed:
            assert after == self._head(artifact_id)
            return
        assert after == ArtifactRef(artifact_id, len(self.model[artifact_id]) + 1)
        self._record(after)
        got = self.model[artifact_id][-1]
        assert set(got) == set(expected)
        for entry_id, (vid, state, kind, text, version) in expected.items():
            g = got[entry_id]
            assert g[1:] == (state, kind, text, version), (entry_id, g, expected[entry_id])
            if vid is not None:
                assert g[0] == vid
            elif entry_id in prev:
                assert g[0] != prev[entry_id][0]

    @rule(target=memories, words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3))
    def create(self, words: list[str]) -> str:
        ref = self._run(
            self.svc.remember(
                None, entries=(MemoryEntryInput("fact", self._text(words)),), mode="append"
            )
        )
        assert ref is not None and ref.revision == 1
        self._record(ref)
        return ref.artifact_id

    @rule(
        memory=memories,
        words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3),
        kind=st.sampled_from(["fact", "decision"]),
    )
    def add(self, memory: str, words: list[str], kind: str) -> None:
        head = self._head(memory)
        text = self._text(words)
        after = self._run(self.svc.remember(head, entries=(MemoryEntryInput(kind, text),)))
        prev = self.model[memory][-1]
        expected: dict[str, Any] = dict(prev)
        duplicate = any(v[1] == "active" and v[2:4] == (kind, text) for v in prev.values())
        if duplicate:
            assert after == head
            return
        assert after is not None and after.revision == head.revision + 1
        self._record(after)
        new = set(self.model[memory][-1]) - set(prev)
        assert len(new) == 1
        (entry_id,) = new
        assert self.model[memory][-1][entry_id][1:] == ("active", kind, text, 1)
        for e, v in expected.items():
            assert self.model[memory][-1][e] == v

    @rule(
        memory=memories,
        data=st.data(),
        words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3),
    )
    def revise(self, memory: str, data: st.DataObject, words: list[str]) -> None:
        prev = self.model[memory][-1]
        active = sorted(e for e, v in prev.items() if v[1] == "active")
        if not active:
            return
        entry_id = data.draw(st.sampled_from(active))
        head = self._head(memory)
        current = self._run(self.svc.entries(head, [entry_id]))[entry_id]
        text = self._text(words)
        after = self._run(
            self.svc.remember(head, entries=(MemoryEntryInput(current.kind, text, entry=current),))
        )
        expected: dict[str, Any] = dict(prev)
        if text != current.text:
            expected[entry_id] = (None, "active", current.kind, text, current.version + 1)
            self._expect(memory, after, expected)
            v2 = self._run(self.svc.entries(after, [entry_id]))[entry_id]  # type: ignore[arg-type]
            assert v2.previous_version_id == current.entry_version_id
        else:
            assert after == head

    @rule(memory=memories, data=st.data(), forget=st.booleans())
    def toggle(self, memory: str, data: st.DataObject, forget: bool) -> None:
        prev = self.model[memory][-1]
        chosen = data.draw(
            st.lists(st.sampled_from(sorted(prev)), min_size=1, max_size=3, unique=True)
        )
        head = self._head(memory)
        versions = self._run(self.svc.entries(head, chosen))
        fn = self.svc.forget if forget else self.svc.reactivate
        after = self._run(fn(head, [versions[e] for e in chosen], reason="test"))
        expected: dict[str, Any] = dict(prev)
        for e in chosen:
            vid, _, kind, text, version = prev[e]
            expected[e] = (vid, "inactive" if forget else "active", kind, text, version)
        self._expect(memory, after, expected)

    @rule(memory=memories)
    def organize(self, memory: str) -> None:
        prev = self.model[memory][-1]
        head = self._head(memory)
        after = self._run(self.svc.organize(head))
        expected: dict[str, Any] = dict(prev)
        keep: dict[tuple[str, str], str] = {}
        for e in sorted((e for e, v in prev.items() if v[1] == "active"), key=str.encode):
            key = prev[e][2:4]
            if key in keep:
                expected[e] = (prev[e][0], "inactive", *prev[e][2:])
            else:
                keep[key] = e
        self._expect(memory, after, expected)

    @precondition(lambda self: any(len(r) > 1 for r in self.model.values()))
    @rule(data=st.data())
    def stale_base_conflicts(self, data: st.DataObject) -> None:
        memory = data.draw(st.sampled_from(sorted(a for a, r in self.model.items() if len(r) > 1)))
        stale = ArtifactRef(memory, data.draw(st.integers(1, len(self.model[memory]) - 1)))
        try:
            self._run(self.svc.remember(stale, entries=(MemoryEntryInput("fact", "stale"),)))
        except RevisionConflictError:
            pass
        else:
            raise AssertionError("a stale base must raise RevisionConflictError")
        try:
            self._run(self.svc.search("alpha", (stale,), mode="fts"))
        except CapabilityNotSupportedError:
            pass
        else:
            raise AssertionError("a non-head search must raise CapabilityNotSupportedError")

    @rule(memory=memories, word=st.sampled_from(VOCABULARY))
    def search(self, memory: str, word: str) -> None:
        head = self._head(memory)
        result = self._run(self.svc.search(word, (head,), limit=64, mode="fts"))
        state = self.model[memory][-1]
        want = {e for e, v in state.items() if v[1] == "active" and word in v[3].split()}
        got = {h.entry_id for h in result.hits}
        assert got == want, (word, got, want)
        for h in result.hits:
            assert h.memory_ref == head and h.entry_version_id == state[h.entry_id][0]
            assert h.text == state[h.entry_id][3]

    @invariant()
    def heads_and_history_hold(self) -> None:
        for artifact_id, revisions in self.model.items():
            head = self._run(self.svc.head(artifact_id))
            assert head.revision == len(revisions)
            # no operation rewrites an old Revision: a random old one keeps its hash
            probe = 1 + (len(revisions) * 7919) % len(revisions)
            rev = self._run(self.svc.revision(ArtifactRef(artifact_id, probe)))
            assert rev.content_hash == self.hashes[(artifact_id, probe)]


def state_machine_test(
    factory: Callable[[], MemoryBackend],
    *,
    max_examples: int | None = None,
    stateful_step_count: int = 25,
) -> Any:
    """A unittest TestCase class running :class:`MemoryStateMachine` on ``factory``."""
    machine = type(
        "BoundMemoryStateMachine", (MemoryStateMachine,), {"backend_factory": staticmethod(factory)}
    )
    overrides: dict[str, Any] = {"stateful_step_count": stateful_step_count, "deadline": None}
    if max_examples is not None:
        overrides["max_examples"] = max_examples
    test_case: Any = getattr(machine, "TestCase")  # noqa: B009 (made by hypothesis)
    test_case.settings = _settings(_settings(), **overrides)
    return test_case


__all__ += ["VOCABULARY", "MemoryStateMachine", "state_machine_test"]
_unused = consumes  # re-exported for third-party machines
