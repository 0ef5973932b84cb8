"""``powercontext serve`` as its own process on SQLite, called over real HTTP (Topic
Memory RFC, "HTTP API", "Process roles"; TOPIC-MEMORY.md, "Auth"): it prints
``serving http://HOST:PORT (role all)`` for ``--port 0``; the token guards every POST
but health and the OpenAPI document; search and get find Topics the CLI processed;
flush is ``idle`` on a covered Scope and ``accepted`` on one with new Sources; SIGTERM
and SIGINT stop it with exit 0. Refused start-ups, each exit 2 or 5 with one clear
line and nothing listening: ``--role api`` / ``background`` on SQLite, a non-loopback
host without a token, a port in use, automatic scheduling with an unusable Topic
generation configuration. Without a usable configuration it still serves search and
answers flush 503 ``topic_processing_unavailable``."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv
from support.serve_process import ServeProcess, clean_env

pytestmark = pytest.mark.subprocess

SCOPE = "project:serve"
FRESH = "project:fresh"
TOKEN = "serve-test-token-0123"
DETERMINISTIC = '[inference]\ngeneration_provider = "deterministic"\n'
DOCS = {
    "releases.md": "# Releases\n\nWe cut a release by tagging main. Then `make release` "
                   "builds the wheel and uploads it to the package index.\n",
    "deploys.md": "# Deploys\n\nDeploys of the web service go out on Tuesdays, after the "
                  "release checklist passes.\n",
}


def pc(db: Path, env: dict[str, str], *args: str, expect: int = 0
       ) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([*cli_argv(), "--db", str(db), "--json", *args],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == expect, (args, out.returncode, out.stdout, out.stderr)
    return out


def _add_docs(tmp_path: Path, db: Path, env: dict[str, str], scope: str) -> None:
    docs = tmp_path / f"docs-{scope.replace(':', '_')}"
    docs.mkdir(exist_ok=True)
    files = []
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
        files.append(str(docs / name))
    pc(db, env, "source", "add", "--scope", scope, *files)


@pytest.fixture(scope="module")
def processed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A SQLite database whose Scope SCOPE was processed by the CLI (deterministic
    provider), and the config file naming that provider."""
    tmp = tmp_path_factory.mktemp("serve")
    env = clean_env(tmp / "home")
    db = tmp / "serve.db"
    config = tmp / "config.toml"
    config.write_text(DETERMINISTIC, encoding="utf-8")
    _add_docs(tmp, db, env, SCOPE)
    report = json.loads(pc(db, env, "topic", "process", "--scope", SCOPE, "--once",
                           "--config", str(config)).stdout)
    assert report["covered"] is True, report
    return {"tmp": tmp, "db": db, "env": env, "config": config}


