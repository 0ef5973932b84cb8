"""The ``openai`` Topic generation provider (OpenAI Responses API through the SDK)
against a loopback server scripted per test (Topic Memory RFC, "Cumulative work and
evidence ceilings"): the request it sends, the raw-boundary checks (status
``completed`` only; ``incomplete`` / ``queued`` / ``in_progress`` refused), malformed
JSON, 429, 500, timeout, missing usage, and every refused setting reaching no server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from support.llm_servers import LLMServer, Reply, llm_server, responses_body

from powercontext.configuration import load_config
from powercontext.core.errors import (
    BackendError,
    InvalidInputError,
    TopicProcessingError,
    TopicProcessingUnavailableError,
)
from powercontext.core.topic.generation import StageUsage
from powercontext.plugins import Registry
from powercontext.ports.topic import TopicGenerationModel
from powercontext.topic_provider import topic_generation_model

from .topic_generation_helpers import REFUSED, REQUEST, SCHEMA, config_text

pytest.importorskip("openai")

from powercontext.adapters.topic_generation.openai_responses import (
    OpenAIResponsesTopicModel,
)

pytestmark = pytest.mark.server


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with llm_server() as srv:
        yield srv


def model(server: LLMServer, *, timeout: float = 5.0, **settings) -> OpenAIResponsesTopicModel:
    return OpenAIResponsesTopicModel(model="gpt-test", base_url=server.openai_base_url,
                                     api_key="test-key", timeout_seconds=timeout,
                                     settings=settings)


def generate(m, request=REQUEST):
    return asyncio.run(m.generate(request))


def test_a_completed_response_gives_its_output_text_and_usage(server):
    answer = '{"probes": [{"query": "vec0", "evidence_ids": ["s1", "s1"]}]}'
    server.script(Reply(responses_body(answer)))
    m = model(server, temperature=0.2, top_p=0.9, service_tier="flex")
    assert isinstance(m, TopicGenerationModel)
    response = generate(m)
    assert response.output_text == answer
    assert response.usage == StageUsage(input_tokens=11, output_tokens=7)
    assert response.requests == 1
    (sent,) = server.requests
    assert sent["path"] == "/v1/responses"
    body = sent["body"]
    assert body["model"] == "gpt-test"
    assert body["instructions"] == "You are the Probe stage.\n\nList Probes."
    assert body["input"] == [{"role": "user", "type": "message", "content": [
        {"type": "input_text", "text": REQUEST.input_json}]}]
    assert body["text"] == {"format": {"type": "json_schema", "name": "probe_output",
                                       "schema": SCHEMA, "strict": True}}
    assert body["max_output_tokens"] == 512
    assert body["store"] is False
    assert (body["temperature"], body["top_p"], body["service_tier"]) == (0.2, 0.9, "flex")
    for hidden in ("previous_response_id", "conversation", "background", "tools",
                   "tool_choice", "stream"):
        assert hidden not in body
    assert sent["headers"].get("authorization") == "Bearer test-key"


def test_duplicate_keys_in_the_output_text_survive_for_the_core_parser(server):
    answer = '{"probes": [], "probes": [{"query": "x", "evidence_ids": ["s1"]}]}'
    server.script(Reply(responses_body(answer)))
    assert generate(model(server)).output_text == answer


def test_missing_usage_is_none(server):
    server.script(Reply(responses_body('{"probes": []}', usage=None)))
    response = generate(model(server))
    assert response.usage is None and response.requests == 1


@pytest.mark.parametrize("status", ["incomplete", "queued", "in_progress"])
def test_an_incomplete_or_suspended_response_is_refused_at_the_raw_boundary(server, status):
    server.script(Reply(responses_body('{"probes": [', status=status,
                                       incomplete_reason="max_output_tokens")))
    with pytest.raises(TopicProcessingError) as info:
        generate(model(server))
    assert info.value.code == "model_response_incomplete"
    assert info.value.stage == "probe" and not info.value.terminal
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", ["failed", "cancelled", None])
def test_a_failed_status_is_a_backend_error(server, status):
    server.script(Reply(responses_body('{"probes": []}', status=status)))
    with pytest.raises(BackendError, match="not 'completed'"):
        generate(model(server))


def test_a_refusal_part_is_model_refused(server):
    server.script(Reply(responses_body(None, output=[{
        "type": "message", "id": "m", "status": "completed", "role": "assistant",
        "content": [{"type": "refusal", "refusal": "no"}]}])))
    with pytest.raises(TopicProcessingError) as info:
        generate(model(server))
    assert info.value.code == "model_refused"


@pytest.mark.parametrize("output", [
    [], [{"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"}],
    [{"type": "message", "content": [{"type": "output_text", "text": "  "}]}],
])
def test_no_structured_output_is_a_backend_error(server, output):
    server.script(Reply(responses_body(None, output=output)))
    with pytest.raises(BackendError):
        generate(model(server))


@pytest.mark.parametrize("reply", [
    Reply(b'{"id": "resp_1", "status": "completed", "output": [', status=200),
    Reply(b"not json at all", status=200),
    Reply(b"[1, 2]", status=200),
])
def test_a_malformed_body_is_a_backend_error_after_one_request(server, reply):
    server.script(reply)
    with pytest.raises(BackendError, match="malformed"):
        generate(model(server))
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [429, 500, 503])
def test_an_http_error_is_one_request_and_a_backend_error(server, status):
    server.script(Reply({"error": {"message": "slow down", "type": "x"}}, status=status,
                        headers={"Retry-After": "0"}))
    with pytest.raises(BackendError, match=f"HTTP {status}"):
        generate(model(server))
    assert len(server.requests) == 1  # max_retries=0: the SDK never retried


def test_a_timeout_is_a_backend_error_after_one_request(server):
    server.script(Reply(responses_body(), hold=True))
    with pytest.raises(BackendError, match="no answer within"):
        generate(model(server, timeout=1))
    assert len(server.requests) == 1


@pytest.mark.parametrize(("key", "value"), REFUSED)
def test_each_refused_setting_reaches_no_server(server, tmp_path, key, value):
    with pytest.raises(TopicProcessingUnavailableError) as info:
        model(server, **{key: value})
    assert any(p.startswith(f"{key}:") for p in info.value.problems)
    path = tmp_path / "config.toml"
    path.write_text(config_text("openai", server.openai_base_url, {key: value}))
    config = load_config(path, env={"POWERCONTEXT_HOME": str(tmp_path)})
    with pytest.raises(TopicProcessingUnavailableError) as info:
        topic_generation_model(config, Registry(entry_points=False), env={})
    assert any(p.startswith(f"inference.generation_settings.{key}:")
               for p in info.value.problems)
    assert server.requests == []


@pytest.mark.parametrize("key", ["seed", "max_output_tokens", "timeout_seconds"])
def test_settings_the_responses_call_cannot_carry_are_refused_before_io(server, key):
    with pytest.raises((TopicProcessingUnavailableError, InvalidInputError)):
        model(server, **{key: 1})
    assert server.requests == []


def test_the_configured_provider_talks_to_the_compatible_endpoint(server, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(config_text("openai", server.openai_base_url, {"temperature": 0}))
    config = load_config(path, env={"POWERCONTEXT_HOME": str(tmp_path)})
    m = topic_generation_model(config, Registry(entry_points=False), env={})
    assert (m.name, m.model, m.max_requests, m.context_window_tokens) == (
        "openai", "test-model", 1, 125_000)
    server.script(Reply(responses_body('{"probes": []}')))
    assert generate(m).output_text == '{"probes": []}'
    assert server.requests[0]["body"]["temperature"] == 0


def test_a_request_over_the_context_window_is_refused_before_io(server):
    import attrs

    with pytest.raises(InvalidInputError, match="does not fit"):
        generate(model(server), attrs.evolve(REQUEST, estimated_tokens=125_001))
    assert server.requests == []
    assert json.loads(REQUEST.schema_json) == SCHEMA
