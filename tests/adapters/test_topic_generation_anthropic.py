"""The ``anthropic`` Topic generation provider (Messages API through the SDK, one
forced user-defined tool) against a loopback server scripted per test (Topic Memory
RFC, "Cumulative work and evidence ceilings"): the request, the tool input cut from the
raw body with duplicate keys kept, ``pause_turn`` / ``max_tokens`` / ``refusal`` refused
at the raw boundary, malformed JSON, 429, 500, timeout, missing usage, and every refused
setting reaching no server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from support.llm_servers import LLMServer, Reply, llm_server, messages_body, tool_use_block

from powercontext.configuration import load_config
from powercontext.core.errors import (
    BackendError,
    TopicProcessingError,
    TopicProcessingUnavailableError,
)
from powercontext.core.topic.generation import StageUsage
from powercontext.plugins import Registry
from powercontext.ports.topic import TopicGenerationModel
from powercontext.topic_provider import topic_generation_model

from .topic_generation_helpers import REFUSED, REQUEST, SCHEMA, config_text

pytest.importorskip("anthropic")

from powercontext.adapters.topic_generation.anthropic_messages import (
    AnthropicMessagesTopicModel,
    tool_name,
)

pytestmark = pytest.mark.server

TOOL = tool_name(REQUEST.schema_name)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with llm_server() as srv:
        yield srv


def model(server: LLMServer, *, timeout: float = 5.0, **settings) -> AnthropicMessagesTopicModel:
    return AnthropicMessagesTopicModel(model="claude-test", base_url=server.root,
                                       api_key="test-key", timeout_seconds=timeout,
                                       settings=settings)


def generate(m, request=REQUEST):
    return asyncio.run(m.generate(request))


def answer(tool_input, **kw) -> Reply:
    return Reply(messages_body([tool_use_block(TOOL, tool_input)], **kw))


def test_the_forced_tool_input_is_the_output_text(server):
    probes = {"probes": [{"query": "vec0 vectors", "evidence_ids": ["s1"]}]}
    server.script(answer(probes))
    m = model(server, service_tier="standard_only")
    assert isinstance(m, TopicGenerationModel)
    response = generate(m)
    assert json.loads(response.output_text) == probes
    assert response.usage == StageUsage(input_tokens=11, output_tokens=7)
    assert response.requests == 1
    (sent,) = server.requests
    assert sent["path"] == "/v1/messages"
    body = sent["body"]
    assert body["model"] == "claude-test"
    assert body["system"] == "You are the Probe stage.\n\nList Probes."
    assert body["messages"] == [{"role": "user", "content": REQUEST.input_json}]
    assert body["tools"] == [{"name": TOOL, "input_schema": SCHEMA,
                              "description": body["tools"][0]["description"]}]
    assert body["tool_choice"] == {"type": "tool", "name": TOOL}
    assert body["max_tokens"] == 512 and body["service_tier"] == "standard_only"
    for hidden in ("stream", "temperature", "top_p", "thinking", "container"):
        assert hidden not in body
    # SDK 2.14 sends the key as a bearer token (anthropic-version 2026-10-21)
    assert "test-key" in (sent["headers"].get("x-api-key"),
                          sent["headers"].get("authorization", "").removeprefix("Bearer "))
    assert sent["headers"]["x-stainless-retry-count"] == "0"


def test_end_turn_with_the_tool_block_is_accepted(server):
    server.script(Reply(messages_body([{"type": "text", "text": "Here."},
                                       tool_use_block(TOOL, {"probes": []})],
                                      stop_reason="end_turn")))
    assert generate(model(server)).output_text == '{"probes":[]}'


def test_duplicate_keys_and_number_texts_of_the_tool_input_survive(server):
    raw = ('{"id":"msg_1","type":"message","role":"assistant","model":"c",'
           '"content":[{"type":"tool_use","id":"t","name":"' + TOOL + '","input":'
           '{"probes":[],"probes":[{"query":"q","evidence_ids":["s1"],"n":1.50}]}}],'
           '"stop_reason":"tool_use","stop_sequence":null,'
           '"usage":{"input_tokens":3,"output_tokens":4}}')
    server.script(Reply(raw))
    text = generate(model(server)).output_text
    assert text == '{"probes":[],"probes":[{"query":"q","evidence_ids":["s1"],"n":1.50}]}'
    with pytest.raises(ValueError):  # the core's duplicate-refusing parser still sees it
        json.loads(text, object_pairs_hook=_no_duplicates)


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def test_missing_usage_is_none(server):
    server.script(answer({"probes": []}, usage=None))
    response = generate(model(server))
    assert response.usage is None and response.requests == 1


@pytest.mark.parametrize("stop", ["pause_turn", "max_tokens"])
def test_a_suspended_or_cut_turn_is_refused_at_the_raw_boundary(server, stop):
    server.script(answer({"probes": []}, stop_reason=stop))
    with pytest.raises(TopicProcessingError) as info:
        generate(model(server))
    assert info.value.code == "model_response_incomplete" and info.value.stage == "probe"
    assert len(server.requests) == 1  # never continued in another request


def test_a_refusal_is_model_refused(server):
    server.script(Reply(messages_body([], stop_reason="refusal")))
    with pytest.raises(TopicProcessingError) as info:
        generate(model(server))
    assert info.value.code == "model_refused"


@pytest.mark.parametrize(("content", "stop"), [
    ([{"type": "text", "text": '{"probes": []}'}], "end_turn"),
    ([tool_use_block("other_tool", {"probes": []})], "tool_use"),
    ([tool_use_block(TOOL, {"probes": []})], "stop_sequence"),
    ([tool_use_block(TOOL, {"probes": []})], None),
])
def test_no_accepted_tool_answer_is_a_backend_error(server, content, stop):
    server.script(Reply(messages_body(content, stop_reason=stop)))
    with pytest.raises(BackendError):
        generate(model(server))


def test_two_tool_answers_or_a_non_object_input_are_invalid_output(server):
    server.script(Reply(messages_body([tool_use_block(TOOL, {"probes": []}),
                                       tool_use_block(TOOL, {"probes": []})])),
                  answer([1, 2]))
    for _ in range(2):
        with pytest.raises(TopicProcessingError) as info:
            generate(model(server))
        assert info.value.code == "model_output_invalid"


@pytest.mark.parametrize("raw", [
    b'{"type": "message", "content": [', b"<html>oops</html>", b'"message"',
    b'{"type": "message", "type": "message", "stop_reason": "tool_use", "content": []}',
    b'{"type": "error", "error": {"type": "x"}}',
])
def test_a_malformed_body_is_a_backend_error_after_one_request(server, raw):
    server.script(Reply(raw))
    with pytest.raises(BackendError):
        generate(model(server))
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [429, 500, 529])
def test_an_http_error_is_one_request_and_a_backend_error(server, status):
    server.script(Reply({"type": "error", "error": {"type": "rate_limit_error",
                                                    "message": "slow"}},
                        status=status, headers={"retry-after": "0"}))
    with pytest.raises(BackendError, match=f"HTTP {status}"):
        generate(model(server))
    assert len(server.requests) == 1  # max_retries=0


def test_a_timeout_is_a_backend_error_after_one_request(server):
    server.script(Reply(messages_body([tool_use_block(TOOL, {"probes": []})]), hold=True))
    with pytest.raises(BackendError, match="no answer within"):
        generate(model(server, timeout=1))
    assert len(server.requests) == 1


@pytest.mark.parametrize(("key", "value"), [
    *REFUSED, ("temperature", 0.5), ("top_p", 0.5), ("seed", 1), ("service_tier", "flex")])
def test_each_refused_setting_reaches_no_server(server, tmp_path, key, value):
    with pytest.raises(TopicProcessingUnavailableError) as info:
        model(server, **{key: value})
    assert any(p.startswith(f"{key}:") for p in info.value.problems)
    path = tmp_path / "config.toml"
    path.write_text(config_text("anthropic", server.root, {key: value}))
    config = load_config(path, env={"POWERCONTEXT_HOME": str(tmp_path)})
    with pytest.raises(TopicProcessingUnavailableError) as info:
        topic_generation_model(config, Registry(entry_points=False), env={})
    assert any(p.startswith(f"inference.generation_settings.{key}:")
               for p in info.value.problems)
    assert server.requests == []


def test_the_configured_provider_talks_to_the_compatible_endpoint(server, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(config_text("anthropic", server.root, {"service_tier": "auto"}))
    config = load_config(path, env={"POWERCONTEXT_HOME": str(tmp_path)})
    m = topic_generation_model(config, Registry(entry_points=False), env={})
    assert (m.name, m.model) == ("anthropic", "test-model")
    server.script(answer({"probes": []}))
    assert generate(m).output_text == '{"probes":[]}'
    assert server.requests[0]["body"]["service_tier"] == "auto"
