"""The SQLite backends (Memory RFC, "SQLite adapter"; Topic Memory RFC, "Storage, Head,
and atomic activation"): APSW with the sqlite-vec ``vec0`` extension (ARCHITECTURE.md,
"Decisions"). The Memory and Topic Memory families share one database file, each with
its own backend class, connection and readiness checks.

Each family's backend is imported when it is first named (PEP 562), so opening the
Memory side (every prompt hook) does not import the Topic side's modules."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SQLiteMemoryBackend", "SQLiteTopicBackend", "parse_sqlite_url"]

#: Where each public name lives (its module in this package).
_HOMES = {
    "SQLiteMemoryBackend": "backend",
    "parse_sqlite_url": "backend",
    "SQLiteTopicBackend": "topic_backend",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
