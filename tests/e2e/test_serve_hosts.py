"""DNS rebinding against the real ``powercontext serve`` (a child process on 127.0.0.1,
no token): a page whose name was rebound to 127.0.0.1 sends its own name in ``Host``.
Every route answers such a request 421 before doing anything, the API and the dashboard
alike; the loopback names, the bound address and the names given with ``--allow-host``
(or ``server.allowed_hosts``) are answered."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.cli import cli_argv
from support.serve_process import ServeProcess, clean_env

pytestmark = pytest.mark.subprocess

SCOPE = "project:hosts"


def request(url: str, method: str, path: str, host: str | None, *, body: Any = None,
            headers: dict[str, str] | None = None, form: bool = False) -> tuple[int, Any]:
    """``(status, body)`` of one request sent to the server at ``url`` with exactly this
    ``Host`` header (None: no Host header at all); JSON bodies decoded."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host is not None:
            conn.putheader("Host", host)
        data = None
        if body is not None:
            data = body.encode() if form else json.dumps(body).encode()
            conn.putheader("Content-Type", "application/x-www-form-urlencoded" if form
                           else "application/json")
            conn.putheader("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders(data)
        response = conn.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode("utf-8", "replace")
    finally:
        conn.close()


#: What a rebound page can reach without a token: reads, the prepared context, a flush.
ROUTES = [
    ("GET", "/v1/health", None),
    ("GET", "/openapi.json", None),
    ("POST", "/v1/topic-memory/search", {"scope_id": SCOPE, "query": "release"}),
    ("POST", "/v1/topic-memory/flush", {"scope_id": SCOPE}),
    ("POST", "/v1/context/prepare", {"scope_id": SCOPE, "query": "release"}),
    ("GET", "/ui/memories?format=json", None),
    ("GET", "/ui/topics?format=json", None),
    ("GET", "/ui/memories", None),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("hosts")
    config = tmp / "config.toml"
    config.write_text('[inference]\ngeneration_provider = "deterministic"\n', encoding="utf-8")
    with ServeProcess(tmp / "hosts.db", ["--allow-host", "memory.example.com", "--config",
                                         str(config)],
                      clean_env(tmp / "home"), tmp / "stderr") as running:
        yield running


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[r[1] for r in ROUTES])
@pytest.mark.parametrize("host", ["rebound.example:{port}", "rebound.example",
                                  "127.0.0.1.nip.io:{port}", "localhost.evil.test:{port}",
                                  "LOCALHOST:{port}@evil", "", None],
                         ids=["name", "name-no-port", "ip-in-name", "localhost-prefix",
                              "malformed", "empty", "missing"])
def test_a_foreign_host_gets_421_on_every_route(server: Any, method: str, path: str,
                                                body: Any, host: str | None) -> None:
    port = urlsplit(server.url).port
    status, answer = request(server.url, method, path,
                             None if host is None else host.format(port=port), body=body)
    if host is None and status == 400:
        return  # HTTP/1.1 without Host: the server's HTTP parser refuses it first
    assert status == 421, (path, host, status, answer)
    assert answer["error"]["code"] == "misdirected_request"


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LocalHost",
                                  "[::1]:{port}", "127.0.0.2:{port}",
                                  "memory.example.com", "Memory.Example.Com:443"])
def test_loopback_names_and_allowed_hosts_are_answered(server: Any, host: str) -> None:
    port = urlsplit(server.url).port
    for method, path, body in ROUTES:
        status, answer = request(server.url, method, path, host.format(port=port),
                                 body=body)
        assert status != 421 and status < 500, (path, host, status, answer)


def test_a_rebound_page_cannot_post_the_dashboard_flush_form(server: Any) -> None:
    """The dashboard's same-origin check compared Origin with this very Host: a rebound
    page's Origin and Host agree, so the Host check is what refuses it."""
    port = urlsplit(server.url).port
    evil = f"rebound.example:{port}"
    status, _ = request(server.url, "POST", "/ui/processing/flush",
                        evil, body=f"scope_id={SCOPE}", form=True,
                        headers={"Origin": f"http://{evil}"})
    assert status == 421
    own = f"127.0.0.1:{port}"
    status, _ = request(server.url, "POST", "/ui/processing/flush", own,
                        body=f"scope_id={SCOPE}", form=True,
                        headers={"Origin": f"http://{own}"})
    assert status != 421


def test_an_http_1_0_request_without_host_gets_421(server: Any) -> None:
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 421"), reply[:200]


def test_allowed_hosts_come_from_the_configuration_and_the_environment(
        tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[server]\nallowed_hosts = ["from-file.example"]\n', encoding="utf-8")
    env = clean_env(tmp_path / "home", POWERCONTEXT_SERVER_ALLOWED_HOSTS="a.example, b.example")
    with ServeProcess(tmp_path / "x.db", ["--config", str(config)], env,
                      tmp_path / "stderr") as running:
        for host, expected in (("a.example", 200), ("b.example", 200),
                               ("from-file.example", 421), ("c.example", 421)):
            # the environment overrides the file's list, as for every setting
            assert request(running.url, "GET", "/v1/health", host)[0] == expected, host
    config.write_text('[server]\nallowed_hosts = ["from-file.example"]\n', encoding="utf-8")
    with ServeProcess(tmp_path / "x.db", ["--config", str(config)],
                      clean_env(tmp_path / "home"), tmp_path / "stderr2") as running:
        assert request(running.url, "GET", "/v1/health", "from-file.example")[0] == 200


def test_a_star_turns_the_check_off_for_a_proxy_that_checks_host_itself(
        tmp_path: Path) -> None:
    with ServeProcess(tmp_path / "x.db", ["--allow-host", "*"], clean_env(tmp_path / "home"),
                      tmp_path / "stderr") as running:
        assert request(running.url, "GET", "/v1/health", "anything.example")[0] == 200


@pytest.mark.parametrize("bad", ["memory.example.com:8765", "http://memory.example.com",
                                 "memory.example.com/ui", "user@memory.example.com"])
def test_an_allowed_host_that_is_no_host_name_refuses_to_start(tmp_path: Path,
                                                               bad: str) -> None:
    out = subprocess.run([*cli_argv(), "--db", str(tmp_path / "x.db"), "serve", "--port", "0",
                          "--allow-host", bad], capture_output=True, text=True,
                         env=clean_env(tmp_path / "home"), timeout=300)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "server.allowed_hosts" in out.stderr and "serving" not in out.stdout
