"""The SQLite backends (Memory RFC, "SQLite adapter"; Topic Memory RFC, "Storage, Head,
and atomic activation"): APSW with the sqlite-vec ``vec0`` extension (ARCHITECTURE.md,
"Decisions"). The Memory and Topic Memory families share one database file, each with
its own backend class, connection and readiness checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend, parse_sqlite_url

if TYPE_CHECKING:
    from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend

__all__ = ["SQLiteMemoryBackend", "SQLiteTopicBackend", "parse_sqlite_url"]


def __getattr__(name: str) -> Any:
    """``SQLiteTopicBackend`` is imported when first named: a Memory command (the prompt hook)
    never loads the Topic family's storage."""
    if name == "SQLiteTopicBackend":
        from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend

        return SQLiteTopicBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
