"""``memory rebuild`` end to end on a real SQLite file (issue 9 item 7): rebuild resolves
the embedding model the way every other command does (``--embedding``,
``POWERCONTEXT_EMBEDDING*``, else the model the database remembers), never removes a
vector it cannot refill, lists each entry left without one, and ``--migrate`` makes the
new model the one later commands use."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.cli import cli_argv

pytestmark = pytest.mark.subprocess

DIM = 8


def _embed(text: str) -> list[float]:
    """Bag of words hashed into DIM buckets, unit length: equal texts, equal vectors."""
    v = [0.0] * DIM
    for word in text.lower().split() or [""]:
        v[hashlib.sha256(word.encode()).digest()[0] % DIM] += 1.0
    norm = math.hypot(*v)
    return [x / norm for x in v]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"]
        data = json.dumps({
            "object": "list",
            "model": body["model"],
            "data": [{"object": "embedding", "index": i, "embedding": _embed(t)}
                     for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def openai_url() -> Iterator[str]:
    pytest.importorskip("openai")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()
    thread.join(5)


@pytest.fixture
def pc(tmp_path: Path):
    db = tmp_path / "memory.db"
    base = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    for k in [k for k in base if k.startswith("POWERCONTEXT_EMBEDDING") or k in (
            "POWERCONTEXT_DB", "OPENAI_API_KEY")]:
        base.pop(k)

    def run(*args: str, expect: int = 0, env: dict[str, str] | None = None) -> dict | str:
        proc = subprocess.run([*cli_argv(), "--db", str(db), *args], capture_output=True,
                              text=True, env={**base, **(env or {})}, timeout=120)
        assert proc.returncode == expect, (args, proc.returncode, proc.stdout, proc.stderr)
        return json.loads(proc.stdout) if "--json" in args else proc.stdout

    return run


def _openai_env(url: str) -> dict[str, str]:
    return {"POWERCONTEXT_EMBEDDING": "openai", "POWERCONTEXT_EMBEDDING_MODEL": "fake-embed",
            "POWERCONTEXT_EMBEDDING_DIMENSION": str(DIM),
            "POWERCONTEXT_EMBEDDING_BASE_URL": url, "OPENAI_API_KEY": "test-key"}


def _remember(pc, text: str, *pre: str, env: dict[str, str] | None = None) -> dict:
    return pc(*pre, "--json", "memory", "remember", "--key", "repo:demo", "--text", text,
              env=env)


def _vector_hits(pc, query: str, *pre: str, env: dict[str, str] | None = None) -> list[str]:
    out = pc(*pre, "--json", "memory", "search", query, "-m", "key:repo:demo",
             "--mode", "vector", env=env)
    assert out["mode"] == "vector" and out["fallback_reason"] is None
    return [h["text"] for h in out["hits"]]


@pytest.mark.slow
def test_plain_rebuild_fills_vectors_with_the_remembered_model(pc) -> None:
    _remember(pc, "the cache lives in redis", "--embedding", "deterministic")
    _remember(pc, "logs go to loki", "--embedding", "none")  # written without a vector
    out = pc("--json", "memory", "search", "loki", "-m", "key:repo:demo")
    assert out["mode"] == "fts" and "incomplete" in out["fallback_reason"]
    report = pc("--json", "memory", "rebuild")  # no --embedding, no environment
    assert report["embedding"] == "deterministic"
    assert (report["entries"], report["vectors"], report["kept"]) == (2, 2, 0)
    assert (report["missing"], report["incomplete"]) == ([], [])
    assert _vector_hits(pc, "logs go to loki")[0] == "logs go to loki"


@pytest.mark.slow
def test_rebuild_without_a_model_keeps_every_vector_and_lists_what_is_missing(pc) -> None:
    _remember(pc, "the cache lives in redis", "--embedding", "deterministic")
    written = _remember(pc, "logs go to loki", "--embedding", "none")
    report = pc("--embedding", "none", "--json", "memory", "rebuild")
    assert (report["entries"], report["vectors"], report["kept"]) == (2, 1, 1)
    [missing] = report["missing"]
    assert missing["artifact_id"] == written["memory_ref"]["artifact_id"]
    assert "no embedding model" in missing["reason"]
    assert report["incomplete"] == [missing["artifact_id"]]
    human = pc("--embedding", "none", "memory", "rebuild")
    assert f"no vector for {missing['entry_id']} in {missing['artifact_id']}" in human
    assert "1 vectors (1 kept as stored)" in human
    # the stored vector survived both rebuilds: once the unfilled entry is gone, the
    # remembered model serves vector search again
    pc("memory", "forget", "key:repo:demo", missing["entry_id"])
    assert _vector_hits(pc, "the cache lives in redis") == ["the cache lives in redis"]


@pytest.mark.slow
def test_rebuild_uses_the_openai_settings_from_the_environment(pc, openai_url) -> None:
    env = _openai_env(openai_url)
    _remember(pc, "deploys go through staging", env=env)
    report = pc("--json", "memory", "rebuild", env=env)
    assert (report["embedding"], report["vectors"], report["missing"]) == ("openai", 1, [])
    # later, without the environment: the remembered model and its options
    report = pc("--json", "memory", "rebuild")
    assert (report["embedding"], report["vectors"], report["missing"]) == ("openai", 1, [])
    assert _vector_hits(pc, "deploys go through staging") == ["deploys go through staging"]


@pytest.mark.slow
def test_rebuild_with_the_model_server_down_keeps_every_vector(pc, openai_url) -> None:
    _remember(pc, "deploys go through staging", env=_openai_env(openai_url))
    with ThreadingHTTPServer(("127.0.0.1", 0), _Handler) as closed:  # a port nobody serves
        dead = f"http://127.0.0.1:{closed.server_address[1]}/v1"
    report = pc("--json", "memory", "rebuild", env=_openai_env(dead))
    assert (report["vectors"], report["kept"], report["incomplete"]) == (1, 1, [])
    assert report["missing"] == []  # the stored vector still matches: nothing is missing
    assert _vector_hits(pc, "deploys go through staging", env=_openai_env(openai_url)) == [
        "deploys go through staging"]
    # a write while the server is down commits; the rebuild lists the entry it cannot fill
    _remember(pc, "releases are tagged on main", env=_openai_env(dead))
    report = pc("--json", "memory", "rebuild", env=_openai_env(dead))
    assert (report["vectors"], report["kept"]) == (1, 1)
    [missing] = report["missing"]
    assert "the embedding model failed" in missing["reason"]


@pytest.mark.slow
def test_migrate_remembers_the_new_model_for_later_commands(pc, openai_url) -> None:
    _remember(pc, "tests run with pytest", "--embedding", "deterministic")
    report = pc("--json", "memory", "rebuild", "--migrate", env=_openai_env(openai_url))
    assert (report["embedding"], report["vectors"], report["missing"]) == ("openai", 1, [])
    # no --embedding, no environment: every command now uses the new model
    assert _vector_hits(pc, "tests run with pytest") == ["tests run with pytest"]
    _remember(pc, "lint with ruff")
    report = pc("--json", "memory", "rebuild")
    assert (report["embedding"], report["vectors"], report["incomplete"]) == ("openai", 2, [])


def test_migrate_needs_a_model(pc) -> None:
    _remember(pc, "tests run with pytest", "--embedding", "deterministic")
    pc("--embedding", "none", "memory", "rebuild", "--migrate", expect=2)
    assert _vector_hits(pc, "tests run with pytest") == ["tests run with pytest"]
