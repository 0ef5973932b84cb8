"""Errors that tell the user what to do, through the CLI as a real process: output piped
into a reader that stops early (``| head``) ends quietly with 0; ``--db`` under a
missing directory is refused and nothing is created (only the default data directory
is made); a database whose directory cannot be written exits 2 naming ``db``; a busy
port is exit 9 with its own message; the README's ``POWERCONTEXT_DB=$PWD/.memory.db``
leaves ``git status`` clean. (A missing optional package: test_cli_extras.py.)"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import cli_argv

pytestmark = [pytest.mark.subprocess, pytest.mark.server]  # the CLI; a busy port


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_HOME"] = str(tmp / "home")
    env.update(extra)
    return env


def pc(tmp: Path, *args: str, env: dict[str, str] | None = None,
       cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli_argv(), *args], capture_output=True, text=True,
                          env=env or _env(tmp), cwd=cwd, timeout=300)


@pytest.fixture
def big_source(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "memory.db"
    text = tmp_path / "big.txt"
    text.write_text("word " * 400_000 + "\n", "utf-8")  # 2 MB: far over any pipe buffer
    out = pc(tmp_path, "--db", str(db), "--json", "source", "add", "--scope", "project:p",
             str(text))
    assert out.returncode == 0, out.stderr
    return db, json.loads(out.stdout)["sources"][0]["source_id"]


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["human", "json"])
def test_output_piped_into_a_reader_that_stops_ends_quietly(
        tmp_path: Path, big_source: tuple[Path, str], json_flag: list[str]) -> None:
    db, source_id = big_source
    proc = subprocess.Popen([*cli_argv(), "--db", str(db), *json_flag, "source", "show",
                             source_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(tmp_path))
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)  # like `| head -c 100`: read a little, then leave
    proc.stdout.close()
    stderr = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    assert proc.wait(timeout=300) == 0, stderr
    assert stderr == ""


def test_a_db_under_a_missing_directory_is_refused_and_nothing_is_created(
        tmp_path: Path) -> None:
    db = tmp_path / "no" / "such" / "dir" / "memory.db"
    out = pc(tmp_path, "--db", str(db), "memory", "remember", "--key", "k", "--text", "x")
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("powercontext: bad input: db: the directory ")
    assert f"mkdir -p {db.parent}" in out.stderr
    assert not (tmp_path / "no").exists()


def test_the_default_data_directory_is_created(tmp_path: Path) -> None:
    home = tmp_path / "fresh" / "home"
    out = pc(tmp_path, "memory", "remember", "--key", "k", "--text", "x",
             env=_env(tmp_path, POWERCONTEXT_HOME=str(home)))
    assert out.returncode == 0, out.stderr
    assert (home / "memory.db").is_file()


@pytest.fixture
def immutable_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory holding a database that even root cannot write into (chattr +i):
    SQLite cannot create the -wal file beside it."""
    folder = tmp_path / "locked"
    folder.mkdir()
    out = pc(tmp_path, "--db", str(folder / "memory.db"), "memory", "remember", "--key",
             "k", "--text", "x")
    assert out.returncode == 0, out.stderr
    for extra in folder.glob("memory.db-*"):
        extra.unlink()
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available on this file system")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.mark.parametrize("args", [["memory", "list"],
                                  ["memory", "remember", "--key", "k", "--text", "y"],
                                  ["memory", "search", "x", "-m", "key:k"]])
def test_an_unwritable_database_exits_2_naming_db(tmp_path: Path, immutable_dir: Path,
                                                  args: list[str]) -> None:
    out = pc(tmp_path, "--db", str(immutable_dir / "memory.db"), "--json", *args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    error = json.loads(out.stdout)
    assert error["error"] == "InvalidInputError" and error["exit_code"] == 2
    assert error["message"].startswith("db: ") and "not writable" in error["message"]


def test_a_busy_port_has_its_own_exit_code(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = pc(tmp_path, "--db", str(tmp_path / "serve.db"), "serve", "--port", str(port))
    assert out.returncode == 9, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"powercontext: address in use: cannot listen on 127.0.0.1:{port}")
    assert "--port" in last


def test_the_readmes_database_in_a_checkout_leaves_git_status_clean(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "Makefile").write_text("test:\n\tpytest -q\n", "utf-8")
    subprocess.run([*git, "add", "Makefile"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    env = _env(tmp_path, POWERCONTEXT_DB=str(repo / ".memory.db"))
    for args in (["memory", "remember", "--key", f"repo:{repo}", "--text",
                  "Run make test before review", "--source", "Makefile"],
                 ["memory", "search", "make test", "-m", f"key:repo:{repo}"],
                 ["source", "add", "--scope", f"repo:{repo}", "Makefile"]):
        out = pc(tmp_path, *args, env=env, cwd=repo)
        assert out.returncode == 0, out.stderr
    assert (repo / ".memory.db").is_file()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=repo, capture_output=True, text=True, check=True)
    assert status.stdout == ""
    # the ignore list is Git's own, never a file of the checkout
    assert "/.memory.db*" in (repo / ".git" / "info" / "exclude").read_text("utf-8")
