"""The layered evolution flow end to end (issue 15; Topic Memory RFC, "Window selection
and context budgets", "Cumulative work and evidence ceilings", "Layered evolution
flow": Work Planner and direct Work Items, oversized Work Items and temporary Topics,
second retrieval and related-group reconciliation; "Retry and observability").

"Done means" on the in-memory backend, SQLite and seekdb: a 1 MB Source publishes
Topics whose lineage is exactly that Source (deterministic provider, default
settings); a fault at fragment k leaves the Cursor unchanged, publishes nothing and
the budget row shows one attempt, and a retry succeeds. On memory and SQLite: every
reduction fault aborts with the Cursor unchanged; allowance exhaustion in the middle
of a reduction is the terminal frontier; two CREATEs matching one historical Topic
become one UPDATE of it; merging two historical Topics is refused; the Planner runs
when history does not fit and when the global result is ambiguous; an oversized Source
is its own Window; hostile 2 MB and 4,194,304-character Sources."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import attrs
import pytest
from support.topic_models import (
    ScriptedTopicModel,
    drop_position,
    fail_at,
    invent_evidence,
    reduce_null,
    reduce_with_target,
)
from support.topic_services import service_factory

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import canonical
from powercontext.core.errors import BackendError
from powercontext.core.models import Source
from powercontext.core.topic.generation import StageRequest, StageResponse
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.testing import InMemoryTopicBackend
from powercontext.topic_processing import TopicProcessor
from powercontext.topic_report import LeftOut
from powercontext.topic_service import TopicMemoryService

SCOPE = "project:x"
ALPHA = ("# Alpha service\n\nThe alpha service stores invoices for the billing team. "
         "It runs nightly and keeps every invoice for seven years.")

Factory = Callable[[], TopicMemoryService]


def _factory(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Factory]:
    yield from service_factory(request, tmp_path, "pc_layer")


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


def md(name: str, text: str, kind: str = "file") -> Source:
    return canonical.make_source(f"src_{name}", kind, text, uri=f"file:///repo/{name}")


async def status(svc: TopicMemoryService) -> Any:
    (st,) = await svc.backend.processing_status(SCOPE)
    return st


async def lineage(svc: TopicMemoryService) -> dict[str, Any]:
    """Every current head's direct SourceRefs, by artifact id."""
    out = {}
    for ref in await svc.backend.heads(SCOPE):
        out[ref.artifact_id] = (await svc.get(SCOPE, ref)).sources
    return out


def big_markdown(chars: int, title: str = "Big log") -> str:
    """Markdown of about ``chars`` characters: distinct paragraphs of prose."""
    parts, size, i = [f"# {title}\n"], 0, 0
    while size < chars:
        para = (f"Entry {i}: the nightly job {i % 97} wrote batch {i} of the ledger "
                f"and checked {i * 7 % 1000} invoices against account {i % 13}.")
        parts.append(para)
        size += len(para) + 2
        i += 1
    return "\n\n".join(parts)


# ---------------------------------------------------------------- test models

Rewrite = Callable[[StageRequest, dict[str, Any], dict[str, Any]], object]


class FaultModel:
    """The deterministic provider with faults: ``fail`` maps a stage to the 1-based
    call numbers that raise BackendError; ``rewrite`` maps a stage to
    ``fn(request, input, deterministic_output) -> output`` (a str sent as is, else
    JSON-encoded). Every call is recorded; ``count`` per stage."""

    name = "fault"
    model = "fault"

    def __init__(self, *, fail: dict[str, set[int]] | None = None,
                 rewrite: dict[str, Rewrite] | None = None,
                 context_window_tokens: int = 125_000, max_requests: int = 1) -> None:
        self.inner = DeterministicTopicModel(context_window_tokens, max_requests)
        self.fail = fail or {}
        self.rewrite = rewrite or {}
        self.calls: list[StageRequest] = []
        self.count: dict[str, int] = {}

    @property
    def context_window_tokens(self) -> int:
        return self.inner.context_window_tokens

    @property
    def max_requests(self) -> int:
        return self.inner.max_requests

    def stages(self) -> list[str]:
        return [c.stage for c in self.calls]

    def schemas(self) -> list[str]:
        return [c.schema_name for c in self.calls]

    async def generate(self, request: StageRequest) -> StageResponse:
        self.calls.append(request)
        k = self.count[request.stage] = self.count.get(request.stage, 0) + 1
        if k in self.fail.get(request.stage, ()):
            raise BackendError(f"HTTP 500 at {request.stage} call {k}")
        response = await self.inner.generate(request)
        fn = self.rewrite.get(request.stage)
        if fn is None:
            return response
        out = fn(request, json.loads(request.input_json), json.loads(response.output_text))
        return StageResponse(out if isinstance(out, str) else json.dumps(out), None, 1)


