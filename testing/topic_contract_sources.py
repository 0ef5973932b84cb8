"""Topic contract group: scoped Sources, the Scope journal, Pending and the explicit
flush (Topic Memory RFC, "Source, Window, Cursor, and Pending", "Pending dirty set",
"Retry and observability"; TOPIC-MEMORY.md, "Scopes are new", "Flush").

Positions are 1, 2, ... per Scope in put order and never reused; one Scope per Source;
a Source write raises Pending to ``max(existing, position)`` with the flush
generations unchanged, in its own transaction; the flush is ``idle`` on an empty or
covered Scope and otherwise ``accepted``, coalescing into one row; the status is read
only."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    InvalidInputError,
    SecretDetectedError,
)
from powercontext.core.models import Source
from powercontext.core.topic.models import PublicationGuards, TopicPublication
from powercontext.core.topic.processing import (
    BINDING,
    CursorAdvance,
    JournalEntry,
    PendingRow,
    PendingUpdate,
    ScopeStatus,
)
from powercontext.testing.base import run
from powercontext.testing.topic_base import TopicContractBase
from powercontext.testing.topic_strategies import BAD_SCOPE_IDS

__all__ = ["TopicSourcesContract", "scoped_source"]


def scoped_source(name: str, body: str | None = None) -> Source:
    """A normalized Source ``name`` (its content names it unless ``body`` is given)."""
    return canonical.make_source(name, "user_note", body or f"evidence {name}")


def _pending(backend: Any, scope: str) -> Any:
    async def read() -> PendingRow | None:
        (status,) = await backend.processing_status(scope)
        return status.pending

    return read()


class TopicSourcesContract(TopicContractBase):
    """put_scoped_sources, scope_journal, source_head, flush, processing_status."""

    @staticmethod
    def _fresh(factory: Any) -> Any:
        return factory(None)

    def test_positions_run_1_to_n_per_scope_and_scopes_are_independent(
            self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                a = [scoped_source(f"pos-a{i}") for i in range(4)]
                c = [scoped_source(f"pos-c{i}") for i in range(3)]
                assert await b.put_scoped_sources("repo:/a", a[:2]) == (1, 2)
                assert await b.put_scoped_sources("repo:/c", c[:1]) == (1,)
                assert await b.put_scoped_sources("repo:/a", a[2:]) == (3, 4)
                assert await b.put_scoped_sources("repo:/c", c[1:]) == (2, 3)
                assert await b.source_head("repo:/a") == 4
                assert await b.source_head("repo:/c") == 3
                assert await b.source_head("repo:/none") == 0
                journal = await b.scope_journal("repo:/a")
                assert journal == tuple(JournalEntry("repo:/a", i + 1, s, False)
                                        for i, s in enumerate(a))
                assert await b.scope_journal("repo:/a", 2, 1) == (journal[2],)
                assert await b.scope_journal("repo:/a", 4) == ()
                assert await b.scope_journal("repo:/none") == ()
                assert await b.get_sources([s.source_id for s in a]) == tuple(a)
            finally:
                await b.close()

        run(body())

    def test_re_adding_a_source_keeps_its_position_and_raises_nothing(
            self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                s1, s2, s3 = (scoped_source(f"idem-{i}") for i in range(3))
                assert await b.put_scoped_sources("repo:/i", [s1, s2]) == (1, 2)
                await b.flush("repo:/i")
                before = await _pending(b, "repo:/i")
                assert before == PendingRow(BINDING, "repo:/i", 2, 1, 0)
                assert await b.put_scoped_sources("repo:/i", [s2, s1, s2]) == (2, 1, 2)
                assert await _pending(b, "repo:/i") == before
                assert await b.put_scoped_sources("repo:/i", [s3, s1, s3]) == (3, 1, 3)
                assert await b.source_head("repo:/i") == 3
                assert await _pending(b, "repo:/i") == PendingRow(BINDING, "repo:/i", 3, 1, 0)
                assert await b.put_scoped_sources("repo:/i", []) == ()
            finally:
                await b.close()

        run(body())

    def test_a_source_belongs_to_one_scope_and_a_refused_batch_stores_nothing(
            self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                mine, fresh = scoped_source("one-mine"), scoped_source("one-fresh")
                await b.put_scoped_sources("repo:/one", [mine])
                with pytest.raises(InvalidInputError) as info:
                    await b.put_scoped_sources("repo:/two", [fresh, mine])
                assert info.value.field == "scope_id"
                assert "repo:/one" in str(info.value)  # the caller's own Scope id
                assert await b.source_head("repo:/two") == 0
                assert await _pending(b, "repo:/two") is None
                assert await b.get_sources(["one-mine"]) == (mine,)
                assert [s for _, s in await b.journal()] == [mine]  # fresh not stored
                # a Source stored without a Scope (Memory evidence) may join one later
                plain = scoped_source("one-plain")
                await b.put_sources([plain])
                assert await b.put_scoped_sources("repo:/two", [plain]) == (1,)
                with pytest.raises(InvalidInputError):
                    await b.put_scoped_sources("repo:/one", [plain])
            finally:
                await b.close()

        run(body())

    def test_a_source_write_raises_pending_to_the_max_and_keeps_the_generations(
            self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                assert await _pending(b, "repo:/p") is None
                await b.put_scoped_sources("repo:/p", [scoped_source("pend-1")])
                assert await _pending(b, "repo:/p") == PendingRow(BINDING, "repo:/p", 1)
                assert await b.flush("repo:/p") == "accepted"
                await b.put_scoped_sources(
                    "repo:/p", [scoped_source("pend-2"), scoped_source("pend-3")])
                assert await _pending(b, "repo:/p") == PendingRow(BINDING, "repo:/p", 3, 1, 0)
                assert await _pending(b, "repo:/q") is None  # another Scope: untouched
            finally:
                await b.close()

        run(body())

    def test_flush_is_idle_on_an_empty_scope_and_coalesces_when_accepted(
            self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                assert await b.flush("repo:/f") == "idle"
                assert await b.processing_status() == ()  # idle wrote nothing
                await b.put_scoped_sources("repo:/f", [scoped_source("flush-1")])
                assert await b.flush("repo:/f") == "accepted"
                assert await b.flush("repo:/f") == "accepted"
                statuses = await b.processing_status()
                assert statuses == (ScopeStatus("repo:/f", BINDING, 1, 0,
                                                PendingRow(BINDING, "repo:/f", 1, 2, 0),
                                                None),)
                assert not statuses[0].covered
            finally:
                await b.close()

        run(body())

    def test_flush_is_idle_once_the_cursor_covers_the_head(self, topic_backend_factory):
        """Needs the Cursor guard of publication (a guarded publication with no write
        advances the Cursor); skips on a backend that refuses guards."""
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                await b.put_scoped_sources("repo:/cv", [scoped_source("cover-1"),
                                                         scoped_source("cover-2")])
                assert await b.flush("repo:/cv") == "accepted"
                guards = PublicationGuards(cursor=CursorAdvance(BINDING, "repo:/cv", 0, 2),
                                           pending=PendingUpdate(1))
                try:
                    await b.publish(TopicPublication((), guards))
                except CapabilityNotSupportedError as exc:
                    pytest.skip(f"publication guards are not implemented here: {exc}")
                (status,) = await b.processing_status("repo:/cv")
                assert (status.cursor, status.source_head, status.covered) == (2, 2, True)
                assert await b.flush("repo:/cv") == "idle"
                (again,) = await b.processing_status("repo:/cv")
                assert again == status  # idle wrote nothing
                await b.put_scoped_sources("repo:/cv", [scoped_source("cover-3")])
                assert await b.flush("repo:/cv") == "accepted"
                (after,) = await b.processing_status("repo:/cv")
                assert after.pending is not None and after.pending.source_through == 3
            finally:
                await b.close()

        run(body())

    def test_status_of_one_scope_is_always_one_item_and_all_are_sorted_by_utf8(
            self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                assert await b.processing_status("repo:/unknown") == (
                    ScopeStatus("repo:/unknown", BINDING, 0, 0, None, None),)
                # UTF-8 binary order: "Z" < "a" < "\u00e9" < "\U0001f600"
                names = ["repo:/\U0001f600", "repo:/a", "repo:/\u00e9", "repo:/Z"]
                for i, scope in enumerate(names):
                    await b.put_scoped_sources(scope, [scoped_source(f"sort-{i}")])
                statuses = await b.processing_status()
                assert [s.scope_id for s in statuses] == sorted(
                    names, key=lambda s: s.encode("utf-8"))
                for s in statuses:
                    assert (s.binding_name, s.source_head, s.cursor, s.budget) == (
                        BINDING, 1, 0, None)
                    assert s.pending == PendingRow(BINDING, s.scope_id, 1)
            finally:
                await b.close()

        run(body())

    def test_bad_scope_ids_and_journal_arguments_are_bad_input(self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                s = scoped_source("bad-1")
                for bad in BAD_SCOPE_IDS:
                    for call in (b.put_scoped_sources(bad, [s]), b.scope_journal(bad),
                                 b.source_head(bad), b.flush(bad)):
                        with pytest.raises(InvalidInputError) as info:
                            await call
                        assert info.value.field == "scope_id"
                    if bad is not None:
                        with pytest.raises(InvalidInputError):
                            await b.processing_status(bad)
                for after, limit, field in ((-1, 10, "after"), (True, 10, "after"),
                                            (0, 0, "limit"), (0, 1001, "limit"),
                                            (0, True, "limit"), (0.5, 10, "after")):
                    with pytest.raises(InvalidInputError) as info:
                        await b.scope_journal("repo:/b", after, limit)
                    assert info.value.field == field
                with pytest.raises(InvalidInputError):
                    await b.put_scoped_sources("repo:/b", ["not a Source"])
                token = "project:ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
                with pytest.raises(SecretDetectedError) as secret:  # stored and shown
                    await b.put_scoped_sources(token, [s])
                assert secret.value.field == "scope_id" and token not in str(secret.value)
                assert await b.processing_status() == ()  # nothing was written
                assert await b.get_sources([]) == ()
            finally:
                await b.close()

        run(body())

    def test_a_scope_id_is_its_nfc_form_and_compared_exactly(self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                composed, decomposed = "repo:/caf\u00e9", "repo:/cafe\u0301"
                assert await b.put_scoped_sources(decomposed, [scoped_source("nfc-1")]) == (1,)
                assert await b.put_scoped_sources(composed, [scoped_source("nfc-2")]) == (2,)
                assert await b.source_head(decomposed) == await b.source_head(composed) == 2
                assert [e.scope_id for e in await b.scope_journal(decomposed)] == [composed] * 2
                assert [s.scope_id for s in await b.processing_status()] == [composed]
                # no case folding: another Scope
                assert await b.source_head("repo:/CAF\u00c9") == 0
                assert await b.flush("repo:/CAF\u00c9") == "idle"
                # never trimmed: white space at either end is refused, nothing written
                for padded in (" repo:/caf\u00e9", "repo:/caf\u00e9 ", "repo:/caf\u00e9\u3000"):
                    for call in (b.source_head(padded), b.flush(padded),
                                 b.put_scoped_sources(padded, [scoped_source("nfc-3")])):
                        with pytest.raises(InvalidInputError, match="white space"):
                            await call
                assert await b.source_head(composed) == 2
            finally:
                await b.close()

        run(body())

    def test_the_lineage_only_flag_is_server_owned(self, topic_backend_factory):
        async def body():
            b = self._fresh(topic_backend_factory)
            try:
                put = getattr(b, "put_server_sources", None)
                if put is None:
                    pytest.skip(f"{type(b).__name__} has no server-only put_server_sources")
                s1, s2 = scoped_source("lin-1"), scoped_source("lin-2")
                assert await put("repo:/l", [s1], lineage_only=True) == (1,)
                assert await b.put_scoped_sources("repo:/l", [s1, s2]) == (1, 2)
                assert [e.lineage_only for e in await b.scope_journal("repo:/l")] == [
                    True, False]
                assert await _pending(b, "repo:/l") == PendingRow(BINDING, "repo:/l", 2)
            finally:
                await b.close()

        run(body())

    def test_any_interleaving_of_scoped_puts_numbers_each_scope_in_put_order(
            self, topic_backend_factory):
        """Property: over 3 Scopes, any sequence of scoped puts (re-adds included)
        gives each Scope positions 1..n in first-put order, and its Pending
        ``source_through`` equals its Source head."""
        b = self._fresh(topic_backend_factory)
        rounds = iter(range(10**6))
        scope_names = ("a", "b", "c")

        @settings(max_examples=12, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture,
                                         HealthCheck.too_slow])
        @given(puts=st.lists(st.tuples(st.sampled_from(scope_names),
                                       st.lists(st.integers(0, 5), min_size=1, max_size=3)),
                             min_size=1, max_size=8))
        def prop(puts: list[tuple[str, list[int]]]) -> None:
            n = next(rounds)
            scopes = {k: f"repo:/prop{n}/{k}" for k in scope_names}
            owner: dict[int, str] = {}
            expected: dict[str, list[str]] = {k: [] for k in scope_names}

            async def body() -> None:
                for key, items in puts:
                    if any(owner.get(i, key) != key for i in items):
                        with pytest.raises(InvalidInputError):
                            await b.put_scoped_sources(
                                scopes[key], [scoped_source(f"p{n}-{i}") for i in items])
                        continue
                    got = await b.put_scoped_sources(
                        scopes[key], [scoped_source(f"p{n}-{i}") for i in items])
                    for i in items:
                        if i not in owner:
                            owner[i] = key
                            expected[key].append(f"p{n}-{i}")
                    assert got == tuple(expected[key].index(f"p{n}-{i}") + 1 for i in items)
                for key in scope_names:
                    journal = await b.scope_journal(scopes[key], 0, 1000)
                    assert [e.source.source_id for e in journal] == expected[key]
                    assert [e.position for e in journal] == list(
                        range(1, len(expected[key]) + 1))
                    (status,) = await b.processing_status(scopes[key])
                    assert status.source_head == len(expected[key])
                    through = None if status.pending is None else status.pending.source_through
                    assert through == (status.source_head or None)

            run(body())

        try:
            prop()
        finally:
            run(b.close())

    def test_any_sequence_of_puts_and_flushes_keeps_pending_at_the_head(
            self, topic_backend_factory):
        """Property: for any sequence of scoped puts and flushes of one Scope (no
        processing), each flush is ``idle`` exactly while the Scope has no Source,
        ``flush_generation`` counts the accepted flushes, ``handled_flush_generation``
        stays 0 and ``source_through`` equals the Source head."""
        b = self._fresh(topic_backend_factory)
        rounds = iter(range(10**6))

        @settings(max_examples=10, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture,
                                         HealthCheck.too_slow])
        @given(steps=st.lists(st.one_of(st.just("flush"), st.integers(0, 4)), max_size=10))
        def prop(steps: list[object]) -> None:
            n = next(rounds)
            scope = f"repo:/flush-prop{n}"

            async def body() -> None:
                accepted, stored = 0, set[object]()
                for step in steps:
                    if step == "flush":
                        status = await b.flush(scope)
                        assert status == ("accepted" if stored else "idle")
                        accepted += status == "accepted"
                    else:
                        stored.add(step)
                        await b.put_scoped_sources(scope, [scoped_source(f"fp{n}-{step}")])
                (s,) = await b.processing_status(scope)
                assert s.source_head == len(stored)
                if not stored:
                    assert s.pending is None
                else:
                    assert s.pending == PendingRow(BINDING, scope, len(stored), accepted, 0)

            run(body())

        try:
            prop()
        finally:
            run(b.close())
