"""The dashboard's Evidence, Scopes/Topics and Processing pages (issue 17) in process
(Starlette's TestClient) over one real SQLite file holding a Memory and Topics: HTML
pages and their JSON twins, escaping of stored text (a stored ``<script>`` renders as
text), a Topic's Markdown sanitised, the Revision history with its based-on chain and
cited Sources, the flush button (same origin only) with the status change visible,
terminal budget frontiers highlighted, and the login redirect / 401."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.dashboard import start_tags
from support.dashboard_more import ORIGIN, QSCOPE, SCOPE, TERMINAL, TOKEN, XSS, seed

from powercontext import MemoryService
from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend
from powercontext.entrypoints.http.app import create_app
from powercontext.entrypoints.http.deps import Services
from powercontext.topic_service import TopicMemoryService


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("dash") / "dash.db"
    return path, asyncio.run(seed(SQLiteMemoryBackend(str(path)),
                                  SQLiteTopicBackend(str(path))))


@pytest.fixture
def services(seeded: tuple[Path, dict[str, Any]]) -> Iterator[Services]:
    path = seeded[0]
    svc = Services(memory=MemoryService(SQLiteMemoryBackend(str(path))),
                   topic=TopicMemoryService(SQLiteTopicBackend(str(path))))
    yield svc
    asyncio.run(svc.memory.close())
    asyncio.run(svc.topic.close())


@pytest.fixture
def client(services: Services) -> TestClient:
    return TestClient(create_app(services, api_token=None), raise_server_exceptions=False)


def _json(client: TestClient, url: str, status: int = 200) -> Any:
    r = client.get(url + ("&" if "?" in url else "?") + "format=json")
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


def _html(client: TestClient, url: str, status: int = 200) -> str:
    r = client.get(url)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("text/html")
    return r.text



def _no_stored_markup(html: str) -> None:
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#39;pwned&#39;)" in html
    for tag, attrs in start_tags(html):
        assert tag != "img"
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        assert not (attrs.get("href") or "").lower().startswith("javascript:")
        if tag == "script":
            assert attrs.get("src") == "/ui/static/dashboard.js"


# ------------------------------------------------------------------ Evidence


def test_source_page_shows_escaped_content_and_every_citation(client, seeded) -> None:
    refs = seeded[1]
    html = _html(client, "/ui/sources/src_dash_1")
    _no_stored_markup(html)
    assert "&lt;b&gt;a.py&lt;/b&gt;" in html  # metadata escaped too
    aid = refs["memory"].artifact_id
    assert f'href="/ui/memories/{aid}/entries/' in html
    r2 = refs["r2"].ref
    for rev in (1, 2):
        assert (f'href="/ui/topics/{r2.artifact_id}?scope={QSCOPE}&amp;revision={rev}"'
                in html)
    data = _json(client, "/ui/sources/src_dash_1")
    assert data["source"]["content"] == "evidence " + XSS
    assert data["scope"] == {"scope_id": SCOPE, "position": 1, "lineage_only": False}
    assert [v["text"] for v in data["entry_versions"]] == ["entry text " + XSS]
    assert [(t["artifact_id"], t["revision"]) for t in data["topic_revisions"]] == [
        (r2.artifact_id, 1), (r2.artifact_id, 2)]
    only2 = _json(client, "/ui/sources/src_dash_2")
    assert [t["revision"] for t in only2["topic_revisions"]] == [2]
    assert only2["entry_versions"] == []


def test_unknown_source_is_a_404_page_and_the_api_error_body(client) -> None:
    assert "404" in _html(client, "/ui/sources/src_nowhere", 404)
    body = _json(client, "/ui/sources/src_nowhere", 404)
    assert body["error"]["code"] == "not_found"
    assert _json(client, "/ui/sources/bad%20id", 422)["error"]["code"] == "invalid_input"


# ------------------------------------------------------------------ Scopes and Topics


def test_scopes_page_lists_every_scope_with_counts(client) -> None:
    data = _json(client, "/ui/scopes")
    assert data["scopes"] == [
        {"scope_id": TERMINAL, "source_head": 1, "topics": 0, "revisions": 0},
        {"scope_id": SCOPE, "source_head": 2, "topics": 1, "revisions": 2}]
    html = _html(client, "/ui/scopes")
    assert f'href="/ui/topics?scope={QSCOPE}"' in html


def test_topics_list_search_and_plots(client, seeded) -> None:
    r2 = seeded[1]["r2"]
    data = _json(client, f"/ui/topics?scope={QSCOPE}")
    assert data["total"] == 1
    assert data["topics"][0] | {"published_at": None} == {
        "artifact_id": r2.ref.artifact_id, "revisions": 2, "title": "Release process",
        "summary": "How we release now", "sources": 2, "published_at": None}
    assert [p["y"] for p in data["publications_per_day"]] in ([2], [1, 1])
    assert sum(p["y"] for p in data["sources_per_day"]) == 2  # the Scope's two Sources
    html = _html(client, f"/ui/topics?scope={QSCOPE}")
    assert "Topic publications per day" in html and "Sources per day" in html
    assert html.count("<svg") == 2
    hits = _json(client, f"/ui/topics?scope={QSCOPE}&q=release")["search"]["hits"]
    assert [h["artifact"]["artifact_id"] for h in hits] == [r2.ref.artifact_id]
    assert "Hits for" in _html(client, f"/ui/topics?scope={QSCOPE}&q=release")
    assert _json(client, "/ui/topics", 422)["error"]["code"] == "invalid_input"


def test_topic_page_renders_sanitised_markdown_and_the_history(client, seeded) -> None:
    r1, r2 = seeded[1]["r1"], seeded[1]["r2"]
    url = f"/ui/topics/{r2.ref.artifact_id}?scope={QSCOPE}"
    html = _html(client, url)
    _no_stored_markup(html)
    assert "<h2>Steps</h2>" in html  # Markdown rendered
    assert 'href="https://example.org/x"' in html and 'href="javascript' not in html
    assert 'href="/ui/sources/src_dash_2"' in html
    assert "&amp;revision=1" in html  # the based-on link
    data = _json(client, url)
    assert data["topic"]["artifact"]["revision"] == 2 and data["head_revision"] == 2
    assert data["topic"]["detail"].startswith("## Steps")  # raw text in the twin
    assert XSS in data["topic"]["detail"]
    assert [h["artifact"]["revision"] for h in data["history"]] == [2, 1]
    assert data["history"][0]["based_on"] == {"family": "topic-memory",
                                              "artifact_id": r1.ref.artifact_id, "revision": 1}
    assert [s["source_id"] for s in data["history"][1]["sources"]] == ["src_dash_1"]
    old = _json(client, url + "&revision=1")
    assert old["topic"]["title"] == "Release " + XSS and old["topic"]["based_on"] is None
    assert "An older Revision" in _html(client, url + "&revision=1")
    assert _json(client, url + "&revision=3", 422)["error"]["field"] == "revision"
    assert _json(client, f"/ui/topics/{r2.ref.artifact_id}?scope=project:other",
                 404)["error"]["code"] == "not_found"
    _html(client, f"/ui/topics/topic_art_nothing?scope={QSCOPE}", 404)


# ------------------------------------------------------------------ Processing


def test_processing_page_highlights_terminal_frontiers(client) -> None:
    data = _json(client, "/ui/processing")
    by_scope = {s["scope_id"]: s for s in data["scopes"]}
    assert by_scope[TERMINAL]["budget"]["terminal"] is True
    assert by_scope[TERMINAL]["budget"]["failure_code"] == "source_complexity_limit"
    assert data["supervision"]["holder_id"] is None and data["flushed"] is None
    html = _html(client, "/ui/processing")
    row = re.search(r'<tr id="scope-\d+" class="terminal">(.*?)</tr>', html, re.S)
    assert row is not None and "source_complexity_limit" in row.group(1)
    assert "terminal frontier" in row.group(1) and TERMINAL in row.group(1)


def test_processing_page_shows_blocked_scopes_and_the_command_that_unblocks_them(
        client) -> None:
    """A terminal frontier is named with the Source it stops at and the `topic unblock`
    command (it said the frontier lasts "until new Sources arrive or an operator acts",
    and no command existed)."""
    data = _json(client, "/ui/processing")
    (blocked,) = [b for b in data["blocked"] if b["scope_id"] == TERMINAL]
    assert blocked["failure_code"] == "source_complexity_limit"
    assert blocked["position"] == blocked["source_after"] + 1
    (command,) = blocked["commands"]
    assert command.startswith(f"powercontext topic unblock --scope {TERMINAL} --skip "
                              f"{blocked['position']} ")
    html = _html(client, "/ui/processing")
    assert "Blocked Scopes" in html and "until new Sources arrive" not in html
    section = html.split("Blocked Scopes", 1)[1].split("<h2>", 1)[0]
    assert f"--skip {blocked['position']}" in section and TERMINAL in section


def test_processing_page_lists_blocked_scopes_first(client) -> None:
    """The blocked Scopes come before the Supervisor and the table, in the JSON twin's
    ``blocked`` shape (that of ``topic status --json``)."""
    data = _json(client, "/ui/processing")
    (blocked,) = [b for b in data["blocked"] if b["scope_id"] == TERMINAL]
    assert {"scope_id", "source_after", "through", "failure_code", "position",
            "source_id", "kind", "uri", "reason", "commands"} <= set(blocked)
    assert blocked["failure_code"] == "source_complexity_limit"
    assert [b["scope_id"] for b in data["blocked"]] == [TERMINAL], "only the stuck one"
    html = _html(client, "/ui/processing")
    assert html.index("Blocked Scopes") < html.index("Supervisor") < html.index(
        'class="processing"')
    section = html.split("<h2>Blocked Scopes</h2>", 1)[1].split("<h2>", 1)[0]
    assert TERMINAL in section and "source_complexity_limit" in section
    assert '<a href="/ui/processing" aria-current="page">' in html


def test_flush_needs_the_same_origin_and_shows_the_status(client) -> None:
    url = f"/ui/processing/flush?scope={QSCOPE}"
    before = {s["scope_id"]: s for s in _json(client, "/ui/processing")["scopes"]}[SCOPE]
    assert client.post(url).status_code == 403
    assert client.post(url, headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.post(url, headers={"Referer": "http://evil.example/ui"}).status_code == 403
    r = client.post(url, headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == f"/ui/processing?flushed={QSCOPE}&status=accepted"
    page = client.get(r.headers["location"])
    assert "Flush of" in page.text and "<strong>accepted</strong>" in page.text
    after = {s["scope_id"]: s for s in _json(client, "/ui/processing")["scopes"]}[SCOPE]
    assert (after["pending"]["flush_generation"]
            == (before["pending"]["flush_generation"] if before["pending"] else 0) + 1)
    twin = client.post(url, headers={**ORIGIN, "Accept": "application/json"})
    assert twin.json() == {"scope_id": SCOPE, "status": "accepted"}
    assert client.get(url).status_code == 405


def test_flush_refused_when_processing_is_unavailable(services) -> None:
    services.processing_available = False
    services.unavailable_reason = "no model configured"
    c = TestClient(create_app(services, api_token=None), raise_server_exceptions=False)
    r = c.post(f"/ui/processing/flush?scope={QSCOPE}", headers=ORIGIN)
    assert r.status_code == 503 and "no model configured" in r.text
    assert "disabled" in c.get("/ui/processing").text


# ------------------------------------------------------------------ auth


@pytest.mark.parametrize("url", ["/ui/sources/src_dash_1", "/ui/scopes",
                                 f"/ui/topics?scope={QSCOPE}", "/ui/processing"])
def test_pages_need_a_session_or_the_bearer_token(services, url) -> None:
    c = TestClient(create_app(services, api_token=TOKEN), raise_server_exceptions=False)
    r = c.get(url, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/login?next=")
    assert c.get(url, headers={"Accept": "application/json"}).status_code == 401
    assert c.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get(url, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    flush = c.post(f"/ui/processing/flush?scope={QSCOPE}", headers=ORIGIN,
                   follow_redirects=False)
    assert flush.status_code in (303, 401) and flush.headers.get("location", "").startswith(
        "/ui/login")


def test_a_topic_only_server_still_shows_sources_and_topic_citations(seeded) -> None:
    topic = TopicMemoryService(SQLiteTopicBackend(str(seeded[0])))
    try:
        c = TestClient(create_app(Services(memory=None, topic=topic), api_token=None),
                       raise_server_exceptions=False)
        data = _json(c, "/ui/sources/src_dash_2")
        assert data["source"]["source_id"] == "src_dash_2" and data["entry_versions"] == []
        assert [t["revision"] for t in data["topic_revisions"]] == [2]
    finally:
        asyncio.run(topic.close())
