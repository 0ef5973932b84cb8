"""What ``powercontext serve`` checks before a route reads a request, over real HTTP on a
real server process: a request without a valid token is refused (401) before its body
is parsed (before: bad JSON got 422 from an unauthenticated client), a body that does
not arrive in time is answered 408 and the connection closed (before: held open for
good), and JSON responses carry ``Cache-Control: no-store`` and
``X-Content-Type-Options: nosniff`` like the HTML pages."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.serve_process import ServeProcess, clean_env

from powercontext.entrypoints.http.guards import BODY_TIMEOUT_S

pytestmark = [pytest.mark.subprocess, pytest.mark.server]  # serve

TOKEN = "guards-test-token-0123456789"
SEARCH = "/v1/topic-memory/search"
PREPARE = "/v1/context/prepare"
REMEMBER = "/v1/memory/remember"
SOURCES = "/v1/sources/add"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("guards")
    env = clean_env(tmp / "home", POWERCONTEXT_API_TOKEN=TOKEN)
    with ServeProcess(tmp / "serve.db", [], env, tmp / "stderr") as proc:
        yield proc


def _raw(server: Any, request: bytes, *, wait: float = 60.0) -> bytes:
    """Send ``request`` as is on a new connection; everything read until it closes."""
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname, url.port), timeout=wait) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _post(path: str, body: bytes, headers: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n{headers}\r\n"
            ).encode() + body


@pytest.mark.parametrize("path", [SEARCH, PREPARE, REMEMBER, SOURCES])
@pytest.mark.parametrize("auth", ["", "Authorization: Bearer wrong-token\r\n",
                                  "Authorization: Basic Zm9vOmJhcg==\r\n"],
                         ids=["none", "wrong", "basic"])
def test_no_valid_token_is_refused_before_the_body_is_parsed(server, path, auth) -> None:
    for body in (b"{bad json", b'{"scope_id": 5}', b"[" * 5000):
        status, data = server.call(path, raw=body, token=None) if not auth else (None, None)
        answer = _raw(server, _post(path, body, auth))
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401 "), answer[:200]
        assert b'"code":"unauthorized"' in payload
        assert b"www-authenticate: bearer" in head.lower()
        if status is not None:
            assert (status, data["error"]["code"]) == (401, "unauthorized")


def test_with_the_token_bad_json_is_still_bad_input(server) -> None:
    status, data = server.call(SEARCH, raw=b"{bad json", token=TOKEN)
    assert (status, data["error"]["code"]) == (422, "invalid_input")


def test_a_body_that_does_not_arrive_in_time_is_answered_408(server) -> None:
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname, url.port), timeout=60) as sock:
        sock.sendall(_post(SEARCH, b'{"scope_id": "a", "query": "x"}' + b" " * 100,
                           f"Authorization: Bearer {TOKEN}\r\n")[:-60])  # 60 bytes held
        chunks = []
        while chunk := sock.recv(65536):  # the server answers and closes
            chunks.append(chunk)
    answer = b"".join(chunks)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b'"code":"request_timeout"' in answer
    assert f"within {BODY_TIMEOUT_S:g} s".encode() in answer
    assert server.call("/v1/health")[0] == 200  # the server goes on


@pytest.mark.parametrize(("path", "token"), [("/v1/health", None), (SEARCH, None),
                                             (SEARCH, TOKEN), ("/openapi.json", None),
                                             ("/v1/nothing-here", None)])
def test_json_responses_are_not_cached_nor_sniffed(server, path, token) -> None:
    req = urllib.request.Request(server.url + path, method="GET" if path != SEARCH else "POST",
                                 data=b'{"scope_id": "project:x", "query": "release"}'
                                 if path == SEARCH else None)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            headers = resp.headers
    except urllib.error.HTTPError as exc:
        headers = exc.headers
    assert headers["Content-Type"].startswith("application/json")
    assert headers["Cache-Control"] == "no-store"
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_dashboards_json_twin_is_not_cached_either(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")  # no token: loopback, the dashboard is open
    with ServeProcess(tmp_path / "serve.db", [], env, tmp_path / "stderr") as proc, \
            urllib.request.urlopen(proc.url + "/ui/memories?format=json", timeout=60) as resp:
        assert resp.headers["Content-Type"].startswith("application/json")
        assert resp.headers["Cache-Control"] == "no-store"
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
