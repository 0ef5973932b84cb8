"""The import rules of ARCHITECTURE.md ("The layers"), read from every module's ``ast``.

The layers, from the ground: ``core``; ``ports`` and ``sql``; the driven adapters
(``adapters/``, with the plugin registry ``plugins/``); the application (``app/``, the
package ``powercontext``); the entry points on top (``entrypoints/``: the CLI, HTTP and
dashboard, MCP, the Supervisor and Worker processes, the quickstart). The contract kit
(``testing/``, ``powercontext.testing``) stands beside the entry points: what a
third-party backend's tests import. An arrow runs down only:

- core imports only the standard library, attrs, cattrs and rfc8785 (anywhere, even
  inside a function).
- ports imports core; sql imports sqlglot and core.
- adapters never import the app (``powercontext`` itself, ``powercontext.service``, ...).
- app never imports adapters or sql at module level (the registry picks adapters at run
  time); an import inside a function is allowed. ``if TYPE_CHECKING:`` counts as module
  level.
- nothing below the entry points (core, ports, sql, adapters, plugins, app) imports
  ``powercontext.entrypoints``: not at module level, not inside a function, not under
  ``if TYPE_CHECKING:``. Entry points may import every layer.
- no product module imports the contract kit ``powercontext.testing`` (only tests do);
  the kit never imports the entry points, and imports only public names: no ``_name``,
  no module whose path has a ``_part``, and the application only through the package's
  own public names (``from powercontext import MemoryService``, not
  ``powercontext.service``).
- the exceptions, :data:`COMPAT_SHIMS`, are deprecated old names kept for one release
  (``python -m powercontext.supervisor``, ``python -m powercontext.quickstart``,
  ``powercontext.plugins.testing``), each importing only its new module.
- plugins never import adapters or the app at module level: adapters import plugins,
  so that would be a cycle.
- no module imports the bare source folders (``core``, ``app``, ...) or ``tests``.
- core has no import cycle (an import inside a function counts), holds no
  process-global state (no threads or locks, no ``lru_cache``/``cache``, no ``global``,
  no module-level empty or stateful container: memos live on the values; the one
  exception, :data:`_PURE_MEMOS`, is a few bounded memos of the analyzer's pure functions
  of a string, docs/decisions.md "The analyzer memoises its own output"), and no
  module longer than about 500 lines.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from support.imports import owning_module

ROOT = Path(__file__).resolve().parents[2]

SUBPACKAGES = ("core", "ports", "adapters", "plugins", "sql", "entrypoints", "testing")
"""Folders mapped to ``powercontext.<name>``; ``app/`` is ``powercontext`` itself."""
FOLDER_NAMES = frozenset({*SUBPACKAGES, "app", "tests", "bench", "support"})
APP = "powercontext"
ENTRYPOINTS = f"{APP}.entrypoints"
KIT = f"{APP}.testing"
COMPAT_SHIMS = {
    "app/supervisor": f"{ENTRYPOINTS}.supervisor",
    "app/quickstart": f"{ENTRYPOINTS}.quickstart",
    "plugins/testing.py": KIT,
}
"""Deprecated old names kept for one release (a service unit may run ``python -m
powercontext.supervisor``; a third party's tests may import ``powercontext.plugins.testing``):
file or folder -> the one module its files may import from an upper layer."""
STDLIB = "stdlib"


@attrs.frozen
class Import:
    path: Path
    line: int
    target: str  # absolute dotted name ("powercontext.core.models.Source", "attrs")
    module_level: bool

    @property
    def kind(self) -> str:
        """``stdlib``, ``powercontext`` (the app), ``powercontext.<sub>``, or the
        top-level name of a third-party distribution."""
        parts = self.target.split(".")
        if parts[0] in sys.stdlib_module_names:
            return STDLIB
        if parts[0] == APP:
            if len(parts) > 1 and parts[1] in SUBPACKAGES:
                return f"{APP}.{parts[1]}"
            return APP
        return parts[0]

    def __str__(self) -> str:
        where = "module level" if self.module_level else "in a function"
        return f"{self.path}:{self.line}: imports {self.target} ({where})"


def module_name(root: Path, path: Path) -> str:
    """The installed dotted name of a source file under ``root``."""
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    head = parts.pop(0)
    prefix = [APP] if head == "app" else [APP, head]
    return ".".join(prefix + parts)


class _Collector(ast.NodeVisitor):
    def __init__(self, path: Path, module: str, is_package: bool) -> None:
        self.path, self._depth = path, 0
        self.found: list[Import] = []
        self._package = module if is_package else module.rpartition(".")[0]

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, node: ast.stmt, target: str) -> None:
        self.found.append(Import(self.path, node.lineno, target, self._depth == 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base_parts = self._package.split(".")
            base_parts = base_parts[: len(base_parts) - (node.level - 1)]
            base = ".".join([*base_parts, node.module] if node.module else base_parts)
        else:
            base = node.module or ""
        for alias in node.names:
            self._add(node, base if alias.name == "*" else f"{base}.{alias.name}")


def imports_of(root: Path, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    collector = _Collector(
        path.relative_to(root), module_name(root, path), path.name == "__init__.py"
    )
    collector.visit(tree)
    return collector.found


def source_files(root: Path) -> Iterator[Path]:
    for folder in ("app", *SUBPACKAGES):
        yield from sorted(p for p in (root / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _is_app_module(root: Path, target: str) -> bool:
    """``powercontext.<x>...`` names a module of ``app/`` (``powercontext.service``), not
    a name the package ``powercontext`` exports (``powercontext.MemoryService``)."""
    parts = target.split(".")
    if len(parts) > 2:  # powercontext.<module>.<name>
        return True
    return len(parts) == 2 and ((root / "app" / f"{parts[1]}.py").exists()
                                or (root / "app" / parts[1]).is_dir())


def violations(root: Path) -> list[str]:
    """Every broken import rule under ``root`` (a tree laid out like this repository)."""
    broken: list[str] = []
    for path in source_files(root):
        rel = path.relative_to(root)
        layer = rel.parts[0]
        for imp in imports_of(root, path):
            kind, top = imp.kind, imp.target.split(".")[0]
            if top in FOLDER_NAMES:
                broken.append(f"{imp}: import the installed name, not the folder {top!r}")
            if kind in (ENTRYPOINTS, KIT) and kind != f"{APP}.{layer}":
                shim = COMPAT_SHIMS.get(rel.as_posix()) or COMPAT_SHIMS.get(rel.parent.as_posix())
                if shim is not None and (imp.target == shim or imp.target.startswith(shim + ".")):
                    continue
                if kind == KIT:
                    broken.append(f"{imp}: only tests import the contract kit {KIT}")
                elif layer != "testing":
                    broken.append(
                        f"{imp}: only entry points import {ENTRYPOINTS} (the top layer)")
                else:
                    broken.append(f"{imp}: the contract kit never imports {ENTRYPOINTS}")
                continue
            if layer == "core":
                allowed = {STDLIB, "attrs", "cattrs", "rfc8785", f"{APP}.core"}
                if kind not in allowed:
                    broken.append(f"{imp}: core imports only stdlib, attrs, cattrs, rfc8785")
            elif layer == "ports":
                if kind not in {STDLIB, f"{APP}.core", f"{APP}.ports"}:
                    broken.append(f"{imp}: ports imports only stdlib and core")
            elif layer == "sql":
                if kind not in {STDLIB, "sqlglot", f"{APP}.core", f"{APP}.sql"}:
                    broken.append(f"{imp}: sql imports only stdlib, sqlglot and core")
            elif layer == "adapters":
                if kind == APP:
                    broken.append(f"{imp}: adapters never import the app (entry points do)")
            elif layer == "plugins":
                if imp.module_level and kind in {APP, f"{APP}.adapters"}:
                    broken.append(f"{imp}: plugins import adapters/app only inside functions")
            elif layer == "testing" and kind != KIT and top == APP:
                private = [p for p in imp.target.split(".") if p.startswith("_")
                           and not (p.startswith("__") and p.endswith("__"))]
                if private:
                    broken.append(f"{imp}: the contract kit imports only public names")
                elif kind == APP and _is_app_module(root, imp.target):
                    broken.append(f"{imp}: the contract kit imports the application through "
                                  "its public names (from powercontext import ...)")
            elif layer == "app" and imp.module_level and kind in {f"{APP}.adapters", f"{APP}.sql"}:
                broken.append(
                    f"{imp}: app picks adapters through the registry at run time "
                    "(import inside a function, never at module level)"
                )
    return broken


# -- the rules hold in this repository ------------------------------------------------


def test_every_layer_is_read():
    files = list(source_files(ROOT))
    layers = {p.relative_to(ROOT).parts[0] for p in files}
    assert layers == {"app", *SUBPACKAGES}
    assert sum(len(imports_of(ROOT, p)) for p in files) > 20


def test_import_rules_hold():
    broken = violations(ROOT)
    assert not broken, "import rules broken (ARCHITECTURE.md):\n" + "\n".join(broken)


# -- the checker catches what it should (a synthetic tree) ----------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for folder in ("app", *SUBPACKAGES):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").touch()
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("core/bad.py", "import apsw\n", "core imports only"),
        ("core/bad.py", "def f():\n    import sqlglot\n", "core imports only"),
        ("core/bad.py", "from powercontext.ports import MemoryBackend\n", "core imports only"),
        ("core/bad.py", "from core import models\n", "not the folder 'core'"),
        ("ports/bad.py", "import attrs\nfrom powercontext.sql import t\n", "ports imports only"),
        ("sql/bad.py", "from powercontext.adapters import database\n", "sql imports only"),
        ("adapters/sqlite/bad.py", "from powercontext.service import S\n", "never import the app"),
        ("adapters/sqlite/bad.py", "from powercontext import MemoryService\n", "never import"),
        ("adapters/bad.py", "def f():\n    from ..service import S\n", "never import the app"),
        ("adapters/cli/main.py", "from powercontext.service import MemoryService\n",
         "never import the app"),
        ("adapters/bad.py", "def f():\n    from powercontext.entrypoints.cli import m\n",
         "only entry points"),
        ("app/bad.py", "from powercontext.entrypoints import supervisor\n", "only entry points"),
        ("app/bad.py", "def f():\n    from .entrypoints.cli.hook import x\n", "only entry points"),
        (
            "app/bad.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from powercontext.entrypoints.http.deps import Services\n",
            "only entry points",
        ),
        ("core/bad.py", "def f():\n    import powercontext.entrypoints\n", "only entry points"),
        ("ports/bad.py", "from powercontext.entrypoints.mcp import tools\n", "only entry points"),
        ("sql/bad.py", "from powercontext.entrypoints import quickstart\n", "only entry points"),
        ("plugins/bad.py", "def f():\n    from powercontext.entrypoints.cli import m\n",
         "only entry points"),
        ("testing/x.py", "from powercontext.entrypoints.http import app\n",
         "never imports powercontext.entrypoints"),
        ("testing/x.py", "from powercontext.service import MemoryService\n",
         "through its public names"),
        ("testing/x.py", "def f():\n    from powercontext.runtime import open_service\n",
         "through its public names"),
        ("testing/x.py", "from powercontext.adapters.storage.base import _run\n",
         "only public names"),
        ("testing/x.py", "from powercontext._service_core import Core\n", "only public names"),
        ("adapters/x.py", "def f():\n    from powercontext.testing import InMemoryBackend\n",
         "only tests import the contract kit"),
        ("app/x.py", "import powercontext.testing.strategies\n", "only tests import"),
        ("entrypoints/cli/x.py", "from powercontext.testing import run\n", "only tests import"),
        ("plugins/testing.py", "from powercontext.entrypoints import cli\n", "only entry points"),
        ("app/supervisor/__init__.py", "from powercontext.entrypoints.cli import main\n",
         "only entry points"),
        ("app/supervisor.py", "from powercontext.entrypoints.supervisor import main\n",
         "only entry points"),
        ("app/bad.py", "from powercontext.adapters.sqlite import B\n", "app picks adapters"),
        ("app/bad.py", "from powercontext import adapters\n", "app picks adapters"),
        ("app/bad.py", "from .adapters import sqlite\n", "app picks adapters"),
        (
            "app/bad.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from powercontext.sql import templates\n",
            "app picks adapters",
        ),
        ("plugins/bad.py", "from powercontext.adapters import sqlite\n", "plugins import"),
        ("plugins/bad.py", "from ..service import MemoryService\n", "plugins import"),
    ],
)
def test_checker_reports_a_broken_rule(tmp_path, name, text, expected):
    broken = violations(_tree(tmp_path, {name: text}))
    assert len(broken) >= 1
    assert expected in broken[0]
    assert broken[0].startswith(f"{name}:")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("core/ok.py", "import hashlib, unicodedata\nimport attrs, cattrs, rfc8785\n"),
        ("core/ok.py", "from . import models\nfrom .errors import E\n"),
        ("ports/ok.py", "from typing import Protocol\nfrom powercontext.core.models import M\n"),
        ("sql/ok.py", "import sqlglot\nfrom sqlglot import exp\nfrom powercontext.core import x\n"),
        ("adapters/sqlite/ok.py", "import apsw\nfrom powercontext.plugins import hookimpl\n"),
        ("entrypoints/cli/main.py", "from powercontext.service import MemoryService\n"),
        ("entrypoints/mcp/server.py", "from powercontext import MemoryService\n"),
        ("entrypoints/supervisor.py", "from powercontext.adapters.sqlite import B\n"),
        ("entrypoints/http/app.py", "from ..cli.context import Ctx\nfrom ... import runtime\n"),
        ("entrypoints/quickstart.py", "from powercontext.sql import templates\n"),
        ("app/supervisor/__main__.py", "from powercontext.entrypoints.supervisor import main\n"),
        ("app/quickstart/__init__.py", "from powercontext.entrypoints.quickstart import main\n"),
        ("app/ok.py", "def f():\n    from powercontext.adapters.sqlite import B\n"),
        ("app/ok.py", "import click\nfrom powercontext.plugins.registry import Registry\n"),
        ("plugins/ok.py", "def f():\n    import powercontext.adapters.sqlite\n"),
        ("testing/memory_backend.py", "from powercontext.adapters.database import D\n"),
        ("testing/base.py", "from powercontext import MemoryService\nfrom . import strategies\n"),
        ("testing/base.py", "from powercontext.testing._helpers import x\n"),
        ("testing/base.py", "from powercontext.core.models import Source\nimport hypothesis\n"),
        ("plugins/testing.py", "import powercontext.testing as _kit\n"
                               "from powercontext.testing import *\n"),
    ],
)
def test_checker_accepts_allowed_imports(tmp_path, name, text):
    assert violations(_tree(tmp_path, {name: text})) == []


def test_relative_imports_resolve_to_installed_names(tmp_path):
    root = _tree(tmp_path, {"adapters/sqlite/backend.py": "from ..database import D\n"})
    (target,) = [i.target for i in imports_of(root, root / "adapters/sqlite/backend.py")]
    assert target == "powercontext.adapters.database.D"
    root = _tree(tmp_path, {"app/service.py": "from .core import models\nfrom . import x\n"})
    targets = [i.target for i in imports_of(root, root / "app/service.py")]
    assert targets == ["powercontext.core.models", "powercontext.x"]


# -- core: no import cycle, no process-global state, small modules -------------------


def core_modules(root: Path) -> dict[str, Path]:
    """Installed dotted name -> file of every module under ``root/core``."""
    return {
        module_name(root, p): p
        for p in sorted((root / "core").rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def import_cycles(root: Path) -> list[list[str]]:
    """The import cycles among core modules, each as a closed path of module names.
    Every import counts: module level, inside a function, under ``if TYPE_CHECKING``."""
    modules = core_modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imp in imports_of(root, path):
            dep = owning_module(imp.target, modules)
            if dep is not None and dep != name:
                graph[name].add(dep)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append([*path[path.index(dep):], dep])
            elif dep not in state:
                visit(dep)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


_THREAD_MODULES = frozenset({"threading", "_thread", "multiprocessing", "concurrent", "queue"})
_CACHE_DECORATORS = frozenset({"lru_cache", "cache"})
#: The bounded ``lru_cache`` memos core may hold, as (module path, function): pure, total
#: functions of an immutable ``str`` (and a frozen Analyzer) whose results are immutable
#: or copied, so no caller can tell them from the uncached call (issue 14: one write
#: analyzes an entry's text twice, one search its query twice).
_PURE_MEMOS = frozenset({("core/analyzer.py", "_memo_tokens"),
                         ("core/analyzer_porter.py", "stem"),
                         # texts the secret rules pass only (core/secrets.py stored_text_secret)
                         ("core/secrets.py", "_memo_clean"),
                         # a span's tokens, for the snippet windows (core/topic/snippets.py)
                         ("core/topic/snippets.py", "_span_tokens")})
_STATEFUL_CONTAINERS = frozenset({
    "OrderedDict", "defaultdict", "deque", "Counter", "ChainMap",
    "WeakValueDictionary", "WeakKeyDictionary", "WeakSet",
})
_EMPTY_CALLS = frozenset({"dict", "list", "set", "bytearray"})


def _call_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_mutable_store(value: ast.expr | None) -> bool:
    """An empty mutable container (filled later: a cache or a registry) or a stateful
    collection (ordered/weak/default dicts, deques), whatever its contents."""
    if value is None:
        return False
    if isinstance(value, ast.Dict | ast.List | ast.Set) and not (
        getattr(value, "keys", None) or getattr(value, "elts", None)
    ):
        return True
    if isinstance(value, ast.Call):
        name = _call_name(value)
        if name in _STATEFUL_CONTAINERS:
            return True
        if name in _EMPTY_CALLS and not value.args and not value.keywords:
            return True
    return False


def process_state(root: Path) -> list[str]:
    """Process-global mutable state in core (which is pure: no threads, no locks, no
    caches shared across calls): thread and lock imports, ``functools.lru_cache`` /
    ``functools.cache`` decorators, ``global`` statements, and a module-level name bound
    to an empty mutable container or a stateful collection."""
    found: list[str] = []
    for path in core_modules(root).values():
        rel = path.relative_to(root)
        for imp in imports_of(root, path):
            if imp.target.split(".")[0] in _THREAD_MODULES:
                found.append(f"{imp}: core holds no threads or locks")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for deco in node.decorator_list:
                    if (_call_name(deco) in _CACHE_DECORATORS
                            and (rel.as_posix(), node.name) not in _PURE_MEMOS):
                        found.append(f"{rel}:{deco.lineno}: a process-global cache on "
                                     f"{node.name}() ({_call_name(deco)})")
            elif isinstance(node, ast.Global):
                found.append(f"{rel}:{node.lineno}: global {', '.join(node.names)}")
        for stmt in tree.body:
            targets: list[ast.expr] = []
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign):
                targets, value = [stmt.target], stmt.value
            else:
                continue
            if _is_mutable_store(value):
                names = ", ".join(ast.unparse(t) for t in targets)
                found.append(f"{rel}:{stmt.lineno}: module-level mutable store {names}")
    return found


MAX_CORE_MODULE_LINES = 500
"""A core module is read in one sitting."""


def long_modules(root: Path, limit: int = MAX_CORE_MODULE_LINES) -> list[str]:
    return [
        f"{path.relative_to(root)}: {n} lines (limit {limit})"
        for path in core_modules(root).values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit
    ]


def test_core_has_no_import_cycle():
    cycles = import_cycles(ROOT)
    assert not cycles, "core import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_core_holds_no_process_global_state():
    found = process_state(ROOT)
    assert not found, "core must be pure (ARCHITECTURE.md):\n" + "\n".join(found)


def test_core_modules_are_short():
    assert len(core_modules(ROOT)) > 10
    too_long = long_modules(ROOT)
    assert not too_long, "split these core modules:\n" + "\n".join(too_long)


@pytest.mark.parametrize(
    "files",
    [
        {
            "core/a.py": "from powercontext.core import b\n",
            "core/b.py": "import powercontext.core.a\n",
        },
        {
            "core/a.py": "def f():\n    from powercontext.core.b import g\n",
            "core/b.py": "from powercontext.core.a import f\n",
        },
        {
            "core/a.py": "from .b import x\n",
            "core/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from powercontext.core.c import y\n",
            "core/c.py": "def h():\n    from . import a\n",
        },
        {
            "core/pkg/__init__.py": "from powercontext.core.pkg.m import x\n",
            "core/pkg/m.py": "from powercontext.core.pkg import y\n",
        },
    ],
)
def test_cycle_checker_finds_a_cycle(tmp_path, files):
    (cycle,) = import_cycles(_tree(tmp_path, files))
    assert cycle[0] == cycle[-1] and len(cycle) >= 3


def test_cycle_checker_accepts_a_one_way_graph(tmp_path):
    root = _tree(tmp_path, {
        "core/a.py": "from powercontext.core import b\ndef f():\n    from .c import z\n",
        "core/b.py": "from powercontext.core.c import z\nimport hashlib\n",
        "core/c.py": "import attrs\n",
        "core/pkg/__init__.py": "from powercontext.core.pkg.m import x\n",
        "core/pkg/m.py": "from powercontext.core.c import z\n",
    })
    assert import_cycles(root) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import threading\n_lock = threading.Lock()\n", "no threads or locks"),
        ("from concurrent.futures import ThreadPoolExecutor\n", "no threads or locks"),
        ("import functools\n@functools.lru_cache(maxsize=8)\ndef f(x):\n    return x\n",
         "process-global cache on f() (lru_cache)"),
        ("from functools import cache\nclass C:\n    @cache\n    def m(self):\n        return 1\n",
         "process-global cache on m() (cache)"),
        ("import weakref\n_views = weakref.WeakValueDictionary()\n", "mutable store _views"),
        ("from collections import OrderedDict\n_memo: OrderedDict[int, str] = OrderedDict()\n",
         "mutable store _memo"),
        ("_seen = {}\n", "mutable store _seen"),
        ("_hits = set()\n", "mutable store _hits"),
        ("REGISTRY: list[str] = []\n", "mutable store REGISTRY"),
        ("_n = 0\ndef bump():\n    global _n\n    _n += 1\n", "global _n"),
    ],
)
def test_state_checker_reports_process_state(tmp_path, text, expected):
    found = process_state(_tree(tmp_path, {"core/bad.py": text}))
    assert len(found) >= 1
    assert any(expected in f and f.startswith("core/bad.py:") for f in found), found


def test_state_checker_accepts_constants_and_per_value_memos(tmp_path):
    text = (
        "import functools, re\nfrom types import MappingProxyType\nimport attrs\n"
        "_TABLE = {'a': 1}\n_WORDS = frozenset({'x'})\n_PATTERN = re.compile('a')\n"
        "_NAMES = ('a', 'b')\nTABLE = MappingProxyType({'a': 1})\n"
        "@attrs.frozen\nclass V:\n    x: int\n    @functools.cached_property\n"
        "    def doubled(self) -> int:\n        return 2 * self.x\n"
        "def f():\n    seen = {}\n    return seen\n"
    )
    assert process_state(_tree(tmp_path, {"core/ok.py": text})) == []


def test_long_module_checker(tmp_path):
    root = _tree(tmp_path, {"core/big.py": "x = 1\n" * 12, "core/small.py": "x = 1\n"})
    assert long_modules(root, limit=10) == ["core/big.py: 12 lines (limit 10)"]
