"""The HTTP API in process (Starlette's TestClient) over a real SQLite Topic backend
(Topic Memory RFC, "HTTP API"; TOPIC-MEMORY.md, "Auth"): every status the routes
answer, each with the one error body ``{"error": {"code", "message", "field"}}``:
401 without / with a wrong bearer token, 422 for every kind of bad body (wrong types,
extra and missing fields, oversized strings, bad references, bad JSON), 404 for an
unknown or foreign reference, 503 when Topic processing is unavailable or the database
fails, 500 ``internal`` (nothing leaked) for an unexpected fault, and the 200 shapes.
A Hypothesis property posts arbitrary JSON to every route: never a 500."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core import canonical, errors
from powercontext.core.models import SourceRef
from powercontext.entrypoints.http.app import MAX_BODY_BYTES, create_app
from powercontext.entrypoints.http.deps import Services
from powercontext.entrypoints.http.errors import status_for
from powercontext.topic_service import TopicMemoryService

SCOPE = "project:http"
OTHER = "project:elsewhere"
EMPTY = "project:empty"
TOKEN = "test-token-xyz"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FLUSH, SEARCH, GET = ("/v1/topic-memory/flush", "/v1/topic-memory/search",
                      "/v1/topic-memory/get")
TOPICS = {
    SCOPE: [("Release process", "How releases are cut and uploaded.",
             "We cut a release by tagging main; make release uploads the wheel."),
            ("Deploy schedule", "When the web service deploys.",
             "Deploys go out on Tuesdays after the release checklist passes.")],
    OTHER: [("Release elsewhere", "Another Scope's release notes.",
             "This release lives in another Scope and must never be returned.")],
}


async def _seed(svc: TopicMemoryService) -> dict[str, list[dict[str, Any]]]:
    """Sources and published Topics per Scope; returns each Scope's refs as JSON."""
    out: dict[str, list[dict[str, Any]]] = {}
    n = 0
    for scope, topics in TOPICS.items():
        out[scope] = []
        for title, summary, detail in topics:
            n += 1
            src = canonical.make_source(f"src_http_{n}", "user_note", detail)
            await svc.add_sources(scope, [src])
            (rev,) = await svc._publish(scope, creates=[(
                {"title": title, "summary": summary, "detail": detail},
                [SourceRef(src.source_id, src.content_hash)])])
            out[scope].append({"family": rev.ref.family, "artifact_id": rev.ref.artifact_id,
                               "revision": rev.ref.revision})
    return out


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    path = tmp_path_factory.mktemp("http") / "topics.db"
    svc = TopicMemoryService(SQLiteTopicBackend(str(path)))
    refs = asyncio.run(_seed(svc))
    asyncio.run(svc.close())
    yield path, refs


@pytest.fixture
def topic_service(seeded: tuple[Path, Any]) -> Iterator[TopicMemoryService]:
    svc = TopicMemoryService(SQLiteTopicBackend(str(seeded[0])))
    yield svc
    asyncio.run(svc.close())


def _client(topic: Any, *, token: str | None = TOKEN, supervisor: Any = None,
            available: bool = True) -> TestClient:
    services = Services(memory=None, topic=topic, supervisor=supervisor,
                        processing_available=available,
                        unavailable_reason=None if available else
                        "Topic processing is unavailable on this server: test")
    return TestClient(create_app(services, api_token=token), raise_server_exceptions=False)


@pytest.fixture
def client(topic_service: TopicMemoryService) -> TestClient:
    return _client(topic_service)


def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "field"}
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


# ------------------------------------------------------------------ token


def test_health_and_openapi_need_no_token(client: TestClient) -> None:
    health = client.get("/v1/health")
    assert health.status_code == 200
    assert health.json()["status"] == "ok" and health.json()["role"] == "all"
    doc = client.get("/openapi.json")
    assert doc.status_code == 200
    spec = doc.json()
    assert spec["info"]["title"] == "powercontext"
    assert {FLUSH, SEARCH, GET} <= set(spec["paths"])
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


