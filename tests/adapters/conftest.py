"""Shared helpers of the SQLite adapter tests: deterministic ids and embeddings, plans
built by the real planners (``powercontext.core.planning``), and backend fixtures on
real APSW + sqlite-vec files under ``tmp_path``; and ``engine``, both engines behind one
fixture for the analyzer tests."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import math
import secrets
import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical, planning
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    EmbeddingVector,
    MemoryEntryInput,
    Source,
)
from powercontext.core.plan import MemoryPlan

DIM = 8
PROFILE = EmbeddingProfile("test-hash-8", "test/sha256-embedder", DIM)


def id_factory(seed: str = "t") -> Callable[[str], str]:
    """Deterministic, unique ids in the canonical shape (prefix + 26 base32 chars)."""
    counter = itertools.count(1)
    salt = hashlib.sha256(seed.encode()).digest()[:4]

    def new_id(prefix: str) -> str:
        n = next(counter)
        return canonical.make_id(prefix, 1_700_000_000_000 + n, salt + n.to_bytes(6, "big"))

    return new_id


def embed(text: str, dim: int = DIM) -> EmbeddingVector:
    """A deterministic unit vector from SHA-256 of the text (no model)."""
    raw = hashlib.sha256(text.encode()).digest() * ((dim * 4) // 32 + 1)
    vals = [((b - 127.5) / 127.5) for b in raw[:dim]]
    norm = math.sqrt(sum(v * v for v in vals))
    return tuple(v / norm for v in vals)


def unit(*xs: float) -> EmbeddingVector:
    norm = math.sqrt(sum(x * x for x in xs))
    # round-trip through float32 so the stored vector equals the given one
    return tuple(struct.unpack(f"<{len(xs)}f", struct.pack(f"<{len(xs)}f",
                                                            *(x / norm for x in xs))))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def base_of(backend: SQLiteMemoryBackend, ref: ArtifactRef | None
                  ) -> planning.MemoryBase | None:
    if ref is None:
        return None
    rev = await backend.load_revision(ref)
    versions = await backend.load_entry_versions(ref)
    return planning.MemoryBase(ref, rev.content, versions)


async def plan_add(backend: SQLiteMemoryBackend, ref: ArtifactRef | None,
                   texts: Sequence[str], new_id: Callable[[str], str],
                   sources: Sequence[Source] = (), kind: str = "fact") -> MemoryPlan:
    base = await base_of(backend, ref)
    plan = planning.plan_remember(
        base, [MemoryEntryInput(kind, t, sources=tuple(sources)) for t in texts],
        sources=sources, new_id=new_id)
    assert isinstance(plan, MemoryPlan)
    return plan


def vectors_for(plan: MemoryPlan, dim: int = DIM,
                fn: Callable[[str], EmbeddingVector] | None = None
                ) -> dict[str, EmbeddingVector]:
    f = fn or (lambda t: embed(t, dim))
    return {r.entry_version_id: f(r.text) for r in plan.upserts}


async def commit(backend: SQLiteMemoryBackend, plan: MemoryPlan,
                 vectors: dict[str, EmbeddingVector] | None = None) -> ArtifactRef:
    async with backend.begin() as uow:
        return await uow.commit(plan, vectors)


async def add(backend: SQLiteMemoryBackend, ref: ArtifactRef | None, texts: Sequence[str],
              new_id: Callable[[str], str], *, with_vectors: bool = True,
              sources: Sequence[Source] = ()) -> ArtifactRef:
    """Plan ``remember(append)`` of ``texts`` on ``ref`` (None: a new Memory) and commit
    it, with deterministic vectors when the backend has a profile."""
    plan = await plan_add(backend, ref, texts, new_id, sources)
    vecs = vectors_for(plan) if with_vectors and backend.profile is not None else None
    return await commit(backend, plan, vecs)


async def forget(backend: SQLiteMemoryBackend, ref: ArtifactRef,
                 entry_ids: Sequence[str]) -> ArtifactRef:
    base = await base_of(backend, ref)
    assert base is not None
    plan = planning.plan_forget(base, [base.versions[e] for e in entry_ids])
    assert isinstance(plan, MemoryPlan)
    return await commit(backend, plan)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def vec_backend(db_path: Path) -> Iterator[SQLiteMemoryBackend]:
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    yield b
    b.close_sync()


@pytest.fixture
def fts_backend(db_path: Path) -> Iterator[SQLiteMemoryBackend]:
    b = SQLiteMemoryBackend(str(db_path))
    yield b
    b.close_sync()


@pytest.fixture(params=["sqlite", pytest.param("oceanbase", marks=pytest.mark.oceanbase)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """(name, open(db_name, topic=False, **kw) -> a new Memory backend, or Topic backend
    with ``topic=True``, on that database): a SQLite file under ``tmp_path``, or a fresh
    database on the session's seekdb. The same ``db_name`` is the same database, so a
    Memory and a Topic backend share it as in a deployment."""
    from powercontext.adapters.sqlite import SQLiteTopicBackend

    if request.param == "sqlite":
        def lite(name: str, topic: bool = False, **kw: Any) -> Any:
            cls = SQLiteTopicBackend if topic else SQLiteMemoryBackend
            return cls(str(tmp_path / f"{name}.db"), **kw)

        yield "sqlite", lite
        return
    from oceanbase_server import fresh_database, seekdb_available

    if not seekdb_available():
        pytest.skip("needs pylibseekdb or POWERCONTEXT_TEST_OCEANBASE_URL")
    from powercontext.adapters.oceanbase import OceanBaseMemoryBackend, OceanBaseTopicBackend

    server = request.getfixturevalue("seekdb_url")
    with contextlib.ExitStack() as stack:
        urls: dict[str, str] = {}

        def ob(name: str, topic: bool = False, **kw: Any) -> Any:
            if name not in urls:
                urls[name] = stack.enter_context(
                    fresh_database(server, f"pc_an_{secrets.token_hex(3)}"))
            cls = OceanBaseTopicBackend if topic else OceanBaseMemoryBackend
            return cls(urls[name], **kw)

        yield "oceanbase", ob
