"""The ``deterministic`` provider's reductions pass core.topic.accumulate's own checks
(every position, the exact evidence union, at most 1/8 of the input budget, a
singleton shrinks) so a stream of fragment Probes or temporaries through the real
Accumulator never fails with it; and each adversarial script of
tests/support/topic_models.py is refused by parse_reduction with the code it names."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.topic_models import (
    ScriptedTopicModel,
    drop_position,
    echo_reduce,
    invent_evidence,
    reduce_null,
    reduce_with_target,
    shrink_by_one,
)
from support.topic_windows import window_of

from powercontext import topic_reduction
from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic import accumulate as acc
from powercontext.core.topic.accumulate import Accumulator, Live, TemporaryTopic
from powercontext.core.topic.content import make_content
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Probe

SETTINGS = ProcessingSettings(context_window_tokens=6_000, max_output_tokens=500)
W = window_of(*(f"# S{i}\n\nSource {i}." for i in range(1, 9)))


def probe(query: str, *ids: str) -> Probe:
    return Probe(query, ids, W.refs(list(ids), "evidence_ids"))


def temp(title: str, detail: str, *ids: str) -> TemporaryTopic:
    return TemporaryTopic(make_content(title, f"{title} summary.", detail), ids,
                          W.refs(list(ids), "evidence_ids"))


def live(item: Any, position: int) -> Live:
    return Live(item, frozenset({position}), acc.item_tokens(item))


def caller(model: ScriptedTopicModel) -> Any:
    async def call(request: Any) -> str:
        return (await model.generate(request)).output_text
    return call


def reduce_once(model: ScriptedTopicModel, kind: acc.ItemKind, items: list[Live]) -> Live:
    budget = acc.reduce_budget(kind, SETTINGS)
    req = acc.reduce_request(kind, items, budget, SETTINGS)
    assert req is not None
    text = asyncio.run(caller(model)(req))
    return acc.parse_reduction(text, kind, items, W, budget)


TEMPS = [live(temp("A", "alpha " * 200, "s1"), 1), live(temp("B", "beta " * 150, "s2", "s1"), 2),
         live(temp("C", "gamma", "s3"), 3)]
PROBES = [live(probe("alpha words", "s1"), 1), live(probe("beta words", "s2"), 2)]


@pytest.mark.parametrize("kind,items", [("temporary", TEMPS), ("probe", PROBES),
                                        ("temporary", TEMPS[:1]), ("probe", PROBES[:1])])
@pytest.mark.parametrize("script", [None, shrink_by_one()])
def test_deterministic_and_shrink_by_one_reductions_pass_parse_reduction(
        kind: acc.ItemKind, items: list[Live], script: Any) -> None:
    model = ScriptedTopicModel({"reduce": script} if script else {},
                               context_window_tokens=SETTINGS.context_window_tokens)
    if kind == "probe" and len(items) == 1:
        items = [live(probe("word " * 100, "s1", "s2"), 1)]
    out = reduce_once(model, kind, items)
    assert out.positions == frozenset().union(*(i.positions for i in items))
    assert set(out.item.evidence_ids) == {e for i in items for e in i.item.evidence_ids}
    if len(items) == 1:
        assert out.tokens < items[0].tokens
        if script is not None:
            assert out.tokens == items[0].tokens - 1  # only just progress


@pytest.mark.parametrize("script,code", [
    (drop_position(), acc.CODE_REDUCTION_COVERAGE),
    (invent_evidence("s7"), acc.CODE_REDUCTION_EVIDENCE),
    (invent_evidence("s999"), acc.CODE_REDUCTION_EVIDENCE),
    (echo_reduce(), acc.CODE_REDUCTION_EVIDENCE),
    (reduce_with_target(), "model_output_invalid"),
    (reduce_with_target("artifact_id", "topic_art_x", inside=True), "model_output_invalid"),
    (reduce_null(), "model_output_invalid"),
])
def test_each_adversarial_reduction_is_refused_with_its_code(script: Any, code: str) -> None:
    model = ScriptedTopicModel({"reduce": script})
    with pytest.raises(TopicProcessingError) as info:
        reduce_once(model, "temporary", TEMPS)
    assert info.value.code == code and info.value.stage == "reduce"


def test_echo_of_a_single_item_makes_no_progress() -> None:
    with pytest.raises(TopicProcessingError) as info:
        reduce_once(ScriptedTopicModel({"reduce": echo_reduce()}), "temporary", TEMPS[:1])
    assert info.value.code == acc.CODE_REDUCTION_NO_PROGRESS


_word = st.text(st.sampled_from("abcxyz\"\\\n é\U0001f600"), min_size=1, max_size=12)


@settings(deadline=None)
@given(st.lists(st.tuples(st.lists(_word, min_size=1, max_size=300).map(" ".join),
                          st.sets(st.sampled_from([f"s{i}" for i in range(1, 9)]),
                                  min_size=1, max_size=3).map(sorted)),
                min_size=1, max_size=40),
       st.booleans(), st.sampled_from(["probe", "temporary"]))
def test_a_stream_through_the_accumulator_never_fails_with_the_deterministic_model(
        raw: list[tuple[str, list[str]]], only_just: bool, kind: acc.ItemKind) -> None:
    """Whatever the items (each within the 1/8 limit, as a parsed temporary or Probe
    is), pushing them all through the real Accumulator with the deterministic provider
    (or the barely-progressing shrink_by_one) succeeds within 2n + 1 calls per
    compaction, keeps every position and the exact evidence union."""
    budget = acc.reduce_budget(kind, SETTINGS)
    model = ScriptedTopicModel({"reduce": shrink_by_one()} if only_just else {},
                               context_window_tokens=SETTINGS.context_window_tokens)
    a = Accumulator(kind, budget)
    pushed, union = 0, set()
    for position, (text, ids) in enumerate(raw, start=1):
        text = text.strip() or "x"
        item: Any = (probe(text[:512].strip() or "x", *ids) if kind == "probe"
                     else temp(text[:50].strip() or "t", text, *ids))
        if acc.item_tokens(item) > budget // acc.RESULT_FRACTION:
            continue
        before = len(a.live)
        calls = asyncio.run(topic_reduction.push(a, item, position, caller(model), W, SETTINGS))
        assert calls <= 2 * (before + 1) + 1
        pushed += 1
        union |= set(ids)
        assert len(a.live) <= acc.MAX_LIVE_ITEMS and a.tokens <= budget
    if pushed:
        held = frozenset().union(*(x.positions for x in a.live))
        assert len(held) == pushed
        assert {e for x in a.live for e in x.item.evidence_ids} == union
