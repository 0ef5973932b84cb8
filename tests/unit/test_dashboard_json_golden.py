"""The dashboard's JSON twins byte for byte: the Evidence, Scopes, Topics, Topic and
Processing pages over the seed of tests/support/dashboard_more.py, each response body
compared with the one recorded in golden/dashboard_json.txt (written by the pages when
they built their rows by hand; the rows now go through the one converter). Ids made at
write time, hashes (a Memory's content hash covers its ids) and database times are
replaced by placeholders in order of appearance (equal values alike), so
the comparison is of every key, its order and every other value.

``PC_WRITE_GOLDEN=1`` rewrites the file (only when a shape is meant to change)."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from support.dashboard_more import QSCOPE, TERMINAL, seed

from powercontext import MemoryService
from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend
from powercontext.entrypoints.http.app import create_app
from powercontext.entrypoints.http.deps import Services
from powercontext.topic_service import TopicMemoryService

GOLDEN = Path(__file__).parent / "golden" / "dashboard_json.txt"
_IDS = re.compile(r"\b(?:mem_art|mem_ent|mem_ver|topic_art)_[0-9a-z]{26}\b")
_HASHES = re.compile(r"\b[0-9a-f]{64}\b")
_TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")
_DAYS = re.compile(r"\b\d{4}-\d\d-\d\d\b")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    path = str(tmp_path_factory.mktemp("dash-golden") / "dash.db")
    seeded = asyncio.run(seed(SQLiteMemoryBackend(path), SQLiteTopicBackend(path)))
    svc = Services(memory=MemoryService(SQLiteMemoryBackend(path)),
                   topic=TopicMemoryService(SQLiteTopicBackend(path)))
    client = TestClient(create_app(svc, api_token=None), raise_server_exceptions=False)
    client.topic_id = seeded["r2"].ref.artifact_id  # type: ignore[attr-defined]
    client.memory_id = seeded["memory"].artifact_id  # type: ignore[attr-defined]
    yield client
    asyncio.run(svc.memory.close())
    asyncio.run(svc.topic.close())


def _pages(topic_id: str, memory_id: str) -> dict[str, str]:
    return {
        "MEMORIES": "/ui/memories",
        "MEMORY": f"/ui/memories/{memory_id}",
        "MEMORY_TIMELINE": f"/ui/memories/{memory_id}/revisions",
        "MEMORY_DIFF": f"/ui/memories/{memory_id}/diff?from=0",
        "SOURCE_CITED": "/ui/sources/src_dash_1",
        "SOURCE_TOPIC_ONLY": "/ui/sources/src_dash_2",
        "SOURCE_UNCITED": "/ui/sources/src_dash_3",
        "SCOPES": "/ui/scopes",
        "TOPICS": f"/ui/topics?scope={QSCOPE}",
        "TOPICS_PAGE_2": f"/ui/topics?scope={QSCOPE}&page=2",
        "TOPICS_EMPTY": f"/ui/topics?scope={TERMINAL}",
        "TOPICS_SEARCH": f"/ui/topics?scope={QSCOPE}&q=release",
        "TOPIC": f"/ui/topics/{topic_id}?scope={QSCOPE}",
        "TOPIC_FIRST": f"/ui/topics/{topic_id}?scope={QSCOPE}&revision=1",
        "PROCESSING": "/ui/processing",
        "PROCESSING_FLUSHED": f"/ui/processing?flushed={QSCOPE}&status=accepted",
    }


def _normalised(body: str) -> str:
    seen: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        return seen.setdefault(m.group(0), f"<{m.group(0)[:-27]}{len(seen) + 1}>")

    def digest(m: re.Match[str]) -> str:
        return seen.setdefault(m.group(0), f"<hash{len(seen) + 1}>")

    body = _HASHES.sub(digest, _IDS.sub(name, body))
    return _DAYS.sub("<day>", _TIMES.sub("<utc>", body))


def _bodies(client: TestClient) -> dict[str, str]:
    out = {}
    pages = _pages(client.topic_id, client.memory_id)  # type: ignore[attr-defined]
    for key, url in pages.items():
        r = client.get(url + ("&" if "?" in url else "?") + "format=json")
        assert r.status_code == 200, (key, r.text)
        assert r.headers["content-type"].startswith("application/json")
        out[key] = _normalised(r.content.decode("utf-8"))
    return out


def test_the_dashboard_json_twins_are_unchanged_byte_for_byte(client: TestClient) -> None:
    bodies = _bodies(client)
    if os.environ.get("PC_WRITE_GOLDEN"):
        GOLDEN.write_text("".join(f"{k}\t{v}\n" for k, v in sorted(bodies.items())),
                          encoding="utf-8")
    expected = dict(line.split("\t", 1) for line in
                    GOLDEN.read_text(encoding="utf-8").splitlines())
    assert sorted(bodies) == sorted(expected)
    for key in sorted(bodies):
        assert bodies[key] == expected[key], key


def test_the_normalisation_keeps_what_tells_values_apart() -> None:
    a, b = "topic_art_" + "0" * 26, "topic_art_" + "1" * 26
    h = "ab" * 32
    assert _normalised(f'["{a}","{b}","{a}","{h}","{h}","2026-12-07T17:00:00.5Z",'
                       '"2026-12-07"]') == \
        '["<topic_art1>","<topic_art2>","<topic_art1>","<hash3>","<hash3>","<utc>","<day>"]'
