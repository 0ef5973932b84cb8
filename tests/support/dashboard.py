"""A small real Memory on SQLite for the dashboard's TestClient tests (issue 17): two
Memories, one with a stored ``<script>`` payload, a version chain, a forgotten entry,
entries of several kinds and enough entries for two pages (``PER_PAGE`` + 5).

:func:`seed` writes the database once (``asyncio.run``); :func:`client` opens a fresh
MemoryService on it per test (the TestClient runs the app on its own event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical
from powercontext.core.models import MemoryEntryInput
from powercontext.entrypoints.http.app import create_app
from powercontext.entrypoints.http.dashboard.memory_data import PER_PAGE
from powercontext.entrypoints.http.deps import Services
from powercontext.service import MemoryService

__all__ = ["ORIGIN", "SCRIPT", "TOKEN", "client", "seed", "start_tags"]

TOKEN = "dash-token-1234"
ORIGIN = "http://testserver"
#: A stored entry text that must render as text, never as markup.
SCRIPT = "<script>alert('pwned')</script> & <b>bold</b>"
_KINDS = ("fact", "decision", "preference", "working_note", "custom_kind")


class _Ids:
    """A deterministic clock (ms, one step per id) and entropy: the same ids on every
    backend and every run, so pages can be compared across backends."""

    def __init__(self) -> None:
        self.n = 0

    def clock(self) -> int:
        self.n += 1
        return 1_764_655_200_000 + self.n

    def entropy(self, size: int) -> bytes:
        return self.n.to_bytes(size, "big")


async def _seed(make_backend: Callable[[], Any]) -> dict[str, Any]:
    ids = _Ids()
    svc = MemoryService(make_backend(), clock=ids.clock, entropy=ids.entropy)
    try:
        src = canonical.make_source("src_dash_1", "user_note", "Notes <i>about</i> releases.")
        first = [MemoryEntryInput(_KINDS[i % 5], f"release note number {i}", sources=(src,))
                 for i in range(PER_PAGE + 5)]
        head = await svc.remember(entries=first, sources=[src], mode="append",
                                  key="repo:/work/dash")
        assert head is not None
        before = {e.entry_id for e in (await svc.revision(head)).content.manifest.entries}
        src2 = canonical.make_source("src_dash_2", "user_note", "A hostile note.")
        head = await svc.remember(head, sources=[src2], mode="append", entries=[
            MemoryEntryInput("fact", SCRIPT, sources=(src2,))])
        assert head is not None
        items = (await svc.revision(head)).content.manifest.entries
        chained, forgotten = sorted(before)[:2]
        (v1,) = (await svc.entries(head, [chained])).values()
        head = await svc.remember(head, sources=[src2], mode="append", entries=[
            MemoryEntryInput(v1.kind, "release note number 0, corrected", entry=v1,
                             sources=(src2,), reason="fixed a <typo>")])
        assert head is not None
        head = await svc.forget(head, [forgotten], reason="obsolete")
        script_id = next(e.entry_id for e in items if e.entry_id not in before)
        other = await svc.remember(entries=[MemoryEntryInput("fact", "another Memory")],
                                   mode="append")
        assert other is not None
        return {"artifact_id": head.artifact_id, "head": head.revision,
                "chained": chained, "forgotten": forgotten, "script_entry": script_id,
                "other": other.artifact_id, "entries": len(items)}
    finally:
        await svc.close()


def _factory(where: Path | Callable[[], Any]) -> Callable[[], Any]:
    if isinstance(where, Path):
        return lambda: SQLiteMemoryBackend(str(where))
    return where


def seed(where: Path | Callable[[], Any]) -> dict[str, Any]:
    """Write the Memories into a new SQLite file at ``where`` (or through the backend
    ``where()`` makes); returns ``{"artifact_id", "head", "chained" (an entry with 2
    versions), "forgotten", "script_entry", "other" (the second Memory),
    "entries"}``."""
    return asyncio.run(_seed(_factory(where)))


def client(where: Path | Callable[[], Any], *,
           token: str | None = TOKEN) -> tuple[TestClient, MemoryService]:
    """A TestClient of the whole app over a new MemoryService on ``where`` (a SQLite
    path or a backend factory); close the service with ``asyncio.run(svc.close())``."""
    svc = MemoryService(_factory(where)())
    app = create_app(Services(memory=svc, topic=None), api_token=token)
    return TestClient(app, raise_server_exceptions=False), svc


class _StartTags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def start_tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """Every start tag of ``html`` in document order: ``(tag, {attribute: value})``
    (the stdlib parser: what a browser would see as elements, not text)."""
    parser = _StartTags()
    parser.feed(html)
    return parser.tags
