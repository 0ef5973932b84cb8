"""``POST /v1/topic-memory/status`` and ``/unblock`` in process (Starlette's TestClient)
over a real SQLite Topic backend: both need the bearer token; status answers per Scope
the Source head, Cursor, Pending, the frontier's budget row and its last failure code,
and names a blocked Scope's Source with the commands that unblock it; unblock records
the operator's decision (who, why) and applies it, 422 naming the field for a refused
decision, 409 for a stale frontier."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from powercontext import make_source
from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.core.topic.processing import CODE_COMPLEXITY
from powercontext.entrypoints.http.app import create_app
from powercontext.entrypoints.http.deps import Services
from powercontext.topic_service import TopicMemoryService

TOKEN = "test-token-processing"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
STATUS, UNBLOCK = "/v1/topic-memory/status", "/v1/topic-memory/unblock"
SCOPE, FINE = "project:stuck", "project:fine"


async def _seed(path: Path) -> None:
    svc = TopicMemoryService(SQLiteTopicBackend(str(path)))
    try:
        await svc.add_sources(SCOPE, [
            make_source(f"src_stuck_{i}", "chat_turn", f"user: note {i}") for i in (1, 2)])
        await svc.add_sources(FINE, [make_source("src_fine", "chat_turn", "user: hi")])
        grant = await svc.backend.begin_attempt(SCOPE, 0)
        await svc.backend.record_failure(grant, CODE_COMPLEXITY, through=1)
        assert await svc.flush(SCOPE) == "accepted"
    finally:
        await svc.close()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    path = tmp_path / "processing.db"
    asyncio.run(_seed(path))
    svc = TopicMemoryService(SQLiteTopicBackend(str(path)))
    services = Services(memory=None, topic=svc)
    yield TestClient(create_app(services, api_token=TOKEN), raise_server_exceptions=False)
    asyncio.run(svc.close())


def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code, body
    return body["error"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("path,body", [
    (STATUS, {}),
    (UNBLOCK, {"scope_id": SCOPE, "action": "skip", "frontier": 0, "position": 1,
               "decided_by": "x", "reason": "y"}),
])
def test_both_operations_need_the_token(client, path, body) -> None:
    _error(client.post(path, json=body), 401, "unauthorized")
    _error(client.post(path, json=body, headers={"Authorization": "Bearer no"}), 401,
           "unauthorized")
    assert client.post(STATUS, json={}, headers=AUTH).status_code == 200


def test_status_answers_every_scope_and_names_the_blocked_source(client) -> None:
    body = client.post(STATUS, json={}, headers=AUTH).json()
    by_scope = {s["scope_id"]: s for s in body["scopes"]}
    assert set(by_scope) == {SCOPE, FINE} and body["truncated"] is False
    stuck = by_scope[SCOPE]
    assert (stuck["source_head"], stuck["cursor"]) == (2, 0)
    assert stuck["pending"] == {"source_through": 2, "flush_generation": 1,
                                "handled_flush_generation": 0}
    assert stuck["budget"]["failure_code"] == CODE_COMPLEXITY and stuck["budget"]["terminal"]
    (blocked,) = body["blocked"]
    assert (blocked["scope_id"], blocked["position"], blocked["source_id"]) == (
        SCOPE, 1, "src_stuck_1")
    assert blocked["commands"] == [
        "powercontext topic unblock --scope project:stuck --skip 1 --by NAME "
        "--reason 'WHY'"]
    one = client.post(STATUS, json={"scope_id": FINE}, headers=AUTH).json()
    assert [s["scope_id"] for s in one["scopes"]] == [FINE] and one["blocked"] == []
    _error(client.post(STATUS, json={"scope_id": " x"}, headers=AUTH), 422, "invalid_input")


def test_unblock_records_the_decision_and_refuses_what_it_must(client) -> None:
    def post(**kw: Any) -> Any:
        body = {"scope_id": SCOPE, "action": "skip", "frontier": 0, "position": 1,
                "decided_by": "ops", "reason": "a pasted log", **kw}
        return client.post(UNBLOCK, json=body, headers=AUTH)

    assert _error(post(action="grant", position=None), 422, "invalid_input")["field"] == "grant"
    assert _error(post(position=2), 422, "invalid_input")["field"] == "skip"
    assert _error(post(reason=" "), 422, "invalid_input")["field"] == "reason"
    assert _error(post(action="reset"), 422, "invalid_input")["field"] == "action"
    _error(post(frontier=1, position=2), 409, "conflict")
    _error(post(scope_id=FINE, position=1), 422, "invalid_input")
    done = post()
    assert done.status_code == 200, done.text
    decision = done.json()["decision"]
    assert (decision["action"], decision["position"], decision["source_id"],
            decision["decided_by"], decision["reason"]) == (
        "skip", 1, "src_stuck_1", "ops", "a pasted log")
    after = client.post(STATUS, json={"scope_id": SCOPE}, headers=AUTH).json()
    assert after["blocked"] == [] and after["scopes"][0]["cursor"] == 1
    assert after["scopes"][0]["pending"]["flush_generation"] == 2  # flushed: it resumes
    _error(post(), 422, "invalid_input")  # not stopped any more
