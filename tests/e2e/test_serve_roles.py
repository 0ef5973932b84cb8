"""``powercontext serve`` roles on seekdb (Topic Memory RFC, "Process roles"; the design:
OceanBase supports all three roles, SQLite only ``all``): ``--role api`` serves the API
with no Supervisor (a flush is recorded for a background process to find), ``--role
background`` serves only ``GET /v1/health`` (the API routes are 404), both stop with
exit 0 on SIGTERM, and the database password never reaches the log."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import cli_argv
from support.serve_process import ServeProcess, clean_env

pytestmark = pytest.mark.oceanbase

SCOPE = "project:roles"


@pytest.fixture
def ob_db(seekdb_url: str) -> Iterator[str]:
    from oceanbase_server import fresh_database

    with fresh_database(seekdb_url, "serve") as url:
        yield url


def _add_source(db: str, env: dict[str, str], tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Roles\n\nThe api role serves requests only.\n", "utf-8")
    out = subprocess.run([*cli_argv(), "--db", db, "--json", "source", "add", "--scope",
                          SCOPE, str(note)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, (out.stdout, out.stderr)


@pytest.mark.slow
def test_role_api_serves_the_api_without_a_supervisor(ob_db: str, tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home",
                    POWERCONTEXT_INFERENCE_GENERATION_PROVIDER="deterministic")
    _add_source(ob_db, env, tmp_path)
    with ServeProcess(ob_db, ["--role", "api"], env, tmp_path / "stderr") as server:
        assert server.stdout[-1].rstrip().endswith("(role api)")
        status, health = server.call("/v1/health")
        assert status == 200 and health["role"] == "api" and health["supervisor"] is None
        assert server.call("/v1/topic-memory/flush", {"scope_id": SCOPE}) == (
            200, {"status": "accepted"})
        status, found = server.call("/v1/topic-memory/search",
                                    {"scope_id": SCOPE, "query": "roles"})
        assert status == 200 and found["hits"] == []  # nothing processed here
        assert server.stop() == 0
    log = server.stderr()
    assert "Traceback" not in log
    password = ob_db.split("://", 1)[1].split("@", 1)[0].partition(":")[2]
    if password:
        assert password not in log


@pytest.mark.slow
def test_role_background_serves_only_health(ob_db: str, tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    with ServeProcess(ob_db, ["--role", "background"], env, tmp_path / "stderr") as server:
        assert server.stdout[-1].rstrip().endswith("(role background)")
        status, health = server.call("/v1/health")
        assert status == 200 and health["role"] == "background"
        status, body = server.call("/v1/topic-memory/search",
                                   {"scope_id": SCOPE, "query": "roles"})
        assert status == 404 and body["error"]["code"] == "not_found"
        assert server.stop() == 0
    assert "Traceback" not in server.stderr()
