"""Reading the business keys a database stores (for tests of the CLI, hooks and MCP)."""

from __future__ import annotations

import asyncio
from pathlib import Path


def stored_key(db: str | Path, key: str) -> str | None:
    """The Memory id the database at ``db`` stores for ``key`` (in its stored form)."""
    return asyncio.run(_read(db, key))


def stored_keys(db: str | Path) -> dict[str, str]:
    """Every business key the database at ``db`` stores."""
    return asyncio.run(_read(db, None))


async def _read(db: str | Path, key: str | None):
    from powercontext.runtime import open_service

    svc = open_service(str(db))
    try:
        return await svc.memory_keys() if key is None else await svc.memory_key(key)
    finally:
        await svc.close()
