"""core.topic.accumulate: the streaming accumulator and the private reduction (Topic
Memory RFC, "Window selection and context budgets", "Oversized Work Items and temporary
Topics"; issue 15, "Bad input and faults": a reduction that drops a position, invents
an evidence id, returns a historical identity or NOOP, or makes no progress aborts; a
model that echoes its input forever stops at 2n + 1 attempts)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from support.topic_windows import schema_objects, window_of

from powercontext.core.errors import InvalidInputError, TopicProcessingError
from powercontext.core.topic import accumulate as acc_mod
from powercontext.core.topic.accumulate import (
    Accumulator,
    Live,
    TemporaryTopic,
    item_json,
    item_tokens,
    max_result_chars,
    parse_reduction,
    reduce_budget,
    reduce_request,
    reduce_schema,
)
from powercontext.core.topic.content import make_content
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import SYSTEM_PROMPT, Probe
from powercontext.core.topic.window import Window
from powercontext.topic_reduction import compact, push

W = window_of("# Alpha\n\nAlpha is first.", "# Beta\n\nBeta is second.",
              "# Gamma\n\nGamma is third.")
S = ProcessingSettings()
SMALL = ProcessingSettings(context_window_tokens=4000, max_output_tokens=512)
B = reduce_budget("probe", S)
TB = reduce_budget("temporary", S)


def probe(query: str, ids: Sequence[str] = ("s1",), window: Window = W) -> Probe:
    return Probe(query, tuple(ids), window.refs(list(ids), "ids"))


def temp(title: str = "T", summary: str = "S", detail: str = "D",
         ids: Sequence[str] = ("s1",)) -> TemporaryTopic:
    return TemporaryTopic(make_content(title, summary, detail), tuple(ids),
                          W.refs(list(ids), "ids"))


def live(item: Any, *positions: int) -> Live:
    return Live(item, frozenset(positions or (1,)), item_tokens(item))


def union(payload: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(e for it in payload["items"] for e in it["evidence_ids"]))


def merge(request: StageRequest, payload: dict[str, Any]) -> dict[str, Any]:
    """A valid reduction: every position, the exact union, a short text."""
    positions = [it["position"] for it in payload["items"]]
    if payload["kind"] == "probe":
        result: dict[str, Any] = {"query": "m", "evidence_ids": union(payload)}
    else:
        result = {"title": "M", "summary": "m", "detail": "m",
                  "evidence_ids": union(payload)}
    return {"positions": positions, "result": result}


def echo(request: StageRequest, payload: dict[str, Any]) -> dict[str, Any]:
    """Echoes the first input item unchanged, with every position."""
    first = {k: v for k, v in payload["items"][0].items() if k != "position"}
    return {"positions": [it["position"] for it in payload["items"]], "result": first}


class Model:
    """A scripted async reduce call: ``script(request, payload) -> output``."""

    def __init__(self, script: Callable[[StageRequest, dict[str, Any]], object]) -> None:
        self.script = script
        self.requests: list[StageRequest] = []

    async def __call__(self, request: StageRequest) -> str:
        self.requests.append(request)
        out = self.script(request, json.loads(request.input_json))
        return out if isinstance(out, str) else json.dumps(out)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def refused(code: str, fn: Callable[..., Any], *args: Any) -> TopicProcessingError:
    with pytest.raises(TopicProcessingError) as info:
        fn(*args)
    assert info.value.code == code, info.value
    assert info.value.stage == "reduce"
    assert not info.value.terminal
    return info.value


# ---------------------------------------------------------------- items, schema, request

def test_item_json_shows_exactly_the_stage_fields() -> None:
    assert item_json(probe("alpha", ("s1", "s2"))) == {
        "query": "alpha", "evidence_ids": ["s1", "s2"]}
    assert item_json(temp("T", "S", "D", ("s2",))) == {
        "title": "T", "summary": "S", "detail": "D", "evidence_ids": ["s2"]}
    with pytest.raises(InvalidInputError):
        item_json("alpha")  # type: ignore[arg-type]


def test_item_tokens_estimates_the_canonical_json() -> None:
    from powercontext.core.canonical import canonical_dumps
    from powercontext.core.topic.window import estimate_tokens
    p = probe("alpha \"quoted\" \\ \U0001f600")
    assert item_tokens(p) == estimate_tokens(canonical_dumps(item_json(p)).decode())


_objects = schema_objects


@pytest.mark.parametrize("schema", [
    reduce_schema("probe"), reduce_schema("temporary"),
    reduce_schema("probe", 3, ["s1", "s2"]), reduce_schema("temporary", 2, ["s3"])])
def test_reduce_schema_is_strict_never_null_and_has_no_target_slot(schema: Any) -> None:
    objects = _objects(schema)
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    result = schema["properties"]["result"]
    assert result["type"] == "object" and "anyOf" not in result
    names = {k for obj in objects for k in obj["properties"]}
    assert not names & {"target", "artifact_id", "handle", "operation", "revision"}


def test_reduce_schema_enumerates_positions_and_the_evidence_union() -> None:
    schema = reduce_schema("probe", 3, ["s2", "s1"])
    positions = schema["properties"]["positions"]
    assert positions["items"]["enum"] == [1, 2, 3]
    assert positions["minItems"] == positions["maxItems"] == 3
    ids = schema["properties"]["result"]["properties"]["evidence_ids"]
    assert ids["items"]["enum"] == ["s2", "s1"]
    assert ids["minItems"] == ids["maxItems"] == 2
    with pytest.raises(InvalidInputError, match="kind"):
        reduce_schema("history")  # type: ignore[arg-type]


def test_reduce_request_numbers_the_items_and_fits_the_context_window() -> None:
    items = [live(probe("alpha"), 4), live(probe("beta", ("s2",)), 7, 9)]
    req = reduce_request("probe", items, B, S, ("focus one",))
    assert req is not None
    assert (req.stage, req.schema_name, req.system) == ("reduce", "topic_reduction",
                                                        SYSTEM_PROMPT)
    assert req.instructions == acc_mod.REDUCE_INSTRUCTIONS
    payload = json.loads(req.input_json)
    assert payload == {"kind": "probe", "focus": ["focus one"],
                       "max_result_chars": max_result_chars(B),
                       "items": [{"position": 1, "query": "alpha", "evidence_ids": ["s1"]},
                                 {"position": 2, "query": "beta", "evidence_ids": ["s2"]}]}
    assert json.loads(req.schema_json) == reduce_schema("probe", 2, ["s1", "s2"])
    assert req.estimated_tokens <= S.context_window_tokens
    with pytest.raises(InvalidInputError):
        reduce_request("probe", [], B, S)
    with pytest.raises(InvalidInputError):
        reduce_request("temporary", items, B, S)


def test_reduce_request_is_none_when_it_does_not_fit() -> None:
    big = live(temp(detail="x " * 6000))
    assert item_tokens(big.item) > reduce_budget("temporary", SMALL)
    assert reduce_request("temporary", [big], 1000, SMALL) is None


def test_reduce_budget_is_the_room_of_an_empty_request() -> None:
    """Items whose estimates fill B exactly still fit one reduce request (each item's
    8-token overhead covers its position member), and B is the context window less the
    empty request."""
    for kind in ("probe", "temporary"):
        budget = reduce_budget(kind, SMALL)
        assert 0 < budget < SMALL.context_window_tokens - SMALL.max_output_tokens
    budget = reduce_budget("probe", SMALL)
    items, total, i = [], 0, 0
    while True:
        p = live(probe(f"query number {i} " + "w" * 400), i + 1)
        if total + p.tokens > budget:
            break
        items.append(p)
        total += p.tokens
        i += 1
    assert len(items) >= 2
    assert reduce_request("probe", items, budget, SMALL) is not None


def test_max_result_chars_keeps_widest_ascii_within_an_eighth() -> None:
    for budget in (B, TB, reduce_budget("temporary", SMALL), 20_000):
        chars = max_result_chars(budget)
        worst = temp("t", "s", "\x01" * (chars - 2), tuple(f"s{i}" for i in range(1, 4)))
        assert item_tokens(worst) <= budget // acc_mod.RESULT_FRACTION
    assert max_result_chars(1) == 1


# ---------------------------------------------------------------- parse_reduction refusals

P2 = [live(probe("alpha", ("s1",)), 1), live(probe("beta", ("s2",)), 2, 5)]
T2 = [live(temp("A", "a", "alpha detail", ("s1",)), 1),
      live(temp("B", "b", "beta detail", ("s2", "s3")), 2)]


def out(positions: Any = (1, 2), **result: Any) -> str:
    body = {"query": "alpha and beta", "evidence_ids": ["s1", "s2"]}
    body.update(result)
    return json.dumps({"positions": list(positions), "result": body})


def test_a_valid_probe_reduction_accounts_for_every_stream_position() -> None:
    got = parse_reduction(out(evidence_ids=["s2", "s1"]), "probe", P2, W, B)
    assert got.positions == frozenset({1, 2, 5})
    assert got.reduced
    assert got.item.query == "alpha and beta"
    assert got.item.evidence_ids == ("s1", "s2")  # Window order
    assert got.item.sources == W.refs(["s1", "s2"], "x")
    assert got.tokens == item_tokens(got.item)


def test_a_valid_temporary_reduction_goes_through_make_content() -> None:
    text = json.dumps({"positions": [2, 1], "result": {
        "title": "  AB ", "summary": "ab", "detail": "alpha, beta",
        "evidence_ids": ["s3", "s1", "s2"]}})
    got = parse_reduction(text, "temporary", T2, W, TB)
    assert got.item.content == make_content("AB", "ab", "alpha, beta")
    assert got.item.evidence_ids == ("s1", "s2", "s3")
    assert got.item.sources == W.refs(["s1", "s2", "s3"], "x")


@pytest.mark.parametrize("positions", [(1,), (2,), (1, 1), (1, 2, 2), (0, 1, 2), (1, 2, 3),
                                       ()])
def test_a_reduction_must_list_every_position_exactly_once(positions: Any) -> None:
    refused("reduction_coverage_mismatch", parse_reduction, out(positions), "probe", P2, W, B)


@pytest.mark.parametrize("ids", [["s1"], ["s2"], ["s1", "s2", "s3"], ["s1", "s2", "s99"],
                                 ["s1", "s3"], ["s1", "x1"]])
def test_a_reduction_keeps_exactly_the_evidence_union(ids: list[str]) -> None:
    """Dropped (s2), invented inside the Window (s3), outside it (s99) or not an
    evidence id at all (x1): every one is reduction_evidence_mismatch."""
    refused("reduction_evidence_mismatch", parse_reduction, out(evidence_ids=ids),
            "probe", P2, W, B)


@pytest.mark.parametrize("extra", ["target", "artifact_id", "handle", "operation"])
def test_a_reduction_cannot_name_a_historical_identity(extra: str) -> None:
    refused("model_output_invalid", parse_reduction,
            out(**{extra: "topic_art_aaaaaaaaaaaaaaaaaaaaaaaaaa"}), "probe", P2, W, B)
    top = json.dumps({"positions": [1, 2], extra: "h1", "result": {
        "query": "q", "evidence_ids": ["s1", "s2"]}})
    refused("model_output_invalid", parse_reduction, top, "probe", P2, W, B)
    text = json.dumps({"positions": [1, 2], "result": {
        "title": "A", "summary": "a", "detail": "d", "evidence_ids": ["s1", "s2", "s3"],
        extra: "h1"}})
    refused("model_output_invalid", parse_reduction, text, "temporary", T2, W, TB)


def test_a_null_result_is_a_refused_noop() -> None:
    err = refused("model_output_invalid", parse_reduction,
                  json.dumps({"positions": [1, 2], "result": None}), "probe", P2, W, B)
    assert "NOOP" in str(err)


@pytest.mark.parametrize("text", [
    "not json", json.dumps([1, 2]), json.dumps({"positions": [1, 2]}),
    '{"positions": [1, 2], "positions": [1, 2], "result": {"query": "q", '
    '"evidence_ids": ["s1", "s2"]}}',
    json.dumps({"positions": "1,2", "result": {"query": "q", "evidence_ids": ["s1", "s2"]}}),
    json.dumps({"positions": [True, 2], "result": {"query": "q",
                                                  "evidence_ids": ["s1", "s2"]}}),
    json.dumps({"positions": [1.0, 2], "result": {"query": "q",
                                                 "evidence_ids": ["s1", "s2"]}}),
    out(evidence_ids=["s1", "s2", "s1"]), out(evidence_ids=[]), out(evidence_ids="s1"),
    out(evidence_ids=["s1", 2]), out(query=""), out(query="  "), out(query="q" * 513),
    out(query="a\x00b"), out(query=7),
    json.dumps({"positions": [1, 2], "result": "alpha"}),
    json.dumps({"positions": [1, 2], "result": {"query": "q"}}),
])
def test_malformed_reduce_output_is_model_output_invalid(text: str) -> None:
    refused("model_output_invalid", parse_reduction, text, "probe", P2, W, B)


@pytest.mark.parametrize("fields", [
    {"title": ""}, {"summary": "s" * 2049}, {"detail": "\ud800"}, {"title": None},
    {"detail": "a\x00"}])
def test_temporary_content_is_checked_never_truncated(fields: dict[str, Any]) -> None:
    body = {"title": "A", "summary": "a", "detail": "d", "evidence_ids": ["s1", "s2", "s3"]}
    body.update(fields)
    text = json.dumps({"positions": [1, 2], "result": body})
    refused("model_output_invalid", parse_reduction, text, "temporary", T2, W, TB)


def test_an_oversized_result_is_refused() -> None:
    budget = 400  # results at most 50 tokens
    refused("reduction_result_oversized", parse_reduction, out(query="q" * 200),
            "probe", P2, W, budget)
    assert parse_reduction(out(query="q"), "probe", P2, W, budget).tokens <= 50


def test_a_singleton_reduction_must_shrink() -> None:
    one = [live(probe("alpha beta"), 3)]
    for query in ("alpha beta", "alpha bet!", "alpha beta gamma"):
        refused("reduction_no_progress", parse_reduction,
                out((1,), query=query, evidence_ids=["s1"]), "probe", one, W, B)
    got = parse_reduction(out((1,), query="alpha", evidence_ids=["s1"]), "probe", one, W, B)
    assert got.tokens < one[0].tokens and got.positions == frozenset({3})


def test_a_non_singleton_reduction_may_keep_its_size() -> None:
    """Progress of a k >= 2 reduction is the item count; its size may stay."""
    got = parse_reduction(out(query="alpha"), "probe", P2, W, B)
    assert got.tokens >= P2[0].tokens


def test_rule_checks_come_after_the_shape_checks() -> None:
    """A malformed output is model_output_invalid even when it also drops a position."""
    refused("model_output_invalid", parse_reduction, out((1,), query=""), "probe", P2, W, B)
    refused("reduction_coverage_mismatch", parse_reduction,
            out((1,), evidence_ids=["s1"]), "probe", P2, W, B)


def test_parse_reduction_refuses_inputs_of_another_kind() -> None:
    with pytest.raises(InvalidInputError):
        parse_reduction(out(), "temporary", P2, W, B)
    with pytest.raises(InvalidInputError):
        parse_reduction(out(), "probe", [], W, B)


# ---------------------------------------------------------------- the accumulator

def test_accumulator_settings_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="kind"):
        Accumulator("topic", 100)  # type: ignore[arg-type]
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidInputError, match="max_items"):
            Accumulator("probe", 100, bad)  # type: ignore[arg-type]
    for bad in (True, 1.5, "9"):
        with pytest.raises(InvalidInputError, match="budget_tokens"):
            Accumulator("probe", bad)  # type: ignore[arg-type]


def test_a_tiny_context_window_fails_closed_at_the_first_push() -> None:
    """reduce_budget of the smallest context window with the largest output
    reservation is negative: the accumulator holds nothing and the first push is
    reduction_over_budget (a TopicProcessingError, not a crash)."""
    tiny = ProcessingSettings(context_window_tokens=1024, max_output_tokens=512)
    budget = reduce_budget("probe", tiny)
    assert budget <= 0
    acc, model = Accumulator("probe", budget), Model(merge)
    with pytest.raises(TopicProcessingError) as info:
        run(push(acc, probe("alpha"), 1, model, W, tiny))
    assert info.value.code == "reduction_over_budget" and model.requests == []


def test_push_refuses_a_foreign_item_or_a_bad_position() -> None:
    acc, model = Accumulator("probe", B), Model(merge)
    with pytest.raises(InvalidInputError, match="item"):
        run(push(acc, temp(), 1, model, W, S))
    for bad in (0, -2, True, "1"):
        with pytest.raises(InvalidInputError, match="position"):
            run(push(acc, probe("a"), bad, model, W, S))  # type: ignore[arg-type]
    assert acc.live == ()


def test_exact_duplicate_probes_coalesce_without_a_call() -> None:
    acc, model = Accumulator("probe", B), Model(merge)
    for position, query in enumerate(["alpha", "beta", "alpha", "alpha", "beta"], start=1):
        assert run(push(acc, probe(query), position, model, W, S)) == 0
    assert model.requests == []
    assert [(x.item.query, sorted(x.positions)) for x in acc.live] == [
        ("alpha", [1, 3, 4]), ("beta", [2, 5])]
    # same query, other evidence: not a duplicate
    run(push(acc, probe("alpha", ("s2",)), 6, model, W, S))
    assert len(acc.live) == 3 and acc.duplicate(probe("beta")) == 1
    assert acc.duplicate(probe("gamma")) is None


def test_the_twenty_item_bound_reduces_before_overflow() -> None:
    acc, model = Accumulator("probe", B), Model(merge)
    for i in range(1, 21):
        assert run(push(acc, probe(f"subject {i}"), i, model, W, S)) == 0
    assert len(acc.live) == 20 and not acc.overflows()
    assert acc.overflows(live(probe("subject 21"), 21))
    assert run(push(acc, probe("subject 21"), 21, model, W, S)) == 1
    assert len(model.requests) == 1
    sent = json.loads(model.requests[0].input_json)["items"]
    assert len(sent) == 21  # the longest fitting prefix: every live item and the new one
    assert len(acc.live) == 1
    assert acc.live[0].positions == frozenset(range(1, 22))


def test_the_token_bound_reduces_before_overflow() -> None:
    budget = reduce_budget("probe", SMALL)
    acc, model = Accumulator("probe", budget), Model(merge)
    pushed, calls = [], 0
    for i in range(1, 40):
        calls += run(push(acc, probe(f"{i} " + "z" * 500), i, model, W, SMALL))
        pushed.append(i)
        assert acc.tokens <= budget and len(acc.live) <= 20
        assert frozenset().union(*(x.positions for x in acc.live)) == frozenset(pushed)
    assert calls >= 2 and calls == len(model.requests)
    assert len(acc.live) < 20  # the token bound, not the count, forced the reductions


def test_a_failed_push_leaves_the_accumulator_unchanged() -> None:
    acc, good = Accumulator("probe", B, max_items=3), Model(merge)
    for i in range(1, 4):
        run(push(acc, probe(f"s {i}", (f"s{i}",)), i, good, W, S))
    before = acc.live
    for script in (echo, lambda r, p: out((1,)), lambda r, p: "{}"):
        with pytest.raises(TopicProcessingError):
            run(push(acc, probe("s 4"), 4, Model(script), W, S))
        assert acc.live == before


def test_a_provider_failure_propagates_and_changes_nothing() -> None:
    class Boom(Exception):
        pass

    def boom(request: StageRequest, payload: dict[str, Any]) -> str:
        raise Boom

    acc, good = Accumulator("probe", B, max_items=2), Model(merge)
    run(push(acc, probe("a"), 1, good, W, S))
    run(push(acc, probe("b"), 2, good, W, S))
    with pytest.raises(Boom):
        run(push(acc, probe("c"), 3, Model(boom), W, S))
    assert [x.item.query for x in acc.live] == ["a", "b"]


def test_an_echo_model_stops_within_two_n_plus_one_calls() -> None:
    """A model that echoes its input forever: over Probes that all cite one Source (the
    fragments of one oversized Source) the echo of the first item IS a valid k >= 2
    reduction (every position, the exact union), so the count falls and compaction
    finishes; as soon as a singleton reduction is needed, the echo does not shrink it
    and the first such call stops the compaction with ``reduction_no_progress``. The
    step rule never asks for a second singleton reduction of one item, so
    ``reduction_attempt_limit`` is not the code that stops an echo (it stops a model
    that keeps shrinking an item whose premise B <= reduce_budget fails, below)."""
    acc, model = Accumulator("probe", B), Model(echo)
    for i in range(1, 30):
        run(push(acc, probe(f"fragment subject {i}"), i, model, W, S))
    assert len(acc.live) <= 20 and len(model.requests) == 1  # one valid echo at 21
    assert acc.live[0].positions == frozenset(range(1, 22))

    # a singleton reduction (one original item, the historical Topic never fits)
    one, model1 = Accumulator("probe", B), Model(echo)
    run(push(one, probe("only subject"), 1, model1, W, S))
    with pytest.raises(TopicProcessingError) as info:
        run(compact(one, model1, W, S, fits=lambda live: False))
    assert info.value.code == "reduction_no_progress" and len(model1.requests) == 1

    # items that do not fit two to a request: the larger is singleton-reduced first,
    # and its echo (over B // 8) is refused at that first call
    room = reduce_budget("temporary", SMALL)
    big, model3 = Accumulator("temporary", room, max_items=1), Model(echo)
    run(push(big, temp("A", "s", "a" * (room * 3 // 2)), 1, model3, W, SMALL))
    n = 2
    with pytest.raises(TopicProcessingError) as info:
        run(push(big, temp("B", "s", "b" * (room * 3 // 2)), 2, model3, W, SMALL))
    assert info.value.code == "reduction_result_oversized"
    assert 1 == len(model3.requests) <= 2 * n + 1

    # distinct evidence: the echo drops ids, refused at the first call
    acc2, model2 = Accumulator("probe", B, max_items=2), Model(echo)
    run(push(acc2, probe("a", ("s1",)), 1, model2, W, S))
    run(push(acc2, probe("b", ("s2",)), 2, model2, W, S))
    with pytest.raises(TopicProcessingError) as info:
        run(push(acc2, probe("c", ("s3",)), 3, model2, W, S))
    assert info.value.code == "reduction_evidence_mismatch" and len(model2.requests) == 1


def shrink_one_char(request: StageRequest, payload: dict[str, Any]) -> dict[str, Any]:
    """A valid reduction that only just makes progress: the first item, one detail
    character shorter (the union of ids)."""
    first = payload["items"][0]
    result = {"title": first["title"], "summary": first["summary"],
              "detail": first["detail"][:-3], "evidence_ids": union(payload)}
    return {"positions": [it["position"] for it in payload["items"]], "result": result}


def test_the_attempt_bound_stops_a_compaction_whose_budget_premise_fails() -> None:
    """An accumulator whose budget is larger than a reduce request's room (a caller's
    mistake): results within B // 8 no longer fit two to a request, singleton
    reductions repeat, and 2n + 1 calls end it with reduction_attempt_limit."""
    room = reduce_budget("temporary", SMALL)
    acc = Accumulator("temporary", 40 * room, max_items=2)
    model = Model(shrink_one_char)
    for i in range(1, 3):
        run(push(acc, temp(f"T{i}", "s", "x" * 5000), i, model, W, SMALL))
    assert reduce_request("temporary", acc.live, acc.budget_tokens, SMALL) is None
    with pytest.raises(TopicProcessingError) as info:
        run(push(acc, temp("T3", "s", "x" * 5000), 3, model, W, SMALL))
    assert info.value.code == "reduction_attempt_limit"
    assert len(model.requests) == 2 * 3 + 1
    assert [x.item.content.title for x in acc.live] == ["T1", "T2"]


def test_an_item_that_cannot_fit_a_reduce_request_alone_is_over_budget() -> None:
    budget = reduce_budget("temporary", SMALL)
    acc, model = Accumulator("temporary", budget), Model(merge)
    big = temp("Big", "s", "y" * (3 * budget))
    assert item_tokens(big) > budget
    with pytest.raises(TopicProcessingError) as info:
        run(push(acc, big, 1, model, W, SMALL))
    assert info.value.code == "reduction_over_budget" and model.requests == []
    assert acc.live == ()


def test_an_incoming_item_over_the_budget_is_reduced_by_itself_first() -> None:
    room = reduce_budget("temporary", SMALL)
    acc, model = Accumulator("temporary", room // 2), Model(merge)
    run(push(acc, temp("Small", "s", "d"), 1, model, W, SMALL))
    big = temp("Big", "s", "y" * (2 * room), ("s2",))
    assert room // 2 < item_tokens(big) < room
    assert run(push(acc, big, 2, model, W, SMALL)) == 1
    sent = json.loads(model.requests[0].input_json)["items"]
    assert [x["title"] for x in sent] == ["Big"]
    assert [x.item.content.title for x in acc.live] == ["Small", "M"]
    assert acc.live[1].reduced and acc.live[1].positions == frozenset({2})


def test_compact_with_fits_reduces_and_stops_at_one_reduced_result() -> None:
    """``fits`` False forever (the historical Topic never fits): the live items are
    reduced to one, singleton-reduced once if never reduced, and compaction stops
    there (the caller fails closed); no loop."""
    acc, model = Accumulator("temporary", TB), Model(merge)
    for i in range(1, 4):
        run(push(acc, temp(f"T{i}", "s", f"detail {i}", (f"s{i}",)), i, model, W, S))
    assert run(compact(acc, model, W, S, fits=lambda live: False)) == 1
    assert len(acc.live) == 1 and acc.live[0].reduced
    assert acc.live[0].item.evidence_ids == ("s1", "s2", "s3")
    assert run(compact(acc, model, W, S, fits=lambda live: False)) == 0

    single, model2 = Accumulator("temporary", TB), Model(merge)
    run(push(single, temp("Only", "s", "a longer detail"), 1, model2, W, S))
    assert run(compact(single, model2, W, S, fits=lambda live: False)) == 1
    assert single.live[0].reduced and single.live[0].item.content.title == "M"


def test_compact_reduces_only_until_fits_holds() -> None:
    acc, model = Accumulator("temporary", TB), Model(merge)
    for i in range(1, 6):
        run(push(acc, temp(f"T{i}", "s", f"d{i}"), i, model, W, S))
    assert run(compact(acc, model, W, S, fits=lambda live: len(live) <= 5)) == 0
    assert run(compact(acc, model, W, S, fits=lambda live: len(live) <= 2)) == 1
    assert len(acc.live) == 1


def test_the_longest_fitting_prefix_is_reduced() -> None:
    """Items too large to share one request with all the others: the prefix reduced is
    the longest that fits, the rest stay in order."""
    room = reduce_budget("temporary", SMALL)
    each = temp("T", "s", "q" * room)  # a third of the room and a little more
    size = item_tokens(each)
    assert room // 3 < size < room // 2
    acc, model = Accumulator("temporary", room, max_items=3), Model(merge)
    for i in range(1, 4):
        run(push(acc, temp(f"T{i}", "s", "q" * room), i, model, W, SMALL))
    assert [len(json.loads(r.input_json)["items"]) for r in model.requests] == [2]
    assert [x.item.content.title for x in acc.live] == ["M", "T3"]
    assert acc.tokens <= room


def test_the_larger_of_the_first_two_is_singleton_reduced() -> None:
    """A small item then one of nearly B: they do not fit one request together, so the
    LARGER (the second) is reduced alone; reducing the smaller could never make room."""
    room = reduce_budget("temporary", SMALL)
    acc, model = Accumulator("temporary", room), Model(merge)
    run(push(acc, temp("Small", "s", "a" * (room // 2)), 1, model, W, SMALL))
    large = temp("Large", "s", "b" * (room * 5 // 2), ("s2",))
    assert room * 3 // 4 < item_tokens(large) < room
    assert run(push(acc, large, 2, model, W, SMALL)) == 1
    assert [x["title"] for x in json.loads(model.requests[0].input_json)["items"]] == ["Large"]
    assert [x.item.content.title for x in acc.live] == ["Small", "M"]
