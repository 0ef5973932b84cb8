"""The CLI as a separate process, the way agents and hooks run it."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any


def cli_argv() -> list[str]:
    """argv prefix that runs ``powercontext`` with this interpreter."""
    return [sys.executable, "-m", "powercontext.entrypoints.cli.main"]


def invoke_hooks(tmp_path: Path, db: Path, *args: str, stdin: str | None = None) -> Any:
    """The CLI in process (click's runner) with the ``hook`` group, POWERCONTEXT_HOME under
    ``tmp_path`` and no database or embedding from the environment; exit code 0
    asserted. Returns click's Result."""
    from click.testing import CliRunner

    from powercontext.entrypoints.cli import hook as hook_mod
    from powercontext.entrypoints.cli.main import cli

    group = copy.copy(cli)
    group.commands = dict(cli.commands, hook=hook_mod.hook)
    env = {"POWERCONTEXT_HOME": str(tmp_path / "home"), "POWERCONTEXT_DB": None,
           "POWERCONTEXT_EMBEDDING": None}
    result = CliRunner(env=env).invoke(group, ["--db", str(db), *args], input=stdin,
                                       catch_exceptions=False)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result
