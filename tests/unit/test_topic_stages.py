"""core.topic.stages: the Probe and evolve stage requests, their strict schemas, and
every refusal of model output (Topic Memory RFC, "Evolution operations and model
output", "Topic evidence and Source lineage"; issue 13, "Bad input and faults")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.topic_windows import SCOPE, revision, schema_objects, window_of

from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic import stages
from powercontext.core.topic.content import MAX_DETAIL_CHARS, MAX_TITLE_CHARS, make_content
from powercontext.core.topic.models import TopicRef
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.window import Fragment, Window, estimate_tokens


def topic(title: str = "T", summary: str = "S", detail: str = "D",
          ids: Any = ("s1",), **extra: Any) -> dict[str, Any]:
    return {"title": title, "summary": summary, "detail": detail,
            "evidence_ids": list(ids) if isinstance(ids, tuple) else ids, **extra}


def invalid(fn: Any, *args: Any) -> TopicProcessingError:
    with pytest.raises(TopicProcessingError) as info:
        fn(*args)
    assert info.value.code == "model_output_invalid"
    assert not info.value.terminal
    return info.value


W = window_of("# Alpha\n\nAlpha is first.", "# Beta\n\nBeta is second.")
H = {"h1": revision("topic_art_aaa", "Alpha", "Old.", "Old detail.")}


# ---------------------------------------------------------------- schemas, requests

_objects = schema_objects


@pytest.mark.parametrize("schema", [stages.probe_schema(), stages.evolve_schema(("h1", "h2")),
                                    stages.evolve_schema(())])
def test_every_schema_object_is_strict_with_every_property_required(schema: Any) -> None:
    objects = _objects(schema)
    assert objects
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])


def test_topic_schema_carries_the_content_limits() -> None:
    topic_schema = stages.evolve_schema(())["properties"]["new"]["items"]["properties"]
    assert topic_schema["title"]["maxLength"] == MAX_TITLE_CHARS
    assert topic_schema["summary"]["maxLength"] == 2048
    assert topic_schema["detail"]["maxLength"] == MAX_DETAIL_CHARS


def test_probe_request_lists_the_eligible_sources_by_evidence_id() -> None:
    req = stages.probe_request(W.sources, ProcessingSettings())
    assert req is not None and req.stage == "probe"
    payload = json.loads(req.input_json)
    assert [s["id"] for s in payload["sources"]] == ["s1", "s2"]
    assert json.loads(req.schema_json) == stages.probe_schema()
    assert req.estimated_tokens == stages.request_tokens(
        req.system, req.instructions, req.input_json, req.schema_json, req.max_output_tokens)
    assert req.estimated_tokens <= ProcessingSettings().context_window_tokens


def test_probe_request_of_a_fragment_carries_its_offsets() -> None:
    frag = Fragment("s1", 10, 20, "0123456789")
    req = stages.probe_request([frag], ProcessingSettings())
    assert req is not None
    assert json.loads(req.input_json)["sources"] == [
        {"id": "s1", "start": 10, "end": 20, "text": "0123456789"}]


def test_a_fragment_within_the_fragment_budget_fits_a_probe_request() -> None:
    settings = ProcessingSettings(context_window_tokens=4_096, max_output_tokens=512)
    budget = stages.probe_fragment_budget(settings)
    text = "x" * ((budget - 8) * 3)  # estimate_tokens(text) == budget
    assert estimate_tokens(text) == budget
    assert stages.probe_request([Fragment("s1", 0, len(text), text)], settings) is not None
    text += "x" * 3 * 24  # the budget's margin (offsets, framing) is under 24 tokens
    assert stages.probe_request([Fragment("s1", 0, len(text), text)], settings) is None


def test_evolve_request_gives_handles_in_order_and_one_schema_slot_each() -> None:
    history = [revision("topic_art_aaa", "Alpha"), revision("topic_art_bbb", "Beta")]
    req = stages.evolve_request(W, history, ProcessingSettings())
    assert req is not None and req.stage == "evolve"
    payload = json.loads(req.input_json)
    assert [h["handle"] for h in payload["history"]] == ["h1", "h2"]
    assert set(payload["history"][0]) == {"handle", "title", "summary", "detail"}
    schema = json.loads(req.schema_json)
    assert schema["properties"]["history"]["required"] == ["h1", "h2"]


def test_evolve_request_is_none_when_window_and_history_do_not_fit() -> None:
    settings = ProcessingSettings(context_window_tokens=4_096, max_output_tokens=512)
    big = [revision(f"topic_art_{i:03d}", f"T{i}", "S.", "d " * 2_000) for i in range(3)]
    assert stages.evolve_request(W, big[:0], settings) is not None
    assert stages.evolve_request(W, big, settings) is None


def test_evolve_request_is_none_for_an_oversized_window() -> None:
    oversized = Window(SCOPE, 0, 1, W.sources[:1], oversized=True)
    assert stages.evolve_request(oversized, [], ProcessingSettings()) is None


# ---------------------------------------------------------------- probes

def test_parse_probes_maps_evidence_ids_to_exact_source_refs() -> None:
    out = json.dumps({"probes": [{"query": " alpha first ", "evidence_ids": ["s2", "s1"]}]})
    (probe,) = stages.parse_probes(out, W)
    assert probe.query == "alpha first"
    assert probe.sources == tuple(sorted((W.sources[0].ref, W.sources[1].ref),
                                         key=lambda r: r.source_id))


def test_parse_probes_allows_none() -> None:
    assert stages.parse_probes('{"probes": []}', W) == ()


@pytest.mark.parametrize("output", [
    "not json",
    "",
    '{"probes": [], "extra": 1}',
    "{}",
    '{"probes": {}}',
    '{"probes": [], "probes": []}',
    '{"probes": [{"query": "a"}]}',
    '{"probes": [{"query": "a", "evidence_ids": ["s1"], "artifact_id": "x"}]}',
    '{"probes": [{"query": "a", "evidence_ids": []}]}',
    '{"probes": [{"query": "a", "evidence_ids": ["s9"]}]}',
    '{"probes": [{"query": "a", "evidence_ids": ["s1", "s1"]}]}',
    '{"probes": [{"query": "a", "evidence_ids": [1]}]}',
    '{"probes": [{"query": "   ", "evidence_ids": ["s1"]}]}',
    '{"probes": [{"query": 5, "evidence_ids": ["s1"]}]}',
    json.dumps({"probes": [{"query": "q" * 513, "evidence_ids": ["s1"]}]}),
    json.dumps({"probes": [{"query": "q", "evidence_ids": ["s1"]}] * 33}),
    '{"probes": [{"query": NaN, "evidence_ids": ["s1"]}]}',
    '[]',
])
def test_parse_probes_refuses_bad_output(output: str) -> None:
    err = invalid(stages.parse_probes, output, W)
    assert err.stage == "probe"


def test_parse_probes_of_a_fragment_refuses_another_sources_id() -> None:
    out = '{"probes": [{"query": "a", "evidence_ids": ["s2"]}]}'
    invalid(stages.parse_probes, out, W, ["s1"])
    assert stages.parse_probes(out, W, ["s2"])[0].evidence_ids == ("s2",)


def test_parse_errors_never_echo_the_output() -> None:
    secret = "sk-SECRET-SOURCE-TEXT"
    err = invalid(stages.parse_probes, f'{{"probes": [{{"query": "{secret}", "x": 1}}]}}', W)
    assert secret not in str(err)


# ---------------------------------------------------------------- evolution

def test_parse_evolution_binds_slots_to_targets_and_new_to_creates() -> None:
    out = json.dumps({"history": {"h1": topic("Alpha", "New.", "Alpha is first.", ("s1",))},
                      "new": [topic("Beta", "B.", "Beta is second.", ("s2",))]})
    evo = stages.parse_evolution(out, W, H)
    (upd,) = evo.updates
    assert upd.base == TopicRef("topic_art_aaa", 3)
    assert upd.sources == (W.sources[0].ref,)
    (cre,) = evo.creates
    assert cre.content == make_content("Beta", "B.", "Beta is second.")
    assert cre.sources == (W.sources[1].ref,)
    assert evo.noops == 0


def test_null_and_unchanged_content_are_noops() -> None:
    unchanged = topic(" Alpha ", "Old.", "Old detail.", ("s1",))  # equal after trimming
    two = {"h1": revision("topic_art_aaa", "Alpha", "Old.", "Old detail."),
           "h2": revision("topic_art_bbb", "Gamma")}
    evo = stages.parse_evolution(json.dumps({"history": {"h1": unchanged, "h2": None},
                                             "new": []}), W, two)
    assert evo.empty and evo.noops == 2


BAD_EVOLUTIONS = {
    "extra field artifact_id": {"history": {"h1": None},
                                "new": [topic(artifact_id="topic_art_zzz")]},
    "extra field op": {"history": {"h1": topic(op="update")}, "new": []},
    "extra field revision": {"history": {"h1": topic(revision=4)}, "new": []},
    "extra top-level field": {"history": {"h1": None}, "new": [], "noop": True},
    "missing field": {"history": {"h1": None},
                      "new": [{"title": "T", "summary": "S", "evidence_ids": ["s1"]}]},
    "missing new": {"history": {"h1": None}},
    "unknown handle": {"history": {"h1": None, "h2": topic()}, "new": []},
    "missing handle": {"history": {}, "new": []},
    "empty evidence ids": {"history": {"h1": None}, "new": [topic(ids=())]},
    "unknown evidence id": {"history": {"h1": None}, "new": [topic(ids=("s3",))]},
    "out-of-Window evidence id": {"history": {"h1": None}, "new": [topic(ids=("s0",))]},
    "duplicated evidence id": {"history": {"h1": None}, "new": [topic(ids=("s2", "s2"))]},
    "evidence ids not a list": {"history": {"h1": None}, "new": [topic(ids="s1")]},
    "empty title": {"history": {"h1": None}, "new": [topic(title="  ")]},
    "oversized title": {"history": {"h1": None}, "new": [topic(title="t" * 257)]},
    "oversized detail": {"history": {"h1": topic(detail="d" * (MAX_DETAIL_CHARS + 1))},
                         "new": []},
    "non-string summary": {"history": {"h1": None}, "new": [topic(summary=3)]},
    "history a list": {"history": [None], "new": []},
    "too many new": {"history": {"h1": None}, "new": [topic()] * 33},
}


@pytest.mark.parametrize("case", sorted(BAD_EVOLUTIONS))
def test_parse_evolution_refuses_bad_output(case: str) -> None:
    err = invalid(stages.parse_evolution, json.dumps(BAD_EVOLUTIONS[case]), W, H)
    assert err.stage == "evolve"


def test_two_outputs_bound_to_one_target_are_refused() -> None:
    one = json.dumps(topic("Alpha", "A.", "x", ("s1",)))
    two = json.dumps(topic("Alpha", "B.", "y", ("s2",)))
    text = f'{{"history": {{"h1": {one}, "h1": {two}}}, "new": []}}'
    err = invalid(stages.parse_evolution, text, W, H)
    assert "duplicate" in str(err)


def test_a_duplicate_key_inside_a_topic_is_refused() -> None:
    text = ('{"history": {"h1": null}, "new": [{"title": "a", "title": "b", "summary": "s", '
            '"detail": "d", "evidence_ids": ["s1"]}]}')
    invalid(stages.parse_evolution, text, W, H)


def test_history_handles_refuse_one_topic_twice() -> None:
    from powercontext.core.errors import InvalidInputError
    rev = revision("topic_art_aaa", "Alpha")
    with pytest.raises(InvalidInputError):
        stages.history_handles([rev, rev])