@pytest.mark.slow
def test_serve_answers_over_http_and_stops_cleanly_on_sigterm(processed: dict[str, Any],
                                                              tmp_path: Path) -> None:
    env = dict(processed["env"], POWERCONTEXT_API_TOKEN=TOKEN)
    with ServeProcess(processed["db"], ["--config", str(processed["config"])], env,
                      tmp_path / "stderr") as server:
        assert server.stdout[-1].rstrip().endswith("(role all)")
        assert server.url.startswith("http://127.0.0.1:")
        assert not server.url.endswith(":0")

        status, health = server.call("/v1/health")
        assert status == 200 and health["status"] == "ok" and health["role"] == "all"
        assert health["topic_processing"] == "available"
        status, spec = server.call("/openapi.json")
        assert status == 200 and "/v1/topic-memory/search" in spec["paths"]

        status, body = server.call("/v1/topic-memory/search",
                                   {"scope_id": SCOPE, "query": "release"})
        assert status == 401 and body["error"]["code"] == "unauthorized"

        status, found = server.call("/v1/topic-memory/search",
                                    {"scope_id": SCOPE, "query": "release deploys"},
                                    token=TOKEN)
        assert status == 200, found
        assert found["hits"] and found["channels"] == ["topic_fts", "detail_fts"]
        hit = found["hits"][0]
        status, revision = server.call("/v1/topic-memory/get",
                                       {"scope_id": SCOPE, "artifact": hit["artifact"]},
                                       token=TOKEN)
        assert status == 200 and revision["artifact"] == hit["artifact"]
        assert revision["detail"] and revision["sources"]

        status, body = server.call("/v1/topic-memory/get", {"scope_id": SCOPE, "artifact": {
            **hit["artifact"], "revision": hit["artifact"]["revision"] + 50}}, token=TOKEN)
        assert status == 404 and body["error"]["code"] == "not_found"
        status, body = server.call("/v1/topic-memory/search",
                                   {"scope_id": SCOPE, "query": "x", "limit": "3"},
                                   token=TOKEN)
        assert status == 422 and body["error"]["field"] == "limit"
        status, body = server.call("/v1/topic-memory/flush", raw=b"{oops", token=TOKEN)
        assert status == 422 and body["error"]["code"] == "invalid_input"

        # covered: idle; a Scope with new Sources (added by another process): accepted
        assert server.call("/v1/topic-memory/flush", {"scope_id": SCOPE},
                           token=TOKEN) == (200, {"status": "idle"})
        _add_docs(tmp_path, processed["db"], processed["env"], FRESH)
        assert server.call("/v1/topic-memory/flush", {"scope_id": FRESH},
                           token=TOKEN) == (200, {"status": "accepted"})
        rc = server.stop(signal.SIGTERM)
    log = server.stderr()
    assert rc == 0, log
    assert "Traceback" not in log
    assert TOKEN not in log and TOKEN not in "".join(server.stdout)
    assert "config server.api_token = <unset>" in log  # the environment's token is masked
    assert "token=********" in log


def test_sigint_stops_it_with_exit_0(processed: dict[str, Any], tmp_path: Path) -> None:
    with ServeProcess(processed["db"], ["--config", str(processed["config"])],
                      processed["env"], tmp_path / "stderr") as server:
        assert server.call("/v1/health")[0] == 200
        rc = server.stop(signal.SIGINT)
    assert rc == 0, server.stderr()
    assert "unauthenticated" in server.stderr()  # no token: the warning says so


def test_an_unusable_generation_configuration_still_serves_reads_and_flush_is_503(
        processed: dict[str, Any], tmp_path: Path) -> None:
    with ServeProcess(processed["db"], [], processed["env"], tmp_path / "stderr") as server:
        status, health = server.call("/v1/health")
        assert health["topic_processing"] == "unavailable"
        status, found = server.call("/v1/topic-memory/search",
                                    {"scope_id": SCOPE, "query": "release"})
        assert status == 200 and found["hits"]
        status, body = server.call("/v1/topic-memory/flush", {"scope_id": SCOPE})
        assert status == 503 and body["error"]["code"] == "topic_processing_unavailable"
        assert "inference.generation_provider" in body["error"]["message"]
        assert server.stop() == 0
    assert "Topic processing unavailable: inference.generation_provider" in server.stderr()


def _refused(db: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli_argv(), "--db", str(db), "serve", *args],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("role", ["api", "background"])
def test_sqlite_refuses_roles_other_than_all(tmp_path: Path, role: str) -> None:
    out = _refused(tmp_path / "x.db", clean_env(tmp_path / "home"), "--role", role,
                   "--port", "0")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "SQLite supports only --role all" in out.stderr
    assert "serving" not in out.stdout


