"""The pre-rendered SQL table (sql/rendered.py) is exactly what sqlglot renders from the
templates and fragments today, the public rendering functions serve it, and a real
open + remember + search through SQLiteMemoryBackend never imports sqlglot
(ARCHITECTURE.md, "SQL": written once as sqlglot templates, rendered per dialect).
"""

from __future__ import annotations

import difflib
import string
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from powercontext.sql import generate, rendered, templates
from powercontext.sql import sqlite as frag

REGENERATE = f"run `.venv/bin/{generate.COMMAND}` and commit sql/rendered.py"


def test_checked_in_table_equals_a_fresh_sqlglot_rendering() -> None:
    fresh = generate.build()
    checked_in = generate.TARGET.read_text(encoding="utf-8")
    if fresh != checked_in:
        diff = list(difflib.unified_diff(
            checked_in.splitlines(), fresh.splitlines(),
            "sql/rendered.py (checked in)", "sql/rendered.py (fresh)", lineterm="", n=1))
        pytest.fail(f"sql/rendered.py is stale: {REGENERATE}.\n" + "\n".join(diff[:60]))


def test_check_mode_reports_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "rendered.py"
    target.write_text("TEMPLATES = {}\n")
    monkeypatch.setattr(generate, "TARGET", target)
    assert generate.main(["--check"]) == 1
    assert "python -m powercontext.sql.generate" in capsys.readouterr().err
    assert target.read_text() == "TEMPLATES = {}\n"
    assert generate.main([]) == 0
    assert target.read_text(encoding="utf-8") == generate.build()
    assert generate.main(["--check"]) == 0


def test_table_holds_every_template_dialect_and_bucket_and_every_fragment() -> None:
    expected = set()
    for name, text in templates._ALL.items():
        for dialect in ("sqlite", "oceanbase"):
            sizes = templates.IN_BUCKETS if ":ids" in text else (None,)
            expected |= {(name, dialect, n) for n in sizes}
    assert set(rendered.TEMPLATES) == expected
    assert set(rendered.SQLITE_FRAGMENTS) == set(frag.STATEMENTS)
    for (name, dialect, n), sql in rendered.TEMPLATES.items():
        assert templates.render(name, dialect, n) is sql
    for name, sql in rendered.SQLITE_FRAGMENTS.items():
        assert frag.statement(name) is sql


def test_a_size_outside_the_buckets_falls_back_to_sqlglot() -> None:
    assert ("head_rows_delete", "oceanbase", 3) not in rendered.TEMPLATES
    assert templates.render("head_rows_delete", "oceanbase", 3) == (
        "DELETE FROM `memory_entry_heads` WHERE `projection_id` IN (%s, %s, %s)")
    with pytest.raises(ValueError):
        templates.render("head_rows_delete", "sqlite", None)
    with pytest.raises(KeyError):
        templates.render("no_such_statement", "sqlite")


def test_vector_ddl_template_formats_integers_only() -> None:
    fields = [(f, spec) for _, f, spec, _ in string.Formatter().parse(rendered.SQLITE_VECTOR_DDL)
              if f is not None]
    assert fields == [("dimension", "d"), ("chunk_size", "d")]
    assert frag.vector_ddl(384, 16) == frag._render_vector_ddl(frag._q).format(
        dimension=384, chunk_size=16)
    assert frag.vector_ddl(384, 16) == (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "memory_entry_search_vector" USING vec0('
        "scope text partition key, embedding float[384] distance_metric=l2, chunk_size=16)")
    with pytest.raises(ValueError):
        rendered.SQLITE_VECTOR_DDL.format(dimension="8] AS x; --", chunk_size=8)


def _run(code: str, *args: str) -> str:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.mark.subprocess
def test_open_remember_search_through_sqlite_backend_never_imports_sqlglot(
        tmp_path: Path) -> None:
    code = """
        import asyncio, sys
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
        from powercontext.adapters.sqlite import SQLiteMemoryBackend
        from powercontext.core.models import MemoryEntryInput
        from powercontext.service import MemoryService

        model = DeterministicEmbedding(8)

        def service():
            backend = SQLiteMemoryBackend(sys.argv[1], profile=model.profile)
            return MemoryService(backend, embedding_model=model)

        async def main():
            async with service() as svc:  # creates the schema, FTS5 and vec0 tables
                ref = await svc.remember(entries=[
                    MemoryEntryInput("fact", "run uv lock before ci"),
                    MemoryEntryInput("preference", "tabs never spaces")])
            async with service() as svc:  # a fresh open, as a CLI hook does
                head = await svc.head(ref.artifact_id)
                hybrid = await svc.search("uv lock", [head], mode="hybrid")
                fts = await svc.search("tabs", [head], mode="fts")
            return hybrid, fts

        hybrid, fts = asyncio.run(main())
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "sqlglot")
        print(hybrid.mode, len(hybrid.hits), fts.mode, len(fts.hits), loaded)
    """
    out = _run(code, str(tmp_path / "m.db")).split(maxsplit=4)
    assert out[:4] == ["hybrid", "2", "fts", "1"]
    assert out[4].strip() == "[]"


@pytest.mark.subprocess
def test_every_pre_rendered_statement_is_served_without_sqlglot() -> None:
    code = """
        import sys
        from powercontext.sql import oceanbase, rendered, sqlite, templates
        for (name, dialect, n) in rendered.TEMPLATES:
            templates.render(name, dialect, n)
        for dialect in ("sqlite", "oceanbase"):
            for name in templates._ALL:
                if ":ids" in templates._ALL[name]:
                    templates.render_in(name, dialect, list(range(300)))
                else:
                    templates.render(name, dialect)
        for name in sqlite.STATEMENTS:
            sqlite.statement(name)
        sqlite.vector_ddl(384)
        oceanbase.heads_ddl(384)
        oceanbase.fts_search(4)
        print(sorted(m for m in sys.modules if m.split(".")[0] == "sqlglot"))
    """
    assert _run(code).strip() == "[]"
