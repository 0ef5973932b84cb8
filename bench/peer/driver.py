"""The peer's side of the peer benchmark: run by the PEER's interpreter only.

``.venv-peer/bin/python bench/peer/driver.py`` answers JSON requests, one per stdin line,
with one JSON line each on stdout (:func:`serve`; :class:`bench.peer.remote.PeerProcess`
is the other end). ``powercontext`` here is the upstream distribution (1.4.1)
installed in ``.venv-peer`` by ``make bench-peer``; our process never imports this file.
It drives the peer as a black box through its documented public Python API, as found
from its ``help()``/docstrings: ``open_builtin_runtime(BuiltinConfig(database=
SQLiteConfig(url=...)))``, ``runtime.scopes.create(ScopeDraft(...))``, and the Scope's
Atomic Memory application: ``create([AtomicMemoryContent(kind, text), ...])`` (one
all-or-nothing batch), ``search(query, mode="text", limit=...)``, ``state(artifact_id)``
and ``forget(artifact_id, expected_revision=..., expected_state_version=...)``. The peer has no
manifest-based Memory application: its Memory is Atomic Memory (one Artifact per
entry), which is what "remember" means on its side.

The timing loop is ``bench/peer/protocol.py`` in our process, the same one that times
our library, interleaving the two call by call; this driver times each call it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
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
        self.keys: list[str] = []  # every Artifact created, in order
        self._forget: list[tuple[str, int, int]] = []

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
        self.keys.extend(k for k in keys if k)
        return keys

    async def search(self, query: str, limit: int) -> list[str]:
        page = await self.memory.search(query, mode="text", limit=limit)
        return [h.hit.artifact_ref.artifact_id for h in page.hits]

    async def pick_forget(self, n: int) -> None:
        """``n`` created Artifacts spread over the load, with the revision and state
        version a forget names (read here, untimed)."""
        step = max(1, len(self.keys) // max(1, n))
        self._forget = []
        for key in self.keys[::step][:n]:
            read = await self.memory.state(key)
            self._forget.append((key, read.ref.revision, read.state_version))

    async def forget_next(self) -> None:
        key, revision, state_version = self._forget.pop(0)
        await self.memory.forget(key, expected_revision=revision,
                                 expected_state_version=state_version)

    def size_bytes(self) -> int:
        return protocol.file_bytes(str(self.path))

    async def close(self) -> None:
        await self._stack.aclose()


async def serve(out: Any) -> None:
    """Answer one JSON request per stdin line with one JSON line on ``out`` until EOF or
    ``{"op": "quit"}``. Requests: ``info``; ``open`` (``path``) -> a store id; ``add``
    (``id``, ``texts``) -> keys; ``search`` (``id``, ``query``, ``limit``) -> keys;
    ``pick_forget`` (``id``, ``n``); ``forget_next`` (``id``); ``size`` (``id``) -> bytes;
    ``close`` (``id``). A reply is ``{"result", "ms"}`` (``ms``:
    ``perf_counter`` around the awaited call, here, so the pipe is not timed) or
    ``{"error"}``."""
    from importlib.metadata import version

    loop = asyncio.get_running_loop()
    stores: dict[int, PeerStore] = {}
    info = {"package": "powercontext", "version": version("powercontext"),
            "python": sys.version.split()[0]}
    while True:
        # read off the loop: the peer's runtime may have tasks of its own meanwhile
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        req = json.loads(line)
        op = req["op"]
        if op == "quit":
            break
        t0 = time.perf_counter()
        try:
            if op == "info":
                result: Any = info
            elif op == "open":
                store = await PeerStore(Path(req["path"])).open()
                result = len(stores) + 1
                stores[result] = store
            elif op == "add":
                result = await stores[req["id"]].add(req["texts"])
            elif op == "search":
                result = await stores[req["id"]].search(req["query"], req["limit"])
            elif op == "pick_forget":
                result = await stores[req["id"]].pick_forget(req["n"])
            elif op == "forget_next":
                result = await stores[req["id"]].forget_next()
            elif op == "size":
                result = stores[req["id"]].size_bytes()
            elif op == "close":
                await stores.pop(req["id"]).close()
                result = None
            else:
                raise ValueError(f"unknown op {op!r}")
            reply = {"result": result, "ms": (time.perf_counter() - t0) * 1000.0}
        except Exception as exc:  # reported to our side, which stops the peer's part
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    for store in stores.values():
        await store.close()


def main() -> int:
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing the peer prints can corrupt the replies
    asyncio.run(serve(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
