"""No test asserts on the wall clock: under load (2 cores shared by many processes) an
elapsed-time bound fails at random and proves nothing about the code. Tests inject a
clock or a sleep and assert the requested delays, or order events (a server holds its
answer until released). Read from every test module's ``ast``; the checker tests itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

_CLOCKS = frozenset({"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "time",
                     "time_ns", "process_time"})
_TIMING_NAMES = ("elapsed", "started", "deadline", "start_time", "duration")


def _reads_clock(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _CLOCKS and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "time")


def wall_clock_asserts(source: str) -> list[int]:
    """Lines of ``assert`` statements that read the clock, or compare a name bound to a
    clock reading (``start = time.monotonic()`` ... ``assert time.monotonic() - start``)
    or named like a duration (``elapsed``, ``started``, ``deadline``)."""
    tree = ast.parse(source)
    clock_names = {
        t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
        and any(_reads_clock(n) for n in ast.walk(node.value))
        for t in node.targets if isinstance(t, ast.Name)
    }
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for sub in ast.walk(node.test):
            if _reads_clock(sub) or (isinstance(sub, ast.Name) and (
                    sub.id in clock_names or sub.id.lower().startswith(_TIMING_NAMES))):
                lines.append(node.lineno)
                break
    return lines


@pytest.mark.parametrize(
    "source",
    [
        "import time\nstart = time.monotonic()\nf()\nassert time.monotonic() - start < 1.0\n",
        "t0 = time.perf_counter()\nf()\nassert time.perf_counter() - t0 < 2\n",
        "elapsed = g()\nassert 0.25 < elapsed < 2.0\n",
        "deadline = time.time() + 3\nassert time.time() < deadline, 'late'\n",
    ],
)
def test_the_checker_finds_wall_clock_asserts(source: str) -> None:
    assert wall_clock_asserts(source)


def test_the_checker_leaves_other_asserts_alone() -> None:
    source = ("slept = []\nassert slept == [0.002, 0.004]\n"
              "assert server.answered == 1\nassert emb.timeout == 0.3\n")
    assert wall_clock_asserts(source) == []


def test_no_test_asserts_on_the_wall_clock() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in wall_clock_asserts(path.read_text("utf-8"))
    ]
    assert found == []
