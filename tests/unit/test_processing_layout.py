"""The layout of Topic processing and its Supervisor, read from the source: each module
of one concept and under 500 lines; the processor reaching the Topic service only
through its public processing port (``ports.topic_publisher.TopicPublisher``), never
its private methods (it called ``service._publish`` and ``service._query_vector``);
the Supervisor reading its locking policy from the backend, never from the URL (it
tested whether the URL said ``sqlite``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The modules Topic processing is made of (app/ is the package ``powercontext``).
PROCESSING = ("topic_processing", "topic_window_runner", "topic_attempt", "topic_probing",
              "topic_retrieval", "topic_evolution", "topic_report")
#: The Supervisor's modules (entrypoints/ is the package ``powercontext.entrypoints``).
SUPERVISOR = ("supervisor", "supervisor_leases", "supervisor_scheduling",
              "supervisor_workers")
MAX_LINES = 500


def _app_modules() -> list[Path]:
    return sorted((ROOT / "app").glob("*.py"))


@pytest.mark.parametrize("name", PROCESSING)
def test_each_processing_module_is_under_the_size_limit(name: str) -> None:
    lines = (ROOT / "app" / f"{name}.py").read_text("utf-8").count("\n")
    assert lines < MAX_LINES, f"app/{name}.py has {lines} lines"


@pytest.mark.parametrize("name", SUPERVISOR)
def test_each_supervisor_module_is_under_the_size_limit(name: str) -> None:
    lines = (ROOT / "entrypoints" / f"{name}.py").read_text("utf-8").count("\n")
    assert lines < MAX_LINES, f"entrypoints/{name}.py has {lines} lines"


@pytest.mark.parametrize("name", SUPERVISOR)
def test_the_supervisor_never_reads_its_policy_from_the_url(name: str) -> None:
    tree = ast.parse((ROOT / "entrypoints" / f"{name}.py").read_text("utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for alias in node.names}
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert "url_scheme" not in names and "sqlite" not in strings


def private_calls_on_others(tree: ast.AST, names: frozenset[str]) -> list[int]:
    """Lines where ``x.NAME`` is read for a private NAME in ``names`` on anything but
    ``self`` (``self.service._publish`` counts: its value is ``self.service``)."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in names
            and not (isinstance(node.value, ast.Name) and node.value.id == "self")]


def test_no_module_reaches_the_topic_services_private_publication() -> None:
    names = frozenset({"_publish", "_query_vector", "_embed", "_hybrid_model"})
    found = {}
    for path in _app_modules():
        lines = private_calls_on_others(ast.parse(path.read_text("utf-8")), names)
        if lines:
            found[path.name] = lines
    assert found == {}


@pytest.mark.parametrize("name", PROCESSING)
def test_processing_does_not_import_the_topic_service(name: str) -> None:
    # the processor depends on the port; the service imports the processor (process())
    tree = ast.parse((ROOT / "app" / f"{name}.py").read_text("utf-8"))
    imported = {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    assert "powercontext.topic_service" not in imported


def test_the_checker_finds_a_private_call_through_an_attribute() -> None:
    tree = ast.parse("async def f(self):\n    await self.service._publish('s')\n"
                     "    self._publish()\n")
    assert private_calls_on_others(tree, frozenset({"_publish"})) == [2]


def test_serve_reads_the_one_process_rule_from_the_backend() -> None:
    """``serve --role api|background`` is refused for a ``file-lock`` backend by what the
    Topic backend declares, not by testing whether the URL says sqlite."""
    tree = ast.parse((ROOT / "entrypoints" / "cli" / "serve.py").read_text("utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for alias in node.names}
    assert "url_scheme" not in names and "registry_locking" in names
