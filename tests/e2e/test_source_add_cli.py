"""Producers of scoped Sources end to end on a real SQLite file (issue 13 item 1; Topic
Memory RFC, "Source, Window, Cursor, and Pending"; TOPIC-MEMORY.md, "Scopes are new"):
``powercontext source add --scope S`` (files, stdin, ``--jsonl`` chat turns), the Stop
hook and ``repo bootstrap`` writing into ``repo:<canonical path>``. Every Source lands
in its Scope's journal with the Pending raise; bad input is refused naming the field,
before anything is stored."""

from __future__ import annotations

import asyncio
import json
import os
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from powercontext.core.topic.processing import BINDING
from powercontext.entrypoints.cli.main import cli
from powercontext.memory_names import repo_key
from powercontext.runtime import open_topic_service

SCOPE = "project:x"


@pytest.fixture
def pc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``run(*args, expect=0, input=None)``: the CLI in process with ``--json``; returns
    the parsed stdout (or the raw result when the output is not JSON)."""
    db = tmp_path / "memory.db"
    for k in [k for k in os.environ if k.startswith("POWERCONTEXT_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    runner = CliRunner()

    def run(*args: str, expect: int = 0, input: str | bytes | None = None) -> Any:
        result = runner.invoke(cli, ["--db", str(db), "--json", *args], input=input,
                               catch_exceptions=False)
        assert result.exit_code == expect, (args, result.exit_code, result.output)
        try:
            return json.loads(result.stdout)
        except ValueError:
            return result

    run.db = db  # type: ignore[attr-defined]
    return run


def scoped(db: Path, scope: str) -> dict[str, Any]:
    """The Scope's journal (source ids by position), head and Pending row."""

    async def body() -> dict[str, Any]:
        async with open_topic_service(db, embedding="none") as svc:
            rows = await svc.backend.scope_journal(scope, 0, 1000)
            (st,) = await svc.status(scope)
            return {"journal": [(r.position, r.source.source_id, r.lineage_only) for r in rows],
                    "sources": {r.source.source_id: r.source for r in rows},
                    "head": await svc.backend.source_head(scope), "pending": st.pending,
                    "cursor": st.cursor}

    return asyncio.run(body())