# ---------------------------------------------------------------- Done means

MB = 1_000_000


def test_a_1mb_source_publishes_topics_whose_lineage_is_exactly_that_source(
        every_service: Factory) -> None:
    async def go() -> None:
        svc = every_service()
        big = md("big.log.md", big_markdown(MB))
        await svc.backend.put_scoped_sources(SCOPE, [big])
        model = FaultModel()
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped is None, report.reason
        (window,) = report.windows
        assert (window.after, window.through) == (0, 1) and window.created
        got = await lineage(svc)
        assert got and all(sources == (big.ref,) for sources in got.values())
        assert model.count["probe"] > 1  # probed fragment by fragment
        assert "topic_plan" in model.schemas()  # the Work Planner path
        assert window.reserved_requests == len(model.calls)
        assert all(c.estimated_tokens <= 125_000 for c in model.calls)
        # temporary Topics and reductions condensed it: the report says so
        assert window.left_out == (LeftOut(1, big.source_id, "condensed"),)
        st = await status(svc)
        assert st.cursor == 1 and st.budget is None
    run(go())


def test_a_fault_at_fragment_k_publishes_nothing_and_a_retry_succeeds(
        every_service: Factory) -> None:
    async def go() -> None:
        svc = every_service()
        big = md("big.log.md", big_markdown(MB))
        await svc.backend.put_scoped_sources(SCOPE, [big])
        model = FaultModel(fail={"probe": {3}})
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped == "provider_error" and report.windows == ()
        assert model.count["probe"] == 3 and set(model.stages()) <= {"probe", "reduce"}
        st = report.status
        assert st.cursor == 0 and await svc.backend.heads(SCOPE) == ()
        assert st.budget.attempt_count == 1
        assert st.budget.reserved_requests == len(model.calls)
        assert st.budget.failure_code == "provider_error"
        again = await TopicProcessor(svc, FaultModel()).process(SCOPE)
        assert again.stopped is None and again.status.cursor == 1
        assert again.status.budget is None
        got = await lineage(svc)
        assert got and all(sources == (big.ref,) for sources in got.values())
    run(go())


# ---------------------------------------------------------------- reduction faults

#: A small context window: a 400 kB Source is 22 fragments, whose Probes overflow the
#: 20 live items of the probe accumulator (a reduction), and 21 Source Batches whose
#: temporary Topics are reduced before the final request.
SMALL = ProcessingSettings(context_window_tokens=8_192, max_output_tokens=512)


def _many_probes(k: int) -> Rewrite:
    """A probe rewrite: ``k`` distinct Probes per fragment (made of the deterministic
    provider's first; a reduction every fragment once 20 are live)."""
    def fn(req: StageRequest, data: dict[str, Any], out: dict[str, Any]) -> object:
        return {"probes": [{"query": f"{p['query']} part {j}",
                            "evidence_ids": p["evidence_ids"]}
                           for p in out["probes"][:1] for j in range(k)]}
    return fn


