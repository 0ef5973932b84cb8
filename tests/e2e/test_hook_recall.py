"""The prompt hook finds what the prompt needs, and says why (issue 34 item 4): on
ordinary coding prompts of four kinds of repository (tests/support/recall_repos.py) the
contract entry that answers the prompt is injected, contributor chatter is not, a prompt
that nothing stored answers gets nothing even when it says "make sure", and every
injected item carries a receipt in ``--json`` and in the hooks' log. Real ``powercontext
hook claude-code`` runs (click's runner in process) on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.cli import invoke_hooks
from support.recall_repos import EMPTY_PROMPTS, REPOS

from powercontext.core.models import MemoryEntryInput
from powercontext.runtime import open_service


def seed_repo(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A Git folder named ``name`` and a database whose Memory for it holds the
    repository's entries; returns (database, repository)."""
    repo = (tmp_path / name)
    (repo / ".git").mkdir(parents=True)
    db = tmp_path / f"{name}.db"
    entries = tuple(MemoryEntryInput(k, t) for k, t in REPOS[name]["entries"])

    async def body() -> None:
        async with open_service(db) as svc:
            await svc.remember(None, mode="append", key=f"repo:{repo.resolve()}",
                               entries=entries)

    asyncio.run(body())
    return db, repo.resolve()


def ask(tmp_path: Path, db: Path, repo: Path, prompt: str, *args: str) -> str:
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
               "prompt": prompt, "transcript_path": str(tmp_path / "t.jsonl")}
    return invoke_hooks(tmp_path, db, *args, "hook", "claude-code",
                        stdin=json.dumps(payload)).stdout


def context(out: str) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


@pytest.mark.parametrize("name", sorted(REPOS))
def test_each_kind_of_prompt_gets_the_entry_that_answers_it_and_no_chatter(tmp_path, name):
    db, repo = seed_repo(tmp_path, name)
    for prompt, needed in REPOS[name]["prompts"]:
        ctx = context(ask(tmp_path, db, repo, prompt))
        for text in needed:
            assert text in ctx, (prompt, text, ctx)
        for noise in REPOS[name]["noise"]:
            assert noise not in ctx, (prompt, noise)


@pytest.mark.parametrize("name", sorted(REPOS))
def test_a_prompt_nothing_stored_answers_gets_nothing(tmp_path, name):
    db, repo = seed_repo(tmp_path, name)
    for prompt in EMPTY_PROMPTS:
        assert ask(tmp_path, db, repo, prompt) == "", prompt


def test_make_sure_lint_passes_finds_the_eslint_entry(tmp_path):
    """The issue's example: "add a new option to the parser and make sure lint passes"
    injected nothing though the repository has a lint entry (``npm run lint``, eslint)."""
    db, repo = seed_repo(tmp_path, "ts-pnpm")
    ctx = context(ask(tmp_path, db, repo,
                      "add a new option to the parser and make sure lint passes"))
    assert "`pnpm run lint` (`eslint .`)" in ctx


def test_verify_my_change_finds_the_verification_commands(tmp_path):
    """The issue's example: "which checks do I need to run to verify my change" never
    found the stored "Verification commands" entry."""
    for name in ("py-uv", "go-make"):
        db, repo = seed_repo(tmp_path, name)
        ctx = context(ask(tmp_path, db, repo,
                          "which checks do I need to run to verify my change"))
        lines = [ln for ln in ctx.splitlines() if ln.startswith("- [")]
        assert any("Verification commands:" in ln for ln in lines), (name, ctx)


def test_a_noise_rule_never_ranks_above_the_test_command(tmp_path):
    """The issue's example: in another repository a noise rule ranked above the test
    command."""
    db, repo = seed_repo(tmp_path, "py-uv")
    ctx = context(ask(tmp_path, db, repo,
                      "Fix the flaky test and run the test suite before committing"))
    lines = [ln for ln in ctx.splitlines() if ln.startswith("- [")]
    assert lines[0].startswith("- [preference] Test command: run `uv run pytest`"), lines
    assert not any("Discord" in ln or "grateful" in ln for ln in lines)


def test_every_injected_item_has_a_receipt_in_json_and_in_the_hook_log(tmp_path):
    db, repo = seed_repo(tmp_path, "rust-cargo")
    out = json.loads(ask(tmp_path, db, repo,
                         "Add a new `--json` flag and make sure clippy and fmt pass",
                         "--json"))
    lines = [ln for ln in out["hookSpecificOutput"]["additionalContext"].splitlines()
             if ln.startswith("- [")]
    receipts = out["receipts"]
    assert len(receipts) == len(lines) >= 1
    first = receipts[0]
    assert first["rank"] == 1 and first["entry_id"] in lines[0]
    assert first["channel"] in ("prompt", "intent:lint", "intent:format", "vector")
    assert first["channel_rank"] >= 1
    assert {"lint", "format"} <= set(first["intents"])
    assert "clippy" in first["matched"] and "cargo fmt" in first["matched"]
    log = (tmp_path / "home" / "logs" / "hooks.log").read_text()
    (line,) = [ln for ln in log.splitlines() if " prompt " in ln]
    assert f"hook claude-code prompt {repo} injected {len(receipts)} " in line
    assert json.loads(line.split(f"injected {len(receipts)} ", 1)[1]) == receipts
    # without --json Claude Code gets exactly the hook's answer
    plain = json.loads(ask(tmp_path, db, repo, "Add a new `--json` flag and make sure "
                                               "clippy and fmt pass"))
    assert set(plain) == {"hookSpecificOutput"}


def test_the_hook_log_is_bounded_by_rotation(tmp_path, monkeypatch):
    from powercontext.entrypoints.cli import hook_log

    monkeypatch.setattr(hook_log, "MAX_LOG_BYTES", 2000)
    db, repo = seed_repo(tmp_path, "go-make")
    logs = tmp_path / "home" / "logs"
    for _ in range(12):
        ask(tmp_path, db, repo, "Which checks do I need to run to verify my change?")
    names = sorted(p.name for p in logs.iterdir())
    assert names[0] == "hooks.log" and "hooks.log.1" in names
    assert len(names) <= 1 + hook_log.LOG_BACKUPS
    assert all(p.stat().st_size <= 4000 for p in logs.iterdir())


def test_a_common_word_alone_injects_nothing(tmp_path):
    """The issue's example: a prompt with nothing relevant still got whatever matched a
    common word ("make sure", "different", "list")."""
    repo = tmp_path / "app"
    (repo / ".git").mkdir(parents=True)
    db = tmp_path / "app.db"

    async def body() -> None:
        async with open_service(db) as svc:
            await svc.remember(None, mode="append", key=f"repo:{repo.resolve()}", entries=(
                MemoryEntryInput("preference", "Make sure your snapshot app looks like it is "
                                               "supposed to."),
                MemoryEntryInput("preference", "Check the convention against merged PRs, "
                                               "which follow a different one: `gh pr list "
                                               "--state merged --limit 20`."),
                MemoryEntryInput("preference", "Test command: run `make test`.")))

    asyncio.run(body())
    for prompt in ("Make sure the app starts quickly",
                   "What's the difference between a list and a tuple in Python?"):
        assert ask(tmp_path, db, repo.resolve(), prompt) == "", prompt
