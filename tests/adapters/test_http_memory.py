"""The Memory over HTTP in process (Starlette's TestClient) on a real SQLite file with
the deterministic embedding model: every Memory operation of the CLI answers the CLI's
shapes; the token guards every route; writes are conditional (ETag / If-Match, 409 on
a stale head, nothing written); every Memory name form works; every search mode runs
and each hit carries its receipt; the CLI's limits and secret checks apply (422 naming
the field, nothing stored); unknown names are 404; metadata of evidence Sources is
kept. A Hypothesis property sends arbitrary JSON and query values: never a 500."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from powercontext.entrypoints.http.app import create_app
from powercontext.entrypoints.http.deps import Services
from powercontext.runtime import open_service, open_topic_service

TOKEN = "memory-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
KEY = "project:http-memory"
M = "/v1/memory"

#: (method, path, a valid-looking body or query) of every Memory and Source route.
ROUTES: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", f"{M}/list", {}),
    ("GET", f"{M}/show", {"memory": f"key:{KEY}"}),
    ("GET", f"{M}/changes", {"memory": f"key:{KEY}"}),
    ("GET", f"{M}/cite", {"memory": f"key:{KEY}", "entry_id": "mem_ent_x"}),
    ("POST", f"{M}/search", {"query": "make", "memories": [f"key:{KEY}"]}),
    ("POST", f"{M}/expand", {"memory": f"key:{KEY}", "entry_ids": ["mem_ent_x"]}),
    ("POST", f"{M}/validate-citation", {"memory_ref": {"artifact_id": "mem_art_x",
                                                       "revision": 1},
                                       "entry_id": "e", "entry_version_id": "v"}),
    ("POST", f"{M}/remember", {"key": KEY, "entries": [{"text": "x"}]}),
    ("POST", f"{M}/revise", {"memory": f"key:{KEY}", "entry_id": "e", "text": "x"}),
    ("POST", f"{M}/forget", {"memory": f"key:{KEY}", "entry_ids": ["e"]}),
    ("POST", f"{M}/reactivate", {"memory": f"key:{KEY}", "entry_ids": ["e"]}),
    ("POST", f"{M}/organize", {"memory": f"key:{KEY}"}),
    ("POST", f"{M}/retire", {"memory": f"key:{KEY}"}),
    ("POST", "/v1/sources/add", {"scope_id": KEY, "sources": [{"content": "x"}]}),
    ("GET", "/v1/sources/show", {"source_id": "src_x"}),
]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    db = tmp_path / "memory.db"
    memory = open_service(db, embedding="deterministic")
    topic = open_topic_service(db, embedding="deterministic")
    app = create_app(Services(memory=memory, topic=topic), api_token=TOKEN)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c
    asyncio.run(topic.close())
    asyncio.run(memory.close())


def _call(c: TestClient, method: str, path: str, data: dict[str, Any],
          headers: dict[str, str] | None = None) -> Any:
    headers = {**AUTH, **(headers or {})}
    if method == "GET":
        return c.get(path, params=data, headers=headers)
    return c.post(path, json=data, headers=headers)


def _ok(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _error(response: Any, status: int, code: str, field: str | None = None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    if field is not None:
        assert body["error"]["field"] == field, body
    return str(body["error"]["message"])


def _remember(c: TestClient, *entries: dict[str, Any], **extra: Any) -> Any:
    return _call(c, "POST", f"{M}/remember", {"key": KEY, "entries": list(entries), **extra})


def _show(c: TestClient, name: str = f"key:{KEY}", **query: Any) -> Any:
    return _call(c, "GET", f"{M}/show", {"memory": name, **query})


@pytest.mark.parametrize("method,path,data", ROUTES, ids=[p for _m, p, _d in ROUTES])
def test_every_memory_route_needs_the_token(client: TestClient, method: str, path: str,
                                            data: dict[str, Any]) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        if method == "GET":
            response = client.get(path, params=data, headers=headers)
        else:
            response = client.post(path, json=data, headers=headers)
        _error(response, 401, "unauthorized")


def test_remember_show_list_changes_and_the_etag(client: TestClient) -> None:
    written = _remember(client, {"text": "Run make test before review", "kind": "preference",
                                 "reason": "the team asked"},
                        {"text": "The API lives in adapters/http"})
    out = _ok(written)
    ref = out["memory_ref"]
    assert out["changed"] is True and ref["revision"] == 1
    assert [ch["op"] for ch in out["changes"]] == ["add", "add"]
    assert written.headers["etag"] == f'"{ref["artifact_id"]}@1"'
    shown = _show(client)
    view = _ok(shown)
    assert shown.headers["etag"] == written.headers["etag"]
    assert view["keys"] == [KEY] and view["head"] == ref == view["memory_ref"]
    assert view["active_entries"] == 2 == view["entries_total"]
    # rules first: the preference before the fact
    assert [e["kind"] for e in view["entries"]] == ["preference", "fact"]
    assert all(e["state"] == "active" for e in view["entries"])
    listed = _ok(_call(client, "GET", f"{M}/list", {}))["memories"]
    assert listed == [{"artifact_id": ref["artifact_id"], "keys": [KEY], "memory_ref": ref,
                       "active_entries": 2, "entries": 2}]
    changes = _ok(_call(client, "GET", f"{M}/changes", {"memory": f"key:{KEY}",
                                                         "since": 0}))
    assert changes["memory_ref"] == ref
    assert [rc["memory_ref"]["revision"] for rc in changes["revisions"]] == [1]
    # changes are sorted by entry_id (Memory RFC, canonical form), not by input order
    reasons = {ch["to_entry_version_id"]: ch["reason"]
               for ch in changes["revisions"][0]["changes"]}
    assert reasons == {e["entry_version_id"]: ("the team asked" if e["kind"] == "preference"
                                               else None) for e in view["entries"]}


def test_every_memory_name_form_names_the_same_revision(client: TestClient) -> None:
    ref = _ok(_remember(client, {"text": "first fact"}))["memory_ref"]
    _ok(_remember(client, {"text": "second fact"}))
    art = ref["artifact_id"]
    for name, revision in ((art, 2), (f"{art}@1", 1), (f"key:{KEY}", 2),
                           (f"key:{KEY}@1", 1)):
        shown = _show(client, name)
        assert _ok(shown)["memory_ref"] == {"artifact_id": art, "revision": revision}, name
        assert shown.headers["etag"] == f'"{art}@{revision}"'
    _error(_show(client, f"{art}@3"), 404, "not_found")
    _error(_show(client, "key:project:nobody"), 404, "not_found")
    _error(_show(client, "mem_art_unknown"), 404, "not_found")
    _error(_show(client, f"{art}@0"), 422, "invalid_input", "memory")


def test_a_write_with_a_stale_if_match_is_409_and_writes_nothing(client: TestClient) -> None:
    _ok(_remember(client, {"text": "Deploys go out on Tuesdays"}))
    first = _show(client)
    etag = first.headers["etag"]
    entry = _ok(first)["entries"][0]["entry_id"]
    revised = _call(client, "POST", f"{M}/revise",
                    {"memory": f"key:{KEY}", "entry_id": entry,
                     "text": "Deploys go out on Wednesdays", "reason": "moved"},
                    {"If-Match": etag})
    out = _ok(revised)
    assert out["changes"][0]["op"] == "revise" and out["changes"][0]["reason"] == "moved"
    assert revised.headers["etag"].endswith('@2"')
    # the old ETag is stale now: every write refuses it and nothing changes
    for path, body in ((f"{M}/forget", {"memory": f"key:{KEY}", "entry_ids": [entry]}),
                       (f"{M}/remember", {"key": KEY, "entries": [{"text": "x y"}]}),
                       (f"{M}/organize", {"memory": f"key:{KEY}"}),
                       (f"{M}/revise", {"memory": f"key:{KEY}", "entry_id": entry,
                                        "text": "Fridays"})):
        message = _error(_call(client, "POST", path, body, {"If-Match": etag}), 409,
                         "conflict")
        assert "@2" in message, message
    assert _ok(_show(client))["memory_ref"]["revision"] == 2
    # the current ETag (also in the W/-free list form) and * are accepted
    current = revised.headers["etag"]
    forgot = _call(client, "POST", f"{M}/forget", {"memory": f"key:{KEY}",
                                                    "entry_ids": [entry]},
                   {"If-Match": f'"mem_art_other@9", {current}'})
    assert _ok(forgot)["changes"][0]["op"] == "deactivate"
    back = _call(client, "POST", f"{M}/reactivate", {"memory": f"key:{KEY}",
                                                      "entry_ids": [entry]},
                 {"If-Match": "*"})
    assert _ok(back)["changes"][0]["op"] == "reactivate"
    # a kept kind: the revise did not turn the fact into anything else
    assert _ok(_show(client))["entries"][0]["kind"] == "fact"


def test_an_exact_revision_that_is_not_the_head_is_a_conflict(client: TestClient) -> None:
    ref = _ok(_remember(client, {"text": "one"}))["memory_ref"]
    _ok(_remember(client, {"text": "two"}))
    _error(_call(client, "POST", f"{M}/remember",
                 {"memory": f"{ref['artifact_id']}@1", "entries": [{"text": "three"}]}),
           409, "conflict")


@pytest.mark.parametrize("header", ["garbage", '"no-revision"', '"id@"', '"id@x"', ""])
def test_a_malformed_if_match_is_400(client: TestClient, header: str) -> None:
    _ok(_remember(client, {"text": "one"}))
    _error(_call(client, "POST", f"{M}/forget", {"memory": f"key:{KEY}",
                                                  "entry_ids": ["mem_ent_x"]},
                 {"If-Match": header}), 400, "invalid_input", "If-Match")


def test_if_match_on_a_write_that_creates_a_memory_is_409(client: TestClient) -> None:
    _error(_call(client, "POST", f"{M}/remember", {"entries": [{"text": "new"}]},
                 {"If-Match": "*"}), 409, "conflict")
    # a key that names no Memory yet: there is no head to match
    _error(_call(client, "POST", f"{M}/remember", {"key": KEY, "entries": [{"text": "n"}]},
                 {"If-Match": '"mem_art_x@1"'}), 404, "not_found")
    assert _ok(_call(client, "GET", f"{M}/list", {}))["memories"] == []


@pytest.mark.parametrize("mode", ["auto", "fts", "vector", "hybrid"])
def test_every_search_mode_answers_with_each_hits_receipt(client: TestClient,
                                                          mode: str) -> None:
    _ok(_remember(client, {"text": "Run make test before every review"},
                  {"text": "Releases are tagged on main"}))
    out = _ok(_call(client, "POST", f"{M}/search",
                    {"query": "make test review", "memories": [f"key:{KEY}"],
                     "mode": mode, "limit": 5}))
    assert out["untrusted"] is True and out["hits"]
    assert out["mode"] == ("hybrid" if mode == "auto" else mode)
    top = out["hits"][0]
    assert top["text"] == "Run make test before every review"
    assert [h["rank"] for h in out["hits"]] == list(range(1, len(out["hits"]) + 1))
    assert set(top["matched_by"]) <= {"fts", "vector"} and top["matched_by"]
    if "fts" in top["matched_by"]:
        assert top["matched_terms"] == ["make", "test", "review"]
    assert isinstance(top["score"], float)


def test_a_blank_query_and_bad_modes_are_refused(client: TestClient) -> None:
    _ok(_remember(client, {"text": "one"}))
    _error(_call(client, "POST", f"{M}/search", {"query": "   ", "memories": [f"key:{KEY}"]}),
           422, "invalid_input", "query")
    _error(_call(client, "POST", f"{M}/search", {"query": "a", "memories": [f"key:{KEY}"],
                                                  "mode": "magic"}), 422, "invalid_input",
           "mode")
    _error(_call(client, "POST", f"{M}/search", {"query": "a", "memories": []}), 422,
           "invalid_input", "memories")


def test_expand_cite_and_validate_a_citation(client: TestClient) -> None:
    _ok(_remember(client, {"text": "Cite me exactly"}))
    entry = _ok(_show(client))["entries"][0]
    cite = _ok(_call(client, "GET", f"{M}/cite", {"memory": f"key:{KEY}",
                                                   "entry_id": entry["entry_id"]}))
    assert cite == {"memory_ref": _ok(_show(client))["memory_ref"],
                    "entry_id": entry["entry_id"],
                    "entry_version_id": entry["entry_version_id"]}
    valid = _ok(_call(client, "POST", f"{M}/validate-citation", cite))
    assert valid["valid"] is True and valid["entry"]["text"] == "Cite me exactly"
    # the Memory moves on: the old citation stays valid
    _ok(_call(client, "POST", f"{M}/revise", {"memory": f"key:{KEY}",
                                               "entry_id": entry["entry_id"],
                                               "text": "Cite me again"}))
    assert _ok(_call(client, "POST", f"{M}/validate-citation", cite))["valid"] is True
    forged = dict(cite, entry_version_id="mem_ver_forged")
    invalid = _ok(_call(client, "POST", f"{M}/validate-citation", forged))
    assert invalid["valid"] is False and invalid["error"] == "InvalidCitationError"
    expanded = _ok(_call(client, "POST", f"{M}/expand", {"anchors": [cite]}))
    assert [e["text"] for e in expanded["entries"]] == ["Cite me exactly"]
    at_head = _ok(_call(client, "POST", f"{M}/expand", {"memory": f"key:{KEY}",
                                                         "entry_ids": [entry["entry_id"]]}))
    assert at_head["entries"][0]["text"] == "Cite me again"
    assert at_head["entries"][0]["version"] == 2
    _error(_call(client, "POST", f"{M}/expand", {"anchors": [forged]}), 422, "invalid_input")
    _error(_call(client, "GET", f"{M}/cite", {"memory": f"key:{KEY}",
                                               "entry_id": "mem_ent_nothere"}),
           404, "not_found")
    _error(_call(client, "POST", f"{M}/expand", {"entry_ids": ["x"]}), 422,
           "invalid_input", "memory")


def test_evidence_sources_keep_their_metadata(client: TestClient) -> None:
    out = _ok(_remember(client, {"text": "The Makefile has a test target"},
                        sources=[{"content": "test:\n\tpytest -q\n", "kind": "file",
                                  "uri": "file:///repo/Makefile",
                                  "metadata": {"path": "Makefile", "commit": "abc123"}}]))
    entry = _ok(_call(client, "GET", f"{M}/changes", {"memory": f"key:{KEY}"}))
    assert entry["revisions"][0]["changes"][0]["op"] == "add"
    version = _ok(_show(client))["entries"][0]
    (ref,) = version["source_refs"]
    source = _ok(_call(client, "GET", "/v1/sources/show", {"source_id": ref["source_id"]}))
    assert source["metadata"] == {"commit": "abc123", "path": "Makefile"}
    assert source["content_hash"] == ref["content_hash"] and source["untrusted"] is True
    assert out["changed"] is True


@pytest.mark.parametrize("body,field", [
    ({"entries": [{"text": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}]},
     "entries[0].text"),
    ({"entries": [{"text": "ok", "reason": "AKIA" + "ABCDEFGHIJKLMNOP"}]},
     "entries[0].reason"),
    ({"entries": [{"text": "ok"}], "sources": [
        {"content": "token = ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}]},
     "sources[0].content"),
    ({"entries": [{"text": "ok"}], "sources": [
        {"content": "fine",
         "metadata": {"auth": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}}]},
     "sources[0].metadata"),
])
def test_a_secret_anywhere_is_refused_and_nothing_is_stored(
        client: TestClient, body: dict[str, Any], field: str) -> None:
    message = _error(_call(client, "POST", f"{M}/remember", {"key": KEY, **body}), 422,
                     "invalid_input")
    assert "ghp_" not in message and "AKIA" not in message
    error_field = _call(client, "POST", f"{M}/remember", {"key": KEY, **body}).json()
    assert error_field["error"]["field"].startswith(field), error_field
    assert _ok(_call(client, "GET", f"{M}/list", {}))["memories"] == []


def test_the_clis_limits_apply(client: TestClient) -> None:
    _error(_remember(client, {"text": "x" * 8193}), 422, "invalid_input", "entries[0].text")
    _error(_remember(client, {"text": "ok", "reason": "r" * 513}), 422, "invalid_input")
    _error(_call(client, "POST", f"{M}/remember",
                 {"memory": "m", "key": KEY, "entries": [{"text": "ok"}]}),
           422, "invalid_input", "key")
    _error(_call(client, "POST", f"{M}/search", {"query": " ".join(f"w{i}" for i in range(65)),
                                                  "memories": [f"key:{KEY}"]}),
           422, "invalid_input", "query")
    assert _ok(_call(client, "GET", f"{M}/list", {}))["memories"] == []


def test_organize_dedupes_and_forget_of_an_unknown_entry_is_404(client: TestClient) -> None:
    _ok(_remember(client, {"text": "same words"}))
    _ok(_call(client, "POST", f"{M}/remember", {"key": KEY, "entries": [{"text": "other"}]}))
    out = _ok(_call(client, "POST", f"{M}/organize", {"memory": f"key:{KEY}"}))
    assert out["changed"] is False and out["changes"] == []
    _error(_call(client, "POST", f"{M}/forget", {"memory": f"key:{KEY}",
                                                  "entry_ids": ["mem_ent_nothere"]}),
           404, "not_found")
    _error(_call(client, "POST", f"{M}/revise", {"memory": f"key:{KEY}",
                                                  "entry_id": "mem_ent_nothere",
                                                  "text": "x"}), 404, "not_found")


def test_sources_add_into_a_scope_and_refuse_secrets(client: TestClient) -> None:
    out = _ok(_call(client, "POST", "/v1/sources/add", {
        "scope_id": KEY, "sources": [{"content": "user: ship it", "kind": "chat_turn",
                                      "metadata": {"speaker": "user"}},
                                     {"content": "assistant: shipping"}]}))
    assert out["scope_id"] == KEY and [s["position"] for s in out["sources"]] == [1, 2]
    shown = _ok(_call(client, "GET", "/v1/sources/show",
                      {"source_id": out["sources"][0]["source_id"]}))
    assert shown["kind"] == "chat_turn" and shown["metadata"] == {"speaker": "user"}
    _error(_call(client, "POST", "/v1/sources/add", {
        "scope_id": KEY, "sources": [{"content": "fine"}, {
            "content": "key ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}]}),
        422, "invalid_input", "sources[1].content")
    _error(_call(client, "GET", "/v1/sources/show", {"source_id": "src_nothere"}), 404,
           "not_found")
    _error(_call(client, "POST", "/v1/sources/add", {"scope_id": " ", "sources": [
        {"content": "x"}]}), 422, "invalid_input", "scope_id")


def test_docs_page_serves_swagger_ui_from_this_server(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "/openapi.json" in page.text
    assert "/docs/assets/swagger-ui-bundle.js" in page.text
    assert "cdn." not in page.text and "https://" not in page.text.split("<body>")[0]
    bundle = client.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and len(bundle.content) > 100_000


#: JSON values (no NaN or infinity: a JSON body cannot hold them, the client refuses).
_JSON = st.recursive(st.none() | st.booleans() | st.integers()
                     | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                     max_leaves=12)
_FIELDS = st.sampled_from(["memory", "key", "entries", "text", "entry_id", "entry_ids",
                           "query", "memories", "mode", "limit", "anchors", "sources",
                           "steps", "reason", "kind", "memory_ref", "scope_id", "since",
                           "all", "source_id", "revise", "metadata"])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(route=st.sampled_from(ROUTES),
       body=st.dictionaries(_FIELDS, _JSON, max_size=5) | _JSON,
       if_match=st.none() | st.text(max_size=30))
def test_no_input_is_a_server_error(client: TestClient, route: tuple[str, str, Any],
                                    body: Any, if_match: str | None) -> None:
    method, path, _ = route
    headers = dict(AUTH)
    if if_match is not None and if_match.isprintable() and if_match.isascii():
        headers["If-Match"] = if_match
    if method == "GET":
        params = {k: str(v) for k, v in body.items()} if isinstance(body, dict) else {}
        response = client.get(path, params=params, headers=headers)
    else:
        response = client.post(path, json=body, headers=headers)
    assert response.status_code < 500, (path, body, response.text)
    assert set(response.json()) != {"detail"}, response.text


_EXAMPLE = iter(range(10**9))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(st.tuples(st.sampled_from(["read", "write", "write_any"]),
                                st.sampled_from(["a", "b"])), min_size=1, max_size=12))
def test_conditional_writes_follow_the_head_model(client: TestClient,
                                                  steps: list[tuple[str, str]]) -> None:
    """Two clients read and write one Memory in any order: a write whose If-Match is
    the head's ETag lands (the head moves on by one), any other ETag is 409 and changes
    nothing, ``*`` always lands; the head Revision equals the writes that landed."""
    key = f"project:model-{next(_EXAMPLE)}"
    first = _call(client, "POST", f"{M}/remember", {"key": key, "entries": [{"text": "r1"}]})
    head = 1
    art = _ok(first)["memory_ref"]["artifact_id"]
    held = {"a": first.headers["etag"], "b": first.headers["etag"]}
    for n, (op, who) in enumerate(steps):
        if op == "read":
            shown = _call(client, "GET", f"{M}/show", {"memory": f"key:{key}"})
            assert _ok(shown)["memory_ref"]["revision"] == head
            held[who] = shown.headers["etag"]
            continue
        tag = "*" if op == "write_any" else held[who]
        response = _call(client, "POST", f"{M}/remember",
                         {"key": key, "entries": [{"text": f"step {n} by {who}"}]},
                         {"If-Match": tag})
        if tag in ("*", f'"{art}@{head}"'):
            assert _ok(response)["memory_ref"] == {"artifact_id": art, "revision": head + 1}
            head += 1
            held[who] = response.headers["etag"]
        else:
            _error(response, 409, "conflict")
    shown = _ok(_call(client, "GET", f"{M}/show", {"memory": f"key:{key}"}))
    assert shown["memory_ref"]["revision"] == head
    assert shown["active_entries"] == head


_IDS = st.from_regex(r"mem_art_[0-9a-z]{1,26}", fullmatch=True)


@given(tags=st.lists(st.tuples(_IDS, st.integers(1, 2**53 - 1), st.booleans()),
                     min_size=1, max_size=5))
def test_if_match_lists_parse_to_their_strong_tags(tags: list[tuple[str, int, bool]]) -> None:
    from powercontext.entrypoints.http.memory_writes import parse_if_match

    header = ", ".join(f'{"W/" if weak else ""}"{a}@{r}"' for a, r, weak in tags)
    assert parse_if_match(header) == tuple(f"{a}@{r}" for a, r, weak in tags if not weak)


@given(header=st.text(max_size=40))
def test_any_if_match_text_parses_or_is_a_400(header: str) -> None:
    from powercontext.entrypoints.http.errors import ApiError
    from powercontext.entrypoints.http.memory_writes import parse_if_match

    try:
        parsed = parse_if_match(header)
    except ApiError as exc:
        assert (exc.status, exc.field) == (400, "If-Match")
    else:
        assert parsed is not None and all(isinstance(t, str) for t in parsed)
