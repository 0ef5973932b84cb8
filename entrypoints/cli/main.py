"""The ``powercontext`` command line (click).

Every command takes ``--db`` (a path or URL; default ``$POWERCONTEXT_DB`` or the
per-user data directory) and ``--json`` (machine output for agents). Exit codes:
0 success, 1 unexpected error, 2 bad input (usage errors included; also an embedding
profile or analyzer mismatch: the database was built with another one; `memory rebuild`
migrates), 3 revision conflict, 4 not found, 5 capability not supported, 6 invalid
citation, 7 integrity error, 130 interrupted; each failure is one line on stderr, or one
JSON object with ``--json`` (:mod:`powercontext.entrypoints.cli.context`).

A Memory is named by ``ID`` (its current head), ``ID@REV`` (an exact Revision; a write
needs the head), ``key:NAME`` (a business key stored in the database) or
``key:NAME@REV`` (an exact Revision of the Memory a key names). This module holds
only the root group, the ``memory`` group, where their commands live and :func:`main`;
the commands are imported when used (:class:`~powercontext.entrypoints.cli.context.LazyGroup`,
so a hook imports only the hook module) and live in modules by concern: ``memory``
(``remember``, ``forget``, ``reactivate``, ``organize``), ``reads`` (``changes``,
``show``, ``expand``),
``search``, ``cite`` (``cite``, ``validate-citation``), ``rebuild``, ``memory_file``
(``export``, ``apply``: a Memory as a Markdown file a person edits), ``overview``
(``memory list``, ``source show``, ``info``), ``sources`` (``source add``), ``setup``
(``setup``, ``doctor``), ``repo``, ``hook``, ``mcp_cmd`` and ``topic`` (the ``topic``
group: ``search``, ``get``, ``flush``, ``status``, ``process``).
``--json`` output uses the shapes of :func:`powercontext.core.shapes.to_json` (Topic
values: :mod:`powercontext.topic_shapes`).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

_GC_WAS_ENABLED = gc.isenabled()
gc.disable()  # start-up: the imports below allocate long-lived objects only (restored below)

import click  # noqa: E402

from powercontext.entrypoints.cli.context import (  # noqa: E402
    EXIT_BAD_INPUT,
    EXIT_CAPABILITY,
    EXIT_CONFLICT,
    EXIT_INTEGRITY,
    EXIT_INTERRUPTED,
    EXIT_INVALID_CITATION,
    EXIT_NOT_FOUND,
    EXIT_UNEXPECTED,
    Ctx,
    LazyGroup,
    fail_with,
)

if _GC_WAS_ENABLED:
    gc.enable()

__all__ = [
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
    "cli",
    "main",
]

@click.group(cls=LazyGroup, lazy={
    "topic": "topic:topic", "repo": "repo:repo", "hook": "hook:hook", "mcp": "mcp_cmd:mcp",
    "source": "overview:source", "info": "overview:info", "setup": "setup:setup",
    "doctor": "doctor:doctor", "serve": "serve:serve", "import": "importer:import_group",
}, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="POWERCONTEXT_DB",
    metavar="PATH|URL",
    help="Database: a SQLite file path, sqlite:///PATH or "
    "oceanbase://USER:PASS@HOST:PORT/DB. Default: the per-user data directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for agents.")
@click.option(
    "--embedding",
    envvar="POWERCONTEXT_EMBEDDING",
    metavar="NAME",
    help="Embedding model for vector/hybrid search: deterministic, local or openai.",
)
@click.option(
    "--analyzer",
    envvar="POWERCONTEXT_ANALYZER",
    metavar="NAME",
    help="Search analyzer of a new database: v1, v1-porter or v2 (default). An existing "
    "database keeps its own; `memory rebuild --analyzer NAME` switches.",
)
@click.option(
    "--vector-index",
    envvar="POWERCONTEXT_VECTOR_INDEX",
    # checked where the database opens (runtime.open_service), like --analyzer: a name
    # refused while the command line is parsed would make every hook exit 2
    metavar="NAME",
    help="SQLite's vector channel: auto (default: a Memory's IVF lists where their "
    "measured recall holds, else the exact scan), ivf, exact (always the exact scan) or "
    "ann (the sign-bit pass).",
)
@click.version_option(package_name="powercontext")
@click.pass_context
def cli(
    ctx: click.Context, db: str | None, as_json: bool, embedding: str | None,
    analyzer: str | None, vector_index: str | None,
) -> None:
    """powercontext: versioned, citable, searchable memory for coding agents.

    Every memory is versioned, never overwritten and exactly citable. Start with
    `powercontext memory remember --help`.
    """
    ctx.obj = Ctx(db, as_json, embedding, analyzer, vector_index)


@cli.group(cls=LazyGroup, lazy={
    "remember": "memory:remember", "forget": "memory:forget",
    "reactivate": "memory:reactivate", "organize": "memory:organize",
    "changes": "reads:changes", "show": "reads:show", "expand": "reads:expand",
    "search": "search:search", "cite": "cite:cite",
    "validate-citation": "cite:validate_citation", "rebuild": "rebuild:rebuild",
    "list": "overview:memory_list", "retire": "memory:retire",
    "export": "memory_file:export", "apply": "memory_file:apply",
})
def memory() -> None:
    """Remember, forget, search and cite entries of a Memory."""


def _wants_json(args: Sequence[str]) -> bool:
    """Whether the global ``--json`` was given (parsed by the group itself, so an option
    value that happens to read ``--json`` does not count)."""
    try:
        ctx = cli.make_context("powercontext", list(args), resilient_parsing=True)
    except Exception:
        return "--json" in args
    return bool(ctx.params.get("as_json"))


def _command_word(args: Sequence[str]) -> str | None:
    """The first word after the root group's options (``hook``, ``memory``, ...)."""
    i = 0
    while i < len(args):
        if args[i] in ("--db", "--embedding", "--analyzer", "--vector-index"):
            i += 2
        elif args[i].startswith("-"):
            i += 1
        else:
            return args[i]
    return None


def main(argv: Sequence[str] | None = None) -> None:
    """The ``powercontext`` entry point: runs the command and turns every error,
    usage errors and Ctrl-C included, into one line (or one JSON object with ``--json``)
    and its exit code (see :mod:`powercontext.entrypoints.cli.context`). A hook and every
    ``--json`` command print UTF-8 whatever the locale
    (:func:`~powercontext.entrypoints.cli.streams.configure_output`)."""
    from powercontext.entrypoints.cli.streams import configure_output

    args = list(sys.argv[1:] if argv is None else argv)
    configure_output(_command_word(args) == "hook" or _wants_json(args))
    try:
        rv = cli.main(args=args, prog_name="powercontext", standalone_mode=False)
        sys.stdout.flush()  # a reader that left (| head) is told here, not at exit
    except SystemExit:
        raise
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BaseException as exc:
        fail_with(exc, _wants_json(args))
    sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)


if __name__ == "__main__":
    main()
