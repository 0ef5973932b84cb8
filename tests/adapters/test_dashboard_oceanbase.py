"""The dashboard's Memories pages on OceanBase (seekdb) give what they give on SQLite
(issue 17: the pages read through MemoryService only, so both backends serve them):
the same Memory written on each (the same ids: a deterministic clock and entropy),
every page's JSON twin compared, and a stored ``<script>`` escaped on both."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from support.dashboard import TOKEN, client, seed

from powercontext.adapters.oceanbase import OceanBaseMemoryBackend

pytestmark = pytest.mark.oceanbase
AUTH = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}


def _pages(where: Any, info: dict[str, Any]) -> dict[str, Any]:
    base = f"/ui/memories/{info['artifact_id']}"
    urls = {"memory": base, "page2": f"{base}?page=2", "inactive": f"{base}?state=inactive",
            "search": f"{base}?q=release+note&mode=fts&limit=7",
            "kind": f"{base}?kind=decision&state=all",
            "selected": f"{base}?entry={info['chained']}&kind=fact",
            "entry": f"{base}/entries/{info['chained']}", "revisions": f"{base}/revisions",
            "diff": f"{base}/diff?from=2&to=4"}
    c, svc = client(where)
    try:
        out = {}
        for name, url in urls.items():
            r = c.get(url, headers=AUTH)
            assert r.status_code == 200, (name, r.text)
            out[name] = r.json()
        html = c.get(f"{base}/entries/{info['script_entry']}",
                     headers={"Authorization": f"Bearer {TOKEN}"}).text
        assert "<script>alert" not in html and "&lt;script&gt;alert" in html
        return out
    finally:
        asyncio.run(svc.close())


def _comparable(pages: dict[str, Any]) -> dict[str, Any]:
    """Every page's JSON, but the capabilities (each backend states its own) and the
    search scores (each engine's BM25; the hits and the mode must agree)."""
    out = {name: dict(data) for name, data in pages.items()}
    for data in out.values():
        data.pop("capabilities", None)
    search = dict(out["search"]["search"])
    search["hits"] = sorted(h["entry_id"] for h in search["hits"])
    out["search"]["search"] = search
    out["memory"].pop("search")
    return out


def test_the_memory_pages_agree_on_oceanbase_and_sqlite(seekdb_url: str,
                                                        tmp_path: Path) -> None:
    p = urlsplit(seekdb_url)
    url = urlunsplit((p.scheme, p.netloc, f"/pc_dash_{secrets.token_hex(4)}", "", ""))

    def make_ob() -> OceanBaseMemoryBackend:
        return OceanBaseMemoryBackend(url)

    ob_info = seed(make_ob)
    sqlite_info = seed(tmp_path / "dash.db")
    ob, lite = _pages(make_ob, ob_info), _pages(tmp_path / "dash.db", sqlite_info)
    assert ob_info == sqlite_info  # the same ids on both
    assert _comparable(ob) == _comparable(lite)
    assert len(ob["search"]["search"]["hits"]) == 7
