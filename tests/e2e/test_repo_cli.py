"""``powercontext repo bootstrap|sync`` end to end on real files, a real Git repository
and the real SQLite backend (issue 5 item 4; Memory RFC, "Coding Agent scenario").

Two repositories: this one (its pyproject.toml, Makefile and tox.ini, copied so the
test does not depend on files other engineers edit) and a small pnpm/TypeScript
project with an AGENTS.md written as fixture files, made a Git repository with two
commits. The scenario: bootstrap, a Git change, a user correction and a task outcome
each produce the entries the spec describes, and search finds them.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.keys import stored_key

from powercontext.core import canonical
from powercontext.entrypoints.cli.main import cli
from powercontext.entrypoints.cli.repo import repo
from powercontext.runtime import open_service

pytestmark = pytest.mark.subprocess

cli.add_command(repo)  # what entrypoints/cli/main.py does once the lead registers it

MAIN = Path(__file__).resolve().parents[2]

PACKAGE_JSON = {
    "name": "tiny-ledger",
    "version": "1.2.0",
    "private": True,
    "type": "module",
    "packageManager": "pnpm@9.1.0",
    "engines": {"node": ">=20"},
    "scripts": {
        "build": "tsc -p tsconfig.json",
        "test": "vitest run",
        "lint": "eslint .",
        "typecheck": "tsc --noEmit",
        "docs:dev": "vitepress dev docs",
    },
    "devDependencies": {"typescript": "^5.4.0", "vitest": "^1.6.0", "eslint": "^9.0.0"},
}
AGENTS_MD = """# Agent guide

tiny-ledger is a double-entry bookkeeping library.

## Conventions

- Use pnpm, never npm or yarn: the lockfile is pnpm-lock.yaml.
- Always run `pnpm test` before every commit.
- `site/` is generated output and must not be modified as source material.
- Prefer small pull requests with one topic each.

## Layout

The code lives in src/ and the docs in docs/.

