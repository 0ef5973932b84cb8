"""The Makefile's install plan, read with ``make -n`` against an empty virtualenv folder:
``make quickstart`` installs only the base package (no extras, no Debian packages),
``make test`` installs the dev and local extras, and the two stamps share one .venv
(a quickstart after a test installs nothing; a test after a quickstart installs the
extras)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _plan(target: str, venv: Path) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


def _installs(plan: str) -> list[str]:
    return [line for line in plan.splitlines() if "pip install" in line
            or line.strip().startswith("-c constraints.txt")]


def _stamps(plan: str) -> list[str]:
    return [w for line in plan.splitlines() if line.startswith("touch ")
            for w in line.split()[1:]]


def test_quickstart_installs_the_base_package_only(tmp_path: Path) -> None:
    plan = _plan("quickstart", tmp_path / "venv")
    install = "\n".join(_installs(plan))
    assert "-e ." in install and "-e '.[" not in install and "[dev" not in install
    assert "deb-packages" not in plan and "apt-get" not in plan
    assert "Installing powercontext" in plan  # the progress line before pip
    assert "--quiet" not in plan
    assert "powercontext.quickstart" in plan


def test_test_installs_the_dev_and_local_extras(tmp_path: Path) -> None:
    plan = _plan("test", tmp_path / "venv")
    assert "-e '.[dev,local]'" in "\n".join(_installs(plan))
    assert "deb-packages" in plan
    assert "--quiet" not in plan


def test_quickstart_after_test_installs_nothing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    for stamp in _stamps(_plan("test", venv)):  # what a finished `make test` leaves
        Path(stamp).touch()
    assert _installs(_plan("quickstart", venv)) == []
    assert _installs(_plan("test", venv)) == []


def test_test_after_quickstart_installs_the_extras(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    for stamp in _stamps(_plan("quickstart", venv)):  # what a finished quickstart leaves
        Path(stamp).touch()
    assert _installs(_plan("quickstart", venv)) == []
    assert "-e '.[dev,local]'" in "\n".join(_installs(_plan("test", venv)))
