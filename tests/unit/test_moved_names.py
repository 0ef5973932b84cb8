"""The names powercontext.runtime and powercontext.topic_config re-exported before they
had homes of their own are deprecated shims: reading one still gives the same object and
warns with its new import, and nothing in the tree reads them any more."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from powercontext import configuration, file_locks, memory_names, paths, runtime, topic_provider

ROOT = Path(__file__).resolve().parents[2]
SHIMS = {"powercontext.runtime": runtime._MOVED,
         "powercontext.topic_config": importlib.import_module("powercontext.topic_config")._MOVED}


@pytest.mark.parametrize(("module", "name", "home"), [
    ("powercontext.runtime", "data_dir", paths),
    ("powercontext.runtime", "topic_processing_lock", file_locks),
    ("powercontext.runtime", "remember_entries", memory_names),
    ("powercontext.topic_config", "load_config", configuration),
    ("powercontext.topic_config", "topic_generation_model", topic_provider),
])
def test_a_moved_name_warns_and_is_its_homes_object(module, name, home):
    shim = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{name} moved to {home.__name__}"):
        value = getattr(shim, name)
    assert value is getattr(home, name)


def test_every_moved_name_is_defined_at_its_home():
    for table in SHIMS.values():
        for name, home in table.items():
            assert hasattr(importlib.import_module(home), name), (name, home)


def test_the_composition_root_names_do_not_warn_and_unknown_names_still_fail(recwarn):
    assert callable(runtime.open_service) and callable(runtime.open_topic_processor)
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        runtime.nothing_here  # noqa: B018


def test_nothing_in_the_tree_reads_a_moved_name():
    readers = []
    for folder in ("core", "ports", "sql", "adapters", "plugins", "app", "entrypoints",
                   "testing", "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "test_moved_names.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module in SHIMS:
                    moved = [a.name for a in node.names if a.name in SHIMS[node.module]]
                    if moved:
                        readers.append(f"{path.relative_to(ROOT)}:{node.lineno} {moved}")
                if (isinstance(node, ast.ImportFrom) and node.module == "powercontext"
                        and any(a.name == "topic_config" for a in node.names)):
                    readers.append(f"{path.relative_to(ROOT)}:{node.lineno} topic_config")
    assert readers == []
