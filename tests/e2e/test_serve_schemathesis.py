"""schemathesis over the live ``powercontext serve`` (SQLite, a processed Scope, a
Memory under a key, a bearer token): every operation of the published OpenAPI document
-- Topic flush, search, get, every Memory read and write, Sources, the prepared context
when installed, and health -- with valid and invalid
generated requests, checked for no server error, a documented status code, the
declared content type and a body matching the declared response schema (Topic
Memory RFC, "HTTP API": "never a 500 for bad input"). The example count is bounded
(Hypothesis ``max_examples`` per operation) so it runs in the default suite."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from support.cli import cli_argv
from support.serve_process import ServeProcess, clean_env

pytestmark = pytest.mark.subprocess

SCOPE = "project:schemathesis"
TOKEN = "schemathesis-token-42"
EXAMPLES = 30


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    tmp = tmp_path_factory.mktemp("schemathesis")
    env = clean_env(tmp / "home")
    db = tmp / "st.db"
    config = tmp / "config.toml"
    config.write_text('[inference]\ngeneration_provider = "deterministic"\n', "utf-8")
    note = tmp / "note.md"
    note.write_text("# Releases\n\nWe cut a release by tagging main.\n", "utf-8")

    def pc(*args: str) -> Any:
        out = subprocess.run([*cli_argv(), "--db", str(db), "--json", *args],
                             capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, (args, out.stdout, out.stderr)
        return json.loads(out.stdout)

    pc("source", "add", "--scope", SCOPE, str(note))
    pc("memory", "remember", "--key", SCOPE, "--text", "We cut a release by tagging main")
    assert pc("topic", "process", "--scope", SCOPE, "--once", "--config",
              str(config))["covered"]
    server = ServeProcess(db, ["--config", str(config)],
                          dict(env, POWERCONTEXT_API_TOKEN=TOKEN), tmp / "stderr")
    try:
        yield server
    finally:
        rc = server.stop()
        assert rc == 0, server.stderr()
        assert "Traceback" not in server.stderr(), server.stderr()


@pytest.fixture(scope="module")
def api_schema(live_server: ServeProcess) -> Any:
    return schemathesis.openapi.from_url(live_server.url + "/openapi.json")


#: Every operation the server publishes; the prepared context only where installed.
OPERATIONS = [("POST", "/v1/topic-memory/flush"), ("POST", "/v1/topic-memory/search"),
              ("POST", "/v1/topic-memory/get"), ("POST", "/v1/context/prepare"),
              ("GET", "/v1/health"),
              ("GET", "/v1/memory/list"), ("GET", "/v1/memory/show"),
              ("GET", "/v1/memory/changes"), ("POST", "/v1/memory/search"),
              ("POST", "/v1/memory/expand"), ("GET", "/v1/memory/cite"),
              ("POST", "/v1/memory/validate-citation"), ("POST", "/v1/memory/remember"),
              ("POST", "/v1/memory/revise"), ("POST", "/v1/memory/forget"),
              ("POST", "/v1/memory/reactivate"), ("POST", "/v1/memory/organize"),
              ("POST", "/v1/memory/retire"),
              ("POST", "/v1/sources/add"), ("GET", "/v1/sources/show"),
              ("POST", "/v1/topic-memory/status"), ("POST", "/v1/topic-memory/unblock")]
#: Operations of work that lands separately: tested where the server publishes them.
OPTIONAL = {("POST", "/v1/context/prepare"), ("POST", "/v1/topic-memory/status"),
            ("POST", "/v1/topic-memory/unblock")}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


#: Operations without input, so without invalid requests.
NO_INPUT = {"/v1/health", "/v1/memory/list"}
#: (method, path, mode).
CASES = [(m, p, mode) for m, p in OPERATIONS
         for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
         if not (p in NO_INPUT and mode is GenerationMode.NEGATIVE)]


@pytest.mark.parametrize("method,path,mode", CASES,
                         ids=[f"{p}-{'valid' if mode is GenerationMode.POSITIVE else 'invalid'}"
                              for _m, p, mode in CASES])
def test_every_operation_conforms_and_never_fails_with_a_server_error(
        api_schema: Any, method: str, path: str, mode: GenerationMode) -> None:
    """schemathesis' generated requests (valid ones, and ones violating the schema) for
    one operation: no 5xx, only documented statuses, JSON, bodies as declared. (The
    pytest plugin's lazy ``from_fixture`` loader does not run under pytest 9, so the
    operation's Hypothesis strategy is driven directly.)"""
    if path not in api_schema.raw_schema["paths"]:
        pytest.skip(f"{path} is not served by this installation")
    operation = api_schema[path][method]
    auth = {"Authorization": f"Bearer {TOKEN}"}

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        case.call_and_validate(headers=auth, checks=CHECKS)

    run()


def test_the_schema_covers_the_topic_endpoints(api_schema: Any,
                                               live_server: ServeProcess) -> None:
    status, spec = live_server.call("/openapi.json")
    assert status == 200
    assert {"/v1/topic-memory/flush", "/v1/topic-memory/search",
            "/v1/topic-memory/get"} <= set(spec["paths"])


def test_every_published_operation_is_exercised_here(live_server: ServeProcess) -> None:
    """The OpenAPI document and :data:`OPERATIONS` stay in step: a new route is tested
    by schemathesis from the day it is published."""
    _status, spec = live_server.call("/openapi.json")
    published = {(method.upper(), path) for path, ops in spec["paths"].items()
                 for method in ops}
    assert published - set(OPERATIONS) == set()
    assert set(OPERATIONS) - OPTIONAL - published == set()


def test_the_token_is_enforced_on_every_operation(live_server: ServeProcess) -> None:
    _status, spec = live_server.call("/openapi.json")
    operations = [(path, method) for path, ops in spec["paths"].items() for method in ops
                  if path != "/v1/health"]
    assert len(operations) >= 18
    for path, method in operations:
        status, body = live_server.call(path, {} if method == "post" else None)
        assert status == 401 and body["error"]["code"] == "unauthorized", path