def _reduce_fault(kind: str | None, change: Callable[[dict[str, Any]], object]) -> Rewrite:
    """A reduce rewrite applying ``change`` to the deterministic output of reductions
    of ``kind`` (None: every kind); other reductions pass unchanged."""
    def fn(req: StageRequest, data: dict[str, Any], out: dict[str, Any]) -> object:
        if kind is not None and data["kind"] != kind:
            return out
        return change(out)
    return fn


def _drop_position(out: dict[str, Any]) -> object:
    return {**out, "positions": out["positions"][:-1]}


def _invent_evidence(out: dict[str, Any]) -> object:
    result = out["result"]
    return {**out, "result": {**result, "evidence_ids": [*result["evidence_ids"], "s2"]}}


def _with_target(out: dict[str, Any]) -> object:
    return {**out, "target": "h1"}


def _null(out: dict[str, Any]) -> object:
    return {**out, "result": None}


def _noop(out: dict[str, Any]) -> object:
    return {**out, "result": {"operation": "noop"}}


def _oversized(out: dict[str, Any]) -> object:
    result = out["result"]
    # within the detail limit, far over 1/8 of the reduce budget
    return {**out, "result": {**result, "detail": "ledger " * 3_000}}


REDUCTION_FAULTS: dict[str, tuple[Rewrite, str]] = {
    "drops an input position": (_reduce_fault(None, _drop_position),
                                "reduction_coverage_mismatch"),
    "invents an evidence id": (_reduce_fault(None, _invent_evidence),
                               "reduction_evidence_mismatch"),
    "returns a historical identity": (_reduce_fault(None, _with_target),
                                      "model_output_invalid"),
    "returns no result": (_reduce_fault(None, _null), "model_output_invalid"),
    "returns NOOP": (_reduce_fault(None, _noop), "model_output_invalid"),
    "returns an oversized temporary": (_reduce_fault("temporary", _oversized),
                                       "reduction_result_oversized"),
}

_BIG_CACHE: dict[int, Source] = {}


def _big(chars: int) -> Source:
    if chars not in _BIG_CACHE:
        _BIG_CACHE[chars] = md("big.log.md", big_markdown(chars))
    return _BIG_CACHE[chars]


@pytest.mark.parametrize("case", sorted(REDUCTION_FAULTS))
def test_every_reduction_fault_aborts_the_window_with_the_cursor_unchanged(
        new_service: Factory, case: str) -> None:
    rewrite, code = REDUCTION_FAULTS[case]

    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, [_big(400_000)])
        model = FaultModel(rewrite={"reduce": rewrite}, context_window_tokens=8_192)
        report = await TopicProcessor(svc, model, SMALL).process(SCOPE)
        assert report.stopped == code, report.reason
        assert model.count["reduce"] >= 1 and model.stages()[-1] == "reduce"
        st = report.status
        assert st.cursor == 0 and await svc.backend.heads(SCOPE) == ()
        assert st.budget.failure_code == code and st.budget.attempt_count == 1
        assert st.budget.reserved_requests == len(model.calls)
        again = await TopicProcessor(svc, FaultModel(context_window_tokens=8_192),
                                     SMALL).process(SCOPE)
        assert again.stopped is None and again.status.cursor == 1
    run(go())


ADVERSARIAL: dict[str, tuple[Any, str]] = {
    "drop_position": (drop_position(), "reduction_coverage_mismatch"),
    "invent_evidence": (invent_evidence(), "reduction_evidence_mismatch"),
    "reduce_with_target": (reduce_with_target(), "model_output_invalid"),
    "reduce_with_target artifact_id inside": (
        reduce_with_target("artifact_id", "topic_art_0000000000000000000000000a",
                           inside=True), "model_output_invalid"),
    "reduce_null": (reduce_null(), "model_output_invalid"),
}


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_the_adversarial_reduce_scripts_abort_the_window(new_service: Factory,
                                                         case: str) -> None:
    script, code = ADVERSARIAL[case]

    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, [_big(400_000)])
        model = ScriptedTopicModel({"reduce": script}, context_window_tokens=8_192)
        report = await TopicProcessor(svc, model, SMALL).process(SCOPE)
        assert report.stopped == code, report.reason
        assert model.stages()[-1] == "reduce"
        st = report.status
        assert st.cursor == 0 and await svc.backend.heads(SCOPE) == ()
        assert st.budget.reserved_requests == len(model.calls)
    run(go())


