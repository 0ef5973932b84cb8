"""Contract group: remember, batches, bad input, forget / reactivate / organize."""

from __future__ import annotations

import pytest

from powercontext.core import canonical
from powercontext.core.errors import CapabilityNotSupportedError, RevisionConflictError
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.testing.base import ContractBase, run


class WritesContract(ContractBase):
    """remember() creates and revises Revisions, forget / reactivate / organize change
    only the manifest, bad input writes nothing (Memory RFC, "Writes and lifecycle",
    "Revision and entry lineage", "Concurrency and transactions")."""

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

