"""The CLI as a separate process, the way agents and hooks run it."""

from __future__ import annotations

import sys


def cli_argv() -> list[str]:
    """argv prefix that runs ``powercontext`` with this interpreter."""
    return [sys.executable, "-m", "powercontext.adapters.cli.main"]
