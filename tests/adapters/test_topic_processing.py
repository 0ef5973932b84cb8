"""One Window processed end to end (issue 13, items 6 and 7; Topic Memory RFC, "Probe
and historical Topic selection", "Global direct evolution", "Evolution operations and
model output", "Storage, Head, and atomic activation", "Retry and observability").

Markdown files and chat turns become Topics found by search with exact refs; a
second batch UPDATEs; NOOP and lineage-only Windows advance the Cursor with zero
writes; every bad model output of the issue aborts the Window with the Cursor
unchanged; reservations equal model calls; complexity ceilings stop one Scope only;
an oversized Source is probed by fragments, then published through the Work Planner;
two fresh runs give identical content hashes."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from support.topic_models import ScriptedTopicModel
from support.topic_services import service_factory

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import canonical
from powercontext.core.errors import BackendError, TopicProcessingError
from powercontext.core.models import Source
from powercontext.core.topic.content import MAX_DETAIL_CHARS
from powercontext.core.topic.processing import BINDING, ProcessingSettings
from powercontext.testing import InMemoryTopicBackend
from powercontext.topic_processing import TopicProcessor
from powercontext.topic_service import TopicMemoryService

SCOPE = "project:x"
OTHER = "project:y"

ALPHA = "# Alpha service\n\nThe alpha service stores invoices. It runs nightly."
BETA = "# Beta queue\n\nThe beta queue retries failed payments three times."
GAMMA = "# Gamma notes\n\nGamma keeps the release checklist."
TURN_1 = "user: should the alpha service also store receipts?"
TURN_2 = "assistant: yes, receipts go to the alpha service as of December."
ALPHA_2 = "# Alpha service\n\nSince December the alpha service also stores receipts."


def md(name: str, text: str, kind: str = "file") -> Source:
    return canonical.make_source(f"src_{name}", kind, text, uri=f"file:///repo/{name}")


def batch_one() -> list[Source]:
    return [md("alpha.md", ALPHA), md("beta.md", BETA), md("gamma.md", GAMMA),
            md("turn1", TURN_1, "chat_turn"), md("turn2", TURN_2, "chat_turn")]


Factory = Callable[[], TopicMemoryService]


def _factory(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Factory]:
    yield from service_factory(request, tmp_path, "pc_proc")


@pytest.fixture(params=["memory", "sqlite"])
def new_service(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Factory]:
    """A fresh empty database per call: the in-memory backend or a SQLite file."""
    yield from _factory(request, tmp_path)


@pytest.fixture(params=["memory", "sqlite",
                        pytest.param("seekdb", marks=pytest.mark.oceanbase)])
def every_service(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Factory]:
    """As ``new_service``, and a fresh database on the seekdb server too."""
    yield from _factory(request, tmp_path)


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def status(svc: TopicMemoryService, scope: str = SCOPE) -> Any:
    (st,) = await svc.backend.processing_status(scope)
    return st


async def topic_count(svc: TopicMemoryService, scope: str = SCOPE) -> int:
    return len(await svc.backend.heads(scope))


# ---------------------------------------------------------------- the normal path

def test_markdown_and_chat_turns_become_topics_found_with_exact_refs(every_service: Factory
                                                                     ) -> None:
    async def go() -> None:
        svc = every_service()
        sources = batch_one()
        assert await svc.backend.put_scoped_sources(SCOPE, sources) == (1, 2, 3, 4, 5)
        assert await svc.backend.flush(SCOPE) == "accepted"
        model = DeterministicTopicModel()
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped is None
        assert report.status.cursor == 5 and report.status.covered
        assert report.status.pending is None and report.status.budget is None
        (window,) = report.windows
        assert (window.after, window.through) == (0, 5)
        # the two chat turns are about the alpha service: they join its Topic
        assert len(window.created) == 3 and window.updated == ()
        window_refs = {s.ref for s in sources}
        hits = (await svc.search(SCOPE, "alpha service invoices")).hits
        assert hits and hits[0].title == "Alpha service"
        got = await svc.get(SCOPE, hits[0].ref)
        assert got.ref == hits[0].ref and got.ref.revision == 1
        assert got.content.detail == "\n\n".join(["#" + ALPHA, TURN_1, TURN_2])
        assert set(got.sources) <= window_refs
        assert got.sources == tuple(sorted(s.ref for s in (sources[0], *sources[3:])))
        assert await svc.backend.flush(SCOPE) == "idle"
    run(go())


def test_a_second_batch_updates_the_topic_based_on_its_head(every_service: Factory) -> None:
    async def go() -> None:
        svc = every_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        processor = TopicProcessor(svc, DeterministicTopicModel())
        first = (await processor.process(SCOPE)).windows[0]
        newer = md("alpha-2.md", ALPHA_2)
        assert await svc.backend.put_scoped_sources(SCOPE, [newer]) == (6,)
        assert await svc.backend.flush(SCOPE) == "accepted"
        report = await processor.process(SCOPE)
        assert report.stopped is None
        (window,) = report.windows
        assert (window.after, window.through, window.created) == (5, 6, ())
        (updated,) = window.updated
        assert updated.revision == 2
        got = await svc.get(SCOPE, updated)
        assert got.based_on is not None and got.based_on.revision == 1
        assert got.based_on in first.created
        assert got.sources == (newer.ref,)
        assert got.content.detail == "\n\n".join(
            ["#" + ALPHA, TURN_1, TURN_2, ALPHA_2.split("\n\n", 1)[1]])
        hits = (await svc.search(SCOPE, "alpha service receipts")).hits
        assert updated in [h.ref for h in hits]  # the new head, never Revision 1
        assert not any(h.ref.revision == 1 and h.ref.artifact_id == updated.artifact_id
                       for h in hits)
    run(go())


def test_a_noop_window_writes_nothing_and_advances_the_cursor(every_service: Factory) -> None:
    async def go() -> None:
        svc = every_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        processor = TopicProcessor(svc, DeterministicTopicModel())
        await processor.process(SCOPE)
        heads = await svc.backend.heads(SCOPE)
        again = md("alpha-copy.md", ALPHA)  # another Source, nothing new in it
        await svc.backend.put_scoped_sources(SCOPE, [again])
        window = await processor.process_window(SCOPE)
        assert window is not None
        assert (window.created, window.updated) == ((), ())
        assert window.noops >= 1  # the Alpha Topic's slot, and any other history selected
        assert await svc.backend.heads(SCOPE) == heads
        st = await status(svc)
        assert st.cursor == 6 and st.pending is None and st.budget is None
        assert await processor.process_window(SCOPE) is None
    run(go())


def test_a_window_of_only_lineage_only_sources_makes_no_model_call(every_service: Factory
                                                                   ) -> None:
    async def go() -> None:
        svc = every_service()
        # lineage_only is server-owned: no public path sets it
        await svc.backend.put_server_sources(  # type: ignore[attr-defined]
            SCOPE, batch_one()[:2], lineage_only=True)
        model = ScriptedTopicModel()
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped is None and model.calls == []
        assert report.windows[0].reserved_requests == 0
        assert report.status.cursor == 2 and await topic_count(svc) == 0
        assert report.status.pending is None and report.status.budget is None
    run(go())


def test_requests_reserved_equal_the_model_calls_made(new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        model = ScriptedTopicModel()
        settings = ProcessingSettings(window_limit=2)
        report = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert report.stopped is None
        assert [(w.after, w.through) for w in report.windows] == [(0, 2), (2, 4), (4, 5)]
        assert sum(w.reserved_requests for w in report.windows) == len(model.calls)
        # probe + evolve per Window (and a reconcile call when a CREATE's second
        # retrieval found a related historical Topic)
        assert [s for s in model.stages() if s != "reconcile"] == ["probe", "evolve"] * 3
    run(go())


def test_the_window_never_passes_the_wave_target_and_claims_its_flush(new_service: Factory
                                                                      ) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one()[:3])
        assert await svc.backend.flush(SCOPE) == "accepted"
        assert await svc.backend.flush(SCOPE) == "accepted"  # coalesces into one row
        st = await status(svc)
        assert (st.pending.source_through, st.pending.flush_generation) == (3, 2)
        report = await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
        assert report.status.cursor == 3 and report.status.pending is None
    run(go())


# ---------------------------------------------------------------- bad model output

def _topic(title: str = "Alpha service", detail: str = "stored", ids: Any = ("s1",),
           **extra: Any) -> dict[str, Any]:
    return {"title": title, "summary": "About alpha.", "detail": detail,
            "evidence_ids": list(ids), **extra}


def _new(*topics: dict[str, Any]) -> Callable[[Any, dict[str, Any]], object]:
    return lambda req, data: {"history": {h["handle"]: None for h in data["history"]},
                              "new": list(topics)}


BAD_OUTPUTS: dict[str, Callable[[Any, dict[str, Any]], object]] = {
    "extra field artifact_id": _new(_topic(artifact_id="topic_art_0000000000000000000000000a")),
    "extra field op": _new(_topic(op="create")),
    "extra field revision": _new(_topic(revision=1)),
    "empty evidence ids": _new(_topic(ids=())),
    "unknown evidence id": _new(_topic(ids=("x1",))),
    "duplicated evidence ids": _new(_topic(ids=("s1", "s1"))),
    "out-of-Window evidence id": _new(_topic(ids=("s6",))),
    "empty title": _new(_topic(title=" ")),
    "oversized detail": _new(_topic(detail="d" * (MAX_DETAIL_CHARS + 1))),
    "not JSON": lambda req, data: "{not json",
}


@pytest.mark.parametrize("case", sorted(BAD_OUTPUTS))
def test_bad_model_output_aborts_the_window_with_the_cursor_unchanged(
        new_service: Factory, case: str) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        model = ScriptedTopicModel({"evolve": BAD_OUTPUTS[case]})
        with pytest.raises(TopicProcessingError) as info:
            await TopicProcessor(svc, model).process_window(SCOPE)
        assert (info.value.code, info.value.stage) == ("model_output_invalid", "evolve")
        st = await status(svc)
        assert st.cursor == 0 and await topic_count(svc) == 0
        assert st.pending is not None and st.pending.source_through == 5
        assert st.budget is not None and st.budget.failure_code == "model_output_invalid"
        assert st.budget.reserved_requests == len(model.calls) == 2
    run(go())


def test_two_outputs_bound_to_one_target_abort_the_window(every_service: Factory) -> None:
    async def go() -> None:
        svc = every_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
        heads = await svc.backend.heads(SCOPE)
        await svc.backend.put_scoped_sources(SCOPE, [md("alpha-2.md", ALPHA_2)])

        def twice(req: Any, data: dict[str, Any]) -> str:
            assert data["history"], "the Alpha Topic is selected as history"
            one = json.dumps(_topic(detail="first", ids=("s1",)))
            two = json.dumps(_topic(detail="second", ids=("s1",)))
            rest = ", ".join(f'"{h["handle"]}": null' for h in data["history"][1:])
            slots = f'"h1": {one}, "h1": {two}' + (f", {rest}" if rest else "")
            return f'{{"history": {{{slots}}}, "new": []}}'

        model = ScriptedTopicModel({"evolve": twice})
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped == "model_output_invalid" and report.windows == ()
        assert report.status.cursor == 5
        assert await svc.backend.heads(SCOPE) == heads
    run(go())


def test_a_provider_error_fails_the_window_and_stores_its_code(new_service: Factory) -> None:
    def boom(req: Any, data: Any) -> object:
        raise BackendError("HTTP 500 from the provider")

    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        model = ScriptedTopicModel({"probe": boom})
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped == "provider_error"
        assert report.status.cursor == 0
        assert report.status.budget.failure_code == "provider_error"
        assert report.status.budget.reserved_requests == 1 == len(model.calls)
        # a retry starts from the same Cursor and succeeds within the allowance
        ok = await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
        assert ok.stopped is None and ok.status.cursor == 5 and ok.status.budget is None
    run(go())


def test_a_fourth_attempt_is_refused_before_any_model_call(new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        bad = ScriptedTopicModel({"evolve": BAD_OUTPUTS["not JSON"]})
        for _ in range(3):
            assert (await TopicProcessor(svc, bad).process(SCOPE)).stopped == \
                "model_output_invalid"
        calls = len(bad.calls)
        report = await TopicProcessor(svc, bad).process(SCOPE)
        assert report.stopped == "window_attempt_limit"
        assert len(bad.calls) == calls == 6
        assert report.status.budget.failure_code == "window_attempt_limit"
        assert report.status.budget.reserved_requests == 6
    run(go())


# ---------------------------------------------------------------- limits

def test_a_source_over_the_value_ceiling_stops_its_scope_only() -> None:
    async def go() -> None:
        svc = TopicMemoryService(InMemoryTopicBackend())  # storing it costs ~10 s of scanning
        # kind, content, uri + 32,768 metadata keys and values: 65,539 values
        many = canonical.make_source("src_many", "file", "m",
                                     metadata={f"k{i}": "v" for i in range(32_768)})
        await svc.backend.put_scoped_sources(SCOPE, [many, md("alpha.md", ALPHA)])
        await svc.backend.put_scoped_sources(OTHER, [md("gamma.md", GAMMA)])
        model = ScriptedTopicModel()
        processor = TopicProcessor(svc, model)
        report = await processor.process(SCOPE)
        assert report.stopped == "source_complexity_limit"
        assert report.status.cursor == 0 and report.status.budget.terminal
        assert report.status.budget.failure_code == "source_complexity_limit"
        assert (await svc.backend.scope_journal(SCOPE))[0].source == many  # stored
        assert model.calls == []
        other = await processor.process(OTHER)
        assert other.stopped is None and await topic_count(svc, OTHER) == 1
        calls = len(model.calls)
        again = await processor.process(SCOPE)  # the terminal frontier is read first
        assert again.stopped == "source_complexity_limit" and len(model.calls) == calls
        assert again.status.budget.attempt_count == 1
    run(go())


@pytest.mark.slow  # storing 4 MB runs the secret scanner over it (~15 s alone)
def test_a_source_over_the_character_ceiling_is_stored_and_stops_processing() -> None:
    async def go() -> None:
        svc = TopicMemoryService(InMemoryTopicBackend())
        # 4,194,305 characters with metadata: the ceiling counts metadata too
        huge = canonical.make_source("src_huge", "file", "ab cd\n" * 699_050,
                                     metadata={"path": "x" * 5})
        await svc.backend.put_scoped_sources(SCOPE, [huge])
        model = ScriptedTopicModel()
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped == "source_complexity_limit" and model.calls == []
        assert report.status.cursor == 0
        assert (await svc.backend.scope_journal(SCOPE))[0].source.ref == huge.ref
    run(go())


def test_an_oversized_source_is_probed_by_fragments_then_published_by_the_planner(
        new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        text = "# Big\n\n" + "\n\n".join(f"paragraph {i} " * 40 for i in range(60))
        big, alpha = md("big.md", text), md("a.md", ALPHA)
        await svc.backend.put_scoped_sources(SCOPE, [big, alpha])
        settings = ProcessingSettings(context_window_tokens=8_192, max_output_tokens=512)
        model = ScriptedTopicModel(context_window_tokens=8_192)
        report = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert report.stopped is None, report.reason
        assert [(w.after, w.through) for w in report.windows] == [(0, 1), (1, 2)]
        assert report.status.cursor == 2
        first = report.windows[0]
        assert first.created
        for ref in first.created:
            assert (await svc.get(SCOPE, ref)).sources == (big.ref,)
        probes = [c for c in model.calls if c.stage == "probe"][:-1]  # the last: a.md
        assert len(probes) > 1
        pieces = [json.loads(c.input_json)["sources"] for c in probes]
        assert all(len(p) == 1 and p[0]["id"] == "s1" for p in pieces)
        starts = [p[0]["start"] for p in pieces]
        ends = [p[0]["end"] for p in pieces]
        assert starts[0] == 0 and starts[1:] == ends[:-1]
        assert sum(w.reserved_requests for w in report.windows) == len(model.calls)
        assert all(c.estimated_tokens <= 8_192 for c in model.calls)
    run(go())


def test_two_fresh_runs_give_identical_topic_content_hashes(every_service: Factory) -> None:
    async def once() -> list[tuple[str, str]]:
        svc = every_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        processor = TopicProcessor(svc, DeterministicTopicModel())
        await processor.process(SCOPE)
        await svc.backend.put_scoped_sources(SCOPE, [md("alpha-2.md", ALPHA_2)])
        await processor.process(SCOPE)
        out = []
        for ref in await svc.backend.heads(SCOPE):
            rev = await svc.get(SCOPE, ref)
            out.append((rev.content.title, rev.content_hash))
        return sorted(out)

    first, second = run(once()), run(once())
    assert first == second and len(first) == 3


def test_logs_name_stage_and_code_but_never_source_text(new_service: Factory,
                                                        caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        model = ScriptedTopicModel({"evolve": BAD_OUTPUTS["oversized detail"]})
        await TopicProcessor(svc, model).process(SCOPE)
        await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)

    with caplog.at_level(logging.INFO, logger="powercontext.topic"):
        run(go())
    records = [r for r in caplog.records if r.name == "powercontext.topic"]
    failed = [r for r in records if getattr(r, "error_code", None)]
    assert failed and failed[0].stage == "evolve"
    assert failed[0].error_code == "model_output_invalid"
    assert (failed[0].binding, failed[0].scope_id, failed[0].window_after,
            failed[0].window_through, failed[0].attempt_count) == (BINDING, SCOPE, 0, 5, 1)
    text = "\n".join(r.getMessage() for r in records)
    for secret in ("invoices", "receipts", "ddddd", "retries failed payments"):
        assert secret not in text


# ---------------------------------------------------------------- the allowance

def test_a_reservation_over_the_token_allowance_spends_nothing(new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        # 8 requests x 10,000,000-token windows = 80,000,000 > 64,000,000
        model = ScriptedTopicModel(context_window_tokens=10_000_000, max_requests=8)
        settings = ProcessingSettings(context_window_tokens=10_000_000)
        report = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert report.stopped == "window_provider_budget_exceeded" and model.calls == []
        budget = report.status.budget
        assert (budget.reserved_requests, budget.reserved_tokens, budget.terminal) == (0, 0, True)
        again = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert again.stopped == "window_provider_budget_exceeded" and model.calls == []
        assert again.status.budget.attempt_count == 1
    run(go())


def test_the_513th_reserved_request_is_refused_and_nothing_more_is_spent(new_service: Factory
                                                                          ) -> None:
    async def go() -> None:
        svc = new_service()
        # one oversized Source of more than 32 fragments; 16 requests reserved per call
        text = "\n".join(f"line {i} of the big file" for i in range(16_000))
        await svc.backend.put_scoped_sources(SCOPE, [md("big.md", text)])
        settings = ProcessingSettings(context_window_tokens=4_096, max_output_tokens=512,
                                      max_requests=16)
        model = ScriptedTopicModel(context_window_tokens=4_096, max_requests=16)
        report = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert report.stopped == "window_provider_budget_exceeded"
        assert len(model.calls) == 32  # 32 x 16 = 512 requests; the 33rd call is refused
        budget = report.status.budget
        assert budget.reserved_requests == 512 and budget.terminal
        assert report.status.cursor == 0
    run(go())


def test_hybrid_reserves_one_request_per_probe_query_and_embedded_text() -> None:
    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
    from powercontext.core.topic.projection import embedding_texts

    class Counting(DeterministicEmbedding):
        texts = 0

        async def embed(self, texts: Any) -> Any:
            Counting.texts += len(texts)
            return await super().embed(texts)

    async def go() -> None:
        emb = Counting(16)
        svc = TopicMemoryService(InMemoryTopicBackend(profile=emb.profile), emb)
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        model = ScriptedTopicModel()
        processor = TopicProcessor(svc, model)
        first = (await processor.process(SCOPE)).windows[0]
        contents = [(await svc.get(SCOPE, r)).content for r in first.created]
        texts = sum(len(embedding_texts(c)) for c in contents)
        assert first.reserved_requests == len(model.calls) + texts == Counting.texts + 2
        await svc.backend.put_scoped_sources(SCOPE, [md("alpha-2.md", ALPHA_2)])
        before = Counting.texts
        calls = len(model.calls)
        second = (await processor.process(SCOPE)).windows[0]
        # probe + evolve, one embedded Probe query, the UPDATE's texts
        assert second.reserved_requests == (len(model.calls) - calls) + (Counting.texts - before)
        assert Counting.texts - before >= 2 and second.updated
    run(go())


# ---------------------------------------------------------------- concurrency, faults

def test_a_newer_attempt_takes_publication_authority_from_an_older_one(every_service: Factory
                                                                        ) -> None:
    async def go() -> None:
        svc = every_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        other = TopicProcessor(svc, DeterministicTopicModel())
        outcome: list[Any] = []

        model = ScriptedTopicModel()
        inner_generate = model.generate

        async def generate(request: Any) -> Any:
            if request.stage == "evolve" and not outcome:
                # a second worker runs its whole attempt while the first one evolves
                outcome.append(await other.process_window(SCOPE))
            return await inner_generate(request)

        model.generate = generate  # type: ignore[method-assign]
        with pytest.raises(TopicProcessingError) as info:
            await TopicProcessor(svc, model).process_window(SCOPE)
        # the fenced reservation of the second retrieval's reconcile call, else the
        # Cursor CAS first in publication: a control signal, not terminal
        assert info.value.code in ("attempt_superseded", "cursor_conflict")
        assert not info.value.terminal
        assert outcome[0] is not None and outcome[0].through == 5
        st = await status(svc)
        assert st.cursor == 5 and st.budget is None
        assert await topic_count(svc) == len(outcome[0].created)
    run(go())


def test_process_goes_on_when_another_worker_published_its_window(every_service: Factory
                                                                  ) -> None:
    """A Cursor conflict whose Window another worker published is a control signal:
    ``process`` reports the Scope covered instead of stopping (found by running two
    ``topic process`` at once)."""
    async def go() -> None:
        svc = every_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        other = TopicProcessor(svc, DeterministicTopicModel())
        model = ScriptedTopicModel()
        inner_generate = model.generate
        done: list[Any] = []

        async def generate(request: Any) -> Any:
            if request.stage == "evolve" and not done:
                done.append(await other.process_window(SCOPE))
            return await inner_generate(request)

        model.generate = generate  # type: ignore[method-assign]
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped is None and report.reason is None
        assert report.windows == () and report.status.covered
        assert report.status.budget is None and done[0].through == 5
    run(go())


def test_a_source_holding_nul_characters_is_processed_by_the_deterministic_provider(
        new_service: Factory) -> None:
    """Topic text cannot hold NUL; the extractive provider leaves it out instead of
    returning output the server refuses on every attempt (found by a user test)."""
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, [md("nul.md", "# Nul\n\na\x00b\n")])
        report = await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
        assert report.stopped is None, report.reason
        (ref,) = report.windows[0].created
        assert (await svc.get(SCOPE, ref)).content.detail == "## Nul\n\nab"
    run(go())


def test_a_fault_at_every_guard_step_rolls_the_whole_window_back() -> None:
    async def go() -> None:
        backend = InMemoryTopicBackend()
        for point in (*backend.guard_fault_points(), "_insert_active_sync"):
            svc = TopicMemoryService(InMemoryTopicBackend())
            await svc.backend.put_scoped_sources(SCOPE, batch_one())
            svc.backend.inject_fault(point)  # type: ignore[attr-defined]
            report = await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
            assert report.stopped == "publish_error", point
            st = report.status
            assert st.cursor == 0 and st.pending is not None, point
            assert st.budget is not None and st.budget.failure_code == "publish_error", point
            assert await topic_count(svc) == 0, point
            svc.backend.inject_fault(None)  # type: ignore[attr-defined]
            ok = await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
            assert ok.stopped is None and ok.status.cursor == 5, point
    run(go())


def test_probe_queries_search_refuses_are_skipped_not_fatal(new_service: Factory) -> None:
    def probes(req: Any, data: dict[str, Any]) -> object:
        ids = [s["id"] for s in data["sources"]]
        many = " ".join(f"word{i}" for i in range(70))  # over 64 distinct terms
        return {"probes": [{"query": "the of and", "evidence_ids": ids[:1]},
                           {"query": many, "evidence_ids": ids[:1]},
                           {"query": "alpha service", "evidence_ids": ids[:1]}]}

    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
        await svc.backend.put_scoped_sources(SCOPE, [md("alpha-2.md", ALPHA_2)])
        model = ScriptedTopicModel({"probe": probes})
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped is None
        evolve = json.loads(model.calls[-1].input_json)
        assert "Alpha service" in [h["title"] for h in evolve["history"]]
        assert report.windows[0].updated
    run(go())


def test_a_head_moved_during_evolution_is_a_head_conflict_and_nothing_is_published(
        new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, batch_one())
        await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
        newer = md("alpha-2.md", ALPHA_2)
        await svc.backend.put_scoped_sources(SCOPE, [newer])
        model = ScriptedTopicModel()
        inner_generate = model.generate

        async def generate(request: Any) -> Any:
            if request.stage == "evolve":
                # another writer moves the Alpha Topic's Head while the model works
                hit = (await svc.search(SCOPE, "alpha service invoices")).hits[0]
                await svc.publish(SCOPE, updates=[(hit.ref, {
                    "title": "Alpha service", "summary": "Moved.", "detail": "Moved."},
                    [newer.ref])])
            return await inner_generate(request)

        model.generate = generate  # type: ignore[method-assign]
        heads_before = await svc.backend.heads(SCOPE)
        with pytest.raises(TopicProcessingError) as info:
            await TopicProcessor(svc, model).process_window(SCOPE)
        assert (info.value.code, info.value.stage) == ("head_conflict", "publish")
        st = await status(svc)
        assert st.cursor == 5 and st.budget.failure_code == "head_conflict"
        moved = [r for r in await svc.backend.heads(SCOPE) if r not in heads_before]
        assert [r.revision for r in moved] == [2]  # only the other writer's Revision
    run(go())


def test_the_budget_never_exceeds_the_models_context_window() -> None:
    svc = TopicMemoryService(InMemoryTopicBackend())
    model = ScriptedTopicModel(context_window_tokens=4_096)
    processor = TopicProcessor(svc, model, ProcessingSettings(max_output_tokens=512))
    assert processor.settings.context_window_tokens == 4_096
    from powercontext.core.errors import InvalidInputError
    with pytest.raises(InvalidInputError) as info:
        TopicProcessor(svc, model, ProcessingSettings(window_limit=101))
    assert info.value.field == "runtime.topic_memory_source_window_limit"