```sh
pnpm install
```
"""
README = "# tiny-ledger\n\nDouble-entry bookkeeping for TypeScript.\n\n    pnpm add tiny-ledger\n"


def git(repo_dir: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(repo_dir.parent))
    return subprocess.run(["git", "-C", str(repo_dir), *args], check=True, env=env,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def pc(tmp_path, monkeypatch):
    db = tmp_path / "memory.db"
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("POWERCONTEXT_DB", raising=False)
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING", raising=False)
    monkeypatch.delenv("POWERCONTEXT_EXTRACTOR_MODEL", raising=False)
    runner = CliRunner()

    def run(*args: str, expect: int = 0):
        result = runner.invoke(cli, ["--db", str(db), "--json", *args], catch_exceptions=False)
        assert result.exit_code == expect, (args, result.exit_code, result.output)
        return json.loads(result.output)

    run.db = db  # type: ignore[attr-defined]
    return run


def by_label(changes: list[dict]) -> dict[str, dict]:
    return {c["text"].partition(":")[0]: c for c in changes}


def source_paths(out: dict, row: dict) -> set[str]:
    paths = {s["source_id"]: s["path"] or s["kind"] for s in out["sources"]}
    return {paths[i] for i in row["source_ids"] if i in paths}


def test_bootstrap_of_this_repository_gives_a_handful_of_contract_entries(pc, tmp_path):
    root = tmp_path / "powercontext"
    root.mkdir()
    for name in ("pyproject.toml", "Makefile", "tox.ini"):
        shutil.copy(MAIN / name, root / name)
    out = pc("repo", "bootstrap", str(root))
    assert out["created"] and out["memory_ref"]["revision"] == 1
    assert sorted(s["path"] for s in out["sources"]) == ["Makefile", "pyproject.toml", "tox.ini"]
    rows = by_label(out["changes"])
    assert set(rows) == {"Build and dependencies", "Python requirement", "Test command",
                         "Verification commands"}
    assert all(r["op"] == "add" for r in out["changes"])
    build = rows["Build and dependencies"]
    assert build["kind"] == "fact"
    assert "setuptools (build-backend setuptools.build_meta)" in build["text"]
    assert "managed with pip" in build["text"]
    assert source_paths(out, build) == {"pyproject.toml", "Makefile"}
    py = rows["Python requirement"]
    assert (py["kind"], source_paths(out, py)) == ("constraint", {"pyproject.toml"})
    assert "requires Python >=3.11" in py["text"]
    test = rows["Test command"]
    assert test["kind"] == "preference" and "`make test` (pytest)" in test["text"]
    assert source_paths(out, test) == {"Makefile", "pyproject.toml"}
    verify = rows["Verification commands"]
    assert verify["kind"] == "preference"
    for piece in ("`make lint` (ruff)", "`make types` (mypy)", "`make check`", "tox environments"):
        assert piece in verify["text"]
    assert source_paths(out, verify) == {"Makefile", "tox.ini"}
    assert out["refused"] == []

    # The same contract again is no change; search finds the conventions.
    again = pc("repo", "bootstrap", str(root))
    assert again["memory_ref"] == out["memory_ref"] and not again["changed"]
    mem = out["memory_ref"]["artifact_id"]
    hits = pc("memory", "search", "test command", "-m", mem, "--mode", "fts")
    # the verification commands name `make test-fast` and rank beside it
    assert test["entry_id"] in [h["entry_id"] for h in hits["hits"][:2]]
    hits = pc("memory", "search", "python version", "-m", mem, "--mode", "fts")
    assert py["entry_id"] in [h["entry_id"] for h in hits["hits"]]


def make_node_repo(root: Path) -> str:
    root.mkdir()
    (root / "package.json").write_text(json.dumps(PACKAGE_JSON, indent=2) + "\n")
    (root / "AGENTS.md").write_text(AGENTS_MD)
    (root / "README.md").write_text(README)
    (root / "src").mkdir()
    (root / "src" / "ledger.ts").write_text("export const ledger = () => [];\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return git(root, "rev-parse", "HEAD")


def test_node_project_bootstrap_git_change_user_correction_and_task_outcome(pc, tmp_path):
    root = tmp_path / "tiny-ledger"
    first = make_node_repo(root)

    # 1. Bootstrap: contract topics plus the explicit AGENTS.md rules, not one per file.
    out = pc("repo", "bootstrap", str(root))
    assert out["created"] and out["last_processed_commit"] == first
    assert sorted(s["path"] for s in out["sources"]) == ["AGENTS.md", "README.md", "package.json"]
    mem = out["memory_ref"]["artifact_id"]
    rows = {r["text"]: r for r in out["changes"]}
    kinds = sorted((r["kind"], r["text"]) for r in out["changes"])
    assert kinds == sorted([
        ("fact", "Build and dependencies: tiny-ledger is a Node.js package managed with pnpm; "
                 "build with `pnpm run build` (`tsc -p tsconfig.json`)."),
        ("constraint", "Node requirement: tiny-ledger requires Node.js >=20 (engines.node in "
                       "package.json)."),
        ("preference", "Test command: run `pnpm test` (`vitest run`) for routine code changes."),
        ("preference", "Verification commands: `pnpm run lint` (`eslint .`); "
                       "`pnpm run typecheck` (`tsc --noEmit`)."),
        ("constraint", "Use pnpm, never npm or yarn: the lockfile is pnpm-lock.yaml."),
        ("constraint", "Always run `pnpm test` before every commit."),
        ("constraint", "`site/` is generated output and must not be modified as source material."),
        ("preference", "Prefer small pull requests with one topic each."),
        ("fact", "The code lives in src/ and the docs in docs/."),  # where files go
    ])
    test_row = next(r for r in out["changes"] if r["text"].startswith("Test command"))
    assert source_paths(out, test_row) == {"package.json", "AGENTS.md"}
    site_row = rows["`site/` is generated output and must not be modified as source material."]
    assert source_paths(out, site_row) == {"AGENTS.md"}
    assert stored_key(pc.db, f"repo:{root.resolve()}") == mem

    # 2. A Git change: the site/ rule is reworded and the test script gains coverage.
    agents = (root / "AGENTS.md").read_text().replace(
        "- `site/` is generated output",
        "- `site/` and `docs/.vitepress/dist/` are generated output"
    ).replace("must not be modified", "must never be modified")
    (root / "AGENTS.md").write_text(agents)
    pkg = dict(PACKAGE_JSON, scripts=dict(PACKAGE_JSON["scripts"], test="vitest run --coverage"))
    (root / "package.json").write_text(json.dumps(pkg, indent=2) + "\n")
    (root / "src" / "ledger.ts").write_text("export const ledger = () => [1];\n")
    git(root, "commit", "-q", "-am", "coverage; generated docs")
    second = git(root, "rev-parse", "HEAD")
    out2 = pc("repo", "sync", str(root))
    assert out2["memory_ref"] == {"artifact_id": mem, "revision": 2}
    assert out2["last_processed_commit"] == second
    change = next(s for s in out2["sources"] if s["kind"] == "git_change")
    assert sorted(r["op"] for r in out2["changes"]) == ["revise", "revise"]
    revised = {r["entry_id"]: r for r in out2["changes"]}
    site2 = revised[site_row["entry_id"]]
    assert site2["kind"] == "constraint"
    assert site2["text"] == ("`site/` and `docs/.vitepress/dist/` are generated output and must "
                             "never be modified as source material.")
    assert change["source_id"] in site2["source_ids"]
    assert set(site_row["source_ids"]) <= set(site2["source_ids"])  # predecessor evidence kept
    test2 = revised[test_row["entry_id"]]
    assert test2["text"] == ("Test command: run `pnpm test` (`vitest run --coverage`) for routine "
                             "code changes.")
    assert change["source_id"] in test2["source_ids"]
    assert pc("repo", "sync", str(root))["changed"] is False  # nothing new since `second`

    # 3. A user correction revises the test convention (structured, explicit entry id);
    # 4. a task outcome becomes one working_note. Both through remember(mode="extract").
    async def correct_and_finish() -> tuple:
        from powercontext.adapters.candidates import pipeline_from_registry
        from powercontext.plugins.registry import Registry

        svc = open_service(pc.db)
        svc.candidate_pipeline = pipeline_from_registry(Registry(), source_store=svc.backend)
        try:
            head = await svc.head(mem)
            note = canonical.make_source(
                "src_user_note_1", "user_note",
                "You do not need to run the full pnpm test when editing documentation; "
                "prefer pnpm run docs:test.",
                metadata={"memory.kind": "preference", "memory.revises": test_row["entry_id"],
                          "memory.reason": "user_correction",
                          "memory.text": "Test command: run `pnpm test` (`vitest run "
                                         "--coverage`) for routine code changes; prefer `pnpm "
                                         "run docs:test` for documentation-only changes."})
            head3 = await svc.remember(head, sources=(note,), mode="extract")
            outcome = canonical.make_source(
                "src_task_outcome_1", "task_outcome",
                "Added coverage to the test script and marked the VitePress output as "
                "generated.\n\n```\n$ pnpm test\n 12 passed in 0.8s\n```\n",
                metadata={"status": "completed", "head": second,
                          "paths": "AGENTS.md\npackage.json\nsrc/ledger.ts",
                          "verification": "pnpm test: 12 passed"})
            head4 = await svc.remember(head3, sources=(outcome,), mode="extract")
            entries = await svc.entries(head4)
            hits = await svc.search("documentation tests docs:test", [head4], mode="fts")
            note_hits = await svc.search("coverage VitePress task outcome", [head4], mode="fts")
            stored = await svc.backend.get_sources(["src_user_note_1", "src_task_outcome_1"])
            return head3, head4, entries, hits, note_hits, stored
        finally:
            await svc.close()

    head3, head4, entries, hits, note_hits, stored = asyncio.run(correct_and_finish())
    assert (head3.revision, head4.revision) == (3, 4)
    test3 = entries[test_row["entry_id"]]
    assert (test3.version, test3.kind) == (3, "preference")
    assert "prefer `pnpm run docs:test` for documentation-only changes" in test3.text
    assert {"src_user_note_1", change["source_id"]} <= {s.source_id for s in test3.sources}
    notes = [v for v in entries.values() if v.kind == "working_note"]
    assert len(notes) == 1 and len(entries) == 10
    assert notes[0].text == (
        "Task outcome (completed): Added coverage to the test script and marked the VitePress "
        f"output as generated. Changed: AGENTS.md, package.json, src/ledger.ts. Head: "
        f"{second[:12]}. Verification: pnpm test: 12 passed.")
    assert [s.source_id for s in notes[0].sources] == ["src_task_outcome_1"]
    assert hits.hits[0].entry_id == test_row["entry_id"]
    assert note_hits.hits[0].entry_id == notes[0].entry_id
    assert len(stored) == 2

    # The hand-corrected entry is never overwritten by a later contract change: the new
    # topic text becomes a new entry (uncertain link).
    pkg = dict(pkg, scripts=dict(pkg["scripts"], test="vitest run --coverage --silent"))
    (root / "package.json").write_text(json.dumps(pkg, indent=2) + "\n")
    git(root, "commit", "-q", "-am", "silent tests")
    out5 = pc("repo", "sync", str(root))
    assert [(r["op"], r["kind"]) for r in out5["changes"]] == [("add", "preference")]
    assert "--silent" in out5["changes"][0]["text"]


def test_sync_needs_a_bootstrap_and_bootstrap_needs_contract_files(pc, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    err = pc("repo", "bootstrap", str(empty), expect=2)
    assert err["error"] == "InvalidInputError" and "no operating-contract file" in err["message"]
    err = pc("repo", "sync", str(empty), expect=4)
    assert "run `powercontext repo bootstrap" in err["message"]
    root = tmp_path / "tiny-ledger"
    make_node_repo(root)
    err = pc("repo", "bootstrap", str(root), "--provider", "model", expect=5)
    assert err["error"] == "CapabilityNotSupportedError"


def test_a_file_holding_a_secret_is_not_persisted(pc, tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "Makefile").write_text("test:\n\tpytest -q\n")
    (root / "CLAUDE.md").write_text("Never commit .env.\nexport OPENAI_API_KEY=sk-proj-"
                                    "abcdefghijklmnopqrstuvwxyz0123\n")
    out = pc("repo", "bootstrap", str(root))
    assert [s["path"] for s in out["sources"]] == ["Makefile"]
    assert out["skipped"] == [{"path": "CLAUDE.md",
                               "reason": "contains a secret (OpenAI/Anthropic API key) on "
                                         "line 2; not persisted"}]
    assert [r["text"] for r in out["changes"]] == [
        "Test command: run `make test` (pytest) for routine code changes."]


def test_repo_bootstrap_as_a_real_process_prints_what_it_did(tmp_path):
    root = tmp_path / "tiny-ledger"
    make_node_repo(root)
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    env.pop("POWERCONTEXT_DB", None)
    code = ("from powercontext.entrypoints.cli.main import cli\n"
            "from powercontext.entrypoints.cli.repo import repo\n"
            "cli.add_command(repo)\ncli(prog_name='powercontext')\n")
    proc = subprocess.run([sys.executable, "-c", code, "--db", str(tmp_path / "m.db"), "repo",
                           "bootstrap", str(root)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"Bootstrapped {root.resolve()}: 3 Source(s) persisted." in proc.stdout
    assert "Node requirement: tiny-ledger requires Node.js >=20" in proc.stdout


SPEC_AGENTS_MD = """# Working on powercontext

