"""The encoding of what ``powercontext`` prints (standard library only: the hook client
calls it before anything else is imported).

Machine output, a hook's stdout (what an agent injects) and every ``--json`` command's,
is UTF-8 whatever the locale or ``PYTHONIOENCODING`` says (Windows' cp1252 or cp932
cannot encode most text, and a hook that fails to print injects nothing). Human output
keeps the terminal's encoding and shows what it cannot encode as a ``\\uXXXX`` escape
instead of failing; so does stderr.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

__all__ = ["configure_output"]


def _reconfigure(stream: Any, **options: str) -> None:
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is None:  # not a TextIOWrapper (a test runner's stream): left alone
        return
    with contextlib.suppress(ValueError, OSError, LookupError):
        reconfigure(**options)  # (a closed or detached stream prints nothing anyway)


def configure_output(machine: bool) -> None:
    """Set up ``sys.stdout`` and ``sys.stderr`` before anything is printed: with
    ``machine`` (a hook, ``--json``) stdout writes UTF-8 (a lone surrogate, which UTF-8
    cannot carry, becomes ``?``); otherwise it keeps its encoding and writes a
    character outside it as a backslash escape. stderr always keeps its encoding, with
    backslash escapes."""
    if machine:
        _reconfigure(sys.stdout, encoding="utf-8", errors="replace")
    else:
        _reconfigure(sys.stdout, errors="backslashreplace")
    _reconfigure(sys.stderr, errors="backslashreplace")
