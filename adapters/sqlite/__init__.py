"""The SQLite backend of the Memory family (Memory RFC, "SQLite adapter"): APSW with the
sqlite-vec ``vec0`` extension (ARCHITECTURE.md, "Decisions")."""

from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend, parse_sqlite_url

__all__ = ["SQLiteMemoryBackend", "parse_sqlite_url"]
