"""``powercontext topic``: the Topic Memory reads (Topic Memory RFC, "HTTP API";
TOPIC-MEMORY.md, "Topic search", "get"): ``topic search QUERY --scope S [--limit N]``
and ``topic get REF --scope S``. Read only: Topics are published by background
processing (a later release); no command here creates, updates or deletes one.

``--json`` (the global flag) prints the shapes of :mod:`powercontext.topic_shapes`
(search with ``"untrusted": true``). Exit codes as every command's (README): 2 bad
input or a retrieval-shape error (the message names the fix), 4 not found (an unknown
ref or one of another Scope), 5 a hybrid search whose embedding model failed.
Registered by :mod:`powercontext.adapters.cli.main`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click

from powercontext.adapters.cli.context import Ctx, fail_with, pass_ctx

__all__ = ["topic"]

T = TypeVar("T")

_SHAPE_FIX = ("the embedding model comes from --embedding NAME, $POWERCONTEXT_EMBEDDING or "
              "the model remembered beside the database; --embedding none opens an "
              "FTS-only deployment")
_SCOPE_HELP = ("The Scope to read, e.g. repo:/abs/path (1-256 characters). Topics of "
               "another Scope are never shown.")


@click.group()
def topic() -> None:
    """Search Topic Memory and read exact Topic Revisions (read only).

    A Topic is one long-lived subject (title, summary, detail) built from the Sources of
    one Scope, versioned: every change is a new Revision with exact lineage. Topics come
    from background processing of the Source journal (a later release); nothing here
    creates or edits them, so a new database has none.

    \b
    Find:    powercontext topic search "how do releases work" --scope repo:/abs/path
    Expand:  powercontext topic get topic_art_...@3 --scope repo:/abs/path
    Expand exactly the ref a search printed (ID@REVISION), never "the latest" by id.
    """


def _run(c: Ctx, fn: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``fn(topic service)`` on the database, close it, map errors to exit codes."""

    async def body() -> T:
        from powercontext.runtime import open_topic_service

        svc = open_topic_service(c.db_url, embedding=c.embedding, analyzer=c.analyzer)
        try:
            return await fn(svc)
        finally:
            await svc.close()

    from powercontext.core.errors import RetrievalShapeError

    try:
        return asyncio.run(body())
    except (SystemExit, click.exceptions.Exit):
        raise
    except RetrievalShapeError as exc:  # name the fix in the CLI's own terms
        fail_with(RetrievalShapeError(f"{exc} ({_SHAPE_FIX})"), c.as_json)
    except BaseException as exc:  # KeyboardInterrupt included: one line, exit 130
        fail_with(exc, c.as_json)


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
    --json prints {hits: [{ref, title, summary, snippet, score, matched_by}], channels,
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
                               "; Topics come from background processing of the Scope's "
                               "Sources"))
            for rank, h in enumerate(res.hits, start=1):
                click.echo(f"{rank}. {h.title}  [{'+'.join(h.matched_by)}]")
                click.echo(f"   {h.summary}")
                if h.snippet:
                    click.echo(f"   ... {' '.join(h.snippet.split())} ...")
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
            click.echo(f"{rev.content.title}")
            click.echo(f"ref: {r.artifact_id}@{r.revision}  scope: {rev.scope_id}  "
                       f"published: {rev.published_at}")
            if rev.based_on is not None:
                click.echo(f"based on: {rev.based_on.artifact_id}@{rev.based_on.revision}")
            for s in rev.sources:
                click.echo(f"source: {s.source_id} ({s.content_hash})")
            click.echo("")
            click.echo(rev.content.summary)
            click.echo("")
            click.echo(rev.content.detail)

        c.emit(dict(topic_json(rev), untrusted=True), human)

    _run(c, body)