def test_a_fault_at_temporary_batch_k_publishes_nothing(new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, [_big(400_000)])
        boom = BackendError("HTTP 500 from the provider")
        model = ScriptedTopicModel({"temporary": fail_at("temporary", 4, boom)},
                                   context_window_tokens=8_192)
        report = await TopicProcessor(svc, model, SMALL).process(SCOPE)
        assert report.stopped == "provider_error" and model.count["temporary"] == 4
        st = report.status
        assert st.cursor == 0 and await svc.backend.heads(SCOPE) == ()
        assert st.budget.attempt_count == 1
        assert st.budget.reserved_requests == len(model.calls)
    run(go())


def test_allowance_exhaustion_mid_reduction_is_the_terminal_frontier(
        new_service: Factory, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> Any:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, [_big(400_000)])
        # 16 requests reserved per call: the allowance (512) holds 32 calls; with 20
        # Probes per fragment every call after the second is a probe or a reduction,
        # and the 33rd is a reduction
        model = FaultModel(context_window_tokens=8_192, max_requests=16,
                           rewrite={"probe": _many_probes(20)})
        settings = attrs.evolve(SMALL, max_requests=16)
        report = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert report.stopped == "window_provider_budget_exceeded", report.reason
        assert len(model.calls) == 32 and "reduce" in model.stages()
        st = report.status
        assert st.cursor == 0 and await svc.backend.heads(SCOPE) == ()
        assert st.budget.terminal and st.budget.reserved_requests == 512
        calls = len(model.calls)
        for _ in range(3):  # a 4th attempt (and any other) is refused before any call
            again = await TopicProcessor(svc, model, settings).process(SCOPE)
            assert again.stopped == "window_provider_budget_exceeded"
        assert len(model.calls) == calls and again.status.budget.attempt_count == 1
        return model

    with caplog.at_level(logging.WARNING, logger="powercontext.topic"):
        run(go())
    failed = [r for r in caplog.records if getattr(r, "error_code", None)
              == "window_provider_budget_exceeded"]
    assert failed[0].stage == "reduce"  # the 33rd call would have been a reduction


# ---------------------------------------------------------------- reconciliation

INVOICES_1 = ("# Invoice retention\n\nThe alpha service stores invoices for the billing "
              "team and keeps every invoice for seven years.")
INVOICES_2 = ("# Invoice storage\n\nThe alpha service stores invoices nightly for the "
              "billing team.")


def _two_creates(req: StageRequest, data: dict[str, Any], out: dict[str, Any]) -> object:
    """The global result: every history slot null, one CREATE per Source, titled
    unlike any history Topic (so the result is not ambiguous)."""
    assert out["history"] is not None
    new = [{"title": f"Alpha note {i}",
            "summary": "The alpha service stores invoices for the billing team.",
            "detail": f"{json.loads(s['text'])['content']}",
            "evidence_ids": [s["id"]]} for i, s in enumerate(data["sources"], start=1)]
    return {"history": {h["handle"]: None for h in data["history"]}, "new": new}


async def _with_history(svc: TopicMemoryService) -> Any:
    """Topic D (Alpha service) published from one Source; its head."""
    await svc.backend.put_scoped_sources(SCOPE, [md("alpha.md", ALPHA)])
    report = await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
    (d,) = report.windows[0].created
    return d