@pytest.mark.parametrize("path,body", [
    (FLUSH, {"scope_id": SCOPE}),
    (SEARCH, {"scope_id": SCOPE, "query": "release"}),
    (GET, {"scope_id": SCOPE, "artifact": {"family": "topic-memory",
                                           "artifact_id": "topic_art_x", "revision": 1}}),
])
@pytest.mark.parametrize("headers", [
    {}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
    {"Authorization": "Bearer "}, {"Authorization": TOKEN},
    {"Authorization": f"Bearer {TOKEN}x"},
], ids=["none", "wrong", "basic", "empty", "no-scheme", "longer"])
def test_a_missing_or_wrong_token_is_401(client: TestClient, path: str,
                                         body: dict[str, Any],
                                         headers: dict[str, str]) -> None:
    response = client.post(path, json=body, headers=headers)
    _error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_bad_body_without_a_token_is_401_not_422(client: TestClient) -> None:
    """The token is checked before the body: an unauthenticated caller learns nothing
    about the request shape."""
    _error(client.post(SEARCH, json={"bogus": 1}), 401, "unauthorized")


def test_a_non_ascii_token_is_compared_as_utf8_bytes(
        topic_service: TopicMemoryService) -> None:
    token = "t\u00f6ken-\u2603"
    with _client(topic_service, token=token) as c:
        ok = c.post(SEARCH, json={"scope_id": SCOPE, "query": "release"},
                    headers={"Authorization": b"Bearer " + token.encode("utf-8")})
        assert ok.status_code == 200, ok.text
        _error(c.post(SEARCH, json={"scope_id": SCOPE, "query": "release"},
                      headers={"Authorization": b"Bearer " + token.encode("latin-1",
                                                                           "replace")}),
               401, "unauthorized")


def test_no_token_configured_means_no_check(topic_service: TopicMemoryService) -> None:
    with _client(topic_service, token=None) as c:
        assert c.post(SEARCH, json={"scope_id": SCOPE, "query": "release"}).status_code == 200


# ------------------------------------------------------------------ 200 shapes


def test_search_returns_the_spec_shape_one_hit_per_topic_of_the_scope_only(
        client: TestClient, seeded: tuple[Path, Any]) -> None:
    response = client.post(SEARCH, json={"scope_id": SCOPE, "query": "release"},
                           headers=AUTH)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"hits", "channels"}
    assert body["channels"] == ["topic_fts", "detail_fts"]
    assert body["hits"], body
    mine = {r["artifact_id"] for r in seeded[1][SCOPE]}
    for hit in body["hits"]:
        assert set(hit) == {"artifact", "title", "summary", "snippet", "score", "matched_by"}
        assert set(hit["artifact"]) == {"family", "artifact_id", "revision"}
        assert hit["artifact"]["family"] == "topic-memory"
        assert hit["artifact"]["artifact_id"] in mine  # never another Scope's Topic
        assert isinstance(hit["score"], float)
        assert hit["matched_by"] and set(hit["matched_by"]) <= set(body["channels"])
    ids = [h["artifact"]["artifact_id"] for h in body["hits"]]
    assert len(ids) == len(set(ids))


def test_search_limit_bounds_the_hits(client: TestClient) -> None:
    response = client.post(SEARCH, json={"scope_id": SCOPE, "query": "release deploys",
                                         "limit": 1}, headers=AUTH)
    assert response.status_code == 200
    assert len(response.json()["hits"]) == 1


def test_get_returns_the_exact_revision_without_chunks(
        client: TestClient, seeded: tuple[Path, Any]) -> None:
    hit = client.post(SEARCH, json={"scope_id": SCOPE, "query": "release"},
                      headers=AUTH).json()["hits"][0]
    response = client.post(GET, json={"scope_id": SCOPE, "artifact": hit["artifact"]},
                           headers=AUTH)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"scope_id", "artifact", "title", "summary", "detail",
                         "content_hash", "sources", "based_on", "published_at"}
    assert body["artifact"] == hit["artifact"] and body["scope_id"] == SCOPE
    assert body["title"] == hit["title"] and body["summary"] == hit["summary"]
    assert body["detail"] in {d for _t, _s, d in TOPICS[SCOPE]}  # the complete detail
    assert body["based_on"] is None
    assert [set(s) for s in body["sources"]] == [{"source_id", "content_hash"}]
    assert "chunks" not in json.dumps(body)


