"""The adversarial scripts of tests/support/topic_models.py do what their docstrings say
(each breaks exactly the one rule it names, starting from the deterministic answer),
and ScriptedTopicModel counts calls per stage."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from support.topic_models import (
    ScriptedTopicModel,
    deterministic_answer,
    drop_position,
    echo_reduce,
    fail_at,
    invent_evidence,
    plan_with,
    reduce_null,
    reduce_with_target,
    shrink_by_one,
)

from powercontext.core import canonical
from powercontext.core.errors import BackendError
from powercontext.core.topic import accumulate
from powercontext.core.topic.generation import Stage, StageRequest
from powercontext.core.topic.stages import SYSTEM_PROMPT
from powercontext.core.topic.window import estimate_tokens


def request(stage: Stage, payload: Any, schema_name: str) -> StageRequest:
    input_json = canonical.canonical_dumps(payload).decode("utf-8")
    return StageRequest(stage, SYSTEM_PROMPT, "x", input_json, schema_name, "{}", 100,
                        estimate_tokens(input_json) + 200)


def temp(title: str, detail: str, ids: list[str]) -> dict[str, Any]:
    return {"title": title, "summary": f"{title}.", "detail": detail, "evidence_ids": ids}


def reduce_req(kind: str, items: list[dict[str, Any]], limit: int = 10_000) -> StageRequest:
    return request("reduce", {"kind": kind, "focus": [], "max_result_chars": limit,
                              "items": [{"position": i, **it}
                                        for i, it in enumerate(items, start=1)]},
                   "topic_reduction")


TEMPS = [temp("A", "alpha " * 30, ["s1"]), temp("B", "beta", ["s2", "s1"])]
PROBES = [{"query": "alpha", "evidence_ids": ["s1"]},
          {"query": "beta", "evidence_ids": ["s2"]}]


def run(model: ScriptedTopicModel, req: StageRequest) -> Any:
    return json.loads(asyncio.run(model.generate(req)).output_text)


def scripted(script: Any, req: StageRequest) -> Any:
    return run(ScriptedTopicModel({req.stage: script}), req)


def tokens(value: Any) -> int:
    return estimate_tokens(canonical.canonical_dumps(value).decode("utf-8"))


def test_echo_reduce_returns_the_first_item_unchanged_for_every_position() -> None:
    out = scripted(echo_reduce(), reduce_req("temporary", TEMPS))
    assert out == {"positions": [1, 2], "result": TEMPS[0]}
    out = scripted(echo_reduce(union_evidence=True), reduce_req("temporary", TEMPS))
    assert out["result"] == {**TEMPS[0], "evidence_ids": ["s1", "s2"]}


def test_drop_position_leaves_one_position_out_and_nothing_else() -> None:
    req = reduce_req("probe", PROBES)
    good = deterministic_answer(req)
    out = scripted(drop_position(), req)
    assert out == {**good, "positions": [1]}
    assert scripted(drop_position(0), req)["positions"] == [2]


def test_invent_evidence_adds_one_id_the_input_never_gave() -> None:
    req = reduce_req("temporary", TEMPS)
    out = scripted(invent_evidence("s7"), req)
    assert out["result"]["evidence_ids"] == ["s1", "s2", "s7"]
    assert out["positions"] == [1, 2]


def test_reduce_with_target_adds_the_identity_field() -> None:
    req = reduce_req("probe", PROBES)
    good = deterministic_answer(req)
    assert scripted(reduce_with_target(), req) == {**good, "target": "h1"}
    inside = scripted(reduce_with_target("artifact_id", "topic_art_x", inside=True), req)
    assert inside["result"] == {**good["result"], "artifact_id": "topic_art_x"}


def test_reduce_null_is_a_noop_result() -> None:
    assert scripted(reduce_null(), reduce_req("temporary", TEMPS)) == {
        "positions": [1, 2], "result": None}


@pytest.mark.parametrize("kind,item", [
    ("probe", {"query": "word " * 80, "evidence_ids": ["s1", "s2"]}),
    ("temporary", temp("Big", "para " * 300, ["s1"]))])
def test_shrink_by_one_makes_a_singleton_exactly_one_token_smaller(kind: str,
                                                                   item: dict[str, Any]) -> None:
    out = scripted(shrink_by_one(), reduce_req(kind, [item], limit=1 << 40))
    assert out["positions"] == [1]
    assert tokens(out["result"]) == tokens(item) - 1
    assert out["result"]["evidence_ids"] == item["evidence_ids"]


def test_shrink_by_one_fills_the_token_limit_the_guidance_implies() -> None:
    budget = 4_000
    chars = accumulate.max_result_chars(budget)
    out = scripted(shrink_by_one(), reduce_req("temporary", TEMPS * 10, limit=chars))
    res = out["result"]
    assert out["positions"] == list(range(1, 21))
    assert res["evidence_ids"] == ["s1", "s2"]
    limit = budget // accumulate.RESULT_FRACTION
    assert limit - 1 <= tokens(res) <= limit  # as large as the check allows


def test_fail_at_raises_on_the_kth_call_of_its_stage_only() -> None:
    boom = BackendError("provider down")
    model = ScriptedTopicModel({"reduce": fail_at("reduce", 2, boom)})
    req = reduce_req("probe", PROBES)
    assert run(model, req) == deterministic_answer(req)
    with pytest.raises(BackendError, match="provider down"):
        run(model, req)
    assert run(model, req) == deterministic_answer(req)
    assert model.count["reduce"] == 3 and model.count["plan"] == 0
    with pytest.raises(ValueError):
        fail_at("reduce", 0, boom)


def test_plan_with_answers_the_given_items_verbatim() -> None:
    items = [{"operation": "update", "target": None, "probes": ["p1"]}]
    req = request("plan", {"probes": [], "sources": [], "history": []}, "topic_plan")
    assert scripted(plan_with(items), req) == {"items": items}
    assert scripted(plan_with(lambda data: [{"n": len(data["probes"])}]), req) == {
        "items": [{"n": 0}]}


def test_count_counts_every_call_per_stage_scripted_or_not() -> None:
    model = ScriptedTopicModel({"reduce": reduce_null()})
    run(model, reduce_req("probe", PROBES))
    run(model, request("plan", {"probes": [], "sources": [], "history": []}, "topic_plan"))
    run(model, reduce_req("probe", PROBES))
    assert model.count == {"reduce": 2, "plan": 1}
    assert model.stages() == ["reduce", "plan", "reduce"]
