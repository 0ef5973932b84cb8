"""A seeded hook database for the hook tests: a repository Memory mapped to the
repository's key, and the Source journal of a database."""

from __future__ import annotations

import asyncio
from pathlib import Path

from powercontext.core import canonical
from powercontext.core.models import MemoryEntryInput
from powercontext.runtime import open_service
from powercontext.runtime_manifest import RuntimeManifest

__all__ = ["journal", "seed"]


def seed(db: Path, repo: Path) -> dict[str, str]:
    """A repository Memory mapped to repo:<path>, with two entries; returns ids by text."""

    async def body():
        svc = open_service(db)
        try:
            mk = (repo / "Makefile").read_text()
            src = canonical.make_source("src_makefile", "file", mk, (repo / "Makefile").as_uri())
            ref = await svc.remember(None, sources=(src,), mode="append", entries=(
                MemoryEntryInput("preference", "Run make test before asking for review",
                                 sources=(src,)),
                MemoryEntryInput("constraint", "Never edit generated files under build/"),
            ))
            versions = await svc.entries(ref)
            return ref, {v.text: v.entry_id for v in versions.values()}
        finally:
            await svc.close()

    ref, ids = asyncio.run(body())
    RuntimeManifest.for_db(str(db)).set(f"repo:{repo}", ref.artifact_id)
    return {"memory": ref.artifact_id, **ids}


def journal(db: Path):
    async def body():
        svc = open_service(db)
        try:
            return [s for _, s in await svc.backend.journal(0, 100)]
        finally:
            await svc.close()

    return asyncio.run(body())
