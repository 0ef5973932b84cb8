"""The public API (``powercontext/__init__``, file app/__init__.py): ``__all__`` pinned,
every name resolves to the object its home module defines, the whole error hierarchy is
exported, importing the package loads nothing else, and the example of docs/python.md imports
only from ``powercontext`` and runs as written."""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import powercontext
from powercontext.core import errors

ROOT = Path(__file__).resolve().parents[2]

PUBLIC = [
    "AnalyzerMismatchError",
    "Artifact",
    "ArtifactNotFoundError",
    "ArtifactRef",
    "BackendError",
    "CapabilityNotSupportedError",
    "CommitOutcomeUnknownError",
    "CurrentHead",
    "EmbeddingProfile",
    "HandoffCitation",
    "IntegrityError",
    "InvalidCitationError",
    "InvalidInputError",
    "MemoryCapabilities",
    "MemoryChange",
    "MemoryEntryInput",
    "MemoryEntryVersion",
    "MemoryHit",
    "MemoryRevision",
    "MemoryRevisionChanges",
    "MemorySearchRequest",
    "MemorySearchResult",
    "MemoryService",
    "OrganizeStep",
    "PowerContextError",
    "ProfileMismatchError",
    "RememberMode",
    "RetrievalShapeError",
    "RevisionConflictError",
    "SearchMode",
    "SecretDetectedError",
    "Source",
    "SourceRef",
    "SupervisorTermError",
    "SupervisorUnavailableError",
    "TopicHit",
    "TopicMemoryContent",
    "TopicMemoryService",
    "TopicProcessingError",
    "TopicProcessingUnavailableError",
    "TopicRef",
    "TopicRevision",
    "TopicSearchResult",
    "UpgradeRequiredError",
    "WritesPausedError",
    "make_source",
    "open_service",
    "open_topic_processor",
    "open_topic_service",
]


def test_all_is_the_pinned_sorted_list_of_public_names() -> None:
    assert powercontext.__all__ == PUBLIC
    assert sorted(PUBLIC) == PUBLIC
    assert set(PUBLIC) <= set(dir(powercontext))


def test_every_public_name_resolves_to_the_object_its_home_module_defines() -> None:
    homes = {
        "make_source": "powercontext.core.canonical",
        "OrganizeStep": "powercontext.core.planning",
        "MemoryService": "powercontext.service",
        "RememberMode": "powercontext.service",
        "open_service": "powercontext.runtime",
        "open_topic_service": "powercontext.runtime",
        "open_topic_processor": "powercontext.runtime",
        "TopicMemoryService": "powercontext.topic_service",
        **{n: "powercontext.core.topic.models" for n in (
            "TopicHit", "TopicMemoryContent", "TopicRef", "TopicRevision",
            "TopicSearchResult")},
    }
    for name in PUBLIC:
        if name in errors.__all__:
            home = "powercontext.core.errors"
        else:
            home = homes.get(name, "powercontext.core.models")
        assert getattr(powercontext, name) is getattr(importlib.import_module(home), name), name
    ns: dict[str, object] = {}
    exec("from powercontext import *", ns)
    assert {k for k in ns if k != "__builtins__"} == set(PUBLIC)


def test_the_whole_error_hierarchy_is_public() -> None:
    hierarchy = {
        name for name in dir(errors)
        if isinstance(getattr(errors, name), type)
        and issubclass(getattr(errors, name), errors.PowerContextError)
        and not name.startswith("_")
    }
    assert hierarchy == set(errors.__all__)
    assert hierarchy <= set(powercontext.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        powercontext.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("powercontext.NoSuchThing resolved")


def _python(code: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_HOME"] = str(home)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.subprocess
def test_import_loads_nothing_and_open_service_builds_nothing(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import powercontext\n"
        "print(sorted(m for m in sys.modules if m.startswith('powercontext')))\n"
        "print(powercontext.__all__)\n"
        "from powercontext import open_service, MemoryService\n"
        "from powercontext import open_topic_service, TopicMemoryService, TopicRef\n"
        "heavy = ('apsw', 'sqlite_vec', 'MySQLdb', 'powercontext.adapters', 'torch', 'mcp')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    proc = _python(code, tmp_path, tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    loaded, listed, heavy = proc.stdout.splitlines()
    assert loaded == "['powercontext']"
    assert listed == repr(PUBLIC)
    assert heavy == "[]"
    assert list(tmp_path.iterdir()) == []  # no database, manifest or data directory


def _python_doc_example() -> str:
    """The first Python block of docs/python.md, the example a user copies."""
    page = (ROOT / "docs" / "python.md").read_text("utf-8")
    match = re.search(r"```python\n(.*?)```", page, re.S)
    assert match, "docs/python.md has no python code block"
    return match.group(1)


def test_python_doc_example_imports_only_the_public_api() -> None:
    tree = ast.parse(_python_doc_example())
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported == {"asyncio", "powercontext"}
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert names <= set(PUBLIC)


@pytest.mark.subprocess
def test_python_doc_example_runs_as_written(tmp_path: Path) -> None:
    proc = _python(_python_doc_example(), tmp_path, tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("MemoryEntryVersion(")
    assert "text='Use uv to manage dependencies.'" in proc.stdout
    assert (tmp_path / "memory.db").is_file()
