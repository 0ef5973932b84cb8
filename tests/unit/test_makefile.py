"""The Makefile's install plan, read with ``make -n`` against an empty virtualenv folder:
``make quickstart`` installs only the base package (no extras, no Debian packages),
``make test`` installs the dev and local extras, and the two stamps share one .venv
(a quickstart after a test installs nothing; a test after a quickstart installs the
extras). ``make test`` also installs Debian's chromium for the browser tests, and a
browser that cannot be installed never stops it; ``make dashboard`` serves the
quickstart's database."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make"),
              pytest.mark.subprocess]


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
    assert "powercontext.entrypoints.quickstart" in plan


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


def test_test_installs_debian_chromium_for_the_browser_tests(tmp_path: Path) -> None:
    plan = _plan("test", tmp_path / "venv")
    assert "for p in chromium" in plan  # the browser-packages step, as root apt-get
    assert "--no-install-recommends" in plan


def test_a_browser_that_cannot_be_installed_does_not_stop_make_test() -> None:
    """As root the apt step fails (APT_GET=false), otherwise the command is printed:
    either way the step succeeds and says what is missing (the browser tests skip)."""
    done = subprocess.run(
        ["make", "--no-print-directory", "browser-packages",
         "BROWSER_PACKAGES=pc-no-such-package-for-the-test", "APT_GET=false"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pc-no-such-package-for-the-test" in done.stderr
    assert "browser tests" in done.stderr


def test_dashboard_serves_the_quickstart_database(tmp_path: Path) -> None:
    plan = _plan("dashboard", tmp_path / "venv")
    assert "-e '.[server]'" in "\n".join(_installs(plan))
    assert "powercontext.entrypoints.quickstart --db" in plan and "quickstart.db" in plan
    serve = next(line for line in plan.splitlines() if " serve " in line)
    assert "--db" in serve and "--host 127.0.0.1 --port 8765" in plan
    assert "deterministic" in plan  # the flush button processes with that provider