- `site/` is generated output and must not be modified as source material.
- Never commit without running `make test`.
"""


def test_the_spec_scenario_on_this_repository(pc, tmp_path):
    """Memory RFC, "Coding Agent scenario", on this repository's own contract files
    plus an AGENTS.md written by the test: bootstrap, a Git change, the user's
    correction (a revision, not a new entry), "do not remember the site/ rule" (forget),
    a task outcome, then search."""
    root = tmp_path / "powercontext"
    root.mkdir()
    for name in ("pyproject.toml", "Makefile", "tox.ini"):
        shutil.copy(MAIN / name, root / name)
    (root / "AGENTS.md").write_text(SPEC_AGENTS_MD)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "contract")
    out = pc("repo", "bootstrap", str(root))
    mem = out["memory_ref"]["artifact_id"]
    rows = by_label(out["changes"])
    site = rows["`site/` is generated output and must not be modified as source material."]
    assert (site["kind"], source_paths(out, site)) == ("constraint", {"AGENTS.md"})
    assert rows["Never commit without running `make test`."]["kind"] == "constraint"
    test = rows["Test command"]
    assert source_paths(out, test) == {"Makefile", "pyproject.toml", "AGENTS.md"}
    assert len(out["changes"]) == 6

    # A Git change adds a docs-test target: the verification topic is revised.
    verify = rows["Verification commands"]
    makefile = (root / "Makefile").read_text() + "\ndocs-test:\n\t$(BIN)/pytest tests/docs\n"
    (root / "Makefile").write_text(makefile)
    git(root, "commit", "-q", "-am", "docs-test")
    out2 = pc("repo", "sync", str(root))
    (rev,) = out2["changes"]
    assert (rev["op"], rev["entry_id"]) == ("revise", verify["entry_id"])
    assert "`make docs-test` (pytest)" in rev["text"]
    change_id = next(s["source_id"] for s in out2["sources"] if s["kind"] == "git_change")
    assert change_id in rev["source_ids"]

    # The user's correction, as the spec words it, revises the validation preference.
    note = tmp_path / "note.txt"
    note.write_text("You do not need to run the full make test when editing documentation; "
                    "prefer make docs-test.\n")
    revised_text = ("Validation convention: run make test for routine code changes; prefer make "
                    "docs-test for documentation-only changes; run make check before review.")
    out3 = pc("memory", "remember", "-m", mem, "--revise", test["entry_id"], "--kind",
              "preference", "--text", revised_text, "--reason", "user_correction",
              "--source", str(note))
    assert out3["memory_ref"]["revision"] == 3
    # "Do not remember the site/ rule": deactivated in a new Revision, history kept.
    out4 = pc("memory", "forget", mem, site["entry_id"], "--reason", "user_requested")
    assert out4["memory_ref"]["revision"] == 4

    # A task outcome: one working_note, through the pipeline.
    async def finish():
        from powercontext.adapters.candidates import pipeline_from_registry
        from powercontext.plugins.registry import Registry

        svc = open_service(pc.db)
        svc.candidate_pipeline = pipeline_from_registry(Registry(), source_store=svc.backend)
        try:
            outcome = canonical.make_source(
                "src_task_outcome_001", "task_outcome",
                "Confirmed the development and verification conventions; added docs-test.",
                metadata={"status": "completed", "paths": "Makefile",
                          "verification": "make test passed"})
            head = await svc.remember(await svc.head(mem), sources=(outcome,), mode="auto")
            hits = await svc.search("Which build and verification conventions should I know "
                                    "before editing documentation?", [head], limit=8, mode="fts")
            site_hits = await svc.search("site generated output", [head], mode="fts")
            more = [await svc.search(q, [head], limit=1, mode="fts") for q in (
                "verification commands", "build backend dependencies")]
            return head, await svc.entries(head), hits, site_hits, more
        finally:
            await svc.close()

    head, entries, hits, site_hits, more = asyncio.run(finish())
    assert head.revision == 5
    shown = pc("memory", "show", mem)
    by_id = {e["entry_id"]: e for e in shown["entries"]}
    assert site["entry_id"] not in by_id  # inactive
    pref = by_id[test["entry_id"]]
    assert (pref["version"], pref["kind"], pref["text"]) == (2, "preference", revised_text)
    assert len(pref["source_refs"]) == 4  # Makefile, pyproject, AGENTS.md + the user's note
    notes = [e for e in shown["entries"] if e["kind"] == "working_note"]
    assert len(notes) == 1 and notes[0]["text"].startswith("Task outcome (completed): Confirmed")
    assert hits.hits[0].entry_id == test["entry_id"]
    assert notes[0]["entry_id"] in [h.entry_id for h in hits.hits]
    assert [r.hits[0].entry_id for r in more] == [verify["entry_id"],
                                                  rows["Build and dependencies"]["entry_id"]]
    assert site["entry_id"] not in [h.entry_id for h in site_hits.hits]
    assert entries[site["entry_id"]].text == site["text"]  # the content is kept
