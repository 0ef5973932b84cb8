"""The SQLite backends (Memory RFC, "SQLite adapter"; Topic Memory RFC, "Storage, Head,
and atomic activation"): APSW with the sqlite-vec ``vec0`` extension (ARCHITECTURE.md,
"Decisions"). The Memory and Topic Memory families share one database file, each with
its own backend class, connection and readiness checks. The backends register
themselves through :mod:`.plugin`.

Each family's backend is imported when it is first named (PEP 562), so opening the
Memory side (every prompt hook) does not import the Topic side's modules."""

from __future__ import annotations

from typing import Any

from powercontext.adapters import lazy_export

__all__ = ["SQLiteMemoryBackend", "SQLiteTopicBackend", "parse_sqlite_url"]

#: Where each public name lives (its module in this package).
_HOMES = {
    "SQLiteMemoryBackend": "backend",
    "parse_sqlite_url": "backend",
    "SQLiteTopicBackend": "topic_backend",
}


def __getattr__(name: str) -> Any:
    return lazy_export(__name__, _HOMES, name)
