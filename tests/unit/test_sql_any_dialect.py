"""The shared statements render for any dialect sqlglot knows (ARCHITECTURE.md, "SQL";
docs/python.md, "A third-party engine"), so a third-party engine gets them and writes
only its golden tests. What rendering proves: sqlglot wrote the statement, it parses
back in that dialect, and it binds as many parameters as the template (no value lost or
inlined). What it does not prove (the engine's golden tests and a run on the engine do):
that the engine accepts every type, constraint and upsert."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from powercontext.sql import templates
from powercontext.sql.dialects import DIALECTS, dialect

THIRD_PARTY_DIALECTS = ("postgres", "duckdb", "mysql")


def _in_list(name: str) -> int | None:
    parsed = templates._parsed(name)
    return 4 if any(p.name == "ids" for p in parsed.find_all(exp.Placeholder)) else None


def _bound(tree: exp.Expression) -> int:
    return sum(1 for _ in tree.find_all((exp.Placeholder, exp.Parameter)))


@pytest.mark.parametrize("name", THIRD_PARTY_DIALECTS)
def test_every_shared_template_renders_for_a_dialect_sqlglot_knows(name):
    wrong = []
    for statement in sorted(templates._ALL):
        n = _in_list(statement)
        source = templates._parsed(statement)
        sql = templates.render(statement, name, n)
        back = sqlglot.parse_one(sql, read=name)
        expected = _bound(source) + (n - 1 if n else 0)  # :ids -> n parameters
        if _bound(back) != expected or type(back) is not type(source):
            wrong.append((statement, sql))
    assert not wrong, wrong[:5]
    assert len(templates._ALL) > 100


def test_a_third_party_dialect_quotes_identifiers_and_keeps_its_own_placeholders():
    assert templates.render("guard_cursor_cas", "postgres") == (
        'UPDATE "pc_source_cursors" SET "source_position" = %s WHERE "binding_name" = %s '
        'AND "scope_id" = %s AND "source_position" = %s')
    assert templates.render("guard_cursor_cas", "duckdb") == (
        'UPDATE "pc_source_cursors" SET "source_position" = ? WHERE "binding_name" = ? '
        'AND "scope_id" = ? AND "source_position" = ?')


def test_our_dialects_are_still_ours_and_an_unknown_one_is_a_clear_value_error():
    assert DIALECTS == ("sqlite", "oceanbase")
    assert dialect("sqlite").__name__ == "PowerContextSQLite"
    assert dialect("oceanbase").__name__ == "OceanBase"
    with pytest.raises(ValueError, match=r"unknown SQL dialect 'nosuchdb'.*sqlglot"):
        templates.render("guard_cursor_cas", "nosuchdb")
    with pytest.raises(KeyError):
        templates.render("no_such_statement", "postgres")
