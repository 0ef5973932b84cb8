"""Helpers of the OceanBase Topic backend tests (tests/adapters/test_oceanbase_topic*.py):
build CREATE/UPDATE writes whose projections the core builds (as the app will), publish
and search through the port, and read rows with a plain MySQL connection."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
from urllib.parse import urlsplit

from powercontext.core import canonical
from powercontext.core.models import SourceRef
from powercontext.core.topic import content as tcontent
from powercontext.core.topic import projection as tprojection
from powercontext.core.topic.models import (
    TopicPublication,
    TopicRef,
    TopicSearchRequest,
    TopicWrite,
)

__all__ = ["STAMP", "connect", "make_write", "new_topic_id", "publish", "run", "search",
           "sources", "sql"]

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
_ids = itertools.count(1)


def run(coro):
    return asyncio.run(coro)


def connect(url: str):
    import MySQLdb

    p = urlsplit(url)
    return MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                           passwd=p.password or "", db=p.path.lstrip("/"),
                           charset="utf8mb4", autocommit=True)


def sql(url: str, statement: str, params=None) -> list[tuple]:
    conn = connect(url)
    try:
        cur = conn.cursor()
        cur.execute(statement, params)
        return list(cur.fetchall())
    finally:
        conn.close()


def new_topic_id() -> str:
    n = next(_ids)
    return tcontent.make_topic_id(1_700_000_000_000 + n, n.to_bytes(10, "big"))


async def sources(backend, *texts: str) -> tuple[SourceRef, ...]:
    srcs = [canonical.make_source("src_" + hashlib.sha256(t.encode()).hexdigest()[:24],
                                  "note", t) for t in texts]
    await backend.put_sources(srcs)
    return tuple(sorted(SourceRef(s.source_id, s.content_hash) for s in srcs))


async def make_write(backend, scope: str, title: str, summary: str, detail: str, *,
                     base: TopicRef | None = None, model=None,
                     srcs: tuple[SourceRef, ...] | None = None) -> TopicWrite:
    content = tcontent.make_content(title, summary, detail)
    analyzer = await backend.analyzer()
    vectors = None
    if model is not None:
        vectors = (await model.embed(tprojection.embedding_texts(content))).vectors
    proj = tprojection.build_projection(content, analyzer, vectors,
                                        model.profile if model is not None else None)
    if srcs is None:
        srcs = await sources(backend, f"{title} / {summary}")
    if base is None:
        return TopicWrite("create", scope, TopicRef(new_topic_id(), 1), None, content,
                          srcs, proj)
    return TopicWrite("update", scope, TopicRef(base.artifact_id, base.revision + 1), base,
                      content, srcs, proj)


async def publish(backend, *writes: TopicWrite):
    return await backend.publish(TopicPublication(tuple(writes)))


async def search(backend, scope: str, query: str, limit: int = 10, model=None):
    vector = None
    if model is not None:
        vector = (await model.embed((query,))).vectors[0]
    return await backend.search(TopicSearchRequest(scope, query, limit), vector)
