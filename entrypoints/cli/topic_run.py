"""How a ``powercontext topic`` command runs: one Topic service on the database, closed
after the command, its errors mapped to the CLI's exit codes. Shared by
:mod:`powercontext.entrypoints.cli.topic` and
:mod:`powercontext.entrypoints.cli.topic_operator`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click

from powercontext.entrypoints.cli.context import Ctx, fail_with

__all__ = ["SHAPE_FIX", "run_topic"]

T = TypeVar("T")

#: What a retrieval-shape error's message adds: where the embedding model comes from.
SHAPE_FIX = ("the embedding model comes from --embedding NAME, $POWERCONTEXT_EMBEDDING or "
             "the model remembered beside the database; --embedding none opens an "
             "FTS-only deployment")


def run_topic(c: Ctx, fn: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``fn(topic service)`` on the database, close it, map errors to exit codes."""

    async def body() -> T:
        from powercontext.runtime import open_topic_service

        svc = open_topic_service(c.db_url, embedding=c.embedding, analyzer=c.analyzer,
                                 registry=c.registry())
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
        fail_with(RetrievalShapeError(f"{exc} ({SHAPE_FIX})"), c.as_json)
    except BaseException as exc:  # KeyboardInterrupt included: one line, exit 130
        fail_with(exc, c.as_json)
