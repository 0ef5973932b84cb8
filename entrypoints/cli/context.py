"""What every ``powercontext`` command shares: the :class:`Ctx` (database, ``--json``,
embedding model), output helpers and the one mapping from errors to exit codes.

Exit codes: 0 success, 1 unexpected error, 2 bad input (also a click usage error, and an
embedding profile or analyzer mismatch: ``memory rebuild`` migrates), 3
revision conflict, 4 not found, 5 capability not supported (also an optional package
that is not installed: the line names the extra to install), 6 invalid citation, 7
integrity error, 9 the address ``serve`` should listen on is in use, 130 interrupted
(Ctrl-C). Output cut short by its reader (``| head``) ends quietly with 0 (docs/cli.md).
Every failure prints one line on stderr, or
with ``--json`` one JSON object ``{"error", "message", "exit_code"}`` on stdout; a
traceback only with ``POWERCONTEXT_DEBUG=1``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import click

__all__ = [
    "EXIT_ADDRESS_IN_USE",
    "EXIT_BAD_INPUT",
    "EXIT_CAPABILITY",
    "EXIT_CONFLICT",
    "EXIT_INTEGRITY",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID_CITATION",
    "EXIT_NOT_FOUND",
    "EXIT_UNEXPECTED",
    "Ctx",
    "LazyGroup",
    "classify",
    "fail",
    "pass_ctx",
    "quiet_broken_pipe",
    "resolve",
    "term_line",
    "term_safe",
    "term_text",
]

T = TypeVar("T")

EXIT_UNEXPECTED = 1
EXIT_BAD_INPUT = 2
EXIT_CONFLICT = 3
EXIT_NOT_FOUND = 4
EXIT_CAPABILITY = 5
EXIT_INVALID_CITATION = 6
EXIT_INTEGRITY = 7
#: ``serve``: the address to listen on is already in use (another server holds it).
EXIT_ADDRESS_IN_USE = 9
EXIT_INTERRUPTED = 130


#: C0 controls except tab and line feed, DEL and the C1 controls: a terminal acts on
#: them (ESC starts title-setting OSC and other sequences, BEL rings), so stored text
#: (untrusted: Sources, model output) never reaches a terminal with them raw. Also the
#: line and paragraph separators and the bidirectional controls, which break a line or
#: reorder what a reader sees.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                       "\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    cp = ord(m.group())
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


def term_safe(text: str) -> str:
    """``text`` for human (non-JSON) output: every terminal control character (C0 but
    tab and line feed, DEL, C1), line or paragraph separator and bidirectional control
    shown as its visible ``\\xNN`` / ``\\uNNNN`` escape; everything else unchanged. JSON
    output keeps the exact text (it is escaped by JSON itself)."""
    return _CONTROLS.sub(_escape, text)


#: What :func:`term_line` escapes besides :data:`_CONTROLS`: tab, line feed, format
#: characters (bidirectional overrides, zero-width) and line/paragraph separators.
_LINE_BREAKERS = re.compile("[\t\n\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f"
                            "\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def term_line(text: str) -> str:
    """``text`` for one piece of a human output line (a kind, a key, a reason, a
    metadata value): :func:`term_safe`, and tab, line feed, bidirectional overrides,
    zero-width characters and line separators shown as visible escapes too, so stored
    text can neither start a line of its own nor reorder the line it is in."""
    return _LINE_BREAKERS.sub(_escape, text)


def term_text(text: str, indent: str = "   ") -> str:
    """Stored text (an entry's, a Source's) for human output below a line of ours:
    :func:`term_safe`, each of its own lines after the first indented by ``indent``, so
    no line of stored text starts at column 0 where a line of ours would."""
    return term_safe(text).replace("\n", "\n" + indent)


def classify(exc: BaseException) -> tuple[int, str, str, str]:
    """``(exit code, label, error kind, message)`` for an error a command raised.

    Any ``InvalidInputError`` (and its subclasses), ``ValueError`` or click usage error
    is bad input (2); an ``OSError`` (a file the user named) too. Anything else not in
    the table is unexpected (1)."""
    from powercontext.core import errors
    from powercontext.plugins.registry import UnknownPluginError

    if isinstance(exc, click.UsageError):
        return EXIT_BAD_INPUT, "usage", "UsageError", _usage_message(exc)
    if isinstance(exc, click.ClickException):
        return EXIT_BAD_INPUT, "error", "UsageError", exc.format_message()
    if isinstance(exc, KeyboardInterrupt | click.Abort):
        return EXIT_INTERRUPTED, "interrupted", "Interrupted", "interrupted by the user"
    from powercontext.entrypoints.cli.failures import AddressInUseError, missing_extra

    if isinstance(exc, AddressInUseError):
        return EXIT_ADDRESS_IN_USE, "address in use", "AddressInUseError", str(exc)
    extra = missing_extra(exc)
    if extra is not None:
        return EXIT_CAPABILITY, "not installed", "MissingExtraError", extra
    table: tuple[tuple[type[BaseException], int, str], ...] = (
        (errors.RevisionConflictError, EXIT_CONFLICT, "conflict"),
        (errors.InvalidCitationError, EXIT_INVALID_CITATION, "invalid citation"),
        (errors.ArtifactNotFoundError, EXIT_NOT_FOUND, "not found"),
        (errors.CapabilityNotSupportedError, EXIT_CAPABILITY, "not supported"),
        (errors.UpgradeRequiredError, EXIT_INTEGRITY, "upgrade required"),
        (errors.IntegrityError, EXIT_INTEGRITY, "integrity error"),
        (errors.AnalyzerMismatchError, EXIT_BAD_INPUT, "analyzer mismatch"),
        (errors.RetrievalShapeError, EXIT_BAD_INPUT, "topic retrieval shape"),
        (errors.ProfileMismatchError, EXIT_BAD_INPUT, "embedding profile mismatch"),
        (UnknownPluginError, EXIT_BAD_INPUT, "unknown name"),
        (errors.CommitOutcomeUnknownError, EXIT_UNEXPECTED, "outcome unknown"),
        (errors.WritesPausedError, EXIT_CONFLICT, "writes paused"),
        (errors.InvalidInputError, EXIT_BAD_INPUT, "bad input"),
        (ValueError, EXIT_BAD_INPUT, "bad input"),
        (errors.PowerContextError, EXIT_UNEXPECTED, "error"),
        (OSError, EXIT_BAD_INPUT, "cannot use a file"),
    )
    for cls, code, label in table:
        if isinstance(exc, cls):
            kind = type(exc).__name__
            if isinstance(exc, ValueError) and not isinstance(exc, errors.PowerContextError):
                kind = "InvalidInputError"
            return code, label, kind, str(exc) or kind
    return EXIT_UNEXPECTED, "unexpected error", type(exc).__name__, f"{type(exc).__name__}: {exc}"


def _usage_message(exc: click.UsageError) -> str:
    msg = exc.format_message()
    if exc.ctx is not None:
        msg += f" (see '{exc.ctx.command_path} --help')"
    return msg


def fail(code: int, label: str, message: str, kind: str, as_json: bool) -> NoReturn:
    """Print one error line (stderr) or one JSON error object (stdout) and exit ``code``."""
    message = " ".join(message.split())  # one line, whatever the error text held
    if as_json:
        click.echo(json.dumps({"error": kind, "message": message, "exit_code": code},
                              ensure_ascii=False, sort_keys=True))
    else:
        click.echo(f"powercontext: {label}: {message}", err=True)
    sys.exit(code)


def quiet_broken_pipe() -> NoReturn:
    """The reader of our output stopped reading (``| head``): nothing more to say and
    nothing went wrong here, so exit 0 without a word; stdout now points at the null
    device, so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
        pass
    sys.exit(0)


