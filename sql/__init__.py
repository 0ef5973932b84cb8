"""SQL written once as sqlglot templates and rendered per dialect (ARCHITECTURE.md, "SQL").

* :mod:`powercontext.sql.templates` holds the shared statements (tables, keys, plain
  queries) and renders them for a dialect;
* :mod:`powercontext.sql.dialects` holds the two sqlglot dialect subclasses (SQLite and
  OceanBase in MySQL mode), built lazily so importing this package registers nothing;
* :mod:`powercontext.sql.sqlite` holds the SQLite-only fragments (FTS5, vec0, MATCH).

Nothing here opens a connection; rendering happens on first use and is cached.
"""

__all__: list[str] = []
