"""Topic contract group: a journaled Source's uri (Topic Memory RFC, "Source, Window,
Cursor, and Pending": every Source add creates a new Source with a stable SourceRef).

Every add of a new Source (a new id) is a new journal row, whatever its content; a
producer whose uri names one event (a hook's turn) asks whether the event is journaled
already: ``put_scoped_sources(..., once_per_uri=True)`` adds nothing for a uri the
Scope has (its position is the earlier row's), in the same transaction as the add, and
``scope_position_of_uri`` is the indexed read."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.testing.base import run
from powercontext.testing.topic_base import TopicContractBase

__all__ = ["TopicUrisContract"]


def _turn(name: str, uri: str | None, body: str = "user: ok, ship it") -> Any:
    return canonical.make_source(name, "conversation", body, uri)


class TopicUrisContract(TopicContractBase):
    """put_scoped_sources(once_per_uri=...), scope_position_of_uri."""

    def test_the_same_content_under_new_ids_is_new_sources_in_order(
            self, topic_backend_factory):
        async def body() -> None:
            b = topic_backend_factory(None)
            try:
                said = [_turn("said-1", None), _turn("said-2", None, "assistant: deploying"),
                        _turn("said-3", None)]
                assert await b.put_scoped_sources("repo:/said", said) == (1, 2, 3)
                journal = await b.scope_journal("repo:/said")
                assert [e.source.source_id for e in journal] == ["said-1", "said-2",
                                                                 "said-3"]
                assert journal[0].source.content_hash == journal[2].source.content_hash
            finally:
                await b.close()

        run(body())

    def test_once_per_uri_adds_an_event_once(self, topic_backend_factory):
        async def body() -> None:
            b = topic_backend_factory(None)
            try:
                if not callable(getattr(b, "scope_position_of_uri", None)):
                    pytest.skip(f"{type(b).__name__} has no scope_position_of_uri()")
                uri = "claude-code://session/s1/turn/t1"
                first = _turn("turn-a", uri)
                assert await b.scope_position_of_uri("repo:/u", uri) is None
                assert await b.put_scoped_sources("repo:/u", [first],
                                                  once_per_uri=True) == (1,)
                assert await b.scope_position_of_uri("repo:/u", uri) == 1
                # a redelivered turn under a new id, with other text: nothing added
                again = _turn("turn-b", uri, "user: ok, ship it (edited)")
                assert await b.put_scoped_sources("repo:/u", [again],
                                                  once_per_uri=True) == (1,)
                assert await b.source_head("repo:/u") == 1
                with pytest.raises(Exception):  # noqa: B017  nothing of it was stored
                    await b.get_sources(["turn-b"])
                # two Sources with one uri in one call: the first is added
                other = "claude-code://session/s1/turn/t2"
                pair = [_turn("turn-c", other), _turn("turn-d", other), _turn("turn-e", None)]
                assert await b.put_scoped_sources("repo:/u", pair,
                                                  once_per_uri=True) == (2, 2, 3)
                # without the flag every add is a new Source, the lookup keeps the first
                assert await b.put_scoped_sources("repo:/u", [_turn("turn-f", uri)]) == (4,)
                assert await b.scope_position_of_uri("repo:/u", uri) == 1
                # Scopes are apart
                assert await b.scope_position_of_uri("repo:/v", uri) is None
                assert await b.put_scoped_sources("repo:/v", [_turn("turn-g", uri)],
                                                  once_per_uri=True) == (1,)
                for bad in ("", None):
                    with pytest.raises(InvalidInputError, match="uri"):
                        await b.scope_position_of_uri("repo:/u", bad)
                with pytest.raises(InvalidInputError, match="once_per_uri"):
                    await b.put_scoped_sources("repo:/u", [], once_per_uri="yes")
            finally:
                await b.close()

        run(body())
