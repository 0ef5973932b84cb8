"""The credential corpus (tests/support/secret_corpus.py) on every write path, each over
a real SQLite file read back whole with SQL afterwards: explicit entries (the Python
API, the CLI, MCP), Sources (``put_sources``, a Scope's Sources, ``--source FILE``),
the hooks (Stop and Codex: redacted, not refused), Git changes (redacted), business
keys (refused, imported ones too) and Topic publication (redacted by the service,
refused by the backend: a Topic generated from Sources each clean can reassemble a
secret). Before, 9 of the 32 shapes were stored verbatim on every one of these paths
and 30 of them in ``memory_keys``. Ordinary texts of the corpus pass every path.

HTTP's writes (``/v1/memory/remember``, ``revise``, ``forget``, ``/v1/sources/add``)
refuse the corpus as the CLI does (422 naming the field); its flush starts Topic
processing, whose results go through the publication checked here.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.cli import cli_argv
from support.secret_corpus import FOUND, NOT_FOUND
from support.stored import assert_nowhere, stored_texts

from powercontext.core import canonical
from powercontext.core import errors as E
from powercontext.core.models import MemoryEntryInput, SourceRef
from powercontext.runtime import open_service

pytestmark = pytest.mark.subprocess  # the CLI, the hooks, git

SECRETS = [secret for _, _, secret in FOUND]
ONE_LINE = [(label, text, secret) for label, text, secret in FOUND if "\n" not in text]
IDS = [label for label, _, _ in FOUND]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    for k in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_ANALYZER",
              "POWERCONTEXT_HOOK_DAEMON"):
        e.pop(k, None)
    return e


def run(db: Path, fn):
    async def body():
        svc = open_service(db)
        try:
            return await fn(svc)
        finally:
            await svc.close()

    return asyncio.run(body())


def _seed(db: Path) -> str:
    async def body(svc):
        ref = await svc.remember(None, key="repo:demo", entries=(
            MemoryEntryInput("preference", "Run make test before review."),))
        return ref.artifact_id

    return run(db, body)


# --------------------------------------------------------------------------- entries


def test_entries_holding_any_shape_are_refused_and_ordinary_ones_stored(tmp_path):
    db = tmp_path / "memory.db"
    _seed(db)

    async def body(svc):
        for label, text, _ in FOUND:
            with pytest.raises(E.SecretDetectedError) as info:
                await svc.remember(None, key="repo:demo", entries=(
                    MemoryEntryInput("fact", text),))
            assert info.value.field == "entries[0].text", label
        for label, text, _ in ONE_LINE:  # a reason is one line
            with pytest.raises(E.SecretDetectedError) as info:
                await svc.remember(None, key="repo:demo", entries=(
                    MemoryEntryInput("fact", "Deploys run on Fridays.", reason=text),))
            assert info.value.field == "entries[0].reason", label
        return await svc.remember(None, key="repo:demo", entries=tuple(
            MemoryEntryInput("fact", text) for text in NOT_FOUND))

    assert run(db, body) is not None
    assert_nowhere(db, *SECRETS)
    cells = json.dumps(stored_texts(db))
    assert all(json.dumps(text)[1:-1] in cells for text in NOT_FOUND)


@pytest.mark.parametrize(("label", "text", "secret"), FOUND, ids=IDS)
def test_the_cli_refuses_an_entry_holding_any_shape(tmp_path, label, text, secret):
    from powercontext.entrypoints.cli.main import cli

    db = tmp_path / "memory.db"
    result = CliRunner(env={"POWERCONTEXT_HOME": str(tmp_path / "home")}).invoke(
        cli, ["--db", str(db), "--json", "memory", "remember", "--key", "repo:demo",
              "--text", text], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    err = json.loads(result.output)
    assert err["error"] == "SecretDetectedError" and secret not in err["message"]
    assert_nowhere(db, secret)


def test_the_mcp_tools_refuse_entries_and_sources_holding_any_shape(tmp_path):
    pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")
    from mcp import Client

    from powercontext.entrypoints.mcp.server import build_server

    db = tmp_path / "memory.db"
    _seed(db)

    async def body():
        server = build_server(lambda: open_service(db), allow_writes=True)
        refused = []
        async with Client(server) as client:
            for _, text, _ in FOUND:
                entry = await client.call_tool("remember_memory", {
                    "key": "repo:demo", "entries": [{"kind": "fact", "text": text}]})
                source = await client.call_tool("remember_memory", {
                    "key": "repo:demo", "entries": [{"kind": "fact", "text": "Deploys "
                                                     "run on Fridays."}],
                    "sources": [{"content": text}]})
                refused.append((entry.is_error, source.is_error))
        return refused

    assert run_sync(body) == [(True, True)] * len(FOUND)
    assert_nowhere(db, *SECRETS)


def run_sync(fn):
    return asyncio.run(fn())


# --------------------------------------------------------------------------- HTTP

TOKEN = "corpus-token-0123456789"


def test_the_http_writes_refuse_entries_reasons_keys_and_sources_holding_any_shape(
        tmp_path):
    """Every HTTP write that stores text, in process over a real SQLite file: the text
    and reason of an entry, a revise, a forget's reason, the key, and the content and
    metadata of a Source (evidence of a remember, or a Scope's journal)."""
    pytest.importorskip("fastapi", reason="serve needs the extra powercontext[server]")
    from starlette.testclient import TestClient

    from powercontext.entrypoints.http.app import create_app
    from powercontext.entrypoints.http.deps import Services
    from powercontext.runtime import open_topic_service

    db = tmp_path / "memory.db"
    artifact_id = _seed(db)
    memory = open_service(db)
    topic = open_topic_service(db)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    fine = {"text": "Deploys run on Fridays."}
    answers: list[tuple[str, int, str | None]] = []
    try:
        app = create_app(Services(memory=memory, topic=topic), api_token=TOKEN)
        with TestClient(app, raise_server_exceptions=False) as c:
            shown = c.get("/v1/memory/show", params={"memory": artifact_id},
                          headers=auth).json()
            entry_id = shown["entries"][0]["entry_id"]

            def post(path, body, label):
                r = c.post(path, json=body, headers=auth)
                body = r.json()
                assert all(secret not in r.text for secret in SECRETS), (path, label)
                answers.append((path, r.status_code,
                                body.get("error", {}).get("field")))

            for label, text, _ in FOUND:
                post("/v1/memory/remember", {"key": "repo:demo", "entries": [
                    {"text": text}]}, label)
                post("/v1/memory/remember", {"key": "repo:demo", "entries": [fine],
                                             "sources": [{"content": text}]}, label)
                post("/v1/memory/remember", {"key": "repo:demo", "entries": [fine],
                                             "sources": [{"content": "a note",
                                                          "metadata": {"request": text}}]},
                     label)
                post("/v1/memory/revise", {"memory": artifact_id, "entry_id": entry_id,
                                           "text": text}, label)
                post("/v1/sources/add", {"scope_id": "repo:demo",
                                         "sources": [{"content": text}]}, label)
            for label, text, _ in ONE_LINE:  # one-line fields: a reason, a key
                post("/v1/memory/remember", {"key": "repo:demo", "entries": [
                    {**fine, "reason": text}]}, label)
                post("/v1/memory/forget", {"memory": artifact_id,
                                           "entry_ids": [entry_id], "reason": text}, label)
                post("/v1/memory/remember", {"key": f"note:{text}", "entries": [fine]},
                     label)
    finally:
        asyncio.run(topic.close())
        asyncio.run(memory.close())

    refused = [(path, status, field) for path, status, field in answers if status != 422]
    assert refused == [], refused
    fields = {field.split("[")[0] if field else field for _, _, field in answers}
    assert fields <= {"entries", "sources", "text", "reason", "key"}, fields
    assert_nowhere(db, *SECRETS)


# --------------------------------------------------------------------------- Sources


def test_sources_holding_any_shape_are_refused_anywhere_in_them(tmp_path):
    db = tmp_path / "memory.db"
    _seed(db)

    async def body(svc):
        for i, (label, text, _) in enumerate(FOUND):
            for source in (canonical.make_source(f"src_c{i}", "user_note", text),
                           canonical.make_source(f"src_m{i}", "user_note", "a note", None,
                                                 {"request": text})):
                with pytest.raises(E.SecretDetectedError):
                    await svc.backend.put_sources((source,))
                with pytest.raises(E.SecretDetectedError):
                    await svc.backend.put_scoped_sources("repo:demo", (source,))
            assert label

    run(db, body)
    assert_nowhere(db, *SECRETS)


def test_remember_source_file_holding_the_corpus_is_refused(tmp_path):
    from powercontext.entrypoints.cli.main import cli

    db = tmp_path / "memory.db"
    _seed(db)
    for i, (label, text, secret) in enumerate(FOUND):
        path = tmp_path / f"notes-{i}.md"
        path.write_text(f"# Notes\n\nDeploys run on Fridays.\n{text}\n")
        result = CliRunner(env={"POWERCONTEXT_HOME": str(tmp_path / "home")}).invoke(
            cli, ["--db", str(db), "--json", "memory", "remember", "--key", "repo:demo",
                  "--text", "Deploy notes are in the notes file", "--source", str(path)],
            catch_exceptions=False)
        assert result.exit_code == 2, (label, result.output)
        assert secret not in result.output
    assert_nowhere(db, *SECRETS)


# --------------------------------------------------------------------------- hooks


def test_the_stop_and_codex_hooks_store_the_corpus_redacted(tmp_path, env):
    repo = tmp_path / "project"
    (repo / ".git").mkdir(parents=True)
    db = tmp_path / "memory.db"
    reply = "Done. Notes:\n\n" + "\n\n".join(text for _, text, _ in FOUND)
    stop = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop",
            "last_assistant_message": reply}
    proc = subprocess.run([*cli_argv(), "--db", str(db), "hook", "claude-code",
                           "--no-extract"], input=json.dumps(stop), capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    note = {"type": "agent-turn-complete", "thread-id": "t", "turn-id": "1",
            "cwd": str(repo), "input-messages": [text for _, text, _ in ONE_LINE],
            "last-assistant-message": reply}
    proc = subprocess.run([*cli_argv(), "--db", str(db), "hook", "codex", "--no-extract",
                           json.dumps(note)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    cells = json.dumps(stored_texts(db))
    assert "[REDACTED:credential-phrase]" in cells and "Done. Notes:" in cells
    assert_nowhere(db, *SECRETS)


def test_a_git_change_stores_the_corpus_redacted(tmp_path):
    from powercontext.adapters.candidates.git import git_change_source

    root = tmp_path / "r"
    root.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp_path))

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env,
                       capture_output=True)

    git("init", "-q")
    (root / "NOTES.md").write_text("Run make test.\n")
    git("add", ".")
    git("commit", "-qm", "one")
    (root / "NOTES.md").write_text("Run make test.\n" + "\n".join(t for _, t, _ in FOUND))
    git("commit", "-qam", "two")
    change = git_change_source(root, "HEAD~1")
    assert change is not None and "+Run make test." not in change.content
    for label, _, secret in FOUND:
        assert secret not in change.content, label
    db = tmp_path / "memory.db"
    run(db, lambda svc: svc.backend.put_sources((change,)))
    assert_nowhere(db, *SECRETS)


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize(("label", "text", "secret"), ONE_LINE,
                         ids=[c[0] for c in ONE_LINE])
