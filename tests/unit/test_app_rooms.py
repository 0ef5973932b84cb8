"""The application's rooms (ARCHITECTURE.md, "The layers"): each module of app/ is one
concept and short, and no import circle runs between them, not even one closed by an
import inside a function or under ``TYPE_CHECKING``. The Memory service is one class
composed of collaborators, none of which imports the service back."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500
#: The circle another change removes (the Topic processor publishing through a public
#: port of the Topic service).
KNOWN_CIRCLES = frozenset({frozenset({"powercontext.topic_processing",
                                      "powercontext.topic_report",
                                      "powercontext.topic_service"})})


def app_imports(root: Path) -> dict[str, set[str]]:
    """Installed name -> the app modules it imports (anywhere in the module)."""
    mods = {("powercontext" if p.stem == "__init__" else f"powercontext.{p.stem}"): p
            for p in (root / "app").glob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = ([f"powercontext.{a.name}" for a in node.names]
                           if node.module == "powercontext" else [node.module])
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.add(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_in_the_application():
    assert circles(app_imports(ROOT)) <= KNOWN_CIRCLES


def test_the_checker_sees_a_circle_closed_inside_a_function(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text("from powercontext import b\n")
    (tmp_path / "app" / "b.py").write_text("def f():\n    from powercontext.a import x\n")
    assert circles(app_imports(tmp_path)) == {frozenset({"powercontext.a", "powercontext.b"})}


def test_the_memory_service_collaborators_never_import_the_service():
    graph = app_imports(ROOT)
    parts = ("business_keys", "citations", "ids", "memory_embedding", "memory_reads",
             "memory_search", "memory_writes", "secret_check")
    for part in parts:
        assert "powercontext.service" not in graph[f"powercontext.{part}"], part
    assert {f"powercontext.{p}" for p in parts} <= graph["powercontext.service"]


def test_application_modules_are_short():
    long = {p.name: n for p in (ROOT / "app").glob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these modules: {long}"
