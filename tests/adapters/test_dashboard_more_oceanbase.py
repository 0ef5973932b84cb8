"""The dashboard's Evidence, Scopes/Topics and Processing pages on OceanBase (seekdb)
give what they give on SQLite (issue 17; the pages read through the backends' optional
capabilities SourceCitations and TopicInsight): the same seed written on each, every
page's JSON twin compared with ids and database times normalised, a stored
``<script>`` escaped and the flush button's status change on both."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from oceanbase_server import fresh_database
from starlette.testclient import TestClient
from support.dashboard_more import ORIGIN, QSCOPE, SCOPE, seed

from powercontext import MemoryService
from powercontext.entrypoints.http.app import create_app
from powercontext.entrypoints.http.deps import Services
from powercontext.topic_service import TopicMemoryService

pytestmark = pytest.mark.oceanbase
_TIME = re.compile(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d\.\d{6}Z)?")


def _pages(memory_backend: Any, topic_backend: Any) -> dict[str, Any]:
    refs = asyncio.run(seed(memory_backend(), topic_backend()))
    svc = Services(memory=MemoryService(memory_backend()),
                   topic=TopicMemoryService(topic_backend()))
    try:
        c = TestClient(create_app(svc, api_token=None), raise_server_exceptions=False)
        aid = refs["r2"].ref.artifact_id
        urls = {"source": "/ui/sources/src_dash_1", "scopes": "/ui/scopes",
                "topics": f"/ui/topics?scope={QSCOPE}",
                "search": f"/ui/topics?scope={QSCOPE}&q=release",
                "topic": f"/ui/topics/{aid}?scope={QSCOPE}",
                "old": f"/ui/topics/{aid}?scope={QSCOPE}&revision=1",
                "processing": "/ui/processing"}
        out = {}
        for name, url in urls.items():
            r = c.get(url, headers={"Accept": "application/json"})
            assert r.status_code == 200, (name, r.text)
            out[name] = r.json()
        html = c.get("/ui/sources/src_dash_1").text
        assert "<script>alert" not in html and "&lt;script&gt;alert" in html
        r = c.post(f"/ui/processing/flush?scope={QSCOPE}", headers=ORIGIN)
        assert r.status_code == 200 and "<strong>accepted</strong>" in r.text  # redirected
        out["after_flush"] = c.get("/ui/processing?format=json").json()
        text = json.dumps(out, sort_keys=True)
        text = text.replace(aid, "TOPIC").replace(refs["memory"].artifact_id, "MEMORY")
        for v in {v for v in re.findall(r'"entry_version_id": "([^"]+)"', text)}:
            text = text.replace(v, "VERSION")
        for v in {v for v in re.findall(r'"(?:entry_id|attempt_id)": "([^"]+)"', text)}:
            text = text.replace(v, "ID")
        return json.loads(_TIME.sub("TIME", text))
    finally:
        asyncio.run(svc.memory.close())
        asyncio.run(svc.topic.close())


def test_the_evidence_topic_and_processing_pages_agree_on_oceanbase_and_sqlite(
        seekdb_url: str, tmp_path: Path) -> None:
    from powercontext.adapters.oceanbase import OceanBaseMemoryBackend, OceanBaseTopicBackend
    from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend

    path = str(tmp_path / "dash.db")
    lite = _pages(lambda: SQLiteMemoryBackend(path), lambda: SQLiteTopicBackend(path))
    with fresh_database(seekdb_url, "pc_dash_more") as url:
        ob = _pages(lambda: OceanBaseMemoryBackend(url), lambda: OceanBaseTopicBackend(url))
    for data in (lite, ob):  # each engine's own BM25 scores
        for hit in data["search"]["search"]["hits"]:
            hit.pop("score")
        data["search"]["search"].pop("channels")
    assert ob == lite
    assert [s["scope_id"] for s in ob["scopes"]["scopes"]] == ["project:stuck", SCOPE]
    assert [t["revision"] for t in ob["source"]["topic_revisions"]] == [1, 2]
    by_scope = {s["scope_id"]: s for s in ob["after_flush"]["scopes"]}
    assert by_scope["project:stuck"]["budget"]["terminal"] is True
    assert by_scope[SCOPE]["pending"]["flush_generation"] == 1
