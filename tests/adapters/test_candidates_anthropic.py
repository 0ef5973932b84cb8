"""The optional model extractor over the Anthropic Messages API, against a real HTTP
server on 127.0.0.1 started by the test (issue 5 item 2): the answer (the input of a
forced tool call) is validated like any candidate, a malformed answer loses no
evidence (the Sources stay stored), a server error is reported after one request."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support.extract import extract_with

from powercontext.adapters.candidates.providers import ModelProvider
from powercontext.core import canonical
from powercontext.core.errors import BackendError, CapabilityNotSupportedError
from powercontext.ports.extraction import GenerationModel

pytest.importorskip("anthropic")

from powercontext.adapters.candidates.anthropic_model import (
    ANSWER_TOOL,
    AnthropicGenerationModel,
)

NOTE = canonical.make_source("src_user_note_1", "user_note",
                             "From now on we keep vectors in vec0, not in a side table.")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.content: list[dict[str, Any]] = []
        self.status = 200
        #: hold=True: the handler keeps its answer until ``release`` is set (no clock:
        #: a test tells a client that gave up from one that waited by ``answered``).
        self.hold = False
        self.release = threading.Event()
        self.answered = 0


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "body": body,
                                     "headers": dict(self.headers.items())})
        if self.server.hold:
            self.server.release.wait(60)
        if self.server.status != 200:
            data = json.dumps({"type": "error", "error": {"type": "api_error",
                                                          "message": "boom"}}).encode()
        else:
            tool = any(b.get("type") == "tool_use" for b in self.server.content)
            data = json.dumps({
                "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": self.server.content,
                "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }).encode()
        try:
            self.send_response(self.server.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.server.answered += 1


def tool_answer(answer: object) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": "toolu_1", "name": ANSWER_TOOL["name"], "input": answer}]


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()
        thread.join(5)


def model(server: _Server, timeout: float = 5.0) -> AnthropicGenerationModel:
    return AnthropicGenerationModel("claude-test-1",
                                    base_url=f"http://127.0.0.1:{server.server_port}",
                                    api_key="test", timeout=timeout)


def run_extract(tmp_path, provider: ModelProvider, sources=(NOTE,)):
    return extract_with(tmp_path / "m.db", provider, sources)


@pytest.mark.server
def test_a_tool_call_answer_becomes_validated_entries(server, tmp_path):
    server.content = tool_answer({"entries": [
        {"kind": "decision", "text": "Vectors are stored in sqlite-vec's vec0, not in a side "
                                     "table.", "evidence": ["src_user_note_1"], "revises": None},
        {"kind": "fact", "text": "A made-up citation.", "evidence": ["src_invented"]},
        {"kind": "fact", "text": "token ghp_" + "a1B2" * 9, "evidence": ["src_user_note_1"]},
    ]})
    m = model(server)
    assert isinstance(m, GenerationModel)
    head, entries, stored, result = run_extract(tmp_path, ModelProvider(m))
    assert head is not None and head.revision == 1
    (v,) = entries.values()
    assert (v.kind, v.text) == ("decision",
                                "Vectors are stored in sqlite-vec's vec0, not in a side table.")
    assert [s.source_id for s in v.sources] == ["src_user_note_1"]
    assert [r.reason for r in result.refused] == [
        "evidence must name at least one Source of this operation",
        "contains a secret (GitHub token)"]
    (req,) = server.requests
    assert req["path"] == "/v1/messages"
    # SDK 2.x sends the key as a bearer token; 0.x sent it as x-api-key
    assert (req["headers"].get("Authorization") == "Bearer test"
            or req["headers"].get("x-api-key") == "test")
    assert req["headers"].get("anthropic-version")
    body = req["body"]
    assert body["model"] == "claude-test-1" and "temperature" not in body
    assert body["max_tokens"] == 4096
    assert body["tool_choice"] == {"type": "tool", "name": "record_memory_entries"}
    assert [t["name"] for t in body["tools"]] == ["record_memory_entries"]
    assert body["tools"][0]["input_schema"]["required"] == ["entries"]
    assert body["system"].startswith("You extract durable memory entries")
    (msg,) = body["messages"]
    assert msg["role"] == "user" and "src_user_note_1" in msg["content"]
    assert stored == (NOTE,)


@pytest.mark.server
def test_a_json_text_answer_is_accepted_too(server, tmp_path):
    server.content = [{"type": "text", "text": "```json\n" + json.dumps({"entries": [
        {"kind": "constraint", "text": "Vectors live in vec0 only.",
         "evidence": ["src_user_note_1"]}]}) + "\n```"}]
    _, entries, _, result = run_extract(tmp_path, ModelProvider(model(server)))
    assert [(v.kind, v.text) for v in entries.values()] == [
        ("constraint", "Vectors live in vec0 only.")]
    assert result.refused == ()


@pytest.mark.server
def test_a_malformed_answer_gives_no_candidates_and_keeps_the_sources(server, tmp_path):
    server.content = [{"type": "text", "text": "I think you should remember: vec0!"}]
    head, entries, stored, result = run_extract(tmp_path, ModelProvider(model(server)))
    assert head is None and entries == {}
    assert stored == (NOTE,)
    assert result.candidates == () and result.notes[0].startswith(
        "model: model answer is not JSON")

    server.content = tool_answer({"memories": ["vec0"]})
    (tmp_path / "2").mkdir()  # a database only in a directory that exists
    head, entries, stored, result = run_extract(tmp_path / "2", ModelProvider(model(server)))
    assert head is None and entries == {} and stored == (NOTE,)
    assert result.candidates == ()
    assert result.notes == ("model: model answer has no 'entries' list",)


@pytest.mark.server
def test_a_server_error_or_timeout_is_a_note_not_a_crash(server, tmp_path):
    server.status = 500
    head, _, stored, result = run_extract(tmp_path, ModelProvider(model(server)))
    assert head is None and stored == (NOTE,)
    assert result.notes[0].startswith(
        "provider model failed: extraction model 'claude-test-1' failed")
    assert len(server.requests) == 1  # max_retries=0

    server.status = 500
    with pytest.raises(BackendError, match="failed"):
        asyncio.run(model(server).generate("s", "p"))
    assert len(server.requests) == 2

    server.status, server.hold = 200, True  # the server keeps its answer until released
    server.content = tool_answer({"entries": []})
    with pytest.raises(BackendError, match="failed"):
        asyncio.run(model(server, timeout=0.3).generate("s", "p"))
    # the client gave up on its own timeout: the held answer was never sent
    assert (len(server.requests), server.answered) == (3, 2)  # and no retry after it


@pytest.mark.server
def test_an_answer_without_tool_call_or_text_is_a_backend_error(server):
    server.content = []
    with pytest.raises(BackendError, match="returned no answer"):
        asyncio.run(model(server).generate("s", "p"))


@pytest.mark.server
def test_no_credentials_is_a_backend_error_without_a_request(server, monkeypatch, tmp_path):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE",
                "ANTHROPIC_IDENTITY_TOKEN", "ANTHROPIC_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))
    m = AnthropicGenerationModel("claude-test-1",
                                 base_url=f"http://127.0.0.1:{server.server_port}")
    with pytest.raises(BackendError, match=r"extraction model 'claude-test-1' (is not "
                                           r"configured|has no Anthropic credentials)"):
        asyncio.run(m.generate("s", "p"))
    assert server.requests == []


def test_bad_arguments_are_refused():
    from powercontext.core.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        AnthropicGenerationModel("")
    with pytest.raises(InvalidInputError):
        AnthropicGenerationModel("m", timeout=0)
    with pytest.raises(InvalidInputError):
        AnthropicGenerationModel("m", max_tokens=0)


def test_the_provider_is_chosen_by_environment(monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_MODEL", "claude-test-1")
    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_API_KEY", "k")
    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_PROVIDER", "anthropic")
    provider = ModelProvider(timeout=7)
    assert isinstance(provider.model, AnthropicGenerationModel)
    assert (provider.model.model, provider.model.base_url, provider.model.api_key,
            provider.model.timeout) == ("claude-test-1", "http://127.0.0.1:9", "k", 7.0)

    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_PROVIDER", "gemini")
    with pytest.raises(CapabilityNotSupportedError, match="unknown extraction model provider"):
        ModelProvider()
    assert isinstance(ModelProvider(provider="anthropic").model, AnthropicGenerationModel)

    monkeypatch.delenv("POWERCONTEXT_EXTRACTOR_PROVIDER")
    assert type(ModelProvider().model).__name__ == "OpenAIGenerationModel"


def test_without_the_sdk_the_model_provider_is_unavailable(monkeypatch):
    import sys

    from powercontext.adapters.candidates import pipeline_from_registry
    from powercontext.plugins.registry import Registry

    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(CapabilityNotSupportedError, match="anthropic SDK is not installed"):
        AnthropicGenerationModel("claude-test-1")
    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_MODEL", "claude-test-1")
    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_PROVIDER", "anthropic")
    pipeline = pipeline_from_registry(Registry(entry_points=False))
    assert "model" not in pipeline.providers
    assert pipeline.unavailable["model"].startswith("not configured: the anthropic SDK")