def fail_with(exc: BaseException, as_json: bool) -> NoReturn:
    """Report ``exc`` as :func:`classify` maps it; the traceback only with
    ``POWERCONTEXT_DEBUG=1``. A broken pipe on stdout (the reader left) exits 0
    quietly (:func:`quiet_broken_pipe`)."""
    if isinstance(exc, BrokenPipeError):
        quiet_broken_pipe()
    code, label, kind, message = classify(exc)
    if os.environ.get("POWERCONTEXT_DEBUG") == "1":
        traceback.print_exception(exc, file=sys.stderr)
    elif code == EXIT_UNEXPECTED and label == "unexpected error":
        message += " (POWERCONTEXT_DEBUG=1 shows the traceback)"
    fail(code, label, message, kind, as_json)


class Ctx:
    """The global options: ``db`` (path or URL, None for the default), ``as_json`` and
    ``embedding`` (a model name or None), ``analyzer`` (the search analyzer a new
    database records, or None) and ``vector_index`` (SQLite's vector channel, or None:
    ``$POWERCONTEXT_VECTOR_INDEX``, else ``auto``)."""

    def __init__(self, db: str | None, as_json: bool, embedding: str | None,
                 analyzer: str | None = None, vector_index: str | None = None) -> None:
        self.db = db
        self.as_json = as_json
        self.embedding = embedding
        self.analyzer = analyzer
        self.vector_index = vector_index
        self._service: Any = None
        self._registry: Any = None

    @property
    def db_url(self) -> str:
        from powercontext.paths import default_db_url

        return self.db or default_db_url()

    def registry(self) -> Any:
        """The one plugin :class:`~powercontext.plugins.registry.Registry` of this
        command (built on first use): every service the command opens shares it, so the
        entry points are scanned once per process."""
        if self._registry is None:
            from powercontext.plugins.registry import Registry

            self._registry = Registry()
        return self._registry

    def service(self) -> Any:
        if self._service is None:
            from powercontext.runtime import open_service

            self._service = open_service(
                self.db_url, embedding=self.embedding, analyzer=self.analyzer,
                registry=self.registry(), vector_index=self.vector_index,
            )
        return self._service

    def manifest(self) -> Any:
        from powercontext.runtime_manifest import RuntimeManifest

        return RuntimeManifest.for_db(self.db_url)

    def run(self, fn: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``fn(service)``, close the service, and map errors to exit codes."""

        async def body() -> T:
            svc = self.service()
            try:
                return await fn(svc)
            finally:
                await svc.close()

        try:
            return asyncio.run(body())
        except (SystemExit, click.exceptions.Exit):
            raise
        except BaseException as exc:  # KeyboardInterrupt included: one line, exit 130
            fail_with(exc, self.as_json)

    def fail(self, code: int, label: str, message: str, kind: str) -> NoReturn:
        fail(code, label, message, kind, self.as_json)

    def emit(self, data: Any, human: Callable[[], None]) -> None:
        if self.as_json:
            click.echo(json.dumps(data, ensure_ascii=False, indent=None, sort_keys=True))
        else:
            human()


pass_ctx = click.make_pass_decorator(Ctx)


#: module of each lazily loaded command, under ``powercontext.entrypoints.cli``
_PKG = "powercontext.entrypoints.cli"


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use: ``lazy`` maps a
    command name to ``"module:attribute"`` (module under ``powercontext.entrypoints.cli``),
    so ``powercontext hook claude-code`` imports the hook module only, not the modules of
    every other command (the prompt hook's start-up budget, issue 14). A command already
    in :attr:`commands` wins over its lazy entry; ``--help`` lists both."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, _, attr = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(f"{_PKG}.{module}"), attr)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


async def resolve(svc: Any, name: str | None) -> Any:
    """A Memory name to an ArtifactRef: ``ID`` -> its head, ``ID@REV`` -> that Revision,
    ``key:NAME`` (``@REV``) -> the Memory the database's key names
    (:func:`powercontext.memory_names.resolve_memory`; ArtifactNotFoundError otherwise)."""
    from powercontext.memory_names import resolve_memory

    return await resolve_memory(svc, name)
