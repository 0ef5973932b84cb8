"""The peer's side of the peer benchmark: run by the PEER's interpreter only.

``.venv-peer/bin/python bench/peer/driver.py JOB.json`` prints one JSON object on stdout
(progress on stderr). ``powercontext`` here is the upstream distribution (1.4.1)
installed in ``.venv-peer`` by ``make bench-peer``; our process never imports this file.
It drives the peer as a black box through its documented public Python API, as found
from its ``help()``/docstrings: ``open_builtin_runtime(BuiltinConfig(database=
SQLiteConfig(url=...)))``, ``runtime.scopes.create(ScopeDraft(...))``, and the Scope's
Atomic Memory application: ``create([AtomicMemoryContent(kind, text), ...])`` (one
all-or-nothing batch) and ``search(query, mode="text", limit=...)``. The peer has no
manifest-based Memory application: its Memory is Atomic Memory (one Artifact per
entry), which is what "remember" means on its side.

Jobs (``"kind"``): ``info`` (version), ``perf`` (:func:`protocol.run_perf`) and
``rank`` (:func:`protocol.run_ranking`, for LoCoMo recall). The timing loop is
``bench/peer/protocol.py``, the same one that times our library.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import protocol  # bench/peer/protocol.py, standard library only

#: Raised from the peer's defaults (5000 active entries) so 10k entries fit; the
#: documented upper bounds of ``RuntimeConfig``.
RUNTIME_LIMITS = {
    "memory_max_active_entries": 100_000,
    "memory_max_manifest_entries": 200_000,
    "memory_max_manifest_bytes": 67_108_864,
}


class PeerStore:
    """One Scope's Atomic Memory on a fresh SQLite file of the peer."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stack = contextlib.AsyncExitStack()
        self.memory: Any = None

    async def open(self) -> PeerStore:
        from powercontext.builtin.persistence.sqlite.profile import SQLiteConfig
        from powercontext.builtin.runtime import BuiltinConfig, RuntimeConfig, open_builtin_runtime
        from powercontext.builtin.scope import ScopeDraft

        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{self.path}{suffix}")
        config = BuiltinConfig(
            database=SQLiteConfig(url=f"sqlite+aiosqlite:///{self.path}"),
            runtime=RuntimeConfig(**RUNTIME_LIMITS),
        )
        runtime = await self._stack.enter_async_context(
            open_builtin_runtime(config, scheduler_path=f"{self.path}.scheduler.db")
        )
        scope = await runtime.scopes.create(
            ScopeDraft(title="bench", summary="peer benchmark", idempotency_key=self.path.name)
        )
        self.memory = runtime.atomic_memory.for_scope(scope.scope_id)
        return self

    async def add(self, texts: Sequence[str]) -> list[str]:
        from powercontext.builtin.runtime.atomic_memory import AtomicMemoryContent

        result = await self.memory.create([AtomicMemoryContent(kind="turn", text=t) for t in texts])
        keys = [r.artifact.artifact_id for r in result.records]
        if len(keys) != len(texts):  # not seen; keep the protocol's one key per text
            by_text = {r.artifact.content.text: r.artifact.artifact_id for r in result.records}
            keys = [by_text.get(t, "") for t in texts]
        return keys

    async def search(self, query: str, limit: int) -> list[str]:
        page = await self.memory.search(query, mode="text", limit=limit)
        return [h.hit.artifact_ref.artifact_id for h in page.hits]

    def size_bytes(self) -> int:
        return protocol.file_bytes(str(self.path))

    async def close(self) -> None:
        await self._stack.aclose()


async def run(job: dict[str, Any]) -> dict[str, Any]:
    from importlib.metadata import version

    info = {"package": "powercontext", "version": version("powercontext"),
            "python": sys.version.split()[0]}
    if job["kind"] == "info":
        return info
    work = Path(job["workdir"])
    work.mkdir(parents=True, exist_ok=True)

    async def open_store(n: int) -> protocol.Store:
        return await PeerStore(work / f"peer-{job['kind']}-{n}.db").open()

    if job["kind"] == "perf":
        rows = await protocol.run_perf(
            open_store, sizes=job["sizes"], texts=job["texts"], fresh=job["fresh"],
            queries=job["queries"], search_runs=job["search_runs"],
            write_runs=job["write_runs"], batch_runs=job["batch_runs"],
            limit=job["limit"], cell_budget_s=job["cell_budget_s"], label="peer",
        )
        return {**info, "rows": rows}
    if job["kind"] == "rank":
        ranked = await protocol.run_ranking(
            open_store, job["conversations"], job["limit"], "peer"
        )
        return {**info, "ranked": ranked}
    raise SystemExit(f"unknown job kind {job['kind']!r}")


def main() -> int:
    job = json.loads(Path(sys.argv[1]).read_text("utf-8"))
    out = asyncio.run(run(job))
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
