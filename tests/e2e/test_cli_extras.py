"""A command that needs an optional package which is not installed names the extra to
install (exit 5), never "unexpected error: ModuleNotFoundError": ``serve`` without the
``server`` extra, an ``oceanbase://`` database without ``mysqlclient``, ``mcp``
without the ``mcp`` extra.

It runs in a real virtual environment made in the test's folder with the base
installation only: ``python -m venv``, this checkout's editable install (its ``.pth``
and finder, the wheel-less source) and the distributions the package requires without
an extra, resolved from the installed metadata and linked from this environment (no
download; about a second)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from importlib.metadata import Distribution, PackageNotFoundError
from pathlib import Path

import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]
PURELIB = Path(sysconfig.get_paths()["purelib"])


def distribution(name: str) -> Distribution:
    """The distribution installed in this environment's site-packages: never the
    checkout's own ``powercontext.egg-info``, which another test putting the checkout on
    ``sys.path`` would make ``importlib.metadata.distribution`` find first."""
    for dist in Distribution.discover(name=name, path=[str(PURELIB)]):
        return dist
    raise PackageNotFoundError(name)


def requires(name: str) -> list[str] | None:
    return distribution(name).requires


def _base_distributions() -> set[str]:
    """``powercontext`` and every distribution it needs without an extra (transitive)."""
    todo, seen = ["powercontext"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in requires(name) or ():
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            try:
                distribution(req.name)
            except PackageNotFoundError:
                continue
            todo.append(req.name)
    return seen


@pytest.fixture(scope="module")
def base_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("base-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    here = PURELIB
    linked: set[str] = set()
    for name in _base_distributions():
        dist = distribution(name)
        for file in dist.files or ():
            top = file.parts[0]
            if top in ("..", "__pycache__") or top in linked:
                continue
            source = here / top
            if source.exists():
                (site / top).symlink_to(source)
                linked.add(top)
    assert "__editable__.powercontext-" in " ".join(linked) or any(
        n.startswith("__editable__") for n in linked)
    # the environment really lacks the extras
    probe = subprocess.run([str(python), "-c", "import fastapi"], capture_output=True)
    assert probe.returncode != 0
    return python


def _run(python: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_HOME"] = str(tmp_path / "home")
    return subprocess.run([str(python), "-m", "powercontext.entrypoints.cli.main", *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)


def test_the_base_environment_runs_the_cli(base_python: Path, tmp_path: Path) -> None:
    out = _run(base_python, tmp_path, "--db", str(tmp_path / "m.db"), "memory",
               "remember", "--key", "k", "--text", "base install works")
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("args,package,extra", [
    (["serve", "--port", "0"], "fastapi", "server"),
    (["--db", "oceanbase://user:pw@127.0.0.1:1/db", "memory", "list"], "mysqlclient",
     "oceanbase"),
    (["mcp"], "mcp", "mcp"),
], ids=["serve", "oceanbase", "mcp"])
def test_a_missing_extra_is_named_with_the_command_to_install_it(
        base_python: Path, tmp_path: Path, args: list[str], package: str,
        extra: str) -> None:
    out = _run(base_python, tmp_path, "--db", str(tmp_path / "m.db"), *args) \
        if args[0] != "--db" else _run(base_python, tmp_path, *args)
    assert out.returncode == 5, (out.stdout, out.stderr)
    last = out.stderr.strip().splitlines()[-1]
    assert last == (f"powercontext: not installed: {package} is not installed (the "
                    f"'{extra}' extra): pip install 'powercontext[{extra}]'"), out.stderr
    assert "ModuleNotFoundError" not in out.stderr and "Traceback" not in out.stderr
    assert not re.search(r"pw@", out.stderr)