def test_two_creates_that_both_match_topic_d_become_one_update_of_d(new_service: Factory
                                                                   ) -> None:
    async def go() -> None:
        svc = new_service()
        d = await _with_history(svc)
        one, two = md("inv1.md", INVOICES_1), md("inv2.md", INVOICES_2)
        await svc.backend.put_scoped_sources(SCOPE, [one, two])
        model = FaultModel(rewrite={"evolve": _two_creates})
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped is None, report.reason
        (window,) = report.windows
        assert window.created == () and len(window.updated) == 1
        assert "reconcile" in model.stages()
        assert await svc.backend.heads(SCOPE) == (window.updated[0],)
        got = await svc.get(SCOPE, window.updated[0])
        assert got.ref.artifact_id == d.artifact_id and got.ref.revision == 2
        assert got.based_on == d
        assert got.sources == tuple(sorted((one.ref, two.ref),
                                           key=lambda r: r.source_id.encode()))
    run(go())


def test_an_attempt_to_merge_two_historical_topics_is_refused(new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        d = await _with_history(svc)
        await svc.backend.put_scoped_sources(SCOPE, [md("beta.md", BETA)])
        await TopicProcessor(svc, DeterministicTopicModel()).process(SCOPE)
        heads = await svc.backend.heads(SCOPE)
        assert len(heads) == 2
        other = next(h for h in heads if h.artifact_id != d.artifact_id)
        one, two = md("inv1.md", INVOICES_1), md("inv2.md", INVOICES_2)
        await svc.backend.put_scoped_sources(SCOPE, [one, two])

        def second_target(req: StageRequest, data: dict[str, Any],
                          out: dict[str, Any]) -> object:
            return {**out, "artifact_id": other.artifact_id}

        model = FaultModel(rewrite={"evolve": _two_creates, "reconcile": second_target})
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped == "model_output_invalid" and model.stages()[-1] == "reconcile"
        assert report.status.cursor == 2 and await svc.backend.heads(SCOPE) == heads
        for ref in heads:
            assert (await svc.get(SCOPE, ref)).ref.revision == 1
    run(go())


# ---------------------------------------------------------------- the Planner path

BETA = "# Beta queue\n\nThe beta queue retries failed payments three times."


def _lines(title: str, line: str, n: int) -> str:
    return f"# {title}\n\n" + "\n\n".join(line.format(i=i) for i in range(n))


def test_the_planner_runs_when_the_window_and_its_history_do_not_fit(new_service: Factory
                                                                     ) -> None:
    async def go() -> None:
        svc = new_service()
        settings = ProcessingSettings(context_window_tokens=8_192, max_output_tokens=512)
        # a history Topic of ~2,900 tokens
        alpha_src = md("alpha.md", _lines("Alpha service", "The alpha service invoice run "
                                          "{i} finished without errors.", 150))
        await svc.backend.put_scoped_sources(SCOPE, [alpha_src])
        first = await TopicProcessor(svc, FaultModel(context_window_tokens=8_192),
                                     settings).process(SCOPE)
        assert first.stopped is None, first.reason
        (alpha,) = await svc.backend.heads(SCOPE)
        # a Window of a small Alpha Source and a ~4,500-token one about something else:
        # each Work Item fits its request, the Window with the history does not
        newer = md("alpha-2.md", "# Alpha service\n\nSince December the alpha service "
                   "also stores receipts.")
        shelves = md("shelves.md", _lines("Receipts archive", "Paper box {i} is kept on "
                                          "shelf {i} downstairs near the boiler.", 230))
        await svc.backend.put_scoped_sources(SCOPE, [newer, shelves])
        model = FaultModel(context_window_tokens=8_192)
        report = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert report.stopped is None, report.reason
        (window,) = report.windows
        assert (window.after, window.through) == (1, 3)
        assert "topic_evolution" not in model.schemas()  # no global request fits
        assert model.schemas().count("topic_plan") == 1
        assert model.schemas().count("topic_item") == 2  # each Item fits its request
        assert len(window.created) == 1 and len(window.updated) == 1
        got = await svc.get(SCOPE, window.updated[0])
        assert got.ref.artifact_id == alpha.artifact_id and got.sources == (newer.ref,)
        assert "receipts" in got.content.detail
        made = await svc.get(SCOPE, window.created[0])
        assert made.content.title == "Receipts archive" and made.sources == (shelves.ref,)
    run(go())


async def _planner_window(svc: TopicMemoryService, model: FaultModel) -> Any:
    """A history Topic too large for a global request with the Window, then two Sources
    about it and one about something else: the Work Planner runs."""
    settings = ProcessingSettings(context_window_tokens=8_192, max_output_tokens=512)
    alpha = md("alpha.md", _lines("Alpha service", "The alpha service invoice run {i} "
                                  "finished without errors.", 150))
    await svc.backend.put_scoped_sources(SCOPE, [alpha])
    first = await TopicProcessor(svc, FaultModel(context_window_tokens=8_192),
                                 settings).process(SCOPE)
    assert first.stopped is None, first.reason
    await svc.backend.put_scoped_sources(SCOPE, [
        md("alpha-2.md", "# Alpha service\n\nSince December it also stores receipts."),
        md("alpha-3.md", "# Alpha service\n\nThe invoice run moved to two o'clock."),
        md("shelves.md", _lines("Receipts archive", "Paper box {i} is kept on shelf {i} "
                                "downstairs near the boiler.", 230))])
    return await TopicProcessor(svc, model, settings).process(SCOPE)


def test_probes_that_found_the_same_topic_share_one_work_item(new_service: Factory) -> None:
    """Topic Memory RFC, "Work Planner and direct Work Items": Probes that hit the same
    historical ArtifactRef enter the same Work Item. The plan input shows each Probe's
    found Topic, and a plan splitting them is refused; the deterministic plan keeps
    them together (one UPDATE of the Topic citing both Sources)."""
    async def go() -> None:
        svc = new_service()
        model = FaultModel(context_window_tokens=8_192)
        report = await _planner_window(svc, model)
        assert report.stopped is None, report.reason
        (plan,) = [c for c in model.calls if c.stage == "plan"]
        probes = json.loads(plan.input_json)["probes"]
        found = [p for p in probes if p["found"] == "h1"]
        assert {tuple(p["evidence_ids"]) for p in found} >= {("s1",), ("s2",)}
        (window,) = report.windows
        (updated,) = window.updated
        got = await svc.get(SCOPE, updated)
        assert "stores receipts" in got.content.detail and "two o'clock" in got.content.detail

        def split(req: StageRequest, data: dict[str, Any], out: dict[str, Any]) -> object:
            ids = [p["id"] for p in data["probes"]]
            hit = [p["id"] for p in data["probes"] if p["found"] == "h1"]
            rest = [i for i in ids if i not in hit[1:]]
            return {"items": [{"operation": "update", "target": "h1", "probes": rest},
                              {"operation": "create", "target": None, "probes": hit[1:]}]}

        again = await _planner_window(new_service(), FaultModel(
            context_window_tokens=8_192, rewrite={"plan": split}))
        assert again.stopped == "work_plan_invalid" and "enter the same Work Item" in (
            again.reason or "")
    run(go())


def test_an_ambiguous_global_result_falls_back_to_the_planner(new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        d = await _with_history(svc)
        newer = md("alpha-2.md", "# Alpha service\n\nSince December the alpha service "
                   "also stores receipts.")
        await svc.backend.put_scoped_sources(SCOPE, [newer])

        def disguised(req: StageRequest, data: dict[str, Any], out: dict[str, Any]) -> object:
            if req.schema_name != "topic_evolution":
                return out
            # a CREATE titled like history Topic h1: it may be an UPDATE in disguise
            return {"history": {h["handle"]: None for h in data["history"]},
                    "new": [{"title": "  ALPHA   service", "summary": "GLOBAL-ONLY",
                             "detail": "GLOBAL-ONLY", "evidence_ids": ["s1"]}]}

        model = FaultModel(rewrite={"evolve": disguised})
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped is None, report.reason
        assert model.schemas()[:3] == ["topic_probes", "topic_evolution", "topic_plan"]
        (window,) = report.windows
        assert window.created == () and len(window.updated) == 1
        got = await svc.get(SCOPE, window.updated[0])
        assert got.ref.artifact_id == d.artifact_id and got.ref.revision == 2
        assert "GLOBAL-ONLY" not in got.content.summary + got.content.detail
    run(go())


def test_zero_probes_on_the_planner_path_is_a_noop_window(new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        await svc.backend.put_scoped_sources(SCOPE, [_big(200_000)])
        settings = ProcessingSettings(context_window_tokens=16_000, max_output_tokens=2_048)
        model = FaultModel(rewrite={"probe": lambda req, data, out: {"probes": []}},
                           context_window_tokens=16_000)
        report = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert report.stopped is None and set(model.stages()) == {"probe"}
        (window,) = report.windows
        assert (window.created, window.updated) == ((), ())
        assert report.status.cursor == 1 and await svc.backend.heads(SCOPE) == ()
    run(go())


def test_an_oversized_source_among_normal_ones_is_its_own_window(new_service: Factory
                                                                 ) -> None:
    async def go() -> None:
        svc = new_service()
        big = _big(200_000)
        small = [md("alpha.md", ALPHA), md("beta.md", BETA)]
        last = md("gamma.md", "# Gamma notes\n\nGamma keeps the release checklist.")
        await svc.backend.put_scoped_sources(SCOPE, [*small, big, last])
        settings = ProcessingSettings(context_window_tokens=16_000, max_output_tokens=2_048)
        model = FaultModel(context_window_tokens=16_000)
        report = await TopicProcessor(svc, model, settings).process(SCOPE)
        assert report.stopped is None, report.reason
        assert [(w.after, w.through) for w in report.windows] == [(0, 2), (2, 3), (3, 4)]
        middle = report.windows[1]
        assert middle.created
        for ref in middle.created:
            assert (await svc.get(SCOPE, ref)).sources == (big.ref,)
        assert report.status.cursor == 4
    run(go())


# ---------------------------------------------------------------- hostile Sources

def _hostile(chars: int, dense: bool = False) -> str:
    """No white space; quotes, backslashes, control characters (JSON escaping grows
    them six-fold) and astral characters every few code points (``dense``: nearly
    every character escaped)."""
    unit = ('ab"cd\\ef\x01gh\U0001f600ij"kl\\mn\U00010348op' if not dense
            else '"\\\x01\x1f\U0001f600a"b\\\x07\U00010348')
    return (unit * (chars // len(unit) + 1))[:chars]


@pytest.mark.slow  # storing 2 MB runs the secret scanner over it
def test_a_hostile_2mb_source_publishes_with_its_lineage() -> None:
    async def go() -> None:
        svc = TopicMemoryService(InMemoryTopicBackend())
        hostile = canonical.make_source("src_hostile", "file", _hostile(2 * 1024 * 1024),
                                        uri="file:///repo/hostile.bin")
        await svc.backend.put_scoped_sources(SCOPE, [hostile])
        model = FaultModel()
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped is None, report.reason
        assert report.windows[0].created
        got = await lineage(svc)
        assert got and all(sources == (hostile.ref,) for sources in got.values())
        assert all(c.estimated_tokens <= 125_000 for c in model.calls)
    run(go())


@pytest.mark.slow  # storing 4 MB runs the secret scanner over it
def test_a_4194304_character_source_is_stored_and_stops_without_a_model_call() -> None:
    async def go() -> None:
        svc = TopicMemoryService(InMemoryTopicBackend())
        huge = canonical.make_source("src_huge", "file", _hostile(4_194_304, dense=True),
                                     uri="file:///repo/huge.bin")
        assert len(huge.content) == 4_194_304
        await svc.backend.put_scoped_sources(SCOPE, [huge])
        model = FaultModel()
        report = await TopicProcessor(svc, model).process(SCOPE)
        assert report.stopped == "source_complexity_limit" and model.calls == []
        st = report.status
        assert st.cursor == 0 and st.budget.terminal
        assert (await svc.backend.scope_journal(SCOPE))[0].source.ref == huge.ref
    run(go())
