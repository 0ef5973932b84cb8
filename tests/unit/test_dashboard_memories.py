"""The Memories pages of the dashboard (issue 17) in process over a real SQLite Memory
(support.dashboard): the list, one Memory's entries grouped by kind and paged, search
with the mode that ran, an entry's version chain with reason, evidence and citation,
citation validation, the Revision timeline, the diff; the JSON twin of each page equals
what the page shows; a stored ``<script>`` renders as text; 404/422 pages; a page reads
only the entry versions it shows."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.dashboard import ORIGIN, SCRIPT, TOKEN, client, seed

from powercontext.entrypoints.http.dashboard import memory_data as md

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("dash-mem") / "memory.db"
    return path, seed(path)


@pytest.fixture
def ui(db: tuple[Path, dict[str, Any]]) -> Iterator[TestClient]:
    c, svc = client(db[0])
    c.headers.update(AUTH)
    yield c
    asyncio.run(svc.close())


@pytest.fixture
def info(db: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    return db[1]


def _json(c: TestClient, url: str, status: int = 200) -> Any:
    r = c.get(url, headers={"Accept": "application/json"})
    assert r.status_code == status, r.text
    return r.json()


def test_root_redirects_to_the_memories(ui: TestClient) -> None:
    for path in ("/ui", "/ui/"):
        r = ui.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/ui/memories"


def test_the_list_names_every_memory_with_its_key_head_and_active_entries(
        ui: TestClient, info: dict[str, Any]) -> None:
    data = _json(ui, "/ui/memories")
    rows = {m["artifact_id"]: m for m in data["memories"]}
    assert set(rows) == {info["artifact_id"], info["other"]}
    mine = rows[info["artifact_id"]]
    assert mine["keys"] == ["repo:/work/dash"]
    assert mine["memory_ref"] == {"artifact_id": info["artifact_id"], "revision": info["head"]}
    assert (mine["entries"], mine["active_entries"]) == (info["entries"], info["entries"] - 1)
    assert mine["last_change"]["ops"] == {"deactivate": 1}
    assert data["sources"] == 2 and data["page"]["total"] == 2
    html = ui.get("/ui/memories").text
    assert "repo:/work/dash" in html and f'/ui/memories/{info["artifact_id"]}"' in html
    assert f">{info['entries'] - 1}<" in html


def test_the_memory_page_groups_one_page_of_entries_by_kind(
        ui: TestClient, info: dict[str, Any]) -> None:
    data = _json(ui, f"/ui/memories/{info['artifact_id']}")
    assert data["counts"] == {"active": info["entries"] - 1, "inactive": 1,
                              "entries": info["entries"]}
    assert data["page"]["pages"] == 2 and data["page"]["per_page"] == md.PER_PAGE
    kinds = [g["kind"] for g in data["groups"]]
    assert kinds == ["preference", "decision", "fact", "custom_kind", "working_note"]
    shown = [e for g in data["groups"] for e in g["entries"]]
    assert len(shown) == md.PER_PAGE and all(e["state"] == "active" for e in shown)
    assert all(e["kind"] == g["kind"] for g in data["groups"] for e in g["entries"])
    second = _json(ui, f"/ui/memories/{info['artifact_id']}?page=2")
    rest = [e for g in second["groups"] for e in g["entries"]]
    assert len(rest) == info["entries"] - 1 - md.PER_PAGE
    ids = {e["entry_id"] for e in shown} | {e["entry_id"] for e in rest}
    assert len(ids) == info["entries"] - 1 and info["forgotten"] not in ids
    # newest first: the entry added last is on page 1
    assert info["script_entry"] in {e["entry_id"] for e in shown}
    html = ui.get(f"/ui/memories/{info['artifact_id']}").text
    assert "page 1 of 2" in html and 'rel="next"' in html
    assert 'href="/ui/memories/' + info["artifact_id"] + '?page=2"' in html


def test_the_state_filter_shows_the_forgotten_entry(ui: TestClient,
                                                    info: dict[str, Any]) -> None:
    data = _json(ui, f"/ui/memories/{info['artifact_id']}?state=inactive")
    (group,) = data["groups"]
    assert [e["entry_id"] for e in group["entries"]] == [info["forgotten"]]
    everything = _json(ui, f"/ui/memories/{info['artifact_id']}?state=all")
    assert everything["page"]["total"] == info["entries"]


def test_a_page_reads_only_the_entry_versions_it_shows(
        db: tuple[Path, dict[str, Any]], info: dict[str, Any]) -> None:
    c, svc = client(db[0])
    asked: list[Any] = []
    real = svc.entries

    async def spy(memory: Any, entry_ids: Any = None) -> Any:
        asked.append(entry_ids)
        return await real(memory, entry_ids)

    svc.entries = spy  # type: ignore[method-assign]
    try:
        assert c.get(f"/ui/memories/{info['artifact_id']}?format=json",
                     headers=AUTH).status_code == 200
    finally:
        asyncio.run(svc.close())
    assert asked and all(ids is not None and len(ids) <= md.PER_PAGE for ids in asked)


def test_a_stored_script_renders_as_text_everywhere(ui: TestClient,
                                                    info: dict[str, Any]) -> None:
    base = f"/ui/memories/{info['artifact_id']}"
    escaped = "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"
    for url in (base, f"{base}?q=pwned&mode=fts", f"{base}/entries/{info['script_entry']}",
                f"{base}?entry={info['script_entry']}", f"{base}/diff?from=1&to=2"):
        html = ui.get(url).text
        assert "<script>alert" not in html and "<b>bold</b>" not in html, url
        assert escaped in html, url
    # the JSON twin carries the text as data, unchanged
    data = _json(ui, f"{base}/entries/{info['script_entry']}")
    assert data["versions"][0]["text"] == SCRIPT


def test_search_shows_the_mode_that_ran(ui: TestClient, info: dict[str, Any]) -> None:
    base = f"/ui/memories/{info['artifact_id']}"
    data = _json(ui, f"{base}?q=release+note&mode=auto&limit=5")
    search = data["search"]
    assert search["requested_mode"] == "auto" and search["mode"] == "fts"
    assert search["fallback_reason"]  # no embedding model: auto ran as fts
    assert len(search["hits"]) == 5 and [h["rank"] for h in search["hits"]] == [1, 2, 3, 4, 5]
    assert all("release" in h["text"] for h in search["hits"])
    html = ui.get(f"{base}?q=release+note&mode=auto&limit=5").text
    assert '<strong class="mode-ran">fts</strong>' in html and "(asked: auto)" in html
    vector = _json(ui, f"{base}?q=release&mode=vector")["search"]
    assert vector["mode"] is None and vector["error"]["code"] == "capability_not_supported"
    assert "vector search is unavailable" in ui.get(f"{base}?q=release&mode=vector").text
    assert _json(ui, base)["search"] is None


def test_the_entry_page_shows_the_version_chain_with_reason_evidence_and_citation(
        ui: TestClient, info: dict[str, Any]) -> None:
    base = f"/ui/memories/{info['artifact_id']}"
    data = _json(ui, f"{base}/entries/{info['chained']}")
    v2, v1 = data["versions"]
    assert (v2["version"], v1["version"]) == (2, 1)
    assert v2["previous_version_id"] == v1["entry_version_id"]
    assert (v2["op"], v2["reason"], v1["op"]) == ("revise", "fixed a <typo>", "add")
    assert [s["source_id"] for s in v2["source_refs"]] == ["src_dash_1", "src_dash_2"]
    assert v2["citation"] == {"memory_ref": {"artifact_id": info["artifact_id"],
                                             "revision": info["head"]},
                              "entry_id": info["chained"],
                              "entry_version_id": v2["entry_version_id"]}
    # the old version is cited at the last Revision that still held it
    assert v1["citation"]["memory_ref"]["revision"] == v2["created_in_revision"] - 1
    html = ui.get(f"{base}/entries/{info['chained']}").text
    assert 'href="/ui/sources/src_dash_2"' in html and "fixed a &lt;typo&gt;" in html
    assert 'data-copy-from="citation-2"' in html and 'action="/ui/citations/validate"' in html
    older = _json(ui, f"{base}/entries/{info['chained']}?revision=1")
    assert [v["version"] for v in older["versions"]] == [1]


def _validate(ui: TestClient, citation: Any, *, as_json: bool = False) -> Any:
    text = citation if isinstance(citation, str) else json.dumps(citation)
    if as_json:
        return ui.post("/ui/citations/validate?format=json", content=text,
                       headers={"Origin": ORIGIN, "Content-Type": "application/json"})
    return ui.post("/ui/citations/validate", data={"citation": text},
                   headers={"Origin": ORIGIN})


def test_every_citation_on_the_entry_page_validates(ui: TestClient,
                                                    info: dict[str, Any]) -> None:
    data = _json(ui, f"/ui/memories/{info['artifact_id']}/entries/{info['chained']}")
    for version in data["versions"]:
        r = _validate(ui, version["citation"])
        assert r.status_code == 200 and "Citation valid" in r.text
        j = _validate(ui, version["citation"], as_json=True).json()
        assert j["valid"] is True and j["entry_version"]["text"] == version["text"]
    plain = ui.post("/ui/citations/validate", content=json.dumps(data["versions"][0][
        "citation"]), headers={"Origin": ORIGIN, "Content-Type": "application/json"})
    assert plain.status_code == 200 and plain.json()["valid"] is True
    # the textarea holds exactly the citation JSON the JSON twin gives
    html = ui.get(f"/ui/memories/{info['artifact_id']}/entries/{info['chained']}").text
    area = re.search(r'<textarea id="citation-2"[^>]*>(.*?)</textarea>', html, re.S)
    assert area is not None
    assert json.loads(area.group(1).replace("&#34;", '"')) == data["versions"][0]["citation"]


def test_a_tampered_citation_is_not_valid_422(ui: TestClient, info: dict[str, Any]) -> None:
    data = _json(ui, f"/ui/memories/{info['artifact_id']}/entries/{info['chained']}")
    good = data["versions"][0]["citation"]
    wrong_version = dict(good, entry_version_id=data["versions"][1]["entry_version_id"])
    for bad in (wrong_version, {"memory_ref": {"artifact_id": info["artifact_id"],
                                               "revision": 99}, "entry_id": "x",
                                "entry_version_id": "y"},
                dict(good, memory_ref={"artifact_id": info["artifact_id"], "revision": "1"}),
                "not json <script>", {}):
        r = _validate(ui, bad)
        assert r.status_code == 422 and "Citation not valid" in r.text, bad
        assert "<script>" not in r.text
        j = _validate(ui, bad, as_json=True)
        assert j.status_code == 422 and j.json()["valid"] is False
        assert j.json()["error"]["code"] == "invalid_input"


def test_the_timeline_lists_each_revision_with_its_changes(
        ui: TestClient, info: dict[str, Any]) -> None:
    data = _json(ui, f"/ui/memories/{info['artifact_id']}/revisions")
    revs = data["revisions"]
    assert [r["revision"] for r in revs] == list(range(info["head"], 0, -1))
    assert revs[0]["ops"] == {"deactivate": 1}
    assert revs[0]["changes"][0]["reason"] == "obsolete"
    assert revs[-1]["ops"] == {"add": info["entries"] - 1}
    assert revs[-1]["lineage"]["sources"][0]["source_id"] == "src_dash_1"
    assert revs[-1]["changes_total"] == info["entries"] - 1
    assert len(revs[-1]["changes"]) == md.MAX_CHANGES_SHOWN < info["entries"] - 1
    assert all(r["at"] is None or r["at"].endswith("Z") for r in revs)
    html = ui.get(f"/ui/memories/{info['artifact_id']}/revisions").text
    assert "Revision 4" in html and "diff with 3" in html and "obsolete" in html
    assert f"and {info['entries'] - 1 - md.MAX_CHANGES_SHOWN} more changes" in html


def test_the_timeline_is_paged(monkeypatch: pytest.MonkeyPatch, ui: TestClient,
                               info: dict[str, Any]) -> None:
    monkeypatch.setattr(md, "REVISIONS_PER_PAGE", 3)
    first = _json(ui, f"/ui/memories/{info['artifact_id']}/revisions")
    second = _json(ui, f"/ui/memories/{info['artifact_id']}/revisions?page=2")
    assert [r["revision"] for r in first["revisions"]] == [4, 3, 2]
    assert [r["revision"] for r in second["revisions"]] == [1]
    assert second["page"]["pages"] == 2


def test_the_diff_shows_what_differs_between_two_revisions(
        ui: TestClient, info: dict[str, Any]) -> None:
    base = f"/ui/memories/{info['artifact_id']}"
    data = _json(ui, f"{base}/diff?from=2&to=4")
    assert data["counts"] == {"revised": 1, "deactivated": 1}
    rows = {r["entry_id"]: r for r in data["rows"]}
    revised = rows[info["chained"]]
    assert revised["before"]["version"] == 1 and revised["after"]["version"] == 2
    assert rows[info["forgotten"]]["to"]["state"] == "inactive"
    assert rows[info["forgotten"]]["before"] is None  # same version: no second read
    default = _json(ui, f"{base}/diff")
    assert (default["from"], default["to"]) == (info["head"] - 1, info["head"])
    everything = _json(ui, f"{base}/diff?from=0&to=1")
    assert everything["counts"] == {"added": info["entries"] - 1}
    assert everything["page"]["pages"] == 2 and len(everything["rows"]) == md.PER_PAGE


@pytest.mark.parametrize("url, status", [
    ("/ui/memories/mem_art_00000000000000000000000000", 404),
    ("/ui/memories/not%20an%20id", 422),
    ("/ui/memories/{a}/entries/mem_ent_00000000000000000000000000", 404),
    ("/ui/memories/{a}/entries/{e}?revision=99", 404),
    ("/ui/memories/{a}/diff?from=1&to=99", 404),
    ("/ui/memories/{a}/diff?from=3&to=2", 422),
    ("/ui/memories/{a}/diff?from=x", 422),
    ("/ui/memories/{a}?page=3", 422),
    ("/ui/memories/{a}?page=0", 422),
    ("/ui/memories/{a}?mode=magic", 422),
    ("/ui/memories/{a}/revisions?page=2", 422),
])
def test_errors_are_html_pages_with_the_status_and_api_bodies_as_json(
        ui: TestClient, info: dict[str, Any], url: str, status: int) -> None:
    url = url.format(a=info["artifact_id"], e=info["chained"])
    r = ui.get(url)
    assert r.status_code == status and "text/html" in r.headers["content-type"]
    assert f"<h1>{status} ·" in r.text
    j = ui.get(url, headers={"Accept": "application/json"})
    assert j.status_code == status
    assert j.json()["error"]["code"] == ("not_found" if status == 404 else "invalid_input")


def test_every_page_has_a_json_twin_link(ui: TestClient, info: dict[str, Any]) -> None:
    base = f"/ui/memories/{info['artifact_id']}"
    for url in ("/ui/memories", base, f"{base}/entries/{info['chained']}",
                f"{base}/revisions", f"{base}/diff"):
        html = ui.get(url).text
        link = re.search(r'<a href="([^"]*format=json)">this page as JSON</a>', html)
        assert link is not None, url
        assert ui.get(link.group(1).replace("&amp;", "&")).headers[
            "content-type"].startswith("application/json")


def test_the_plots_follow_the_memory_size_and_revision_days(
        ui: TestClient, info: dict[str, Any]) -> None:
    data = _json(ui, f"/ui/memories/{info['artifact_id']}")
    plots = data["plots"]
    active = info["entries"] - 1
    assert plots["size"] == [["1", active], ["2", active + 1], ["3", active + 1],
                             ["4", active]]
    assert sum(n for _, n in plots["revisions_per_day"]) == info["head"]
    html = ui.get(f"/ui/memories/{info['artifact_id']}").text
    assert html.count("<svg") == 2 and "Memory size" in html


def test_id_times_and_pagination_helpers() -> None:
    from powercontext.core import canonical

    ident = canonical.make_id("mem_ver_", 1_764_655_200_000, b"\x07" * 10)
    assert md.id_time_ms(ident) == 1_764_655_200_000
    assert md.iso(md.id_time_ms(ident)) == "2025-12-02T06:00:00Z"
    assert md.iso(1_764_655_200_000, day=True) == "2025-12-02"
    assert md.id_time_ms("src_dash_1") is None and md.id_time_ms(None) is None
    assert md.paginate(0, 1, 50)["pages"] == 1
    assert md.paginate(101, 3, 50) == {"number": 3, "per_page": 50, "total": 101,
                                       "pages": 3, "start": 100, "stop": 101}
    with pytest.raises(ValueError):
        md.paginate(10, 2, 50)


def test_the_first_page_lists_rules_before_notes_however_many_notes_are_newer(
        tmp_path: Path) -> None:
    """The issue's example: the dashboard's first page listed 49 notes before any rule."""
    from powercontext.core.models import MemoryEntryInput
    from powercontext.runtime import open_service

    db = tmp_path / "memory.db"

    async def body() -> str:
        async with open_service(db) as svc:
            ref = await svc.remember(None, mode="append", entries=(
                MemoryEntryInput("constraint", "Never edit files under build/."),
                MemoryEntryInput("preference", "Run `make test` before review."),
                MemoryEntryInput("fact", "The CLI lives in src/app/cli.py.")))
            for i in range(60):  # session notes written after the rules
                ref = await svc.remember(ref, mode="append", entries=(
                    MemoryEntryInput("working_note", f"Task outcome: step {i} done."),))
            return ref.artifact_id

    artifact_id = asyncio.run(body())
    c, svc = client(db)
    c.headers.update(AUTH)
    try:
        first = _json(c, f"/ui/memories/{artifact_id}")
        last = _json(c, f"/ui/memories/{artifact_id}?page=2")
    finally:
        asyncio.run(svc.close())
    assert [g["kind"] for g in first["groups"]] == ["constraint", "preference", "fact",
                                                    "working_note"]
    shown = [e["kind"] for g in first["groups"] for e in g["entries"]]
    assert shown.count("working_note") == md.PER_PAGE - 3
    assert [g["kind"] for g in last["groups"]] == ["working_note"]
    newest = [e["text"] for e in first["groups"][-1]["entries"]][:2]
    assert newest == ["Task outcome: step 59 done.", "Task outcome: step 58 done."]


def test_the_kind_filter_lists_one_kind_and_counts_every_kind(
        ui: TestClient, info: dict[str, Any]) -> None:
    """Entries filtered by kind and state; the chips count each kind in the state."""
    base = f"/ui/memories/{info['artifact_id']}"
    data = _json(ui, base)
    tally = {k["kind"]: k["count"] for k in data["kinds"]}
    assert [k["kind"] for k in data["kinds"]] == ["preference", "decision", "fact",
                                                  "custom_kind", "working_note"]
    assert sum(tally.values()) == data["counts"]["active"] and data["kind"] is None
    decisions = _json(ui, f"{base}?kind=decision")
    (group,) = decisions["groups"]
    assert group["kind"] == "decision" and decisions["kind"] == "decision"
    assert len(group["entries"]) == decisions["page"]["total"] == tally["decision"]
    assert all(e["state"] == "active" for e in group["entries"])
    assert decisions["kinds"] == data["kinds"], "the chips keep every kind"
    # kind and state together: the forgotten entry is the one inactive decision
    gone = _json(ui, f"{base}?kind=decision&state=inactive")
    assert [e["entry_id"] for g in gone["groups"] for e in g["entries"]] == [
        info["forgotten"]]
    assert gone["kinds"] == [{"kind": "decision", "count": 1}]
    assert _json(ui, f"{base}?kind=no_such_kind")["page"]["total"] == 0
    html = ui.get(f"{base}?kind=decision").text
    assert re.search(r'<a class="chip" href="[^"]*kind=decision[^"]*" aria-current="true">'
                     rf'decision <span class="count">{tally["decision"]}</span>', html)
    assert "No active entries of kind no_such_kind." in ui.get(
        f"{base}?kind=no_such_kind").text
    _json(ui, f"{base}?kind=", 422)
    # a search keeps the filters; the kind asked for is text, never markup
    assert '<input type="hidden" name="kind" value="decision">' in html
    hostile = ui.get(f"{base}", params={"kind": '"><script>alert(1)</script>'}).text
    assert "<script>alert(1)" not in hostile
    assert 'value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in hostile


def test_an_entry_selected_beside_the_list_shows_its_versions_and_evidence(
        ui: TestClient, info: dict[str, Any]) -> None:
    """Master/detail: ``?entry=`` keeps the list and shows the entry's version chain,
    as its own page does."""
    base = f"/ui/memories/{info['artifact_id']}"
    data = _json(ui, f"{base}?entry={info['chained']}")
    own = _json(ui, f"{base}/entries/{info['chained']}")
    assert data["selected"] == own
    assert [v["version"] for v in data["selected"]["versions"]] == [2, 1]
    assert data["groups"] == _json(ui, base)["groups"], "the list is unchanged"
    assert _json(ui, base)["selected"] is None
    html = ui.get(f"{base}?entry={info['chained']}").text
    detail = html.split('<aside class="detail"', 1)[1]
    assert "release note number 0, corrected" in detail and "fixed a &lt;typo&gt;" in detail
    assert "/ui/sources/src_dash_2" in detail and "/ui/sources/src_dash_1" in detail
    item = re.search(r'<li class="entry-item active selected">\s*<a class="entry-link" '
                     r'href="([^"]*)" aria-current="true">', html)
    assert item is not None and f"entry={info['chained']}" in item.group(1)
    # the list links select an entry and keep the filters
    assert f'href="{base}?kind=fact&amp;entry=' in ui.get(f"{base}?kind=fact").text
    _json(ui, f"{base}?entry=mem_ent_missing", 404)
    _json(ui, f"{base}?entry=not%20an%20id", 422)


def test_the_navigation_stays_and_marks_the_current_section(
        ui: TestClient, info: dict[str, Any]) -> None:
    from powercontext.entrypoints.http.dashboard.web import section_of

    assert [section_of(p) for p in ("/ui/memories", f"/ui/memories/{info['artifact_id']}",
                                    "/ui/scopes", "/ui/topics/x", "/ui/processing",
                                    "/ui/sources/src_1", "/ui/login", "/v1/memories")] == [
        "memories", "memories", "topics", "topics", "processing", None, None, None]
    base = f"/ui/memories/{info['artifact_id']}"
    for url in ("/ui/memories", base, f"{base}/entries/{info['chained']}",
                f"{base}/revisions", f"{base}/diff"):
        html = ui.get(url).text
        nav = html.split('<nav class="site"', 1)[1].split("</nav>", 1)[0]
        assert re.findall(r'href="(/ui/[a-z]+)"', nav) == [
            "/ui/memories", "/ui/scopes", "/ui/processing"], url
        assert '<a href="/ui/memories" aria-current="page">' in nav, url
        assert nav.count("aria-current") == 1, url