def test_a_business_key_holding_any_shape_is_refused(tmp_path, label, text, secret):
    db = tmp_path / "memory.db"
    artifact_id = _seed(db)

    async def body(svc):
        with pytest.raises(E.SecretDetectedError) as info:
            await svc.remember(None, key=f"note:{text}", entries=(
                MemoryEntryInput("fact", "Deploys run on Fridays."),))
        assert info.value.field == "key" and secret not in str(info.value)
        with pytest.raises(E.SecretDetectedError):
            await svc.backend.import_memory_keys({f"note:{text}": artifact_id})
        return await svc.memory_keys()

    assert run(db, body) == {"repo:demo": artifact_id}
    assert_nowhere(db, secret)


# --------------------------------------------------------------------------- Topics


def _topic_service(db: Path):
    from powercontext.adapters.sqlite import SQLiteTopicBackend
    from powercontext.topic_service import TopicMemoryService

    return TopicMemoryService(SQLiteTopicBackend(str(db)))


def test_a_topic_reassembling_a_secret_from_clean_sources_is_published_redacted(tmp_path):
    """The issue's example: a Source whose secret is split over two clean lines, and a
    summary that puts it back together."""
    db = tmp_path / "topics.db"
    split = "The deploy notes say the admin password is\nZp0rt4lAdm1n, rotated monthly."
    whole = "The admin password is " + "Zp0rt4lAdm1n, rotated monthly."

    async def body():
        svc = _topic_service(db)
        try:
            src = canonical.make_source("src_split", "user_note", split)
            await svc.add_sources("project:demo", [src])  # each line is clean: stored
            (rev,) = await svc._publish("project:demo", creates=[(
                {"title": "Deploy notes", "summary": whole,
                 "detail": "\n".join(text for _, text, _ in FOUND)},
                [SourceRef(src.source_id, src.content_hash)])])
            return rev
        finally:
            await svc.close()

    rev = asyncio.run(body())
    assert rev.content.summary == "The admin password is [REDACTED:credential-phrase], " \
                                  "rotated monthly."
    for label, _, secret in FOUND:
        assert secret not in rev.content.detail, label
    assert_nowhere(db, "Zp0rt4lAdm1n is", *[s for s in SECRETS if s != "Zp0rt4lAdm1n"])
    stored = json.dumps([v for t, _, v in stored_texts(db) if "source" not in t])
    assert "Zp0rt4lAdm1n" not in stored  # only the split Source holds the two halves


