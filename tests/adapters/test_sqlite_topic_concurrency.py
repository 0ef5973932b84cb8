"""A reader never sees a mixed or partial Topic Revision (Topic Memory RFC, "Storage,
Head, and atomic activation": "The system never exposes a Revision with only some
searchable Detail chunks"; ARCHITECTURE.md: "A read sees one snapshot").

One backend publishes many Revisions of one Topic whose title and every chunk carry the
Revision's number; another backend on the same file (its own connection and worker
thread) searches all the while. Every hit's title, snippet and ref name one Revision,
and the Revisions a reader sees never go backwards."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core.topic.models import TopicSearchRequest

from .topic_helpers import (
    SCOPE,
    check_consistent,
    create,
    needs_topic_core,
    publish,
    run,
    seed,
    source,
    update,
)

REVISIONS = 25
MARK = re.compile(r"\bgen(\d+)\b")

pytestmark = needs_topic_core


def _detail(n: int) -> str:
    # several chunks, each naming the generation (and the shared word "beacon")
    return "\n\n".join(f"## Section {i}\n\n" + " ".join(
        [f"beacon gen{n} paragraph {i} text"] * 40) for i in range(4))


def test_a_reader_never_sees_a_mixed_or_partial_revision(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    seen: list[int] = []

    async def go() -> None:
        writer = SQLiteTopicBackend(str(path))
        reader = SQLiteTopicBackend(str(path))
        try:
            src = source("race")
            await seed(writer, src)
            an = await writer.analyzer()
            [rev] = await publish(writer, create(an, "Topic gen1", "beacon summary",
                                                 _detail(1), [src]))
            assert len(rev.content.detail) > 2048  # more than one chunk
            done = asyncio.Event()

            async def write() -> None:
                ref = rev.ref
                for n in range(2, REVISIONS + 1):
                    [r] = await publish(writer, update(an, ref, f"Topic gen{n}",
                                                       "beacon summary", _detail(n), [src]))
                    ref = r.ref
                done.set()

            async def read() -> None:
                while not done.is_set():
                    res = await reader.search(TopicSearchRequest(SCOPE, "beacon"))
                    assert len(res.hits) == 1
                    hit = res.hits[0]
                    n = hit.ref.revision
                    assert MARK.findall(hit.title) == [str(n)]
                    assert hit.snippet is not None
                    assert set(MARK.findall(hit.snippet)) == {str(n)}, (n, hit.snippet[:80])
                    assert not seen or n >= seen[-1]
                    seen.append(n)

            await asyncio.gather(write(), read())
        finally:
            await writer.close()
            await reader.close()

    run(go())
    assert seen  # the reader ran while the writer published
    check_consistent(path)
