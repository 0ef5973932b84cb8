"""Our end of the pipe to the peer's driver (``bench/peer/driver.py``, run by the peer's
interpreter): :class:`PeerProcess` sends one JSON request per line and reads one JSON
reply; :class:`RemoteStore` is a :class:`bench.peer.protocol.Store` whose calls the
driver times itself (``timed_call``), so the pipe is not in the figures. Standard
library only; nothing here imports the peer."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DRIVER = Path(__file__).resolve().parent / "driver.py"


class PeerError(RuntimeError):
    """The peer's driver failed, replied with an error, or is gone."""


class PeerProcess:
    """The driver in ``python`` (the peer's interpreter), alive until :meth:`close`.
    Its stderr (the peer's own output and logs) goes to ours."""

    def __init__(self, python: Path) -> None:
        self.proc = subprocess.Popen(
            [str(python), str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, bufsize=1, env={**os.environ, "PYTHONPATH": ""},
        )

    def request(self, op: str, **fields: Any) -> tuple[Any, float]:
        """``(result, ms)`` of one request; PeerError when the driver reports an error
        or exits."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise PeerError(f"peer driver gone during {op}: {exc}") from exc
        if not line:
            raise PeerError(f"peer driver exited ({self.proc.poll()}) during {op}; "
                            "its stderr is above")
        reply = json.loads(line)
        if "error" in reply:
            raise PeerError(f"peer {op} failed: {reply['error']}")
        return reply["result"], float(reply["ms"])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


class RemoteStore:
    """One peer store (a fresh SQLite file at ``path``) behind the driver."""

    def __init__(self, peer: PeerProcess, path: Path) -> None:
        self.peer = peer
        self.id, _ = peer.request("open", path=str(path))

    async def timed_call(self, op: str, *args: Any) -> tuple[Any, float]:
        if op == "add":
            return self.peer.request("add", id=self.id, texts=list(args[0]))
        if op == "search":
            return self.peer.request("search", id=self.id, query=args[0], limit=args[1])
        if op == "forget_next":
            return self.peer.request("forget_next", id=self.id)
        raise ValueError(f"unknown store op {op!r}")

    async def add(self, texts: Sequence[str]) -> list[str]:
        return list((await self.timed_call("add", texts))[0])

    async def search(self, query: str, limit: int) -> list[str]:
        return list((await self.timed_call("search", query, limit))[0])

    async def pick_forget(self, n: int) -> None:
        self.peer.request("pick_forget", id=self.id, n=n)

    async def forget_next(self) -> None:
        await self.timed_call("forget_next")

    def size_bytes(self) -> int:
        return int(self.peer.request("size", id=self.id)[0])

    async def close(self) -> None:
        self.peer.request("close", id=self.id)
