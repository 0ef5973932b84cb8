"""What every contract group shares: ``run``, the backend factory fixture, the service
helper, the scenario, the test embedding models and the capability checks."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest

from powercontext.core import canonical
from powercontext.core.models import ArtifactRef, EmbeddingProfile, MemoryEntryInput, Source
from powercontext.ports import MemoryBackend

T = TypeVar("T")
BackendFactory = Callable[[EmbeddingProfile | None], MemoryBackend]


def run(coro: Awaitable[T]) -> T:
    """Run one coroutine to completion (tests use no asyncio plugin)."""

    async def _wrap() -> T:
        return await coro

    return asyncio.run(_wrap())


class Ids:
    """Deterministic entropy for ``MemoryService(entropy=...)``: 1, 2, 3, ... as bytes."""

    def __init__(self) -> None:
        self._n = itertools.count(1)

    def __call__(self, n: int) -> bytes:
        return next(self._n).to_bytes(n, "big")


class SwitchableModel:
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


class ThirdPartyModel:
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



class ContractBase:
    """The shared fixtures and helpers of every contract group. A backend's test class
    overrides ``memory_backend_factory`` (``factory(profile) -> MemoryBackend``, a fresh
    empty database per call) and, optionally, ``memory_embedding_model``.

    A test that needs a capability beyond ``ports.MemoryBackend`` asks for it through
    :meth:`_require` (a capability port such as ``ports.MemoryRebuild``) or
    :meth:`_vector_ready` (the declared ``MemoryCapabilities``) and is skipped, with the
    reason, when the backend does not declare it. No test reaches into a backend's
    private methods."""

    @pytest.fixture
    def memory_backend_factory(self) -> BackendFactory:
        raise NotImplementedError("override memory_backend_factory in your test class")

    # -- helpers ---------------------------------------------------------------------

    @asynccontextmanager
    async def _service(
        self, factory: BackendFactory, profile: EmbeddingProfile | None = None, model: Any = None
    ) -> AsyncIterator[Any]:
        from powercontext import MemoryService

        backend = factory(profile)
        service = MemoryService(backend, embedding_model=model, entropy=Ids())
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

    @pytest.fixture
    def memory_embedding_model(self) -> Any:
        """The model the vector tests use; override to test another one."""
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        return DeterministicEmbedding(dimension=64)

    async def _vector_ready(self, svc: Any) -> None:
        caps = await svc.capabilities()
        if not caps.vector:
            pytest.skip(
                f"backend has no vector capability: {caps.reasons or '(no reason given)'}; "
                "memory_backend_factory must open the backend with the profile it is given"
            )

    @staticmethod
    def _require(backend: Any, port: Any) -> Any:
        """``backend`` as the capability ``port`` (a runtime_checkable Protocol of
        :mod:`powercontext.ports`), or skip the test naming what it does not declare."""
        if not isinstance(backend, port):
            pytest.skip(f"{type(backend).__name__} does not declare {port.__name__}")
        return backend

    @staticmethod
    async def _base(backend: MemoryBackend, ref: ArtifactRef) -> Any:
        """The planning base (``core.planning.MemoryBase``) of the head ``ref``, read
        through the port alone: its Revision content and every entry version."""
        from powercontext.core import planning

        rev = await backend.load_revision(ref)
        versions = await backend.load_entry_versions(ref, None)
        return planning.MemoryBase(ref, rev.content, versions)

