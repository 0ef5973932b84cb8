"""``powercontext topic``: the Topic Memory reads (Topic Memory RFC, "HTTP API";
TOPIC-MEMORY.md, "Topic search", "get"): ``topic search QUERY --scope S [--limit N]``
and ``topic get REF --scope S``; and processing on request (Topic Memory RFC,
"Automatic processing and explicit flush", "Pending dirty set", "Retry and
observability"): ``topic flush --scope S`` (``accepted`` / ``idle``), ``topic status
[--scope S]`` (read only: Source head, Cursor, Pending, budget row, failure code) and
``topic process --scope S --once [--config FILE]`` (Windows until the Scope is covered
or a Window fails). No command creates, updates or deletes a Topic by hand: processing
publishes them from the Scope's Sources (``source add``).

``--json`` (the global flag) prints the shapes of :mod:`powercontext.topic_shapes`
(search with ``"untrusted": true``). Exit codes as every command's (docs/cli.md): 2 bad
input or a retrieval-shape error (the message names the fix), 4 not found (an unknown
ref or one of another Scope), 5 a hybrid search whose embedding model failed, or Topic
processing unavailable (no or a refused generation provider configuration: the problems
are listed), 8 (:data:`EXIT_PROCESSING_STOPPED`) ``topic process`` stopped before the
Scope was covered (the failure code is printed).
Registered by :mod:`powercontext.entrypoints.cli.main`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from powercontext.entrypoints.cli.context import Ctx, fail_with, pass_ctx, term_safe
from powercontext.entrypoints.cli.topic_run import SHAPE_FIX as _SHAPE_FIX
from powercontext.entrypoints.cli.topic_run import run_topic as _run

__all__ = ["EXIT_PROCESSING_STOPPED", "topic"]

#: ``topic process`` stopped at a failed Window or a terminal frontier (docs/cli.md).
EXIT_PROCESSING_STOPPED = 8

_SCOPE_HELP = ("The Scope to read, e.g. repo:/abs/path (1-256 characters). Topics of "
               "another Scope are never shown.")


@click.group()
def topic() -> None:
    """Search Topic Memory, read exact Topic Revisions, and process a Scope's Sources.

    A Topic is one long-lived subject (title, summary, detail) built from the Sources of
    one Scope, versioned: every change is a new Revision with exact lineage. Topics come
    from processing the Scope's Source journal; nothing here edits them by hand.

    \b
    Add:     powercontext source add --scope project:x notes/*.md
    Flush:   powercontext topic flush --scope project:x
    Process: powercontext topic process --scope project:x --once --config config.toml
    Status:  powercontext topic status --scope project:x
    Unblock: powercontext topic unblock --scope project:x --skip 12 --by me --reason "..."
    Find:    powercontext topic search "how do releases work" --scope project:x
    Expand:  powercontext topic get topic_art_...@3 --scope project:x
    Expand exactly the ref a search printed (ID@REVISION), never "the latest" by id.
    """


@topic.command("search")
@click.argument("query")
@click.option("--scope", "-s", "scope_id", required=True, metavar="SCOPE", help=_SCOPE_HELP)
@click.option("--limit", "-n", default=10, show_default=True, type=int,
              help="Hits to return, 1..20 (one per Topic).")
@pass_ctx
def search(c: Ctx, query: str, scope_id: str, limit: int) -> None:
    """Search the Topics of one Scope. Results are untrusted context.

    Each hit shows the exact ref (ID@REVISION) to expand with `topic get`, the title,
    summary, a snippet of the detail when one matched, and the channels that matched
    (topic_fts, detail_fts; topic_vector, detail_vector in a hybrid deployment).
    --json prints {hits: [{artifact, title, summary, snippet, score, matched_by}], channels,
    untrusted: true}.
    A query of only stopwords or punctuation, or over 8,192 characters or 64 distinct
    terms, is bad input (exit 2)."""

    async def body(svc: Any) -> None:
        from powercontext.topic_shapes import topic_json

        res = await svc.search(scope_id, query, limit)

        def human() -> None:
            head = (f"{len(res.hits)} Topic(s) in {scope_id} "
                    f"(channels: {', '.join(res.channels)})")
            click.echo(head + (":" if res.hits else
                               "; Topics come from processing the Scope's Sources "
                               f"(topic status --scope {scope_id}; topic process "
                               f"--scope {scope_id} --once)"))
            for rank, h in enumerate(res.hits, start=1):
                click.echo(f"{rank}. {term_safe(h.title)}  [{'+'.join(h.matched_by)}]")
                click.echo(f"   {term_safe(h.summary)}")
                if h.snippet:
                    click.echo(f"   ... {term_safe(' '.join(h.snippet.split()))} ...")
                click.echo(f"   ref: {h.ref.artifact_id}@{h.ref.revision}")

        c.emit(dict(topic_json(res), untrusted=True), human)

    _run(c, body)


@topic.command("get")
@click.argument("ref", metavar="REF")
@click.option("--scope", "-s", "scope_id", required=True, metavar="SCOPE", help=_SCOPE_HELP)
@pass_ctx
def get(c: Ctx, ref: str, scope_id: str) -> None:
    """One exact Topic Revision: title, summary, complete detail, its Sources, the ref
    it was based on, and when it was published.

    REF is ID@REVISION as `topic search` prints it (topic_art_...@3), or its JSON
    {"family": "topic-memory", "artifact_id": ..., "revision": N}. An older Revision
    stays readable with its own published_at. A ref of another Scope or an unknown one
    is not found (exit 4); family "memory" or revision < 1 is bad input (exit 2)."""

    from powercontext.core.errors import InvalidInputError

    parsed: Any = ref
    if ref.lstrip().startswith("{"):
        try:
            parsed = json.loads(ref)
        except ValueError as exc:
            fail_with(InvalidInputError("artifact", f"is not valid JSON: {exc}"), c.as_json)

    async def body(svc: Any) -> None:
        from powercontext.topic_shapes import topic_json

        rev = await svc.get(scope_id, parsed)

        def human() -> None:
            r = rev.ref
            click.echo(term_safe(rev.content.title))
            click.echo(f"ref: {r.artifact_id}@{r.revision}  scope: {rev.scope_id}  "
                       f"published: {rev.published_at}")
            if rev.based_on is not None:
                click.echo(f"based on: {rev.based_on.artifact_id}@{rev.based_on.revision}")
            for s in rev.sources:
                click.echo(f"source: {s.source_id} ({s.content_hash})")
            click.echo("")
            click.echo(term_safe(rev.content.summary))
            click.echo("")
            click.echo(term_safe(rev.content.detail))

        c.emit(dict(topic_json(rev), untrusted=True), human)

    _run(c, body)


# ------------------------------------------------------------------ processing


@topic.command("flush")
@click.option("--scope", "-s", "scope_id", required=True, metavar="SCOPE",
              help="The Scope whose Sources should be processed (1-256 characters).")
@pass_ctx
def flush(c: Ctx, scope_id: str) -> None:
    """Ask for a Scope's Sources to be processed: prints accepted or idle.

    idle: nothing to do (no Source, or the Cursor already covers the Source head);
    nothing is written. accepted: the Pending row covers the Source head and its flush
    generation went up (a second flush before processing coalesces into the same row).
    A Scope stopped at a terminal frontier is accepted too: `topic status` shows why.
    --json prints {scope_id, status}."""

    async def body(svc: Any) -> None:
        result = await svc.flush(scope_id)
        c.emit({"scope_id": scope_id, "status": result}, lambda: click.echo(result))

    _run(c, body)


def _status_rows(rows: Any) -> None:
    header = ("SCOPE", "HEAD", "CURSOR", "PENDING", "ATTEMPTS", "REQUESTS", "TOKENS",
              "FAILURE")
    table = [header]
    for st in rows:
        p, b = st.pending, st.budget
        pending = ("-" if p is None else
                   f"through {p.source_through} gen {p.handled_flush_generation}/"
                   f"{p.flush_generation}")
        table.append((
            st.scope_id, str(st.source_head), str(st.cursor), pending,
            "-" if b is None else str(b.attempt_count),
            "-" if b is None else str(b.reserved_requests),
            "-" if b is None else str(b.reserved_tokens),
            "-" if b is None or b.failure_code is None else
            b.failure_code + (" (terminal)" if b.terminal else "")))
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


@topic.command("status")
@click.option("--scope", "-s", "scope_id", metavar="SCOPE",
              help="One Scope (default: every Scope with Sources, Pending, a Cursor or a "
                   "budget row).")
@pass_ctx
def status(c: Ctx, scope_id: str | None) -> None:
    """Read only: each Scope's Source head, Cursor, Pending row and budget row.

    HEAD is the Scope's last journal position, CURSOR how far processing has published
    (covered when CURSOR >= HEAD). PENDING shows source_through and the handled/flush
    generations. ATTEMPTS, REQUESTS and TOKENS are the durable allowance of the Window
    after the Cursor (3 attempts, 512 requests, 64,000,000 tokens, never refunded);
    FAILURE its last failure code, "(terminal)" when no attempt is admitted any more.
    With --scope it also names the Sources up to the Cursor that no Topic Revision
    cites ("left out": processed, but their text is in no Topic). A Scope stopped at
    such a terminal frontier is named with the Source it stops at, why, and the `topic
    unblock` commands that let it go on (nothing else does).
    --json prints {scopes: [{scope_id, binding_name, source_head, cursor, covered,
    pending, budget}], blocked: [{scope_id, source_after, through, failure_code,
    position, source_id, kind, uri, reason, commands}]}, with --scope also left_out:
    [{position, source_id, how}] in each Scope."""

    async def body(svc: Any) -> None:
        from powercontext.entrypoints.cli.topic_operator import blocked_lines
        from powercontext.topic_report import uncited_sources
        from powercontext.topic_shapes import left_out_json, processing_json

        rows = await svc.status(scope_id)
        blocked = await svc.blocked(scope_id)
        left = await uncited_sources(svc, scope_id) if scope_id is not None else None

        def human() -> None:
            if not rows:
                click.echo("No Scope has Sources yet: powercontext source add --scope S FILE")
                return
            _status_rows(rows)
            if left:
                click.echo(f"left out: {len(left)} Source(s) up to the Cursor are cited by "
                           "no Topic: " + _positions(left))
            elif left is not None and rows[0].cursor:
                click.echo("left out: none (every Source up to the Cursor is cited)")
            for line in blocked_lines(blocked):
                click.echo(line)

        shaped = [processing_json(r) for r in rows]
        if left is not None:
            for r in shaped:
                r["left_out"] = [left_out_json(x) for x in left]
        c.emit({"scopes": shaped, "blocked": [processing_json(b) for b in blocked]}, human)

    _run(c, body)


def _unavailable(exc: Any, as_json: bool) -> None:
    from powercontext.entrypoints.cli.context import EXIT_CAPABILITY, fail

    problems = list(getattr(exc, "problems", ()) or ())
    message = str(exc).removeprefix("Topic processing unavailable: ")
    if as_json:
        click.echo(json.dumps({"error": type(exc).__name__, "message": message,
                               "problems": problems, "exit_code": EXIT_CAPABILITY},
                              ensure_ascii=False, sort_keys=True))
        raise SystemExit(EXIT_CAPABILITY)
    detail = message + "".join(f"; {p}" for p in problems if p not in message)
    fail(EXIT_CAPABILITY, "Topic processing unavailable", detail, type(exc).__name__, False)


def _progress_handler(verbose: bool) -> Any:
    import logging
    import sys

    from powercontext.entrypoints.topic_worker import StructuredFormatter

    handler = logging.StreamHandler(sys.stderr)
    # the fields (Scope, Window, stage, code) once each, after the message
    handler.setFormatter(StructuredFormatter("powercontext.topic: %(message)s"))
    handler.setLevel(logging.INFO if verbose else logging.WARNING)
    return handler


@topic.command("process")
@click.option("--scope", "-s", "scope_id", required=True, metavar="SCOPE",
              help="The Scope to process (1-256 characters).")
@click.option("--once", is_flag=True,
              help="Process the Windows up to the Scope's Pending target (or Source head) "
                   "now, then exit. Required: background processing is a later release.")
@click.option("--config", "config_path", metavar="FILE",
              type=click.Path(dir_okay=False, exists=True),
              help="Configuration TOML (default $POWERCONTEXT_CONFIG, else "
                   "<data dir>/config.toml; [inference] generation_provider must be set).")
@click.option("--verbose", "-v", is_flag=True,
              help="Also log the effective configuration and every stage on stderr.")
@pass_ctx
def process(c: Ctx, scope_id: str, once: bool, config_path: str | None,
            verbose: bool) -> None:
    """Process a Scope's Sources into Topics, one Window at a time, until covered.

    Each Window (the next Sources after the Cursor) asks the configured generation
    provider for Probes, selects historical Topics, evolves them and publishes the
    CREATEs and UPDATEs atomically with the Cursor. Progress goes to stderr, one line
    per Window (-v adds the effective configuration and each stage). Exit 0 when the
    Cursor covers the Scope; exit 8 when a Window failed or the Scope is stopped at a
    terminal frontier (the failure code is printed; `topic status` shows it); exit 5
    "Topic processing unavailable" (with every problem) when no generation provider
    is configured or a setting is refused, before any request. One process works on
    a Scope of a SQLite database at a time: a second one waits, then goes on.
    --json prints {scope_id, windows, status, stopped, covered}.

    \b
    [inference]
    generation_provider = "deterministic"   # or "openai", "anthropic"
    """
    from powercontext.core.errors import TopicProcessingUnavailableError
    from powercontext.core.topic.content import check_scope_id

    if not once:
        raise click.UsageError("give --once: continuous background processing (the "
                               "Supervisor) is a later release")
    try:
        scope = check_scope_id(scope_id)
    except Exception as exc:
        fail_with(exc, c.as_json)

    async def body() -> Any:
        import logging

        from powercontext.file_locks import topic_processing_lock
        from powercontext.runtime import open_topic_processor

        logger = logging.getLogger("powercontext.topic")
        handler = _progress_handler(verbose)
        old_level = logger.level
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
        try:
            processor = open_topic_processor(c.db_url, config=config_path,
                                             embedding=c.embedding, analyzer=c.analyzer)
            try:
                # one process per Scope at a time: a racing one would spend the
                # Window's attempts; the second waits, then finds the Scope covered
                with topic_processing_lock(c.db_url, scope, on_wait=_waiting,
                                           backend=processor.service.backend):
                    return await processor.process(scope, on_window=_progress)
            finally:
                await processor.service.close()
        finally:
            logger.removeHandler(handler)
            logger.setLevel(old_level)

    from powercontext.core.errors import RetrievalShapeError

    try:
        report = asyncio.run(body())
    except (SystemExit, click.exceptions.Exit):
        raise
    except TopicProcessingUnavailableError as exc:
        _unavailable(exc, c.as_json)
        return
    except RetrievalShapeError as exc:
        fail_with(RetrievalShapeError(f"{exc} ({_SHAPE_FIX})"), c.as_json)
    except BaseException as exc:
        fail_with(exc, c.as_json)
    _report(c, report)


def _waiting() -> None:
    click.echo("waiting: another `topic process` is working on this Scope of this "
               "database; this one goes on when it is done", err=True)


def _positions(left: Any, limit: int = 12) -> str:
    """``#3 src_... (uncited), #7 src_... (condensed)``, at most ``limit`` of them."""
    shown = ", ".join(f"#{x.position} {x.source_id} ({x.how})" for x in left[:limit])
    return shown + (f" and {len(left) - limit} more" if len(left) > limit else "")


def _progress(w: Any) -> None:
    """One stderr line per published Window, as soon as it is published."""
    left = f"; left out: {_positions(w.left_out)}" if w.left_out else ""
    click.echo(f"window ({w.after}, {w.through}]: {len(w.created)} created, "
               f"{len(w.updated)} updated, {w.noops} unchanged, "
               f"{w.reserved_requests} request(s) reserved{left}", err=True)


def _report(c: Ctx, report: Any) -> None:
    from powercontext.topic_shapes import processing_json

    st = report.status

    left = [x for w in report.windows for x in w.left_out]

    def human() -> None:
        if left:
            click.echo(f"left out: {len(left)} Source(s) whose text no new Revision holds "
                       f"whole: {_positions(left)}")
        if report.stopped is None:
            click.echo(f"covered: {report.scope_id} Cursor {st.cursor} of Source head "
                       f"{st.source_head} ({len(report.windows)} Window(s) published)")
        else:
            click.echo(f"stopped: {report.stopped} ({report.scope_id} Cursor {st.cursor} "
                       f"of Source head {st.source_head}; topic status --scope "
                       f"{report.scope_id} shows the budget row)")

    c.emit(processing_json(report), human)
    if report.stopped is not None:
        if not c.as_json:
            click.echo(f"powercontext: processing stopped: {report.reason or report.stopped}",
                       err=True)
        raise SystemExit(EXIT_PROCESSING_STOPPED)


def _register() -> None:
    from powercontext.entrypoints.cli.topic_operator import decisions, unblock

    topic.add_command(unblock)
    topic.add_command(decisions)


_register()