def test_files_and_chat_turns_land_in_the_scope_journal_with_pending_raised(pc, tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("# Releases\n\nTag main, then run make release.\n")
    b.write_text("# Deploys\n\nDeploys go out on Tuesdays.\n")
    out = pc("source", "add", "--scope", SCOPE, str(a), str(b))
    assert out["scope_id"] == SCOPE
    assert [r["position"] for r in out["sources"]] == [1, 2]
    assert [r["kind"] for r in out["sources"]] == ["file", "file"]
    assert out["sources"][0]["uri"] == a.resolve().as_uri()
    assert all(r["source_id"].startswith("src_") for r in out["sources"])
    turns = "\n".join(json.dumps(t) for t in (
        {"kind": "chat_turn", "content": "user: when do we deploy?",
         "metadata": {"role": "user"}},
        {"kind": "chat_turn", "content": "assistant: on Tuesdays.", "uri": "chat://s1/2"},
    )) + "\n\n"
    chat = pc("source", "add", "--scope", SCOPE, "--jsonl", input=turns)
    assert [r["position"] for r in chat["sources"]] == [3, 4]
    st = scoped(pc.db, SCOPE)
    ids = [r["source_id"] for r in out["sources"] + chat["sources"]]
    assert st["journal"] == [(i + 1, sid, False) for i, sid in enumerate(ids)]
    assert st["head"] == 4 and st["cursor"] == 0
    p = st["pending"]
    assert (p.binding_name, p.source_through, p.flush_generation,
            p.handled_flush_generation) == (BINDING, 4, 0, 0)
    first = st["sources"][ids[2]]
    assert (first.kind, dict(first.metadata)) == ("chat_turn", {"role": "user"})
    assert st["sources"][ids[3]].uri == "chat://s1/2"


def test_every_add_is_a_new_source_with_its_own_position(pc, tmp_path):
    """The same file added again is a new Source (a fresh id, the next position), with
    the same content hash; NFC is still applied to what is stored."""
    a = tmp_path / "a.md"
    a.write_text("Café au lait.\n")
    first = pc("source", "add", "--scope", SCOPE, str(a))["sources"][0]
    again = pc("source", "add", "--scope", SCOPE, str(a))["sources"][0]
    assert (first["position"], again["position"]) == (1, 2)
    assert first["source_id"] != again["source_id"]
    nfd = unicodedata.normalize("NFD", "Café au lait.\n")
    via_stdin = pc("source", "add", "--scope", SCOPE, "--kind", "file", "--uri",
                   a.resolve().as_uri(), "-", input=nfd.encode())["sources"][0]
    assert via_stdin["position"] == 3
    st = scoped(pc.db, SCOPE)
    stored = [st["sources"][sid] for _, sid, _ in st["journal"]]
    assert len({s.content_hash for s in stored}) == 1  # one content, three Sources
    assert stored[2].content == unicodedata.normalize("NFC", nfd)


def test_three_chat_lines_are_three_sources_in_the_order_said(pc, tmp_path):
    """``user: ok, ship it`` / ``assistant: deploying now`` / ``user: ok, ship it``:
    positions 1, 2, 3 (they were 1, 2, 1: the journal lost the order of what was said,
    and the command reported 3 Sources when 2 were stored)."""
    lines = [{"kind": "chat_turn", "content": "user: ok, ship it"},
             {"kind": "chat_turn", "content": "assistant: deploying now"},
             {"kind": "chat_turn", "content": "user: ok, ship it"}]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    out = pc("source", "add", "--scope", SCOPE, "--jsonl", input=text)
    assert [r["position"] for r in out["sources"]] == [1, 2, 3]
    assert len({r["source_id"] for r in out["sources"]}) == 3
    st = scoped(pc.db, SCOPE)
    assert [st["sources"][sid].content for _, sid, _ in st["journal"]] == [
        line["content"] for line in lines]
    assert st["head"] == 3 and st["pending"].source_through == 3
    human = CliRunner().invoke(cli, ["--db", str(pc.db), "source", "add", "--scope",
                                     "project:human", "--jsonl"], input=text,
                               catch_exceptions=False)
    assert human.exit_code == 0, human.output
    assert "3 Source(s) in project:human" in human.stderr
    assert scoped(pc.db, "project:human")["head"] == 3  # as many as the command says


def test_stdin_without_a_file_is_one_text_source(pc):
    out = pc("source", "add", "--scope", SCOPE, input="a note from stdin\n")
    (row,) = out["sources"]
    assert (row["kind"], row["uri"], row["name"], row["position"]) == ("text", None, "stdin", 1)


def test_the_same_file_can_be_added_to_a_second_scope(pc, tmp_path):
    """A new Source in each Scope (it was refused: one Scope per Source, and the id came
    from the content)."""
    a = tmp_path / "a.md"
    a.write_text("shared text\n")
    x = pc("source", "add", "--scope", SCOPE, str(a))["sources"][0]
    y = pc("source", "add", "--scope", "project:y", str(a))["sources"][0]
    assert (x["position"], y["position"]) == (1, 1) and x["source_id"] != y["source_id"]
    assert scoped(pc.db, "project:y")["head"] == 1


@pytest.mark.parametrize(("args", "stdin", "field"), [
    (("--scope", ""), "x", "scope_id"),
    (("--scope", "s" * 257), "x", "scope_id"),
    (("--scope", "a\nb"), "x", "scope_id"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "chat_turn"}\n', "stdin:1.content"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x", "op": "create"}\n',
     "stdin:1"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x"}\n[1]\n', "stdin:2"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x", "content": "y"}\n',
     "stdin:1"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x", "metadata": {"a": 1}}\n',
     "stdin:1.metadata"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x", "metadata": null}\n',
     "stdin:1.metadata"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x", "metadata": ""}\n',
     "stdin:1.metadata"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x", "metadata": 0}\n',
     "stdin:1.metadata"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x", "metadata": false}\n',
     "stdin:1.metadata"),
    (("--scope", SCOPE, "--jsonl"), '{"kind": "t", "content": "x", "metadata": []}\n',
     "stdin:1.metadata"),
    (("--scope", SCOPE, "--jsonl"), "not json\n", "stdin:1"),
    (("--scope", SCOPE, "--jsonl"), "\n\n", "FILE"),
    (("--scope", SCOPE, "--kind", ""), "x", "stdin.kind"),
    (("--scope", SCOPE, "--jsonl", "--kind", "t"), '{"kind": "t", "content": "x"}\n', "kind"),
    (("--scope", SCOPE, "--uri", "u:1", "-", "-"), "x", "FILE"),
])
def test_bad_input_is_refused_naming_the_field_and_stores_nothing(pc, args, stdin, field):
    err = pc("source", "add", *args, input=stdin, expect=2)
    assert err["error"] == "InvalidInputError", err
    assert err["message"].startswith(f"{field}:") or f"{field}:" in err["message"], err
    assert scoped(pc.db, SCOPE)["head"] == 0


def test_uri_with_two_files_and_non_utf8_are_bad_input(pc, tmp_path):
    a, b, bad = tmp_path / "a.md", tmp_path / "b.md", tmp_path / "bad.bin"
    a.write_text("a")
    b.write_text("b")
    bad.write_bytes(b"\xff\xfe not text")
    err = pc("source", "add", "--scope", SCOPE, "--uri", "u:1", str(a), str(b), expect=2)
    assert err["message"].startswith("uri:")
    err = pc("source", "add", "--scope", SCOPE, str(a), str(bad), expect=2)
    assert err["message"].startswith(f"{bad}:") and "UTF-8" in err["message"]
    pc("source", "add", "--scope", SCOPE, str(tmp_path / "missing.md"), expect=2)
    assert scoped(pc.db, SCOPE)["head"] == 0


