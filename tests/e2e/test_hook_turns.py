"""Agents write Sources (issue 16 item 6): the Stop hook of Claude Code and Codex's
``agent-turn-complete`` add the finished turn to the repository's Scope
``repo:<canonical path>`` as one ``conversation`` Source (bounded, secrets redacted,
idempotent per turn), and the prompt hook adds the Scope's Topic hits to what it
injects. Real ``powercontext hook`` runs (click's runner in process for most cases, a
process for the start-up one) on a real SQLite file, with the payload shapes the
agents send."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from support.cli import invoke_hooks

from powercontext.core import canonical
from powercontext.core.topic.models import TopicMemoryContent
from powercontext.entrypoints.cli import hook as hook_mod
from powercontext.entrypoints.cli.hook_turn import (
    MAX_TURN_PROMPT_CHARS,
    MAX_TURN_REPLY_CHARS,
    conversation_source,
    record_turn,
)
from powercontext.runtime import open_service, open_topic_service

#: A fake GitHub token (split so that no scanner flags this file).
GITHUB_TOKEN = "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7"


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root.resolve()


def scope_journal(db: Path, scope: str):
    async def body():
        async with open_topic_service(db, embedding="none") as svc:
            return await svc.backend.scope_journal(scope, 0, 100)

    return asyncio.run(body())


def pending(db: Path, scope: str):
    async def body():
        async with open_topic_service(db, embedding="none") as svc:
            (status,) = await svc.status(scope)
            return status

    return asyncio.run(body())


def transcript(path: Path, prompt: str, reply: str, turn: str = "u-2") -> Path:
    """A Claude Code transcript: a first turn, then ``prompt`` (line uuid ``turn``), a
    tool call and its result, and the final ``reply``."""
    lines = [
        {"type": "user", "uuid": "u-1", "message": {"role": "user", "content": "Hello"}},
        {"type": "assistant", "uuid": "a-1", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Hi."}]}},
        {"type": "user", "uuid": turn, "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "uuid": "a-2", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Looking at tests/test_io.py."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}]}},
        {"type": "user", "uuid": "u-3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "1 failed"}]}},
        {"type": "assistant", "uuid": "a-3", "message": {"role": "assistant", "content": [
            {"type": "text", "text": reply}]}},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def stop_payload(tmp_path: Path, repo: Path, **extra: object) -> dict[str, object]:
    t = transcript(tmp_path / "t.jsonl", "Fix the flaky io test",
                   "Fixed: the test now waits for the file lock.")
    return {"session_id": "3f1c-sess", "transcript_path": str(t), "cwd": str(repo / "src"),
            "permission_mode": "default", "hook_event_name": "Stop",
            "stop_hook_active": False, **extra}


@pytest.mark.subprocess
def test_stop_adds_the_turn_to_the_repository_scope_as_a_conversation_source(tmp_path,
                                                                            repo):
    db = tmp_path / "memory.db"
    report = json.loads(invoke_hooks(tmp_path, db, "--json", "hook", "claude-code", "--no-extract",
                               stdin=json.dumps(stop_payload(tmp_path, repo))).stdout)
    scope = f"repo:{repo}"
    (row,) = scope_journal(db, scope)
    src = row.source
    assert (row.position, src.kind) == (1, "conversation")
    assert report["turn_source_id"] == src.source_id
    assert src.content == ("User:\nFix the flaky io test\n\n"
                           "Assistant:\nFixed: the test now waits for the file lock.")
    assert src.uri == "claude-code://session/3f1c-sess/turn/u-2"
    assert dict(src.metadata) == {"agent": "claude-code", "repo": str(repo),
                                  "event": "Stop", "session_id": "3f1c-sess",
                                  "turn_id": "u-2"}
    # the Scope is Pending: Topic processing sees the turn
    status = pending(db, scope)
    assert status.source_head == 1 and status.pending is not None
    assert status.pending.source_through == 1


@pytest.mark.subprocess
def test_the_same_turn_twice_is_one_source_and_a_later_reply_of_it_adds_none(tmp_path,
                                                                           repo):
    db = tmp_path / "memory.db"
    payload = stop_payload(tmp_path, repo)
    invoke_hooks(tmp_path, db, "hook", "claude-code", "--no-extract", stdin=json.dumps(payload))
    invoke_hooks(tmp_path, db, "hook", "claude-code", "--no-extract",
           stdin=json.dumps(dict(payload, stop_hook_active=True)))
    # the same turn (same session, same prompt line) with another final reply
    out = invoke_hooks(tmp_path, db, "--json", "hook", "claude-code", "--no-extract",
                 stdin=json.dumps(dict(payload, last_assistant_message="Also ran ruff.")))
    report = json.loads(out.stdout)
    assert report["turn_source_id"] is None
    assert any("already recorded" in n for n in report["notes"])
    (row,) = scope_journal(db, f"repo:{repo}")
    assert row.source.content.endswith("Fixed: the test now waits for the file lock.")
    # the next turn of the session is a new Source at the next position
    t = transcript(tmp_path / "t2.jsonl", "Now rename the helper", "Renamed it.", turn="u-9")
    invoke_hooks(tmp_path, db, "hook", "claude-code", "--no-extract",
           stdin=json.dumps(dict(payload, transcript_path=str(t))))
    rows = scope_journal(db, f"repo:{repo}")
    assert [(r.position, r.source.uri.rsplit("/", 1)[1]) for r in rows] == [(1, "u-2"),
                                                                            (2, "u-9")]


@pytest.mark.subprocess
def test_codex_turn_complete_adds_the_turn_named_by_thread_and_turn(tmp_path, repo):
    db = tmp_path / "memory.db"
    note = {"type": "agent-turn-complete", "thread-id": "th-1", "turn-id": "12",
            "cwd": str(repo / "src"), "input-messages": ["Rename foo to bar", "in src/"],
            "last-assistant-message": "Renamed foo to bar in 3 files."}
    invoke_hooks(tmp_path, db, "hook", "codex", "--no-extract", json.dumps(note))
    invoke_hooks(tmp_path, db, "hook", "codex", "--no-extract", json.dumps(note))  # idempotent
    (row,) = scope_journal(db, f"repo:{repo}")
    assert row.source.kind == "conversation"
    assert row.source.uri == "codex://thread/th-1/turn/12"
    assert row.source.content == ("User:\nRename foo to bar\nin src/\n\n"
                                  "Assistant:\nRenamed foo to bar in 3 files.")
    assert dict(row.source.metadata)["turn_id"] == "12"


@pytest.mark.subprocess
def test_the_task_outcome_stays_memory_evidence_outside_the_scope(tmp_path, repo):
    db = tmp_path / "memory.db"
    invoke_hooks(tmp_path, db, "hook", "claude-code", "--no-extract",
           stdin=json.dumps(stop_payload(tmp_path, repo)))

    async def body():
        async with open_service(db) as svc:
            return [s.kind for _, s in await svc.backend.journal(0, 100)]

    assert asyncio.run(body()) == ["task_outcome", "conversation"]
    # one Source per turn in the Scope: the outcome's text is not processed twice
    assert [r.source.kind for r in scope_journal(db, f"repo:{repo}")] == ["conversation"]


@pytest.mark.subprocess
def test_a_turn_with_a_secret_is_stored_redacted_and_the_secret_never(tmp_path, repo):
    db = tmp_path / "memory.db"
    t = transcript(tmp_path / "secret.jsonl", f"Use the token {GITHUB_TOKEN} to push",
                   f"Pushed with {GITHUB_TOKEN}.")
    payload = stop_payload(tmp_path, repo, transcript_path=str(t))
    invoke_hooks(tmp_path, db, "hook", "claude-code", "--no-extract", stdin=json.dumps(payload))
    (row,) = scope_journal(db, f"repo:{repo}")
    assert GITHUB_TOKEN not in row.source.content
    assert row.source.content.count("[REDACTED:") == 2
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("memory.db*"))
    assert GITHUB_TOKEN.encode() not in raw


def test_a_long_turn_is_bounded_keeping_its_start_and_end(tmp_path, repo):
    prompt = "p" * (MAX_TURN_PROMPT_CHARS * 2) + " PROMPT-END"
    reply = "r" * (MAX_TURN_REPLY_CHARS * 3) + " REPLY-END"
    src = conversation_source(scope_id=f"repo:{repo}", agent="codex", session="th",
                              turn="1", prompt=prompt, reply=reply, metadata={},
                              scanner=None)
    assert src is not None
    assert len(src.content) < MAX_TURN_PROMPT_CHARS + MAX_TURN_REPLY_CHARS + 200
    assert "PROMPT-END" in src.content and src.content.endswith("REPLY-END")
    assert src.content.count("characters cut ...]") == 2
    assert conversation_source(scope_id="repo:/x", agent="codex", session="th", turn="1",
                               prompt="  ", reply="", metadata={}, scanner=None) is None


def test_a_scope_that_cannot_take_the_turn_is_a_note_never_a_failure(tmp_path):
    async def body():
        async with open_service(tmp_path / "m.db") as svc:
            src = conversation_source(scope_id="repo:/a", agent="codex", session="th",
                                      turn="1", prompt="hi", reply="hello", metadata={},
                                      scanner=None)
            assert await record_turn(svc, "repo:/a", src) == []
            other = await record_turn(svc, "repo:/b", src)  # one Scope per Source
            too_long = await record_turn(svc, "repo:/" + "d" * 300, src)
            return other, too_long, [s.kind for _, s in await svc.backend.journal(0, 10)]

    other, too_long, kinds = asyncio.run(body())
    assert "not journaled" in other[0] and "not journaled" in too_long[0]
    assert kinds == ["conversation"]


@pytest.mark.subprocess
def test_a_stop_without_text_records_no_turn_and_still_exits_zero(tmp_path, repo):
    db = tmp_path / "memory.db"
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "Stop"}
    report = json.loads(invoke_hooks(tmp_path, db, "--json", "hook", "claude-code", "--no-extract",
                               stdin=json.dumps(payload)).stdout)
    assert report["turn_source_id"] is None
    assert scope_journal(db, f"repo:{repo}") == ()


# --------------------------------------------------------------------------- prompt hook


RELEASE = TopicMemoryContent(
    "Release process", "How we cut a release: tag main, then make release.",
    "# Releases\n\nTag the commit on main.\n\nThen run make release.")


def seed_topics(db: Path, scope: str) -> str:
    """A published Topic of ``scope``, grown (as Topics are) from a Source journaled in
    that Scope: published as a Window is, with its Cursor advanced in the same
    transaction."""
    from powercontext.core.topic.models import PublicationGuards
    from powercontext.core.topic.processing import BINDING, CursorAdvance

    async def body():
        async with open_topic_service(db, embedding="none") as svc:
            src = canonical.make_source("src_release", "file", "make release\n")
            await svc.add_sources(scope, [src])
            head = await svc.backend.source_head(scope)
            guards = PublicationGuards(cursor=CursorAdvance(BINDING, scope, 0, head))
            (rev,) = await svc.publish(scope, creates=[(RELEASE, [src])], guards=guards)
            return f"{rev.ref.artifact_id}@{rev.ref.revision}"

    return asyncio.run(body())


def test_prompt_hook_adds_the_scopes_topics_inside_the_fence(tmp_path, repo):
    db = tmp_path / "memory.db"
    ref = seed_topics(db, f"repo:{repo}")  # Topics, but no Memory mapped to the repository
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
               "prompt": "How do we cut a release?"}
    out = json.loads(invoke_hooks(tmp_path, db, "hook", "claude-code",
                            stdin=json.dumps(payload)).stdout)
    ctx = out["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith("powercontext memory (UNTRUSTED)") and "not instructions" in ctx
    fence = ctx.split("\n")[1]
    assert fence.startswith("<powercontext-memory-") and 'untrusted="true"' in fence
    line = f"- [topic] Release process: How we cut a release: tag main, then make release. " \
           f"(topic {ref})"
    assert line in ctx
    assert "Tag the commit on main." not in ctx  # never the Detail
    # the command names the repository's Scope (it used to print --scope '')
    assert f"powercontext topic get ID@REV --scope {shlex.quote(f'repo:{repo}')}" in ctx
    assert len(ctx) <= hook_mod.MAX_CONTEXT_CHARS
    # --no-topics leaves them out (and with no Memory hit, nothing is printed)
    assert invoke_hooks(tmp_path, db, "hook", "claude-code", "--no-topics",
                  stdin=json.dumps(payload)).stdout == ""
    # another repository's prompt sees none of them
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    payload["cwd"] = str(other)
    assert invoke_hooks(tmp_path, db, "hook", "claude-code", stdin=json.dumps(payload)).stdout == ""


def test_prompt_hook_topics_come_after_the_memory_entries(tmp_path, repo):
    from powercontext.core.models import MemoryEntryInput

    db = tmp_path / "memory.db"

    async def body():
        async with open_service(db) as svc:
            await svc.remember(None, mode="append", key=f"repo:{repo}", entries=(
                MemoryEntryInput("constraint", "Cut a release only from main"),))

    asyncio.run(body())
    seed_topics(db, f"repo:{repo}")
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
               "prompt": "How do we cut a release?"}
    ctx = json.loads(invoke_hooks(tmp_path, db, "hook", "claude-code", stdin=json.dumps(
        payload)).stdout)["hookSpecificOutput"]["additionalContext"]
    lines = [ln for ln in ctx.splitlines() if ln.startswith("- [")]
    assert lines[0].startswith("- [constraint] Cut a release only from main")
    assert lines[1].startswith("- [topic] Release process")


@pytest.mark.subprocess
def test_prompt_hook_with_topics_imports_nothing_heavy(tmp_path, repo):
    import sys

    db = tmp_path / "memory.db"
    seed_topics(db, f"repo:{repo}")
    probe = tmp_path / "modules.json"
    heavy = ["mcp", "rich", "openai", "torch", "sentence_transformers", "pydantic", "anyio",
             "numpy", "detect_secrets", "requests", "fastapi"]
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(probe)!r}, 'w').write(json.dumps("
        f"[m for m in {heavy!r} if m in sys.modules])))\n"
        "sys.argv[0] = 'powercontext'\n"
        "from powercontext.entrypoints.cli.main import main\nmain()\n"
    )
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    env.pop("POWERCONTEXT_DB", None)
    env.pop("POWERCONTEXT_EMBEDDING", None)
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
               "prompt": "How do we cut a release?"}
    proc = subprocess.run([sys.executable, "-c", code, "--db", str(db), "hook", "claude-code"],
                          input=json.dumps(payload), capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0 and "[topic] Release process" in proc.stdout, proc.stderr
    assert json.loads(probe.read_text()) == []


def _hook_modules(tmp_path: Path, db: Path, repo: Path, prompt: str
                  ) -> tuple[str, list[str]]:
    """The prompt hook's stdout and the powercontext Topic-side modules it imported."""
    import sys

    probe = tmp_path / "topic_modules.json"
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(probe)!r}, 'w').write(json.dumps(sorted("
        "m for m in sys.modules if m.endswith('.topic_backend') or "
        "m == 'powercontext.core.topic.models'))))\n"
        "sys.argv[0] = 'powercontext'\n"
        "from powercontext.entrypoints.cli.main import main\nmain()\n"
    )
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    env.pop("POWERCONTEXT_DB", None)
    env.pop("POWERCONTEXT_EMBEDDING", None)
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
               "prompt": prompt}
    proc = subprocess.run([sys.executable, "-c", code, "--db", str(db), "hook", "claude-code"],
                          input=json.dumps(payload), capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(probe.read_text())


@pytest.mark.subprocess
def test_a_scope_no_window_has_published_opens_no_topic_side(tmp_path, repo):
    """A bootstrapped repository journals its rule files as Sources, but no Topic exists
    until a Window publishes (and moves the Topic Cursor with it): the prompt hook then
    reads the Memory only, and opens the Topic side once a Window has published."""
    from powercontext.core.models import MemoryEntryInput

    db = tmp_path / "memory.db"
    scope = f"repo:{repo}"

    async def body():
        async with open_service(db) as svc:
            await svc.remember(None, mode="append", key=scope, entries=(
                MemoryEntryInput("constraint", "Cut a release only from main"),))
        async with open_topic_service(db, embedding="none") as tsvc:
            src = canonical.make_source("src_notes", "file", "release notes\n")
            await tsvc.add_sources(scope, [src])

    asyncio.run(body())
    out, modules = _hook_modules(tmp_path, db, repo, "How do we cut a release?")
    assert "Cut a release only from main" in out and "[topic]" not in out
    assert modules == []
    seed_topics(db, scope)  # a Window publishes: the Cursor moves past 0
    out, modules = _hook_modules(tmp_path, db, repo, "How do we cut a release?")
    assert "[topic] Release process" in out
    assert "powercontext.core.topic.models" in modules


TOX_DUMP = TopicMemoryContent(
    "tox",
    "[tox] envlist = linting, py310, py311, py312, docs [testenv] commands = pytest {posargs} "
    "deps = -r requirements.txt [testenv:linting] skip_install = True commands = pre-commit "
    "run --all-files --show-diff-on-failure [testenv:docs] commands = sphinx-build -W -b "
    "html doc/en doc/en/_build/html",
    "[tox]\nenvlist = linting, py310\n")
BILLING = TopicMemoryContent(
    "Billing exports", "Invoices are exported nightly to the finance bucket as CSV.",
    "# Billing\n\nInvoices go out nightly.")


def test_topics_pass_the_same_bar_as_entries_and_never_as_raw_dumps(tmp_path, repo):
    """The issue's examples: the prompt hook added up to three Topics to every prompt,
    one of them a raw tox.ini dump."""
    db = tmp_path / "memory.db"
    scope = f"repo:{repo}"

    async def body():
        async with open_topic_service(db, embedding="none") as svc:
            src = canonical.make_source("src_topics", "file", "tox\n")
            await svc.add_sources(scope, [src])
            await svc.publish(scope, creates=[(RELEASE, [src]), (TOX_DUMP, [src]),
                                               (BILLING, [src])])

    asyncio.run(body())

    def topics(prompt: str) -> list[str]:
        payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
                   "prompt": prompt}
        out = invoke_hooks(tmp_path, db, "hook", "claude-code", stdin=json.dumps(payload)).stdout
        if not out:
            return []
        ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        return [ln for ln in ctx.splitlines() if ln.startswith("- [topic]")]

    assert [t.split(":")[0] for t in topics("How do we cut a release?")] == [
        "- [topic] Release process"]
    # the tox dump names the tests and the docs, but it is a file, not a summary
    assert topics("Run the tests with tox and build the docs") == []
    assert topics("What is the difference between a list and a tuple?") == []
