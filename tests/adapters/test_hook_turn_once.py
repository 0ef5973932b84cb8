"""A hook's turn is journaled once per (Scope, uri) (Topic Memory RFC, "Source, Window,
Cursor, and Pending": every Source add creates a new Source; a redelivered Stop is not a
new add): :func:`record_turn` checks the turn's uri in the add's own transaction, so a
turn the Scope journaled already, under any Source id, keeps its first position and
nothing is stored for the redelivery. Real SQLite through APSW."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from powercontext import make_source, open_topic_service
from powercontext.adapters.secret_scanner import default_scanner
from powercontext.entrypoints.cli.hook_turn import conversation_source, record_turn

SCOPE = "repo:/work/project"


def _turn(reply: str):
    return conversation_source(scope_id=SCOPE, agent="claude-code", session="s1",
                               turn="u-2", prompt="Fix the flaky test", reply=reply,
                               metadata={"event": "Stop"}, scanner=default_scanner())


def test_a_turn_already_journaled_under_another_id_is_not_added_again(tmp_path):
    async def body() -> None:
        async with open_topic_service(str(tmp_path / "m.db"), embedding="none") as svc:
            b = svc.backend
            first = _turn("Fixed it.")
            # the same turn journaled earlier by another producer, under another id
            earlier = make_source("src_earlier_copy", "conversation", first.content,
                                  first.uri, {})
            assert await b.put_scoped_sources(SCOPE, [earlier]) == (1,)
            assert await record_turn(SimpleNamespace(backend=b), SCOPE, first) == []
            assert await record_turn(SimpleNamespace(backend=b), SCOPE, first) == []
            rows = await b.scope_journal(SCOPE)
            assert [(r.position, r.source.source_id) for r in rows] == [
                (1, "src_earlier_copy")]
            assert await b.source_head(SCOPE) == 1
            # the next turn is a new Source at the next position
            nxt = conversation_source(scope_id=SCOPE, agent="claude-code", session="s1",
                                      turn="u-9", prompt="Rename it", reply="Renamed.",
                                      metadata={}, scanner=default_scanner())
            assert await record_turn(SimpleNamespace(backend=b), SCOPE, nxt) == []
            assert await b.source_head(SCOPE) == 2

    asyncio.run(body())
