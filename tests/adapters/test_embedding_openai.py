"""OpenAIEmbedding against a real HTTP server on 127.0.0.1 started by the test (issue 4
item 2). The server's behaviour is chosen by the request's ``model``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from powercontext.adapters.embedding import OpenAIEmbedding
from powercontext.core.errors import BackendError, InvalidInputError
from powercontext.core.models import EmbeddingProfile
from powercontext.ports import EmbeddingModel

pytestmark = [
    pytest.mark.skipif(
    not OpenAIEmbedding.available(), reason="the openai SDK is not installed (extra 'openai')"
),
    pytest.mark.server,
]

DIM = 4
BASIS = ((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0))


def _vectors(model: str, n: int) -> list[list[float]]:
    rows = [list(BASIS[i % DIM]) for i in range(n)]
    if model == "wrong-dim":
        rows = [r[:3] for r in rows]
    elif model == "nan":
        rows[-1][0] = math.nan  # json.dumps writes NaN; Python's json.loads reads it
    elif model == "inf":
        rows[0][1] = 1e999  # parses as float('inf')
    elif model == "not-unit":
        rows[0] = [0.5, 0.5, 0.0, 0.0]
    elif model == "empty":
        rows[0] = []
    return rows


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []
        self.release = threading.Event()
        self.slow_answered = 0  # answers of model "slow" sent (each after ``release``)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, **body})
        model, texts = body["model"], body["input"]
        if self.path != "/v1/embeddings":
            self._send(404, {"error": {"message": "no such route"}})
        elif model == "error-500":
            self._send(500, {"error": {"message": "boom", "type": "server_error"}})
        elif model == "garbage":
            self._send(200, {"object": "list", "data": "not a list"})
        elif model == "not-json":
            page = b"<html>proxy error</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif model == "slow":
            self.server.release.wait(60)
            self.server.slow_answered += 1
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(200, {"object": "list", "data": [], "model": model})
        else:
            rows = _vectors(model, len(texts))
            if model == "fewer":
                rows = rows[:-1]
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(rows)]
            data.reverse()  # servers may answer out of order; index decides
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": model,
                    "usage": {"prompt_tokens": 3 * len(texts), "total_tokens": 3 * len(texts)},
                },
            )


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def _url(srv: _Server) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}/v1"


def _embedder(srv: _Server, model: str, **kw: object) -> OpenAIEmbedding:
    return OpenAIEmbedding(model, DIM, _url(srv), api_key="test-key", **kw)  # type: ignore[arg-type]


def _count(srv: _Server, model: str) -> int:
    return sum(1 for r in srv.requests if r["model"] == model)


def test_embeds_in_input_order_with_float_encoding_and_usage(server: _Server) -> None:
    emb = _embedder(server, "good", batch_size=2)
    assert isinstance(emb, EmbeddingModel)
    assert emb.profile == EmbeddingProfile("openai-good-4", "good", DIM, "l2", "unit")
    result = asyncio.run(emb.embed(("a", "b", "c")))
    # batches of 2: ("a", "b") then ("c",), each answered in reverse order
    assert result.vectors == (BASIS[0], BASIS[1], BASIS[0])
    assert result.usage.input_tokens == 9 and result.usage.texts == 3
    sent = [r for r in server.requests if r["model"] == "good"]
    assert [r["input"] for r in sent] == [["a", "b"], ["c"]]
    assert {r["encoding_format"] for r in sent} == {"float"}
    assert {r["path"] for r in sent} == {"/v1/embeddings"}
    assert asyncio.run(emb.embed(())).vectors == ()
    assert _count(server, "good") == 2  # the empty call sent nothing


def test_profile_id_can_be_given() -> None:
    emb = OpenAIEmbedding("m", 8, "http://127.0.0.1:9/v1", profile_id="prod-v1")
    assert emb.profile == EmbeddingProfile("prod-v1", "m", 8, "l2", "unit")


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("fewer", "malformed response: indices [0, 1] for 3 inputs"),
        ("garbage", "malformed response: the body has no list of embeddings in 'data'"),
        ("not-json", "malformed response: the body has no list of embeddings in 'data'"),
    ],
)
def test_malformed_answers_are_rejected_and_nothing_is_returned(
    server: _Server, model: str, message: str
) -> None:
    with pytest.raises(BackendError) as info:
        asyncio.run(_embedder(server, model).embed(("x", "y", "z")))
    assert message in str(info.value)


# Issue 9 item 6: these used to fail the whole call, so one bad vector cost every entry
# of a write its vector. Now the bad one comes back as sent, beside the good ones, and
# prepare_vector (the consumer's check) refuses it alone.
@pytest.mark.parametrize(
    ("model", "bad", "message"),
    [
        ("wrong-dim", 0, "has 3 dimensions; the profile fixes 4"),
        ("nan", 2, "contains NaN"),
        ("inf", 0, "contains NaN"),
        ("empty", 0, "is empty"),
    ],
)
def test_an_unusable_vector_is_returned_for_its_text_only(
    server: _Server, model: str, bad: int, message: str
) -> None:
    from powercontext.core.vectors import prepare_vector

    emb = _embedder(server, model)
    vectors = asyncio.run(emb.embed(("x", "y", "z"))).vectors
    assert len(vectors) == 3
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        prepare_vector(vectors[bad], emb.profile)
    if model != "wrong-dim":  # that model shortens every vector
        assert [prepare_vector(v, emb.profile) for i, v in enumerate(vectors) if i != bad]


def test_a_non_unit_vector_comes_back_normalised(server: _Server) -> None:
    vectors = asyncio.run(_embedder(server, "not-unit").embed(("x", "y"))).vectors
    assert vectors[0] == pytest.approx((math.sqrt(0.5), math.sqrt(0.5), 0.0, 0.0))
    assert vectors[1] == BASIS[1]


def test_http_500_is_a_backend_error_at_once_without_retries(server: _Server) -> None:
    emb = _embedder(server, "error-500")
    with pytest.raises(BackendError, match=r"unavailable: .* answered HTTP 500"):
        asyncio.run(emb.embed(("x",)))
    assert _count(server, "error-500") == 1
    assert emb._new_client().max_retries == 0  # the SDK never waits to retry


def test_timeout_is_honored(server: _Server) -> None:
    emb = _embedder(server, "slow", timeout=0.3)
    assert emb._new_client().timeout == 0.3  # the SDK is asked for the configured timeout
    with pytest.raises(BackendError, match=r"no answer from .* within 0.3 s"):
        asyncio.run(emb.embed(("x",)))
    # the client gave up on its own: the server still holds the answer (until released)
    assert _count(server, "slow") == 1 and server.slow_answered == 0


def test_unreachable_server_is_a_backend_error() -> None:
    with _Server() as closed:  # bind a free port, then close it without serving
        url = _url(closed)
    emb = OpenAIEmbedding("good", DIM, url)
    with pytest.raises(BackendError, match="unavailable at"):
        asyncio.run(emb.embed(("x",)))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"model": ""}, "model"),
        ({"dimension": 0}, "dimension"),
        ({"base_url": ""}, "base_url"),
        ({"timeout": 0}, "timeout"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_arguments_are_rejected(kwargs: dict, field: str) -> None:
    args = {"model": "m", "dimension": 4, "base_url": "http://127.0.0.1:9/v1", **kwargs}
    with pytest.raises(InvalidInputError) as info:
        OpenAIEmbedding(**args)
    assert info.value.field == field
