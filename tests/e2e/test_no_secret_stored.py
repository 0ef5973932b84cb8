"""No secret is ever stored (issue 11 item 2; Memory RFC, "Memory admission rules").

Sources are append-only, so every path that persists one checks it first: the Stop hook
stores the turn redacted, ``remember --source FILE`` refuses (exit 2, naming the file
and the line), the Python API and ``put_sources`` raise SecretDetectedError, repository
commands skip or redact. After each example, every text column of every table of the
real SQLite file (FTS5 and vec0 shadow tables included) is read back with SQL and must
not contain the secret.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner
from support.cli import cli_argv
from support.stored import assert_nowhere, stored_texts

from powercontext.core import canonical
from powercontext.core import errors as E
from powercontext.core.models import MemoryEntryInput
from powercontext.entrypoints.cli.main import cli
from powercontext.runtime import open_service

GITHUB_TOKEN = "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3Bc6Hd1Js5Fg0Ya2Ue7"
AWS_KEY_ID = "AKIA" + "Q3ZT7LMN2XPW5RCB"
AWS_SECRET = "wJalr" + "XUtnFEMI/K7MDENG/bPxRfiCYzq8Kt3mWpLv"
PG_URL = "postgres://app:s3cret@db.internal/app"


def tables_of(db: Path) -> set[str]:
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()
    return names


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    for k in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_EXTRACTOR_MODEL"):
        e.pop(k, None)
    return e


def cli_json(tmp_path: Path, db: Path, *args: str, expect: int):
    result = CliRunner(env={"POWERCONTEXT_HOME": str(tmp_path / "home")}).invoke(
        cli, ["--db", str(db), "--json", *args], catch_exceptions=False)
    assert result.exit_code == expect, result.output
    return json.loads(result.output)


def run(coro_fn, db: Path):
    async def body():
        svc = open_service(db)
        try:
            return await coro_fn(svc)
        finally:
            await svc.close()

    return asyncio.run(body())


def seeded(db: Path) -> None:
    """A Memory with one ordinary entry, so every table (FTS included) exists."""
    async def body(svc):
        src = canonical.make_source("src_note_1", "user_note", "Run make test before review.")
        await svc.remember(None, sources=(src,), entries=(
            MemoryEntryInput("preference", "Run make test before review.", sources=(src,)),))
    run(body, db)


def test_the_scan_helper_sees_fts_shadow_tables_and_finds_stored_text(tmp_path):
    db = tmp_path / "m.db"
    seeded(db)
    names = tables_of(db)
    assert any(n.endswith("_data") for n in names) and any("fts" in n for n in names)
    cells = stored_texts(db)
    assert any("Run make test before review." in v for _, _, v in cells)


# --------------------------------------------------------------------------- the hook


@pytest.mark.subprocess
def test_stop_hook_stores_the_assistant_message_redacted(env, tmp_path):
    repo = tmp_path / "project"
    (repo / ".git").mkdir(parents=True)
    db = tmp_path / "memory.db"
    message = (f"Pushed the fix. I used the token {GITHUB_TOKEN} to open the PR, and the "
               f"staging database is {PG_URL}.\nAll 12 tests pass.")
    payload = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "Stop",
               "stop_hook_active": False, "last_assistant_message": message}
    proc = subprocess.run([*cli_argv(), "--db", str(db), "hook", "claude-code"],
                          input=json.dumps(payload), capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""

    async def journal(svc):
        return [s for _, s in await svc.backend.journal(0, 10)]

    sources = run(journal, db)
    # the task_outcome (Memory evidence) and the turn as a conversation Source of the
    # repository's Scope: both redacted
    assert sorted(s.kind for s in sources) == ["conversation", "task_outcome"]
    (source,) = [s for s in sources if s.kind == "task_outcome"]
    (turn,) = [s for s in sources if s.kind == "conversation"]
    assert "[REDACTED:github-token]" in turn.content
    assert "[REDACTED:github-token]" in source.content
    assert "postgres://app:[REDACTED:url-credentials]@db.internal/app" in source.content
    assert "All 12 tests pass." in source.content
    assert_nowhere(db, GITHUB_TOKEN, "s3cret")


@pytest.mark.subprocess
def test_a_long_turn_is_redacted_before_it_is_cut(env, tmp_path):
    """The outcome keeps the message's head and tail; a token across the cut must not
    leave a recognisable half behind."""
    from powercontext.entrypoints.cli.hook import MAX_OUTCOME_CHARS

    repo = tmp_path / "project"
    (repo / ".git").mkdir(parents=True)
    db = tmp_path / "memory.db"
    cut = MAX_OUTCOME_CHARS * 3 // 4
    message = "word " * ((cut - 10) // 5) + GITHUB_TOKEN + " " + "tail " * 2000
    assert len(message) > MAX_OUTCOME_CHARS
    payload = {"session_id": "s2", "cwd": str(repo), "hook_event_name": "Stop",
               "last_assistant_message": message}
    proc = subprocess.run([*cli_argv(), "--db", str(db), "hook", "claude-code", "--no-extract"],
                          input=json.dumps(payload), capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert_nowhere(db, GITHUB_TOKEN[:10], GITHUB_TOKEN[-10:])


@pytest.mark.subprocess
def test_codex_hook_redacts_the_request_metadata_too(env, tmp_path):
    repo = tmp_path / "project"
    (repo / ".git").mkdir(parents=True)
    db = tmp_path / "memory.db"
    note = {"type": "agent-turn-complete", "thread-id": "t", "turn-id": "1", "cwd": str(repo),
            "input-messages": [f"deploy with export API_KEY={AWS_SECRET}"],
            "last-assistant-message": "Deployed; the health check is green."}
    proc = subprocess.run([*cli_argv(), "--db", str(db), "hook", "codex", json.dumps(note)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr

    async def journal(svc):
        return [s for _, s in await svc.backend.journal(0, 10)]

    sources = run(journal, db)
    (source,) = [s for s in sources if s.kind == "task_outcome"]
    (turn,) = [s for s in sources if s.kind == "conversation"]
    assert dict(source.metadata)["request"].endswith("[REDACTED:credential-assignment]")
    assert "[REDACTED:credential-assignment]" in turn.content
    assert_nowhere(db, AWS_SECRET)


# --------------------------------------------------------------------------- remember --source


@pytest.mark.parametrize(("body", "line", "kind"), [
    (f"# local settings\nAWS_ACCESS_KEY_ID={AWS_KEY_ID}\nREGION=eu-west-1\n", 2,
     "AWS access key id"),
    ("DEBUG=1\npassword=hunter2\n", 2, "credential assignment (password)"),
    (f"[database]\nurl = {PG_URL}\n", 2, "credentials in a URL"),
    ('settings:\n  PASSWORD: "x"\n', 2, "credential assignment (PASSWORD)"),
])
def test_remember_source_holding_a_secret_is_refused_naming_file_and_line(
        tmp_path, body, line, kind):
    env_file = tmp_path / ".env"
    env_file.write_text(body)
    db = tmp_path / "memory.db"
    seeded(db)
    err = cli_json(tmp_path, db, "memory", "remember", "--kind", "fact", "--text",
                   "The service reads its settings from .env", "--source", str(env_file),
                   expect=2)
    assert err["error"] == "SecretDetectedError"
    assert err["message"].startswith(f"--source {env_file}: line {line}: looks like a secret "
                                     f"({kind})")
    for secret in ("hunter2", "s3cret", AWS_KEY_ID):
        assert secret not in err["message"]
    assert_nowhere(db, "hunter2", "s3cret", AWS_KEY_ID, '"x"')
    assert "The service reads its settings" not in json.dumps(stored_texts(db))


def test_remember_source_without_a_secret_still_works(tmp_path):
    ok = tmp_path / "Makefile"
    ok.write_text("test:\n\tpytest -q\n")
    db = tmp_path / "memory.db"
    out = cli_json(tmp_path, db, "memory", "remember", "--kind", "preference", "--text",
                   "Run make test before review", "--source", str(ok), expect=0)
    assert out["memory_ref"]["revision"] == 1


# --------------------------------------------------------------------------- the Python API


@pytest.mark.parametrize(("make", "field"), [
    (lambda: canonical.make_source("src_a", "user_note", f"my token is {GITHUB_TOKEN}"),
     "sources[0].content"),
    (lambda: canonical.make_source("src_b", "user_note", "connect with password=hunter2"),
     "sources[0].content"),
    (lambda: canonical.make_source("src_c", "file", "see the uri", PG_URL), "sources[0].uri"),
    (lambda: canonical.make_source("src_d", "user_note", "a note", None,
                                   {"password": "hunter2"}), "sources[0].metadata.password"),
    (lambda: canonical.make_source("src_e", "user_note", "a note", None,
                                   {"header": f"Authorization: Bearer {GITHUB_TOKEN}"}),
     "sources[0].metadata.header"),
])
def test_remember_and_put_sources_refuse_a_secret_anywhere_in_a_source(tmp_path, make, field):
    db = tmp_path / "memory.db"
    seeded(db)
    src = make()

    async def remember(svc):
        with pytest.raises(E.SecretDetectedError) as info:
            await svc.remember(None, sources=(src,), entries=(
                MemoryEntryInput("fact", "An ordinary fact about the build.", sources=(src,)),))
        return info.value

    err = run(remember, db)
    assert isinstance(err, E.InvalidInputError) and err.field == field
    assert err.line == 1 and "hunter2" not in str(err) and GITHUB_TOKEN not in str(err)

    async def extract(svc):
        with pytest.raises(E.SecretDetectedError):
            await svc.remember(None, sources=(src,), mode="extract")

    async def put(svc):
        with pytest.raises(E.SecretDetectedError):
            await svc.backend.put_sources((src,))

    run(extract, db)
    run(put, db)
    assert_nowhere(db, GITHUB_TOKEN, "hunter2", "s3cret")


def test_an_entry_text_holding_a_secret_is_refused(tmp_path):
    db = tmp_path / "memory.db"
    seeded(db)
    sendgrid = "SG." + "q" * 22 + "." + "Zx8" * 14 + "w"  # a detect-secrets-only format

    async def body(svc):
        for text in ("Use password=hunter2 for the staging database.",
                     f"The mail key is {sendgrid}."):
            with pytest.raises(E.SecretDetectedError) as info:
                await svc.remember(None, entries=(MemoryEntryInput("fact", text),))
            assert info.value.field == "entries[0].text"

    run(body, db)
    assert_nowhere(db, "hunter2", sendgrid)


# --------------------------------------------------------------------------- repository commands


@pytest.mark.subprocess
def test_repo_bootstrap_skips_a_contract_file_holding_a_secret_naming_the_line(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "Makefile").write_text("test:\n\tpytest -q\n")
    (root / "AGENTS.md").write_text("# Agents\n\nNever commit .env.\n\nDB: " + PG_URL + "\n")
    db = tmp_path / "memory.db"
    from powercontext.entrypoints.cli.repo import repo

    cli.add_command(repo)
    out = cli_json(tmp_path, db, "repo", "bootstrap", str(root), expect=0)
    assert [s["path"] for s in out["sources"]] == ["Makefile"]
    assert out["skipped"] == [{"path": "AGENTS.md", "reason": "contains a secret (credentials "
                               "in a URL) on line 5; not persisted"}]
    assert_nowhere(db, "s3cret")


@pytest.mark.subprocess
def test_git_change_source_redacts_a_secret_in_the_patch(tmp_path):
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
    (root / "AGENTS.md").write_text("Run make test.\n")
    git("add", "."), git("commit", "-qm", "one")
    (root / "AGENTS.md").write_text(f"Run make test.\nThe CI token is {GITHUB_TOKEN}.\n")
    git("commit", "-qam", "two")
    change = git_change_source(root, "HEAD~1")
    assert change is not None and GITHUB_TOKEN not in change.content
    assert "+The CI token is [REDACTED:github-token]." in change.content