def test_flush_is_accepted_coalesces_and_is_idle_for_an_empty_scope(
        topic_service: TopicMemoryService) -> None:
    with _client(topic_service) as c:
        for _ in range(2):
            response = c.post(FLUSH, json={"scope_id": SCOPE}, headers=AUTH)
            assert response.status_code == 200 and response.json() == {"status": "accepted"}
        assert c.post(FLUSH, json={"scope_id": EMPTY}, headers=AUTH).json() == {
            "status": "idle"}
    (st_,) = asyncio.run(topic_service.status(SCOPE))
    assert st_.pending is not None and st_.pending.flush_generation >= 2
    (empty,) = asyncio.run(topic_service.status(EMPTY))
    assert empty.pending is None  # idle wrote nothing


class _RecordingSupervisor:
    """Records notify_flush calls (the real Supervisor is exercised by its own tests
    and the live serve tests); ``fail`` makes it raise."""

    def __init__(self, fail: bool = False) -> None:
        self.flushed: list[str] = []
        self.fail = fail
        self.term = None

    def notify_flush(self, scope_id: str) -> None:
        self.flushed.append(scope_id)
        if self.fail:
            raise RuntimeError("notify failed")


def test_an_accepted_flush_wakes_the_supervisor_and_an_idle_one_does_not(
        topic_service: TopicMemoryService) -> None:
    sup = _RecordingSupervisor()
    with _client(topic_service, supervisor=sup) as c:
        assert c.post(FLUSH, json={"scope_id": SCOPE}, headers=AUTH).json()["status"] \
            == "accepted"
        assert c.post(FLUSH, json={"scope_id": EMPTY}, headers=AUTH).json()["status"] \
            == "idle"
        assert c.get("/v1/health").json()["supervisor"] == {"leader": False,
                                                            "generation": None}
    assert sup.flushed == [SCOPE]


def test_a_failing_supervisor_signal_does_not_fail_the_committed_flush(
        topic_service: TopicMemoryService) -> None:
    with _client(topic_service, supervisor=_RecordingSupervisor(fail=True)) as c:
        response = c.post(FLUSH, json={"scope_id": SCOPE}, headers=AUTH)
    assert response.status_code == 200 and response.json() == {"status": "accepted"}


# ------------------------------------------------------------------ 503 / 404 / 500


def test_flush_is_503_when_topic_processing_is_unavailable_and_writes_nothing(
        tmp_path: Path) -> None:
    svc = TopicMemoryService(SQLiteTopicBackend(str(tmp_path / "u.db")))
    try:
        src = canonical.make_source("src_u_1", "user_note", "some evidence")
        asyncio.run(svc.add_sources(SCOPE, [src]))
        (before,) = asyncio.run(svc.status(SCOPE))
        with _client(svc, available=False) as c:
            err = _error(c.post(FLUSH, json={"scope_id": SCOPE}, headers=AUTH), 503,
                         "topic_processing_unavailable")
            assert "unavailable" in err["message"]
            # bad input is still 422, and search still serves
            _error(c.post(FLUSH, json={"scope_id": " x"}, headers=AUTH), 422,
                   "invalid_input")
            assert c.post(SEARCH, json={"scope_id": SCOPE, "query": "evidence"},
                          headers=AUTH).status_code == 200
        (after,) = asyncio.run(svc.status(SCOPE))
        assert after == before
    finally:
        asyncio.run(svc.close())


@pytest.mark.parametrize("scope,which", [(SCOPE, "unknown"), (SCOPE, "foreign")])
def test_an_unknown_or_foreign_ref_is_404(client: TestClient, seeded: tuple[Path, Any],
                                          scope: str, which: str) -> None:
    # foreign: it exists, in another Scope, and is never leaked
    ref = (seeded[1][OTHER][0] if which == "foreign"
           else dict(seeded[1][SCOPE][0], revision=99))
    err = _error(client.post(GET, json={"scope_id": scope, "artifact": ref}, headers=AUTH),
                 404, "not_found")
    assert OTHER not in err["message"]


