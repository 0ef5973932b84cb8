"""No product module is over 500 lines, in any layer: a module is read in one sitting.
The generated SQL (sql/rendered.py) and the table of SQL templates (sql/templates.py)
are data, not code to read through, and are left out."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500
LAYERS = ("core", "ports", "sql", "app", "entrypoints", "adapters", "plugins", "testing")
TABLES = frozenset({"sql/rendered.py", "sql/templates.py"})


def long_modules(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    return {rel: n for layer in LAYERS for path in sorted((root / layer).rglob("*.py"))
            if (rel := path.relative_to(root).as_posix()) not in TABLES
            and (n := len(path.read_text(encoding="utf-8").splitlines())) > limit}


def test_no_product_module_is_over_500_lines():
    assert long_modules(ROOT) == {}


def test_the_measure_reads_every_layer_and_leaves_out_only_the_sql_tables(tmp_path):
    for rel in ("ports/big.py", "app/supervisor/big.py", "sql/templates.py"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * 12, encoding="utf-8")
    assert long_modules(tmp_path, limit=10) == {"app/supervisor/big.py": 12,
                                                 "ports/big.py": 12}
