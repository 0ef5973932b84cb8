"""Contract group: the unit of work re-validates everything; Sources are append-only
and never hold a secret."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.core import canonical
from powercontext.core.errors import RevisionConflictError, SecretDetectedError
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.testing.base import ContractBase, run


class IntegrityContract(ContractBase):
    """Forged plans, refused input and secret-holding Sources store nothing (Memory RFC,
    "Concurrency and transactions": the unit of work re-validates; "Memory admission
    rules": never save secrets)."""

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
                base = await self._base(svc.backend, ref)
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