def test_the_configured_role_is_checked_too(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", POWERCONTEXT_RUNTIME_ARTIFACT_PROCESSING_ROLE="api")
    out = _refused(tmp_path / "x.db", env, "--port", "0")
    assert out.returncode == 2 and "not 'api'" in out.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com"])
def test_a_non_loopback_host_without_a_token_refuses_to_start(tmp_path: Path,
                                                              host: str) -> None:
    out = _refused(tmp_path / "x.db", clean_env(tmp_path / "home"), "--host", host,
                   "--port", "0")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "no API token is set" in out.stderr and "serving" not in out.stdout


@pytest.mark.parametrize("where", ["env", "config"])
def test_a_token_shorter_than_16_characters_refuses_to_start(tmp_path: Path,
                                                             where: str) -> None:
    short = "s3cret-token-15c"[:15]
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\napi_token = "{short}"\n' if where == "config" else "",
                      encoding="utf-8")
    env = clean_env(tmp_path / "home", **({"POWERCONTEXT_API_TOKEN": short}
                                          if where == "env" else {}))
    out = _refused(tmp_path / "x.db", env, "--port", "0", "--config", str(config))
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "server.api_token" in out.stderr and "at least 16" in out.stderr
    assert short not in out.stderr and "serving" not in out.stdout
    mcp = subprocess.run([*cli_argv(), "--db", str(tmp_path / "x.db"), "mcp", "--transport",
                          "http", "--port", "0", "--config", str(config)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert mcp.returncode == 2 and "at least 16" in mcp.stderr, (mcp.stdout, mcp.stderr)


def test_a_port_in_use_is_a_clear_start_up_error(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        out = _refused(tmp_path / "x.db", clean_env(tmp_path / "home"), "--port", str(port))
    assert out.returncode == 9, (out.stdout, out.stderr)  # its own code (docs/cli.md)
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr


def test_automatic_scheduling_without_a_usable_configuration_refuses_to_start(
        tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home", POWERCONTEXT_RUNTIME_TOPIC_MEMORY_AUTO_INTERVAL_SECONDS="60")
    out = _refused(tmp_path / "x.db", env, "--port", "0")
    assert out.returncode == 5, (out.stdout, out.stderr)
    assert "automatic Topic processing is configured" in out.stderr


def test_a_bad_configuration_file_is_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[server]\nport = 70000\n", encoding="utf-8")
    out = _refused(tmp_path / "x.db", clean_env(tmp_path / "home"), "--config", str(config))
    assert out.returncode == 2 and "server.port" in out.stderr


def test_help_explains_roles_the_token_and_the_endpoints(tmp_path: Path) -> None:
    out = _refused(tmp_path / "x.db", clean_env(tmp_path / "home"), "--help")
    assert out.returncode == 0
    for needle in ("all", "api", "background", "POWERCONTEXT_API_TOKEN", "loopback",
                   "/v1/topic-memory/flush", "/v1/topic-memory/search",
                   "/v1/topic-memory/get", "/v1/context/prepare", "/v1/health"):
        assert needle in out.stdout, needle


@pytest.mark.slow
def test_role_all_processes_a_flush_with_its_supervisor(tmp_path: Path) -> None:
    """The flush wakes the in-process Supervisor; its Worker publishes; search then
    has hits and the next flush is idle; SIGTERM stops Supervisor and server, exit 0."""
    import time

    env = clean_env(tmp_path / "home")
    db = tmp_path / "all.db"
    config = tmp_path / "config.toml"
    config.write_text(DETERMINISTIC, encoding="utf-8")
    _add_docs(tmp_path, db, env, SCOPE)
    with ServeProcess(db, ["--config", str(config)], env, tmp_path / "stderr") as server:
        status, health = server.call("/v1/health")
        if health["supervisor"] is None:
            pytest.skip("this build runs no Supervisor (its lease storage is missing)")
        assert health["supervisor"]["leader"] is True
        assert health["supervisor"]["generation"] >= 1
        assert server.call("/v1/topic-memory/flush", {"scope_id": SCOPE}) == (
            200, {"status": "accepted"})
        give_up = time.monotonic() + 240  # a bound on the wait, not on the speed
        while True:
            status, found = server.call("/v1/topic-memory/search",
                                        {"scope_id": SCOPE, "query": "release deploys"})
            assert status == 200, found
            if found["hits"] or time.monotonic() > give_up:
                break
            time.sleep(0.2)
        assert found["hits"], server.stderr()
        while server.call("/v1/topic-memory/flush", {"scope_id": SCOPE})[1] != {
                "status": "idle"} and time.monotonic() < give_up:
            time.sleep(0.2)  # the Cursor reaches the head with the last Window
        assert server.call("/v1/topic-memory/flush", {"scope_id": SCOPE}) == (
            200, {"status": "idle"})
        assert server.stop() == 0, server.stderr()
    assert "Traceback" not in server.stderr()
