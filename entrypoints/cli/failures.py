"""Failures that are the installation's or the machine's, told as what to do: an
optional package that is not installed names the extra that brings it
(:func:`missing_extra`), and a server address already in use has its own error
(:class:`AddressInUseError`, exit 9). Standard library only; :mod:`.context` maps them.
"""

from __future__ import annotations

from powercontext.core.errors import PowerContextError

__all__ = ["EXTRAS", "AddressInUseError", "missing_extra"]

#: Top-level module -> the extra of ``powercontext`` that installs it.
EXTRAS = {
    "fastapi": "server", "starlette": "server", "uvicorn": "server", "jinja2": "server",
    "markdown_it": "server", "nh3": "server", "itsdangerous": "server",
    "fastapi_offline": "server",
    "MySQLdb": "oceanbase",
    "mcp": "mcp",
    "openai": "openai",
    "anthropic": "anthropic",
    "sentence_transformers": "local", "transformers": "local", "torch": "local",
}


class AddressInUseError(PowerContextError):
    """The address ``serve`` was asked to listen on is taken (another process, often an
    earlier ``serve``): exit 9, never the revision-conflict or bad-input code."""


def missing_extra(exc: BaseException) -> str | None:
    """The one line to print when ``exc`` (or what caused it) is a ModuleNotFoundError
    for an optional package: ``<package> is not installed: pip install
    'powercontext[<extra>]'``; None for anything else."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ModuleNotFoundError) and cur.name:
            top = cur.name.partition(".")[0]
            extra = EXTRAS.get(top)
            if extra is not None:
                package = "mysqlclient" if top == "MySQLdb" else top.replace("_", "-")
                return (f"{package} is not installed (the '{extra}' extra): "
                        f"pip install 'powercontext[{extra}]'")
        cur = cur.__cause__ or cur.__context__
    return None
