"""The process entries' old module names still run (they moved to
``powercontext.entrypoints``): a service unit or script written for ``python -m
powercontext.supervisor`` or ``python -m powercontext.quickstart`` keeps working for one
release, with the same options, output and exit code as the new name."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest


def test_old_names_hold_the_same_objects() -> None:
    import powercontext.entrypoints.quickstart as quickstart
    import powercontext.entrypoints.supervisor as supervisor
    import powercontext.quickstart as old_quickstart
    import powercontext.supervisor as old_supervisor

    assert old_supervisor.ArtifactProcessingSupervisor is supervisor.ArtifactProcessingSupervisor
    assert old_supervisor.main is supervisor.main
    assert old_quickstart.main is quickstart.main
    assert old_quickstart.run_quickstart is quickstart.run_quickstart


def test_the_console_script_names_the_entry_point_package() -> None:
    (script,) = metadata.entry_points(group="console_scripts", name="powercontext")
    assert script.value == "powercontext.entrypoints.cli.entry:main"
    assert script.load().__module__ == "powercontext.entrypoints.cli.entry"


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.subprocess
def test_python_m_powercontext_supervisor_runs_the_supervisor(tmp_path: Path) -> None:
    """The old runner refuses a SQLite database exactly as the new one does (exit 2, the
    same message, the database never opened)."""
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    was = _run("powercontext.supervisor", "--db", str(old))
    now = _run("powercontext.entrypoints.supervisor", "--db", str(new))
    assert was.returncode == now.returncode == 2
    assert "serve --role all" in was.stderr
    assert was.stderr.replace(str(old), "DB") == now.stderr.replace(str(new), "DB")
    assert not old.exists() and not new.exists()


@pytest.mark.subprocess
def test_python_m_powercontext_quickstart_runs_the_quickstart() -> None:
    was = _run("powercontext.quickstart", "--help")
    now = _run("powercontext.entrypoints.quickstart", "--help")
    assert was.returncode == now.returncode == 0
    assert was.stdout == now.stdout and "--repo" in was.stdout