@pytest.mark.parametrize("exc,status,code", [
    (errors.BackendError("the database went away"), 503, "backend_unavailable"),
    (errors.RetrievalShapeError("hybrid without a model"), 503, "backend_unavailable"),
    (errors.CapabilityNotSupportedError("embedding model failed"), 503,
     "capability_not_supported"),
    (errors.WritesPausedError("rebuild running"), 503, "writes_paused"),
    (ConnectionResetError(104, "reset by peer mysql://u:pw@h"), 503, "backend_unavailable"),
    (errors.IntegrityError("hash mismatch"), 500, "integrity_error"),
])
def test_service_failures_map_to_their_status(topic_service: TopicMemoryService,
                                              monkeypatch: pytest.MonkeyPatch,
                                              exc: BaseException, status: int,
                                              code: str) -> None:
    async def failing(*_a: Any, **_k: Any) -> Any:
        raise exc

    monkeypatch.setattr(topic_service, "search", failing)
    with _client(topic_service) as c:
        err = _error(c.post(SEARCH, json={"scope_id": SCOPE, "query": "release"},
                            headers=AUTH), status, code)
    assert "pw@" not in err["message"]  # a driver's text never reaches the client


def test_an_unexpected_fault_is_500_internal_and_leaks_nothing(
        topic_service: TopicMemoryService, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    canary = "CANARY-7f3a-source-text"

    async def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError(f"bug while reading {canary}")

    monkeypatch.setattr(topic_service, "get", broken)
    caplog.set_level(logging.DEBUG)
    with _client(topic_service) as c:
        response = c.post(GET, json={"scope_id": SCOPE, "artifact": {
            "family": "topic-memory", "artifact_id": "topic_art_x", "revision": 1}},
            headers=AUTH)
    _error(response, 500, "internal")
    assert canary not in response.text
    assert canary not in caplog.text
    (record,) = [r for r in caplog.records if r.name == "powercontext.http"]
    assert record.exception_type == "RuntimeError"  # logged, without its text
    assert record.error_code == "internal" and "traceback" in record.getMessage()


def test_unknown_paths_and_methods_use_the_error_body(client: TestClient) -> None:
    _error(client.get("/v1/nothing-here"), 404, "not_found")
    _error(client.get(SEARCH, headers=AUTH), 405, "method_not_allowed")


# ------------------------------------------------------------------ 422


_REF = {"family": "topic-memory", "artifact_id": "topic_art_x", "revision": 1}
BAD_BODIES: list[tuple[str, str, Any, str | None]] = [
    # (id, path, body, field)
    ("scope-int", FLUSH, {"scope_id": 1}, "scope_id"),
    ("scope-null", FLUSH, {"scope_id": None}, "scope_id"),
    ("scope-list", FLUSH, {"scope_id": ["a"]}, "scope_id"),
    ("scope-missing", FLUSH, {}, "scope_id"),
    ("scope-empty", FLUSH, {"scope_id": ""}, "scope_id"),
    ("scope-space", FLUSH, {"scope_id": " a"}, "scope_id"),
    ("scope-control", FLUSH, {"scope_id": "a\u0007b"}, "scope_id"),
    ("scope-newline", SEARCH, {"scope_id": "a\nb", "query": "x"}, "scope_id"),
    ("scope-raw-long", FLUSH, {"scope_id": "s" * 1025}, "scope_id"),
    ("scope-nfc-long", FLUSH, {"scope_id": "s" * 257}, "scope_id"),
    ("extra-top", FLUSH, {"scope_id": SCOPE, "force": True}, "force"),
    ("extra-search", SEARCH, {"scope_id": SCOPE, "query": "x", "scope_ids": [SCOPE]},
     "scope_ids"),
    ("extra-ref", GET, {"scope_id": SCOPE, "artifact": dict(_REF, scope_id=SCOPE)},
     "artifact.scope_id"),
    ("query-missing", SEARCH, {"scope_id": SCOPE}, "query"),
    ("query-int", SEARCH, {"scope_id": SCOPE, "query": 5}, "query"),
    ("query-empty", SEARCH, {"scope_id": SCOPE, "query": ""}, "query"),
    ("query-oversized", SEARCH, {"scope_id": SCOPE, "query": "a " * 4097}, "query"),
    ("query-stopwords", SEARCH, {"scope_id": SCOPE, "query": "the of and"}, "query"),
    ("query-punctuation", SEARCH, {"scope_id": SCOPE, "query": "?!..."}, "query"),
    ("query-too-many-terms", SEARCH,
     {"scope_id": SCOPE, "query": " ".join(f"w{i}x" for i in range(65))}, "query"),
    ("limit-zero", SEARCH, {"scope_id": SCOPE, "query": "x", "limit": 0}, "limit"),
    ("limit-21", SEARCH, {"scope_id": SCOPE, "query": "x", "limit": 21}, "limit"),
    ("limit-str", SEARCH, {"scope_id": SCOPE, "query": "x", "limit": "10"}, "limit"),
    ("limit-float", SEARCH, {"scope_id": SCOPE, "query": "x", "limit": 10.0}, "limit"),
    ("limit-bool", SEARCH, {"scope_id": SCOPE, "query": "x", "limit": True}, "limit"),
    ("limit-null", SEARCH, {"scope_id": SCOPE, "query": "x", "limit": None}, "limit"),
    ("ref-missing", GET, {"scope_id": SCOPE}, "artifact"),
    ("ref-text", GET, {"scope_id": SCOPE, "artifact": "topic_art_x@1"}, "artifact"),
    ("ref-family-memory", GET, {"scope_id": SCOPE, "artifact": dict(_REF, family="memory")},
     "artifact.family"),
    ("ref-revision-0", GET, {"scope_id": SCOPE, "artifact": dict(_REF, revision=0)},
     "artifact.revision"),
    ("ref-revision-neg", GET, {"scope_id": SCOPE, "artifact": dict(_REF, revision=-3)},
     "artifact.revision"),
    ("ref-revision-str", GET, {"scope_id": SCOPE, "artifact": dict(_REF, revision="1")},
     "artifact.revision"),
    ("ref-revision-bool", GET, {"scope_id": SCOPE, "artifact": dict(_REF, revision=True)},
     "artifact.revision"),
    ("ref-revision-float", GET, {"scope_id": SCOPE, "artifact": dict(_REF, revision=1.0)},
     "artifact.revision"),
    ("ref-revision-huge", GET, {"scope_id": SCOPE, "artifact": dict(_REF, revision=2**64)},
     "artifact.revision"),
    ("ref-id-memory", GET, {"scope_id": SCOPE, "artifact": dict(_REF, artifact_id="mem_x")},
     "artifact.artifact_id"),
    ("ref-id-non-ascii", GET,
     {"scope_id": SCOPE, "artifact": dict(_REF, artifact_id="topic_art_\u00e9")},
     "artifact.artifact_id"),
    ("ref-id-space", GET,
     {"scope_id": SCOPE, "artifact": dict(_REF, artifact_id="topic_art_a b")},
     "artifact.artifact_id"),
    ("ref-id-long", GET,
     {"scope_id": SCOPE, "artifact": dict(_REF, artifact_id="topic_art_" + "a" * 200)},
     "artifact.artifact_id"),
    ("ref-missing-revision", GET,
     {"scope_id": SCOPE, "artifact": {"family": "topic-memory", "artifact_id": "topic_art_x"}},
     "artifact.revision"),
    ("body-list", FLUSH, [SCOPE], None),
    ("body-string", FLUSH, SCOPE, None),
    ("body-null", FLUSH, None, None),
    ("body-number", SEARCH, 7, None),
]


@pytest.mark.parametrize("path,body,field", [b[1:] for b in BAD_BODIES],
                         ids=[b[0] for b in BAD_BODIES])
def test_every_kind_of_bad_body_is_422_naming_the_field(client: TestClient, path: str,
                                                        body: Any,
                                                        field: str | None) -> None:
    err = _error(client.post(path, json=body, headers=AUTH), 422, "invalid_input")
    assert err["field"] == field, err


@pytest.mark.parametrize("raw,content_type", [
    (b"{bad json", "application/json"),
    (b'{"scope_id": "a",}', "application/json"),
    (b"", "application/json"),
    (b'{"scope_id": "\\ud800"}', "application/json"),  # a lone surrogate
    (b"\xff\xfe{}", "application/json"),  # not UTF-8
    (b"\xb5{", "application/json"),  # not UTF-8 (found by schemathesis: was a 400)
    (b'{"scope_id": "a"}', "text/plain"),
    (b'{"scope_id": "a"}', None),
    (b"scope_id=a", "application/x-www-form-urlencoded"),
], ids=["truncated", "trailing-comma", "empty", "surrogate", "not-utf8", "not-utf8-latin1",
        "text-plain", "no-content-type", "form"])
def test_bad_json_or_a_non_json_body_is_422(client: TestClient, raw: bytes,
                                            content_type: str | None) -> None:
    headers = dict(AUTH)
    if content_type:
        headers["Content-Type"] = content_type
    _error(client.post(FLUSH, content=raw, headers=headers), 422, "invalid_input")


def test_a_body_over_the_limit_is_413_before_it_is_read(client: TestClient) -> None:
    big = json.dumps({"scope_id": SCOPE, "query": "x" * MAX_BODY_BYTES}).encode()
    err = _error(client.post(SEARCH, content=big,
                             headers={**AUTH, "Content-Type": "application/json"}),
                 413, "invalid_input")
    assert str(MAX_BODY_BYTES) in err["message"]


# ------------------------------------------------------------------ properties

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12),
                                                                inner, max_size=4),
    max_leaves=12)