def test_a_secret_refuses_the_whole_call_before_anything_is_stored(pc, tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("fine text\n")
    b.write_text("token = ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" + "\n")
    err = pc("source", "add", "--scope", SCOPE, str(a), str(b), expect=2)
    assert err["error"] == "SecretDetectedError"
    assert err["message"].startswith(f"{b}.content:") and "ghp_" not in err["message"]
    line = json.dumps({"kind": "chat_turn", "content": "x",
                       "metadata": {"k": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"}})
    err = pc("source", "add", "--scope", SCOPE, "--jsonl", input=line + "\n", expect=2)
    assert err["error"] == "SecretDetectedError" and err["message"].startswith("stdin:1.")
    assert scoped(pc.db, SCOPE)["head"] == 0


def test_human_output_prints_each_id_and_scope_position(tmp_path, monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    a = tmp_path / "a.md"
    a.write_text("hello\n")
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "m.db"), "source", "add",
                                      "--scope", SCOPE, str(a)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    sid, where, name = line.split()
    assert sid.startswith("src_") and where == f"{SCOPE}#1" and name == str(a)


# ------------------------------------------------------------ hooks and repo commands


def _git_repo(tmp_path: Path) -> Path:
    import subprocess

    root = tmp_path / "project"
    root.mkdir()
    (root / "Makefile").write_text("test:\n\tpytest -q\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp_path))
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "init")):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env,
                       capture_output=True)
    return root.resolve()


@pytest.mark.subprocess
def test_the_stop_hook_journals_its_turn_in_the_repository_scope(pc, tmp_path):
    root = _git_repo(tmp_path)
    payload = {"session_id": "s", "cwd": str(root / "."), "hook_event_name": "Stop",
               "last_assistant_message": "Fixed the flaky lock test by waiting on the file."}
    out = pc("hook", "claude-code", "--no-extract", input=json.dumps(payload))
    key = repo_key(root)
    assert key == f"repo:{root}" and out["repo_key"] == key
    st = scoped(pc.db, key)
    # the turn (a conversation Source) is the Scope's; the task_outcome is Memory evidence
    assert out["turn_source_id"] and out["turn_source_id"] != out["source_id"]
    assert st["journal"] == [(1, out["turn_source_id"], False)]
    assert st["pending"].source_through == 1
    # the Memory behaviour is unchanged: the Source is stored, nothing extracted
    assert out["extracted"] is False and out["memory_ref"] is None


@pytest.mark.subprocess
def test_repo_bootstrap_journals_its_contract_sources_in_the_repository_scope(pc, tmp_path):
    root = _git_repo(tmp_path)
    (root / "README.md").write_text("# project\n\nRun `make test`.\n")
    out = pc("repo", "bootstrap", str(root))
    st = scoped(pc.db, repo_key(root))
    assert sorted(sid for _, sid, _ in st["journal"]) == sorted(
        s["source_id"] for s in out["sources"])
    assert st["head"] == len(out["sources"]) >= 2
    assert out["notes"] == [] or all("journal" not in n for n in out["notes"])
    again = pc("repo", "bootstrap", str(root))  # the same contract: same positions
    assert scoped(pc.db, repo_key(root))["journal"] == st["journal"]
    assert again["memory_ref"] == out["memory_ref"]


def test_a_scope_the_repository_cannot_use_never_fails_its_memory_write(tmp_path):
    """journal_sources (hooks, repo): a Scope id over 256 characters stores the Source
    unscoped, as before, with a note; a Source already in another Scope stays where it
    is (the Memory cites it) and is journaled here as its own copy, the same copy for
    every add (a redelivered event adds nothing)."""
    from powercontext.entrypoints.cli.sources import build_source, journal_sources, scope_copy
    from powercontext.runtime import open_service

    db = tmp_path / "m.db"
    a, b = build_source("file", "alpha"), build_source("file", "beta")

    async def body() -> None:
        async with open_service(db) as svc:
            notes = await journal_sources(svc, "repo:/" + "d" * 300, (a,))
            assert len(notes) == 1 and "scope_id" in notes[0]
            assert (await svc.backend.get_sources([a.source_id]))[0] == a
            assert await journal_sources(svc, "repo:/one", (b,)) == []
            for _ in range(2):
                assert await journal_sources(svc, "repo:/two", (a, b)) == []
            rows = await svc.backend.scope_journal("repo:/two", 0, 10)
            copy = scope_copy(b, "repo:/two")
            assert [r.source.source_id for r in rows] == [a.source_id, copy.source_id]
            assert rows[1].source.content_hash == b.content_hash
            assert [r.source.source_id for r in await svc.backend.scope_journal(
                "repo:/one", 0, 10)] == [b.source_id]

    asyncio.run(body())
