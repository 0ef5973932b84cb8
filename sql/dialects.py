"""The sqlglot dialects powercontext renders its templates for (ARCHITECTURE.md, "SQL").

Both are built on first use (a sqlglot dialect class registers itself in sqlglot's
registry when it is defined, so defining them at import time would be a side effect):

* :func:`sqlite_dialect` -- sqlglot's SQLite, with every character type written plain
  ``TEXT`` (SQLite ignores lengths; ``TEXT(128)`` only reads oddly) and every binary
  type ``BLOB``. Placeholders stay ``?``.
* :func:`oceanbase_dialect` -- sqlglot's MySQL with mysqlclient's ``%s`` / ``%(name)s``
  placeholders and every created table defaulting to ``utf8mb4`` / ``utf8mb4_bin``
  (seekdb rejects ``CHARACTER SET ascii``; ids and hashes are compared bytewise).

Templates are read with sqlglot's neutral dialect and rendered once per dialect; never
chain transpiles.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["DIALECTS", "dialect", "oceanbase_dialect", "sqlite_dialect"]

#: Our own dialects (rendered ahead of time into :mod:`powercontext.sql.rendered`);
#: :func:`dialect` also accepts any dialect name sqlglot knows.
DIALECTS = ("sqlite", "oceanbase")

_TEXT_TYPES = frozenset({"VARCHAR", "CHAR", "NVARCHAR", "NCHAR", "TEXT", "MEDIUMTEXT",
                         "LONGTEXT", "TINYTEXT"})
_BLOB_TYPES = frozenset({"BLOB", "LONGBLOB", "MEDIUMBLOB", "TINYBLOB", "VARBINARY", "BINARY"})


@functools.cache
def sqlite_dialect() -> Any:
    """The sqlglot Dialect class for SQLite (named ``PowerContextSQLite``)."""
    from sqlglot import exp
    from sqlglot.dialects.sqlite import SQLite

    class PowerContextSQLite(SQLite):  # type: ignore[misc,valid-type]
        class Generator(SQLite.Generator):  # type: ignore[misc,valid-type]
            def datatype_sql(self, expression: exp.DataType) -> str:
                name = expression.this.value if hasattr(expression.this, "value") else ""
                if name in _TEXT_TYPES:
                    return "TEXT"
                if name in _BLOB_TYPES:
                    return "BLOB"
                return super().datatype_sql(expression)

    return PowerContextSQLite


@functools.cache
def oceanbase_dialect() -> Any:
    """The sqlglot Dialect class for OceanBase MySQL mode (named ``OceanBase``).

    Renders ``?`` as ``%s`` and ``:name`` as ``%(name)s`` (mysqlclient's paramstyles)
    and gives each ``CREATE TABLE`` ``DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin``.
    OceanBase-only syntax (FULLTEXT ... WITH PARSER, VECTOR INDEX, APPROXIMATE) belongs
    in ``powercontext.sql.oceanbase`` fragments.
    """
    from sqlglot import exp
    from sqlglot.dialects.mysql import MySQL

    class OceanBase(MySQL):  # type: ignore[misc,valid-type]
        class Generator(MySQL.Generator):  # type: ignore[misc,valid-type]
            def placeholder_sql(self, expression: exp.Placeholder) -> str:
                return f"%({expression.name})s" if expression.this else "%s"

            def create_sql(self, expression: exp.Create) -> str:
                sql = super().create_sql(expression)
                if (expression.args.get("kind") or "").upper() == "TABLE":
                    sql += " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
                return str(sql)

    return OceanBase


def dialect(name: str) -> Any:
    """The sqlglot dialect to render for ``name``: ours for ``"sqlite"`` and
    ``"oceanbase"`` (:data:`DIALECTS`), else any dialect sqlglot knows by that name
    (``"postgres"``, ``"duckdb"``, ``"mysql"``, a third party's registered Dialect
    subclass, ...), so a third-party engine renders the shared statements too.
    ValueError for a name sqlglot does not know."""
    if name == "sqlite":
        return sqlite_dialect()
    if name == "oceanbase":
        return oceanbase_dialect()
    from sqlglot.dialects.dialect import Dialect

    try:
        return Dialect.get_or_raise(name)
    except ValueError as exc:
        raise ValueError(f"unknown SQL dialect {name!r}: not one of ours {DIALECTS} and "
                         f"not a dialect sqlglot knows ({exc})") from None