def test_the_topic_backend_refuses_a_publication_holding_a_secret(tmp_path):
    from powercontext.core.topic import content as topic_content
    from powercontext.core.topic import projection as topic_projection
    from powercontext.core.topic.models import (
        PublicationGuards,
        TopicPublication,
        TopicRef,
        TopicWrite,
    )

    db = tmp_path / "topics.db"

    async def body():
        svc = _topic_service(db)
        try:
            src = canonical.make_source("src_ok", "user_note", "Deploys run on Fridays.")
            await svc.add_sources("project:demo", [src])
            analyzer = await svc.backend.analyzer()
            refused = []
            for field in ("title", "summary", "detail"):
                for _, text, _ in ONE_LINE:
                    parts = {"title": "Deploys", "summary": "When deploys run.",
                             "detail": "Deploys run on Fridays."}
                    parts[field] = text
                    content = topic_content.make_content(**parts)
                    ref = TopicRef(topic_content.make_topic_id(1_700_000_000_000,
                                                               os.urandom(10)), 1)
                    write = TopicWrite("create", "project:demo", ref, None, content,
                                       (SourceRef(src.source_id, src.content_hash),),
                                       topic_projection.build_projection(content, analyzer,
                                                                         None, None))
                    with pytest.raises(E.SecretDetectedError) as info:
                        await svc.backend.publish(TopicPublication((write,),
                                                                   PublicationGuards()))
                    refused.append(info.value.field)
            return refused
        finally:
            await svc.close()

    refused = asyncio.run(body())
    assert set(refused) == {f"writes[0].content.{f}" for f in ("title", "summary", "detail")}
    assert_nowhere(db, *SECRETS)
