"""The published API stays in step with what is written about it: ``docs/openapi.json``
is exactly the document ``GET /openapi.json`` answers (less ``info.version``);
``docs/serving.md`` names every operation; every operation but health needs the
bearer token through :func:`require_token` and documents the one error body; every
operation is reached by the schemathesis test's list."""

from __future__ import annotations

import json
from pathlib import Path

from powercontext.entrypoints.http.app import api_routers, create_app
from powercontext.entrypoints.http.deps import Services, require_token
from powercontext.entrypoints.http.openapi import document

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = ".venv/bin/python -m powercontext.entrypoints.http.openapi > docs/openapi.json"


def _operations(spec: dict[str, object]) -> set[tuple[str, str]]:
    paths = spec["paths"]
    assert isinstance(paths, dict)
    return {(method.upper(), path) for path, ops in paths.items() for method in ops}


def test_the_checked_in_openapi_document_is_the_served_one() -> None:
    checked_in = json.loads((ROOT / "docs" / "openapi.json").read_text("utf-8"))
    assert checked_in == document(), f"the API changed: run {REGENERATE}"


def test_serving_md_names_every_operation() -> None:
    text = (ROOT / "docs" / "serving.md").read_text("utf-8")
    missing = [f"{m} {p}" for m, p in sorted(_operations(document()))
               if f"{m} {p}" not in text]
    assert not missing, f"docs/serving.md does not name {missing}"


def test_every_operation_but_health_needs_the_token_and_documents_its_errors() -> None:
    """Each router of the API depends on require_token (so every route it holds, now or
    later, does), and the document says so for every operation: the bearer scheme and
    the one error body."""
    for router in api_routers():
        assert require_token in {d.dependency for d in router.dependencies}, router.prefix
    spec = create_app(Services(memory=None, topic=None), api_token="t").openapi()
    checked = 0
    for method, path in _operations(spec):
        if path == "/v1/health":
            continue
        operation = spec["paths"][path][method.lower()]
        assert operation["security"] == [{"HTTPBearer": []}], (method, path)
        for status in ("401", "404", "422"):
            schema = operation["responses"][status]["content"]["application/json"]["schema"]
            assert schema["$ref"].endswith("/ErrorBody"), (method, path, status)
        checked += 1
    assert checked >= 18


def test_the_schemathesis_test_lists_every_operation() -> None:
    text = (ROOT / "tests" / "e2e" / "test_serve_schemathesis.py").read_text("utf-8")
    for method, path in sorted(_operations(document())):
        assert f'("{method}", "{path}")' in text, (method, path)
