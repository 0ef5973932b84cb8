"""Properties of the streaming accumulator and the private reduction (Topic Memory RFC,
"Window selection and context budgets", "Oversized Work Items and temporary Topics";
issue 15, "Done means": exact evidence union, every position accounted for, strict
progress, attempts <= 2n + 1).

For arbitrary streams of Probes or temporary Topics and arbitrary VALID reducers
(random subsets of the inputs' words, shrunk by any amount, every position, the exact
union of evidence ids in any order): after every push the live positions partition the
positions pushed so far, the live evidence union equals the pushed union, both bounds
hold, and each compaction makes at most 2n - 1 calls (so within the 2n + 1 bound).
For arbitrary INVALID outputs: the right code, and the accumulator unchanged."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from support.topic_windows import window_of

from powercontext.core.canonical import canonical_dumps
from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic.accumulate import (
    RESULT_FRACTION,
    Accumulator,
    Item,
    Live,
    TemporaryTopic,
    item_tokens,
    parse_reduction,
    reduce_budget,
    reduce_request,
)
from powercontext.core.topic.content import make_content
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Probe
from powercontext.core.topic.window import estimate_tokens
from powercontext.topic_reduction import compact, push

W = window_of(*(f"# Source {i}\n\nText of source {i}." for i in range(1, 7)))
IDS = [s.evidence_id for s in W.sources]
SETTINGS = [ProcessingSettings(context_window_tokens=3000, max_output_tokens=512),
            ProcessingSettings(context_window_tokens=4000, max_output_tokens=256)]
WORDS = st.sampled_from(["alpha", "beta", "中文", "é", "\U0001f600", '"q"', "\\", "a\tb",
                         "ADR-0005", "x" * 40, "y" * 120, "line\nbreak"])


def _text(words: list[str], limit: int) -> str:
    return " ".join(words)[:limit].strip() or "t"


@st.composite
def items(draw: st.DrawFn, kind: str, budget: int) -> Item:
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
    refs = W.refs(ids, "ids")
    if kind == "probe":
        query = _text(draw(st.lists(WORDS, min_size=1, max_size=12)), 512)
        return Probe(query, tuple(ids), refs)
    words = draw(st.lists(WORDS, min_size=1, max_size=60))
    bulk = draw(st.sampled_from([0, 0, 1, 3, 9]))  # about 0, 300, 900, 2,700 tokens
    detail = " ".join(words + ["z" * 900] * bulk)
    item = TemporaryTopic(make_content(_text(words[:4], 256), _text(words[:8], 2048),
                                       detail), tuple(ids), refs)
    while item_tokens(item) > budget - 40:  # an original fits a reduce request alone
        detail = detail[: len(detail) * 9 // 10].strip()
        item = TemporaryTopic(make_content(item.content.title, item.content.summary,
                                           detail or "d"), tuple(ids), refs)
    return item


def _union(payload: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(e for it in payload["items"] for e in it["evidence_ids"]))


def _tokens(shown: dict[str, Any]) -> int:
    return estimate_tokens(canonical_dumps(shown).decode())


def valid_reducer(rnd: random.Random, kind: str, budget: int
                  ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Every position and the exact union (both shuffled), a random subset of the
    inputs' words, halved until within B // 8 (and, for one input, below its size)."""

    def script(payload: dict[str, Any]) -> dict[str, Any]:
        inputs = [{k: v for k, v in it.items() if k != "position"} for it in payload["items"]]
        positions = [it["position"] for it in payload["items"]]
        ids = _union(payload)
        rnd.shuffle(positions)
        rnd.shuffle(ids)
        fields = ["query"] if kind == "probe" else ["title", "summary", "detail"]
        words = [w for it in inputs for f in fields for w in it[f].split()]
        keep = rnd.random()
        words = [w for w in words if rnd.random() < keep] or ["x"]
        limit = budget // RESULT_FRACTION
        if len(inputs) == 1:
            limit = min(limit, _tokens(inputs[0]) - 1)
        while True:
            text = " ".join(words)
            if kind == "probe":
                result: dict[str, Any] = {"query": text[:512], "evidence_ids": ids}
            else:
                result = {"title": text[:256], "summary": text[:2048], "detail": text,
                          "evidence_ids": ids}
            if _tokens(result) <= limit or words == ["x"]:
                return {"positions": positions, "result": result}
            words = words[: len(words) // 2] or ["x"]

    return script


class Counting:
    def __init__(self, script: Callable[[dict[str, Any]], object]) -> None:
        self.script = script
        self.calls = 0

    async def __call__(self, request: StageRequest) -> str:
        self.calls += 1
        out = self.script(json.loads(request.input_json))
        return out if isinstance(out, str) else json.dumps(out)


def _check_live(acc: Accumulator, pushed: set[int], cited: set[str]) -> None:
    positions = [p for live in acc.live for p in live.positions]
    assert len(positions) == len(set(positions)) == len(pushed)  # disjoint, complete
    assert set(positions) == pushed
    assert {e for live in acc.live for e in live.item.evidence_ids} == cited
    assert all(live.tokens == item_tokens(live.item) for live in acc.live)
    assert all(live.item.sources == W.refs(list(live.item.evidence_ids), "x")
               for live in acc.live)
    assert len(acc.live) <= acc.max_items and acc.tokens <= acc.budget_tokens


@st.composite
def streams(draw: st.DrawFn, longest: int = 30, max_items: tuple[int, ...] = (1, 2, 3, 5, 20)
            ) -> tuple[str, ProcessingSettings, int, list[Any], int]:
    kind = draw(st.sampled_from(["probe", "temporary"]))
    settings = draw(st.sampled_from(SETTINGS))
    budget = reduce_budget(kind, settings)  # type: ignore[arg-type]
    bound = draw(st.sampled_from(max_items))
    stream: list[Any] = []
    for _ in range(draw(st.integers(1, longest))):
        if stream and draw(st.integers(0, 4)) == 0:
            stream.append(("dup", draw(st.integers(0, len(stream) - 1))))
        else:
            stream.append(("new", draw(items(kind, budget))))
    return kind, settings, bound, stream, draw(st.integers(0, 2**32))


@given(streams())
def test_valid_reducers_keep_every_position_and_the_exact_union(case: Any) -> None:
    kind, settings, max_items, stream, seed = case
    budget = reduce_budget(kind, settings)
    acc = Accumulator(kind, budget, max_items)
    model = Counting(valid_reducer(random.Random(seed), kind, budget))
    pushed: set[int] = set()
    cited: set[str] = set()
    shown: list[Item] = []
    for position, (what, value) in enumerate(stream, start=1):
        item = shown[value] if what == "dup" else value
        shown.append(item)
        n = len(acc.live) + 1
        before = model.calls
        calls = asyncio.run(push(acc, item, position, model, W, settings))
        assert calls == model.calls - before
        assert calls <= 2 * n - 1 <= 2 * n + 1
        pushed.add(position)
        cited.update(item.evidence_ids)
        _check_live(acc, pushed, cited)
    event(f"{kind}: {(model.calls and 'reduced') or 'no reduction'}")


@given(streams(), st.integers(1, 4))
def test_compaction_until_fits_holds_or_one_reduced_result(case: Any, room: int) -> None:
    """``fits`` asks for at most ``room`` items: compaction ends with it holding, or
    with one reduced result when even that is too many (never a loop)."""
    kind, settings, max_items, stream, seed = case
    budget = reduce_budget(kind, settings)
    acc = Accumulator(kind, budget, max_items)
    model = Counting(valid_reducer(random.Random(seed), kind, budget))
    pushed: set[int] = set()
    cited: set[str] = set()
    for position, (what, value) in enumerate(stream, start=1):
        if what == "new":
            asyncio.run(push(acc, value, position, model, W, settings))
            pushed.add(position)
            cited.update(value.evidence_ids)
    n = len(acc.live)
    before = model.calls

    def fits(live: Any) -> bool:  # room 1: never fits
        return len(live) <= room - 1

    try:
        calls = asyncio.run(compact(acc, model, W, settings, fits=fits))
    except TopicProcessingError as exc:
        # a lone original too small to shrink below itself cannot make progress
        assert exc.code == "reduction_no_progress" and n == 1
        return
    assert calls == model.calls - before <= 2 * n + 1
    assert fits(acc.live) or (len(acc.live) == 1 and acc.live[0].reduced)
    _check_live(acc, pushed, cited)


# ---------------------------------------------------------------- strict progress

@given(st.sampled_from(["probe", "temporary"]), st.data())
def test_a_singleton_reduction_is_accepted_exactly_when_it_shrinks(kind: str,
                                                                  data: st.DataObject) -> None:
    settings = SETTINGS[1]
    budget = reduce_budget(kind, settings)  # type: ignore[arg-type]
    original = data.draw(items(kind, budget))
    result = data.draw(items(kind, budget))
    result = (Probe(result.query, original.evidence_ids, original.sources)
              if isinstance(result, Probe)
              else TemporaryTopic(result.content, original.evidence_ids, original.sources))
    shown: dict[str, Any] = ({"query": result.query} if isinstance(result, Probe) else {
        "title": result.content.title, "summary": result.content.summary,
        "detail": result.content.detail})
    shown["evidence_ids"] = list(original.evidence_ids)
    text = json.dumps({"positions": [1], "result": shown})
    inputs = [Live(original, frozenset({7}), item_tokens(original))]
    size = item_tokens(result)
    try:
        got = parse_reduction(text, kind, inputs, W, budget)  # type: ignore[arg-type]
    except TopicProcessingError as exc:
        expected = ("reduction_result_oversized" if size > budget // RESULT_FRACTION
                    else "reduction_no_progress")
        assert exc.code == expected
        assert size > budget // RESULT_FRACTION or size >= inputs[0].tokens
        return
    assert got.tokens == size < inputs[0].tokens and got.positions == frozenset({7})


# ---------------------------------------------------------------- invalid outputs

Mutation = Callable[[dict[str, Any], dict[str, Any]], object]
#: Wrong answers by the code that refuses them.
MUTATIONS: dict[str, dict[str, Mutation]] = {
    "reduction_coverage_mismatch": {
        "drop_position": lambda o, p: {**o, "positions": o["positions"][1:]},
        "repeat_position": lambda o, p: {**o, "positions": o["positions"] + o["positions"][:1]},
        "unknown_position": lambda o, p: {**o, "positions": [*o["positions"],
                                                             len(p["items"]) + 1]},
    },
    "reduction_evidence_mismatch": {
        "drop_evidence": lambda o, p: _ids(o, _union(p)[1:] or [
            next(i for i in IDS if i not in _union(p))]),
        "invent_evidence": lambda o, p: _ids(o, [*_union(p), next(
            (i for i in IDS if i not in _union(p)), "s99")]),
        "outside_window": lambda o, p: _ids(o, [*_union(p), "s42"]),
    },
    "model_output_invalid": {
        "repeat_evidence": lambda o, p: _ids(o, _union(p) + _union(p)[:1]),
        "target": lambda o, p: {**o, "result": {**o["result"], "target": "h1"}},
        "artifact_id": lambda o, p: {**o, "result": {**o["result"],
                                                    "artifact_id": "topic_art_x"}},
        "handle_on_top": lambda o, p: {**o, "handle": "h1"},
        "null_result": lambda o, p: {**o, "result": None},
        "missing_positions": lambda o, p: {"result": o["result"]},
        "not_json": lambda o, p: json.dumps(o)[:-1],
    },
    "reduction_result_oversized": {"oversized": lambda o, p: _big(o)},
}


def _ids(out: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    return {**out, "result": {**out["result"], "evidence_ids": ids}}


def _big(out: dict[str, Any]) -> dict[str, Any]:
    result = dict(out["result"])
    if "query" in result:
        result["query"] = "中" * 512
    else:
        result["detail"] = "中" * 4000
    return {**out, "result": result}


@pytest.mark.parametrize("code", sorted(MUTATIONS))
@given(case=streams(longest=8, max_items=(1, 2, 3)), k=st.integers(1, 3), data=st.data())
def test_an_invalid_reduction_is_refused_with_its_code_and_changes_nothing(
        code: str, case: Any, k: int, data: st.DataObject) -> None:
    """The k-th reduce call of the stream answers wrongly (or, when the stream makes
    fewer calls, the first call of a final compaction whose ``fits`` never holds)."""
    kind, settings, max_items, stream, seed = case
    budget = reduce_budget(kind, settings)
    acc = Accumulator(kind, budget, max_items)
    valid = valid_reducer(random.Random(seed), kind, budget)
    mutation = data.draw(st.sampled_from(sorted(MUTATIONS[code])))
    mutate = MUTATIONS[code][mutation]
    calls = 0

    def script(payload: dict[str, Any]) -> object:
        nonlocal calls
        calls += 1
        out = valid(payload)
        return mutate(out, payload) if calls == k else out

    def refused(run: Callable[[], Any]) -> bool:
        before = acc.live
        try:
            asyncio.run(run())
        except TopicProcessingError as exc:
            assert calls == k  # the mutated call, not an earlier one, failed
            assert exc.code == code and exc.stage == "reduce"
            assert acc.live == before
            event(f"refused {mutation}")
            return True
        assert calls < k
        return False

    model = Counting(script)
    for position, (what, value) in enumerate(stream, start=1):
        if what == "new" and refused(
                lambda: push(acc, value, position, model, W, settings)):  # noqa: B023
            return
    k = calls + 1
    if not refused(lambda: compact(acc, model, W, settings, fits=lambda live: False)):
        event("no call: one reduced result")


# ---------------------------------------------------------------- the termination lemma

W100 = window_of(*(f"s{i}" for i in range(1, 101)),
                 settings=ProcessingSettings(window_limit=100))
IDS100 = [s.evidence_id for s in W100.sources]


@st.composite
def results(draw: st.DrawFn, kind: str, limit: int) -> Item:
    """An item of ``kind`` as large as fits ``limit`` tokens (JSON-hostile text)."""
    ids = draw(st.lists(st.sampled_from(IDS100), min_size=1, max_size=100, unique=True))
    refs = W100.refs(ids, "ids")
    unit = draw(st.sampled_from(["x", '"', "\\", "\x01", "中", "\U0001f600", "é "]))

    def make(size: int) -> Item:
        text = (unit * size)[: 512 if kind == "probe" else 32_768].strip() or "x"
        if kind == "probe":
            return Probe(text, tuple(ids), refs)
        return TemporaryTopic(make_content(text[:256].strip() or "t",
                                           text[:2048].strip() or "s", text), tuple(ids), refs)

    lo, hi = 1, max(2, 3 * limit)  # the largest size within the limit (binary search)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if item_tokens(make(mid)) <= limit else (lo, mid - 1)
    return make(lo)


@given(st.sampled_from(["probe", "temporary"]), st.integers(1_024, 400_000),
       st.sampled_from([256, 1_024, 8_192, 32_768]), st.data())
def test_two_results_of_an_eighth_always_fit_one_reduce_request(
        kind: str, context: int, output: int, data: st.DataObject) -> None:
    """The lemma the 2n + 1 bound rests on: any two items of at most B // 8 estimated
    tokens (B = reduce_budget) fit one reduce request together, whatever their text
    and evidence ids (up to the 100 of the widest Window)."""
    settings = ProcessingSettings(context_window_tokens=context,
                                  max_output_tokens=min(output, context // 2))
    budget = reduce_budget(kind, settings)  # type: ignore[arg-type]
    limit = budget // RESULT_FRACTION
    first, second = data.draw(results(kind, limit)), data.draw(results(kind, limit))
    if item_tokens(first) > limit or item_tokens(second) > limit:
        return  # B // 8 holds no item at all (a tiny context window)
    pair = [Live(first, frozenset({1}), item_tokens(first)),
            Live(second, frozenset({2}), item_tokens(second))]
    assert reduce_request(kind, pair, budget, settings) is not None  # type: ignore[arg-type]
