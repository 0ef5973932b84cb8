"""The optional model extractor against a real OpenAI-compatible HTTP server on
127.0.0.1 started by the test (issue 5 item 2): its answer is validated like any
candidate, and a malformed answer loses no evidence (the Sources stay stored)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support.extract import extract_with

from powercontext.adapters.candidates.openai_model import OpenAIGenerationModel
from powercontext.adapters.candidates.providers import ModelProvider
from powercontext.core import canonical
from powercontext.core.errors import BackendError, CapabilityNotSupportedError
from powercontext.ports.extraction import GenerationModel

pytest.importorskip("openai")

NOTE = canonical.make_source("src_user_note_1", "user_note",
                             "From now on we keep vectors in vec0, not in a side table.")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []
        self.answer: str = "{}"
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
        self.server.requests.append({"path": self.path, "body": body})
        if self.server.hold:
            self.server.release.wait(60)
        if self.server.status != 200:
            data = json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
        else:
            data = json.dumps({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": self.server.answer}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
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


def model(server: _Server, timeout: float = 5.0) -> OpenAIGenerationModel:
    return OpenAIGenerationModel("extractor-1", base_url=f"http://127.0.0.1:{server.server_port}/v1",
                                 api_key="test", timeout=timeout)


def run_extract(tmp_path, provider: ModelProvider, sources=(NOTE,)):
    return extract_with(tmp_path / "m.db", provider, sources)


@pytest.mark.server
def test_a_valid_json_answer_becomes_validated_entries(server, tmp_path):
    server.answer = json.dumps({"entries": [
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
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["response_format"] == {"type": "json_object"}
    assert req["body"]["model"] == "extractor-1"
    assert "src_user_note_1" in req["body"]["messages"][1]["content"]
    assert stored == (NOTE,)


@pytest.mark.server
def test_a_malformed_answer_gives_no_candidates_and_keeps_the_sources(server, tmp_path):
    server.answer = "I think you should remember: vec0!"
    head, entries, stored, result = run_extract(tmp_path, ModelProvider(model(server)))
    assert head is None and entries == {}
    assert stored == (NOTE,)
    assert result.candidates == () and result.notes[0].startswith("model: model answer is not JSON")


@pytest.mark.server
def test_a_server_error_or_timeout_is_a_note_not_a_crash(server, tmp_path):
    server.status = 500
    head, _, stored, result = run_extract(tmp_path, ModelProvider(model(server)))
    assert head is None and stored == (NOTE,)
    assert result.notes[0].startswith(
        "provider model failed: extraction model 'extractor-1' failed")
    assert len(server.requests) == 1  # max_retries=0

    server.status, server.hold = 200, True  # the server keeps its answer until released
    with pytest.raises(BackendError, match="failed"):
        asyncio.run(model(server, timeout=0.3).generate("s", "p"))
    # the client gave up on its own timeout: the held answer was never sent, no retry
    assert (len(server.requests), server.answered) == (2, 1)


def test_the_model_provider_is_unavailable_until_configured(monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_EXTRACTOR_MODEL", raising=False)
    with pytest.raises(CapabilityNotSupportedError, match="no extraction model is configured"):
        ModelProvider()
    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_MODEL", "m")
    monkeypatch.setenv("POWERCONTEXT_EXTRACTOR_BASE_URL", "http://127.0.0.1:9/v1")
    provider = ModelProvider()
    assert isinstance(provider.model, OpenAIGenerationModel)
    assert provider.model.base_url == "http://127.0.0.1:9/v1"
