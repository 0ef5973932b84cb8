"""The SQLite backends (Memory RFC, "SQLite adapter"; Topic Memory RFC, "Storage, Head,
and atomic activation"): APSW with the sqlite-vec ``vec0`` extension (ARCHITECTURE.md,
"Decisions"). The Memory and Topic Memory families share one database file, each with
its own backend class, connection and readiness checks. They register themselves
through :mod:`.plugin`; importing this package imports neither APSW nor a backend
module (the names below are imported on first use)."""

from typing import TYPE_CHECKING

from powercontext.adapters.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend, parse_sqlite_url
    from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend

__all__ = ["SQLiteMemoryBackend", "SQLiteTopicBackend", "parse_sqlite_url"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "SQLiteMemoryBackend": "backend",
    "parse_sqlite_url": "backend",
    "SQLiteTopicBackend": "topic_backend",
})
