"""Choosing and migrating the search analyzer from the CLI (docs/analyzers.md):
``--analyzer NAME`` / ``POWERCONTEXT_ANALYZER`` for a new database, a mismatch is a
one-line error with exit code 2 that names the fix, ``memory rebuild --analyzer NAME``
migrates. A real process on a real SQLite file and on seekdb."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.subprocess


@pytest.fixture(params=["sqlite", pytest.param("oceanbase", marks=pytest.mark.oceanbase)])
def pc(request, tmp_path):
    if request.param == "sqlite":
        db = str(tmp_path / "memory.db")
    else:
        import secrets

        from oceanbase_server import seekdb_available

        if not seekdb_available():
            pytest.skip("needs pylibseekdb or POWERCONTEXT_TEST_OCEANBASE_URL")
        db = request.getfixturevalue("seekdb_url").rstrip("/") + f"/cli_an_{secrets.token_hex(4)}"
    base = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    for name in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_ANALYZER"):
        base.pop(name, None)

    def run(*args: str, expect: int = 0, env: dict[str, str] | None = None):
        proc = subprocess.run(
            [sys.executable, "-m", "powercontext.entrypoints.cli.main", "--db", db, *args],
            capture_output=True, text=True, env={**base, **(env or {})}, timeout=120,
        )
        assert proc.returncode == expect, (args, proc.returncode, proc.stdout, proc.stderr)
        return proc

    run.db = db  # type: ignore[attr-defined]
    return run


def _hits(proc) -> list[str]:
    return [h["text"] for h in json.loads(proc.stdout)["hits"]]


@pytest.mark.slow
def test_choose_refuse_and_migrate_the_analyzer_from_the_cli(pc) -> None:
    pc("--analyzer", "v1", "memory", "remember", "--key", "repo:demo", "--text",
       "she was painting sunsets")
    # the database keeps v1: no stemming, "paintings" finds nothing
    assert _hits(pc("--json", "memory", "search", "-m", "key:repo:demo", "paintings")) == []

    refused = pc("--analyzer", "v1-porter", "memory", "search", "-m", "key:repo:demo",
                 "painting", expect=2)
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr  # one line, no traceback
    assert lines[0].startswith("powercontext: analyzer mismatch: ")
    assert "powercontext memory rebuild --analyzer v1-porter" in lines[0]
    # the environment variable is the same choice
    env = {"POWERCONTEXT_ANALYZER": "v1-porter"}
    as_json = pc("--json", "memory", "search", "-m", "key:repo:demo", "x", expect=2, env=env)
    assert json.loads(as_json.stdout)["error"] == "AnalyzerMismatchError"

    report = json.loads(pc("--json", "memory", "rebuild", "--analyzer", "v1-porter").stdout)
    assert (report["analyzer"], report["memories"], report["entries"]) == ("v1-porter", 1, 1)
    # migrated: stemmed search works with or without naming the analyzer
    assert _hits(pc("--json", "memory", "search", "-m", "key:repo:demo", "paintings")) == [
        "she was painting sunsets"]
    pc("--json", "memory", "search", "-m", "key:repo:demo", "paintings", env=env)
    pc("--analyzer", "v1", "memory", "search", "-m", "key:repo:demo", "x", expect=2)


def test_rebuild_fixes_a_mismatch_with_the_global_choice_and_unknown_names_are_bad_input(pc):
    pc("--analyzer", "v1", "memory", "remember", "--key", "repo:demo", "--text", "walking")
    report = json.loads(pc("--json", "--analyzer", "v1-porter", "memory", "rebuild").stdout)
    assert report["analyzer"] == "v1-porter"
    bad = pc("--analyzer", "analyzer-v1", "memory", "search", "-m", "key:repo:demo", "walk",
             expect=2)
    assert "unknown analyzer 'analyzer-v1'" in bad.stderr
    assert "v1, v1-porter" in bad.stderr
    bad = pc("memory", "rebuild", "--analyzer", "porter", expect=2)
    assert "unknown analyzer 'porter'" in bad.stderr


SCOPE = "repo:/work/demo"


def _seed_topic(db: str, analyzer: str) -> None:
    """One Topic about the café, published in-process under ``analyzer``."""
    import asyncio

    from powercontext.core import canonical
    from powercontext.core.topic.models import TopicMemoryContent
    from powercontext.runtime import open_topic_service

    async def body() -> None:
        async with open_topic_service(db, embedding="none", analyzer=analyzer) as svc:
            src = canonical.make_source("src_cafe_notes", "user_note", "coffee orders")
            await svc._publish(SCOPE, creates=[(TopicMemoryContent(
                "Café ordering", "Where the team orders coffee.",
                "The café on the corner takes orders; menu v1.2.3."), [src])])

    asyncio.run(body())


def _topic_titles(proc) -> list[str]:
    return [h["title"] for h in json.loads(proc.stdout)["hits"]]


def test_memory_rebuild_moves_an_older_database_and_its_topics_to_the_default(pc) -> None:
    # a database of the earlier default: it keeps v1-porter until rebuilt
    pc("--analyzer", "v1-porter", "memory", "remember", "--key", "repo:demo", "--text",
       "café au lait")
    _seed_topic(pc.db, "v1-porter")
    info = json.loads(pc("--json", "info").stdout)
    assert (info["analyzer_version"], info["analyzer_default"]) == ("v1-porter", "v2")
    assert _hits(pc("--json", "memory", "search", "-m", "key:repo:demo", "cafe")) == []
    assert _topic_titles(pc("--json", "topic", "search", "cafe", "--scope", SCOPE)) == []

    report = json.loads(pc("--json", "memory", "rebuild", "--analyzer", "v2").stdout)
    assert (report["analyzer"], report["memories"], report["entries"]) == ("v2", 1, 1)
    assert report["topics"] == {"topics": 1, "chunks": 1, "corrupt": [], "analyzer": "v2"}
    assert _hits(pc("--json", "memory", "search", "-m", "key:repo:demo", "cafe")) == [
        "café au lait"]
    for query in ("cafe", "1.2.3"):
        assert _topic_titles(pc("--json", "topic", "search", query, "--scope", SCOPE)) == [
            "Café ordering"]
    assert json.loads(pc("--json", "info").stdout)["analyzer_version"] == "v2"


def test_a_new_database_gets_v2_and_finds_what_people_type(pc) -> None:
    pc("memory", "remember", "--key", "repo:demo", "--text", "the ＡＰＩ gateway in Zürich")
    assert json.loads(pc("--json", "info").stdout)["analyzer_version"] == "v2"
    for query in ("API", "zurich", "ｚｕｒｉｃｈ"):
        assert _hits(pc("--json", "memory", "search", "-m", "key:repo:demo", query)) == [
            "the ＡＰＩ gateway in Zürich"], query