_BODIES = st.one_of(
    _JSON,
    st.fixed_dictionaries({"scope_id": _JSON}, optional={"query": _JSON, "limit": _JSON,
                                                         "artifact": _JSON}),
    st.fixed_dictionaries({"scope_id": st.text(max_size=300), "query": st.text(max_size=60)},
                          optional={"limit": st.integers()}),
    st.fixed_dictionaries({"scope_id": st.text(max_size=40), "artifact": st.fixed_dictionaries(
        {"family": st.sampled_from(["topic-memory", "memory", ""]),
         "artifact_id": st.text(max_size=40), "revision": st.integers()})}),
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from([FLUSH, SEARCH, GET]), body=_BODIES)
def test_any_json_body_gets_a_typed_answer_never_a_500(client: TestClient, path: str,
                                                       body: Any) -> None:
    """Invariant: whatever JSON a client sends, the answer is 200, or 404 / 422 with
    the error body; bad input is never a 500."""
    response = client.post(path, json=body, headers=AUTH)
    assert response.status_code in (200, 404, 422), (response.status_code, response.text)
    if response.status_code != 200:
        _error(response, response.status_code,
               "not_found" if response.status_code == 404 else "invalid_input")


def test_status_for_maps_every_typed_error_once() -> None:
    assert status_for(errors.SecretDetectedError("sources[0].content", "aws", "AWS key",
                                                 1))[:2] == (422, "invalid_input")
    assert status_for(errors.InvalidInputError("scope_id", "bad"))[3] == "scope_id"
    assert status_for(errors.ArtifactNotFoundError("x"))[:2] == (404, "not_found")
    assert status_for(errors.TopicProcessingUnavailableError("no provider"))[:2] == (
        503, "topic_processing_unavailable")
    assert status_for(errors.SupervisorUnavailableError("held by pid 1"))[:2] == (
        503, "topic_processing_unavailable")
    assert status_for(errors.RevisionConflictError("raced"))[:2] == (409, "conflict")
    assert status_for(errors.CommitOutcomeUnknownError("lost"))[:2] == (
        503, "backend_unavailable")
    assert status_for(ValueError("x"))[:2] == (422, "invalid_input")
    assert status_for(KeyError("secret"))[:3] == (
        500, "internal", "internal error (logged on the server)")
