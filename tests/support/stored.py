"""Every text a SQLite database holds, read back with SQL: for the tests that prove a
secret is stored nowhere (tables, virtual tables and their shadow tables: FTS5
``_data``/``_content``, vec0 chunks)."""

from __future__ import annotations

from pathlib import Path

import apsw
import sqlite_vec

__all__ = ["assert_nowhere", "stored_texts"]


def stored_texts(db: Path) -> list[tuple[str, str, str]]:
    """(table, column, value) of every text or blob cell of every table in ``db``:
    tables, virtual tables and their shadow tables (FTS5 ``_data``/``_content``/...,
    vec0 chunks), enumerated through sqlite_master."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    out: list[tuple[str, str, str]] = []
    tables = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    assert tables, "the database has no tables"
    for table in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        cursor = con.execute(f"SELECT * FROM {quoted}")
        try:
            names = [d[0] for d in cursor.getdescription()]
        except apsw.ExecutionCompleteError:
            continue  # an empty table
        for row in cursor:
            for name, value in zip(names, row, strict=True):
                if isinstance(value, bytes):
                    value = value.decode("utf-8", "replace")
                if isinstance(value, str):
                    out.append((table, name, value))
    con.close()
    return out


def assert_nowhere(db: Path, *secrets: str) -> None:
    """No cell of ``db`` (when it exists) holds any of ``secrets``."""
    if not db.exists():
        return
    cells = stored_texts(db)
    for secret in secrets:
        hits = [(t, c) for t, c, v in cells if secret in v]
        assert hits == [], f"{secret[:6]}... is stored in {hits}"
