"""core.topic.planner: the Work Planner request, its strict schema, every Work Item rule
of the plan output, and the Item Evolver (Topic Memory RFC, "Work Planner and direct
Work Items", "Evolution operations and model output"; issue 15, "Bad input and
faults": a Probe in no Item or two, a historical reference split across Items, an
UPDATE Item with no target or an unknown one, a CREATE Item with a target)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.topic_windows import revision, schema_objects, window_of

from powercontext.core.errors import InvalidInputError, TopicProcessingError
from powercontext.core.topic import planner, stages
from powercontext.core.topic.content import make_content
from powercontext.core.topic.history import HistoryCandidate
from powercontext.core.topic.models import TopicHit, TopicRef, TopicRevision
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Probe

SOURCE_TEXTS = ("# Alpha\n\nALPHA-SOURCE-TEXT is first.", "# Beta\n\nBETA-SOURCE-TEXT.",
                "# Gamma\n\nGAMMA-SOURCE-TEXT.", "# Delta\n\nDELTA-SOURCE-TEXT.")
W = window_of(*SOURCE_TEXTS)
HEADS = (revision("topic_art_aaa", "Alpha", "Alpha summary.", "ALPHA-HISTORY-DETAIL"),
         revision("topic_art_bbb", "Beta", "Beta summary.", "BETA-HISTORY-DETAIL"))
HANDLES = stages.history_handles(HEADS)


def probe(query: str, *ids: str) -> Probe:
    return Probe(query, ids, W.refs(list(ids), "evidence_ids"))


PROBES = (probe("alpha first", "s1"), probe("beta", "s2"), probe("gamma and alpha", "s3", "s1"))


def candidate(head: TopicRevision, snippet: str | None = "a snippet") -> HistoryCandidate:
    hit = TopicHit(head.ref, head.content.title, head.content.summary, snippet, 0.03,
                   ("topic_fts",))
    return HistoryCandidate(head.ref, 90.0, hit, (0,))


CANDIDATES = tuple(candidate(h) for h in HEADS)


def plan(*items: tuple[str, str | None, list[str]], **extra: Any) -> str:
    return json.dumps({"items": [{"operation": op, "target": t, "probes": ps}
                                 for op, t, ps in items], **extra})


def refused(text: object, probes: tuple[Probe, ...] = PROBES,
            handles: dict[str, TopicRevision] = HANDLES,
            code: str = planner.CODE_PLAN_INVALID) -> TopicProcessingError:
    with pytest.raises(TopicProcessingError) as info:
        planner.parse_plan(text, W, probes, handles)
    assert info.value.code == code
    assert info.value.stage == "plan"
    assert not info.value.terminal
    return info.value


def topic(title: str = "T", summary: str = "S", detail: str = "D",
          ids: Any = ("s1",), **extra: Any) -> dict[str, Any]:
    return {"title": title, "summary": summary, "detail": detail,
            "evidence_ids": list(ids) if isinstance(ids, tuple) else ids, **extra}


_objects = schema_objects


# ---------------------------------------------------------------- schema and request

@pytest.mark.parametrize("schema", [planner.plan_schema(("p1", "p2"), ("h1",)),
                                    planner.plan_schema(("p1",), ()),
                                    planner.item_schema(), planner.item_schema(("s1", "s3"))])
def test_every_schema_object_is_strict_with_every_property_required(schema: Any) -> None:
    objects = _objects(schema)
    assert objects
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])


def test_plan_schema_lists_probe_ids_and_handles_as_enums() -> None:
    schema = planner.plan_schema(("p1", "p2", "p3"), ("h1", "h2"))
    items = schema["properties"]["items"]
    assert items["maxItems"] == 3 and items["minItems"] == 1
    props = items["items"]["properties"]
    assert props["probes"]["items"]["enum"] == ["p1", "p2", "p3"]
    assert props["probes"]["minItems"] == 1
    assert props["target"] == {"anyOf": [{"type": "null"},
                                         {"type": "string", "enum": ["h1", "h2"]}]}
    assert props["operation"]["enum"] == ["create", "update"]
    assert planner.plan_schema(("p1",), ())["properties"]["items"]["items"][
        "properties"]["target"] == {"type": "null"}


def test_plan_request_shows_probes_cited_source_refs_and_history_hits() -> None:
    probes = (probe("alpha first", "s3"), probe("beta", "s2", "s3"))  # s1, s4 cited by none
    req = planner.plan_request(W, probes, CANDIDATES, ProcessingSettings())
    assert req is not None
    assert (req.stage, req.schema_name) == ("plan", "topic_plan")
    assert req.system == stages.SYSTEM_PROMPT and req.instructions == planner.PLAN_INSTRUCTIONS
    payload = json.loads(req.input_json)
    assert payload["probes"] == [
        {"id": "p1", "query": "alpha first", "evidence_ids": ["s3"], "found": None},
        {"id": "p2", "query": "beta", "evidence_ids": ["s2", "s3"], "found": None}]
    assert payload["sources"] == [
        {"id": "s2", "kind": "file", "uri": "file:///d/2.md"},
        {"id": "s3", "kind": "file", "uri": "file:///d/3.md"}]
    assert payload["history"] == [
        {"handle": "h1", "title": "Alpha", "summary": "Alpha summary.", "snippet": "a snippet"},
        {"handle": "h2", "title": "Beta", "summary": "Beta summary.", "snippet": "a snippet"}]
    assert json.loads(req.schema_json) == planner.plan_schema(("p1", "p2"), ("h1", "h2"))
    assert req.estimated_tokens == stages.request_tokens(
        req.system, req.instructions, req.input_json, req.schema_json, req.max_output_tokens)


def test_plan_request_shows_the_topic_each_probe_found_first() -> None:
    probes = (probe("alpha first", "s3"), probe("beta", "s2"), probe("gamma", "s1"))
    found = (CANDIDATES[1].ref, CANDIDATES[1].ref, None)
    req = planner.plan_request(W, probes, CANDIDATES, ProcessingSettings(), found)
    assert req is not None
    assert [p["found"] for p in json.loads(req.input_json)["probes"]] == ["h2", "h2", None]
    assert '"found"' in req.instructions
    with pytest.raises(InvalidInputError, match="found"):
        planner.plan_request(W, probes, CANDIDATES, ProcessingSettings(), found[:2])


def test_probes_that_found_the_same_topic_are_never_split_across_items() -> None:
    """Topic Memory RFC, "Work Planner and direct Work Items": Probes that hit the same
    historical ArtifactRef must enter the same Work Item. A plan that splits them is
    refused (before this rule was checked such a plan was accepted)."""
    probes = (probe("alpha first", "s3"), probe("beta", "s2"), probe("gamma", "s1"))
    found = ("h2", "h2", None)
    handles = stages.history_handles(HEADS)
    split = json.dumps({"items": [
        {"operation": "update", "target": "h2", "probes": ["p1"]},
        {"operation": "create", "target": None, "probes": ["p2", "p3"]}]})
    with pytest.raises(TopicProcessingError) as err:
        planner.parse_plan(split, W, probes, handles, found)
    assert err.value.code == planner.CODE_PLAN_INVALID and "p1 and p2" in str(err.value)
    assert len(planner.parse_plan(split, W, probes, handles)) == 2  # no rule without found
    together = json.dumps({"items": [
        {"operation": "update", "target": "h2", "probes": ["p1", "p2"]},
        {"operation": "create", "target": None, "probes": ["p3"]}]})
    items = planner.parse_plan(together, W, probes, handles, found)
    assert [i.target for i in items] == [HEADS[1], None]


def test_plan_request_never_holds_source_text_or_history_detail() -> None:
    req = planner.plan_request(W, PROBES, CANDIDATES, ProcessingSettings())
    assert req is not None
    whole = req.system + req.instructions + req.input_json + req.schema_json
    for text in ("SOURCE-TEXT", "HISTORY-DETAIL"):
        assert text not in whole


def test_plan_request_handles_follow_candidate_order_and_a_null_snippet() -> None:
    req = planner.plan_request(W, PROBES, (candidate(HEADS[1], None), CANDIDATES[0]),
                               ProcessingSettings())
    assert req is not None
    history = json.loads(req.input_json)["history"]
    assert [(h["handle"], h["title"], h["snippet"]) for h in history] == [
        ("h1", "Beta", None), ("h2", "Alpha", "a snippet")]


def test_plan_request_is_none_when_it_does_not_fit() -> None:
    settings = ProcessingSettings(context_window_tokens=4_096, max_output_tokens=512)
    assert planner.plan_request(W, PROBES, CANDIDATES, settings) is not None
    many = tuple(probe(f"query {i} " + "word " * 90, "s1") for i in range(32))
    assert planner.plan_request(W, many, CANDIDATES, settings) is None


def test_plan_request_without_probes_is_bad_input() -> None:
    with pytest.raises(InvalidInputError) as info:
        planner.plan_request(W, (), CANDIDATES, ProcessingSettings())
    assert info.value.field == "probes"


# ---------------------------------------------------------------- parse_plan: accepted

def test_a_valid_plan_binds_update_items_to_the_exact_server_held_heads() -> None:
    items = planner.parse_plan(plan(("update", "h2", ["p2"]), ("create", None, ["p3", "p1"])),
                               W, PROBES, HANDLES)
    upd, cre = items
    assert upd.operation == "update" and upd.target is HANDLES["h2"]
    assert upd.target.ref == TopicRef("topic_art_bbb", 3)
    assert upd.probes == (PROBES[1],) and upd.evidence_ids == ("s2",)
    assert cre.operation == "create" and cre.target is None
    assert cre.probes == (PROBES[2], PROBES[0])          # the order the plan lists them
    assert cre.evidence_ids == ("s1", "s3")              # the union, in Window order
    assert cre.focus == ("gamma and alpha", "alpha first")


def test_one_item_may_hold_every_probe_and_a_source_may_feed_two_items() -> None:
    (only,) = planner.parse_plan(plan(("update", "h1", ["p1", "p2", "p3"])), W, PROBES, HANDLES)
    assert only.target is HANDLES["h1"] and only.evidence_ids == ("s1", "s2", "s3")
    a, b = planner.parse_plan(plan(("update", "h1", ["p1"]), ("create", None, ["p2"])),
                              W, PROBES[::2], HANDLES)
    assert "s1" in a.evidence_ids and "s1" in b.evidence_ids


# ---------------------------------------------------------------- parse_plan: refused

@pytest.mark.parametrize(("output", "why"), [
    (plan(("create", None, ["p1", "p2"])), "in no Work Item"),
    (plan(), "in no Work Item"),
    (plan(("create", None, ["p1", "p2"]), ("update", "h1", ["p3", "p1"])), "exactly one"),
    (plan(("create", None, ["p1", "p2", "p3", "p2"])), "twice"),
    (plan(("create", None, ["p1", "p2", "p3", "p4"])), "not a given Probe id"),
    (plan(("create", None, ["p1", "p2", "p3"]), ("create", None, [])), "no Probe"),
    (plan(("update", None, ["p1", "p2", "p3"])), "no target"),
    (plan(("update", "h3", ["p1", "p2", "p3"])), "not a given handle"),
    (plan(("update", "topic_art_aaa", ["p1", "p2", "p3"])), "not a given handle"),
    (plan(("create", "h1", ["p1", "p2", "p3"])), "CREATE with a target"),
    (plan(("update", "h1", ["p1"]), ("update", "h1", ["p2", "p3"])), "both target h1"),
])
def test_plans_breaking_a_work_item_rule_are_refused(output: str, why: str) -> None:
    assert why in str(refused(output))


def test_a_historical_reference_split_across_items_is_refused_wherever_it_sits() -> None:
    out = plan(("update", "h2", ["p1"]), ("create", None, ["p2"]), ("update", "h2", ["p3"]))
    assert "items[2] and items[0] both target h2" in str(refused(out))


def test_plan_with_no_history_refuses_every_update() -> None:
    refused(plan(("update", "h1", ["p1", "p2", "p3"])), handles={})


@pytest.mark.parametrize("output", [
    "not json",
    "",
    "[]",
    "{}",
    '{"items": {}}',
    '{"items": [], "items": []}',
    plan(("create", None, ["p1", "p2", "p3"]), extra=1),
    json.dumps({"items": [{"operation": "create", "target": None, "probes": ["p1", "p2", "p3"],
                           "artifact_id": "topic_art_aaa"}]}),
    json.dumps({"items": [{"operation": "create", "probes": ["p1", "p2", "p3"]}]}),
    '{"items": [{"operation": "create", "target": null, "probes": ["p1","p2","p3"],'
    ' "target": null}]}',
    plan(("merge", None, ["p1", "p2", "p3"])),
    plan(("noop", None, ["p1", "p2", "p3"])),
    json.dumps({"items": [{"operation": ["create"], "target": None,
                           "probes": ["p1", "p2", "p3"]}]}),
    json.dumps({"items": [{"operation": "update", "target": 1, "probes": ["p1", "p2", "p3"]}]}),
    json.dumps({"items": [{"operation": "create", "target": None, "probes": "p1"}]}),
    json.dumps({"items": [{"operation": "create", "target": None, "probes": [1, 2, 3]}]}),
    json.dumps({"items": ["p1"]}),
    '{"items": [{"operation": "create", "target": null, "probes": [NaN]}]}',
])
def test_malformed_plan_output_is_model_output_invalid(output: str) -> None:
    refused(output, code=stages.CODE_OUTPUT_INVALID)


def test_plan_errors_never_echo_the_output() -> None:
    secret = "sk-SECRET-PLAN-TEXT" * 5
    err = refused(plan(("create", None, ["p1", "p2", "p3", secret])))
    assert secret not in str(err)


# ---------------------------------------------------------------- work items

@pytest.mark.parametrize(("item", "field"), [
    (planner.WorkItem("update", None, PROBES[:1], ("s1",)), "item.target"),
    (planner.WorkItem("create", HEADS[0], PROBES[:1], ("s1",)), "item.target"),
    (planner.WorkItem("merge", None, PROBES[:1], ("s1",)), "item.operation"),  # type: ignore[arg-type]
])
def test_an_inconsistent_work_item_is_refused_not_guessed(item: planner.WorkItem,
                                                          field: str) -> None:
    for call in (lambda: planner.item_request(W, item, ProcessingSettings()),
                 lambda: planner.parse_item('{"topic": null}', W, item)):
        with pytest.raises(InvalidInputError) as info:
            call()
        assert info.value.field == field


def _item(spec: tuple[str, str | None, list[str]], probes: tuple[Probe, ...] = PROBES
          ) -> planner.WorkItem:
    rest = [pid for pid in planner.probe_handles(probes) if pid not in spec[2]]
    items = planner.parse_plan(plan(spec, *([("create", None, rest)] if rest else [])),
                               W, probes, HANDLES)
    return items[0]


def test_item_sources_are_the_cited_sources_whole_in_window_order() -> None:
    item = _item(("create", None, ["p3", "p2"]))
    assert [s.evidence_id for s in planner.item_sources(W, item)] == ["s1", "s2", "s3"]
    assert [s.text for s in planner.item_sources(W, item)] == [s.text for s in W.sources[:3]]


def test_item_request_loads_whole_sources_and_the_complete_target() -> None:
    item = _item(("update", "h1", ["p3"]))
    req = planner.item_request(W, item, ProcessingSettings())
    assert req is not None
    assert (req.stage, req.schema_name) == ("evolve", "topic_item")
    assert req.instructions == planner.ITEM_INSTRUCTIONS
    payload = json.loads(req.input_json)
    assert payload == {
        "focus": ["gamma and alpha"],
        "sources": [{"id": "s1", "text": W.sources[0].text},
                    {"id": "s3", "text": W.sources[2].text}],
        "target": {"title": "Alpha", "summary": "Alpha summary.",
                   "detail": "ALPHA-HISTORY-DETAIL"}}
    schema = json.loads(req.schema_json)
    assert schema == planner.item_schema(("s1", "s3"))
    evidence = schema["properties"]["topic"]["anyOf"][1]["properties"]["evidence_ids"]
    assert evidence["items"]["enum"] == ["s1", "s3"] and evidence["minItems"] == 1
    assert "BETA" not in req.input_json and "DELTA" not in req.input_json


def test_item_request_of_a_create_item_has_a_null_target() -> None:
    req = planner.item_request(W, _item(("create", None, ["p2"])), ProcessingSettings())
    assert req is not None and json.loads(req.input_json)["target"] is None


def test_item_request_is_none_when_sources_and_target_do_not_fit() -> None:
    settings = ProcessingSettings(context_window_tokens=4_096, max_output_tokens=512)
    big = window_of("x " * 6_000, "# small")
    p = Probe("big", ("s1",), big.refs(["s1"], "e"))
    (item,) = planner.parse_plan(plan(("create", None, ["p1"])), big, (p,), {})
    assert planner.item_request(big, item, settings) is None
    q = Probe("small", ("s2",), big.refs(["s2"], "e"))
    (small,) = planner.parse_plan(plan(("create", None, ["p1"])), big, (q,), {})
    assert planner.item_request(big, small, settings) is not None
    heavy = {"h1": revision("topic_art_aaa", "A", "S.", "d " * 6_000)}
    (upd,) = planner.parse_plan(plan(("update", "h1", ["p1"])), big, (q,), heavy)
    assert planner.item_request(big, upd, settings) is None


# ---------------------------------------------------------------- parse_item

def item_invalid(text: object, item: planner.WorkItem) -> TopicProcessingError:
    with pytest.raises(TopicProcessingError) as info:
        planner.parse_item(text, W, item)
    assert info.value.code == stages.CODE_OUTPUT_INVALID and info.value.stage == "evolve"
    return info.value


def test_an_update_item_topic_updates_exactly_its_target_head() -> None:
    item = _item(("update", "h2", ["p2"]))
    evo = planner.parse_item(json.dumps({"topic": topic("Beta", "New.", "More.", ("s2",))}),
                             W, item)
    (upd,) = evo.updates
    assert not evo.creates and evo.noops == 0
    assert upd.base == HANDLES["h2"].ref == TopicRef("topic_art_bbb", 3)
    assert upd.content == make_content("Beta", "New.", "More.")
    assert upd.sources == (W.sources[1].ref,)


def test_null_or_unchanged_content_of_an_update_item_is_a_noop() -> None:
    item = _item(("update", "h2", ["p2"]))
    same = topic(" Beta", "Beta summary. ", "BETA-HISTORY-DETAIL\n", ("s2",))
    for out in ({"topic": None}, {"topic": same}):
        evo = planner.parse_item(json.dumps(out), W, item)
        assert evo.empty and evo.noops == 1


def test_a_create_item_topic_is_a_create_and_null_a_noop() -> None:
    item = _item(("create", None, ["p3"]))
    evo = planner.parse_item(json.dumps({"topic": topic("Gamma", "G.", "g", ("s3", "s1"))}),
                             W, item)
    (cre,) = evo.creates
    assert not evo.updates and cre.sources == (W.sources[0].ref, W.sources[2].ref)
    assert planner.parse_item('{"topic": null}', W, item) == stages.Evolution((), (), 1)


@pytest.mark.parametrize("ids", [["s2"], ["s4"], ["s9"], ["x"], [], ["s3", "s3"], "s3", [3]])
def test_item_evidence_outside_the_item_is_refused(ids: Any) -> None:
    item = _item(("create", None, ["p3"]))   # cites s1 and s3 only
    item_invalid(json.dumps({"topic": topic(ids=ids)}), item)


@pytest.mark.parametrize("output", [
    "nope",
    "{}",
    "null",
    '{"topic": null, "extra": 1}',
    '{"topic": null, "topic": null}',
    json.dumps({"topic": topic(ids=("s1",), artifact_id="topic_art_aaa")}),
    json.dumps({"topic": topic(ids=("s1",), target="h1")}),
    json.dumps({"topic": {"title": "T", "summary": "S", "evidence_ids": ["s1"]}}),
    json.dumps({"topic": topic(title="   ")}),
    json.dumps({"topic": topic(detail="d" * 32_769)}),
    json.dumps({"topic": topic(summary=7)}),
    json.dumps({"topic": [topic()]}),
    json.dumps({"topic": topic(title="a\u0000b")}),
])
def test_malformed_item_output_is_model_output_invalid(output: str) -> None:
    for item in (_item(("create", None, ["p1"])), _item(("update", "h1", ["p1"]))):
        item_invalid(output, item)


def test_parse_item_never_names_the_output() -> None:
    secret = "sk-SECRET-ITEM-TEXT"
    err = item_invalid(json.dumps({"topic": topic(detail=secret * 2_000, ids=("s1",))}),
                       _item(("create", None, ["p1"])))
    assert secret not in str(err)
