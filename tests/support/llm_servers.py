"""Loopback OpenAI- and Anthropic-compatible test servers (TOPIC-MEMORY.md,
"Providers": "Tests of the SDK paths run against small OpenAI- and
Anthropic-compatible servers on 127.0.0.1").

One :class:`LLMServer` (a ThreadingHTTPServer on ``127.0.0.1:0``) answers every POST
with the next scripted :class:`Reply` of its queue and records each request (path,
parsed JSON body, headers): ``len(server.requests)`` is the number of requests that
reached it. An unscripted request is answered HTTP 599 so a test never passes on a
reply it did not write. ``Reply(hold=True)`` keeps the answer until the test calls
:meth:`LLMServer.release` (a client timeout is seen without any clock in the test).

Body builders: :func:`responses_body` (the Responses API object) and
:func:`messages_body` (an Anthropic Message), each with ``usage`` that a test may drop.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

__all__ = ["LLMServer", "Reply", "llm_server", "messages_body", "responses_body",
           "tool_use_block"]


@attrs.frozen
class Reply:
    """One scripted answer: HTTP ``status``, ``body`` (bytes/str sent as is, anything
    else as JSON), extra ``headers``, ``hold`` until released."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = attrs.field(factory=dict)
    hold: bool = False

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body).encode("utf-8")


class LLMServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self._released = threading.Event()
        self._lock = threading.Lock()

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>`` (Anthropic's base URL)."""
        return f"http://127.0.0.1:{self.server_port}"

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (the OpenAI SDK's base URL)."""
        return self.root + "/v1"

    def script(self, *replies: Reply) -> None:
        """Queue ``replies``, answered in order."""
        self.replies.extend(replies)

    def release(self) -> None:
        """Let held replies go."""
        self._released.set()

    def next_reply(self, record: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(record)
            if self.replies:
                return self.replies.popleft()
        return Reply({"error": {"message": "unscripted request"}}, status=599)


class _Handler(BaseHTTPRequestHandler):
    server: LLMServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        reply = self.server.next_reply({"path": self.path, "body": body,
                                        "headers": {k.lower(): v for k, v in self.headers.items()}})
        if reply.hold:
            self.server._released.wait(60)
        data = reply.payload()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


@contextmanager
def llm_server() -> Iterator[LLMServer]:
    """A running :class:`LLMServer`, shut down (held replies released) at exit."""
    server = LLMServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release()
        server.shutdown()
        server.server_close()
        thread.join(5)


_USAGE_OPENAI = {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}
_USAGE_ANTHROPIC = {"input_tokens": 11, "output_tokens": 7}


def responses_body(text: str | None = '{"probes": []}', *, status: str = "completed",
                   usage: dict[str, Any] | None = _USAGE_OPENAI,
                   output: list[dict[str, Any]] | None = None,
                   incomplete_reason: str | None = None) -> dict[str, Any]:
    """A Responses API object whose one message carries ``text`` as output_text."""
    if output is None:
        output = [] if text is None else [{
            "type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    body: dict[str, Any] = {
        "id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-test",
        "status": status, "output": output, "error": None,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "instructions": None, "metadata": {}, "parallel_tool_calls": False,
        "temperature": 1.0, "tool_choice": "none", "tools": [], "top_p": 1.0,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def tool_use_block(name: str, tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": tool_input}


def messages_body(content: list[dict[str, Any]], *, stop_reason: str | None = "tool_use",
                  usage: dict[str, Any] | None = _USAGE_ANTHROPIC) -> dict[str, Any]:
    """An Anthropic Message with ``content`` blocks and ``stop_reason``."""
    body: dict[str, Any] = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop_reason, "stop_sequence": None,
    }
    if usage is not None:
        body["usage"] = usage
    return body
