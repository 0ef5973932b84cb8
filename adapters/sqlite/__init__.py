"""The SQLite backends (Memory RFC, "SQLite adapter"; Topic Memory RFC, "Storage, Head,
and atomic activation"): APSW with the sqlite-vec ``vec0`` extension (ARCHITECTURE.md,
"Decisions"). The Memory and Topic Memory families share one database file, each with
its own backend class, connection and readiness checks."""

from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend, parse_sqlite_url
from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend

__all__ = ["SQLiteMemoryBackend", "SQLiteTopicBackend", "parse_sqlite_url"]
