"""The provider pipeline behind remember(mode="extract"|"auto") on the real SQLite
backend, and Git change Sources from a real temporary repository (issue 5 items 1-2;
Memory RFC, "remember()", "Source changes and incremental evidence")."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from powercontext.adapters.candidates import (
    ExtractionRequest,
    ProviderPipeline,
    pipeline_from_registry,
)
from powercontext.adapters.candidates.git import (
    GitError,
    file_at,
    git_change_source,
    head_commit,
    resolve_commit,
)
from powercontext.adapters.candidates.providers import RuleProvider, TaskOutcomeProvider
from powercontext.adapters.candidates.repository import contract_sources
from powercontext.core import canonical
from powercontext.core.errors import BackendError, CapabilityNotSupportedError
from powercontext.core.extraction import ExtractionResult
from powercontext.plugins.registry import Registry
from powercontext.runtime import open_service


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(repo.parent))
    return subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                          capture_output=True, text=True).stdout.strip()


def with_service(tmp_path, fn, pipeline=None):
    async def go():
        svc = open_service(tmp_path / "m.db")
        svc.candidate_pipeline = pipeline or pipeline_from_registry(
            Registry(entry_points=False), source_store=svc.backend)
        try:
            return await fn(svc)
        finally:
            await svc.close()

    return asyncio.run(go())


def test_registry_pipeline_knows_the_builtin_providers_and_the_unconfigured_model(monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_EXTRACTOR_MODEL", raising=False)
    p = pipeline_from_registry(Registry(entry_points=False))
    assert p.default == ("contract", "git", "rules", "structured", "task_outcome")
    assert p.unavailable["model"].startswith("not configured: no extraction model")


def test_extract_rules_of_the_spec(tmp_path, monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_EXTRACTOR_MODEL", raising=False)
    readme = canonical.make_source("src_readme", "file", "# tiny\nA library.\n",
                                   "file:///r/README.md", {"path": "README.md"})
    rule = canonical.make_source("src_note", "user_note", "Never push directly to main.")

    async def body(svc):
        with pytest.raises(CapabilityNotSupportedError, match="'model': not configured"):
            await svc.remember(None, sources=(rule,), mode="extract", providers=("model",))
        with pytest.raises(CapabilityNotSupportedError, match="'nope'"):
            await svc.remember(None, sources=(rule,), mode="extract", providers=("nope",))
        with pytest.raises(ValueError):
            await svc.remember(None, mode="extract")
        with pytest.raises(ValueError):
            await svc.remember(None, mode="auto")
        # Nothing worth saving: no Memory is created, but the Source is stored.
        assert await svc.remember(None, sources=(readme,), mode="auto") is None
        assert await svc.backend.get_sources(["src_readme"]) == (readme,)
        head = await svc.remember(None, sources=(rule,), mode="auto")
        (v,) = (await svc.entries(head)).values()
        assert (v.kind, v.text, [s.source_id for s in v.sources]) == (
            "constraint", "Never push directly to main.", ["src_note"])
        # An existing Memory with nothing new keeps its head: no empty Revision.
        assert await svc.remember(head, sources=(readme,), mode="extract") == head
        assert await svc.remember(head, sources=(rule,), mode="extract") == head
        assert [c.memory_ref.revision for c in await svc.changes(head, 0)] == [1]
        # Explicitly chosen providers run alone.
        assert await svc.remember(head, sources=(rule,), mode="extract",
                                  providers=("task_outcome",)) == head
        return head

    with_service(tmp_path, body)


class _Broken:
    async def propose(self, request: ExtractionRequest) -> ExtractionResult:
        raise BackendError("offline")


def test_a_failing_provider_is_a_note_and_the_others_still_run(tmp_path):
    outcome = canonical.make_source("src_out", "task_outcome", "Refactored the planner.",
                                    metadata={"status": "completed"})
    pipeline = ProviderPipeline({"broken": _Broken(), "task_outcome": TaskOutcomeProvider(),
                                 "rules": RuleProvider()})

    async def body(svc):
        head = await svc.remember(None, sources=(outcome,), mode="extract")
        return head, await svc.entries(head)

    _head, entries = with_service(tmp_path, body, pipeline)
    (v,) = entries.values()
    assert (v.kind, v.text) == ("working_note", "Task outcome (completed): Refactored the planner.")
    assert pipeline.last_result.notes == ("provider broken failed: offline",)


@pytest.mark.subprocess
def test_git_change_source_from_a_real_repository(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    assert head_commit(repo) is None
    git(repo, "init", "-q", "-b", "main")
    (repo / "Makefile").write_text("test:\n\tpytest\n")
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    first = head_commit(repo)
    (repo / "Makefile").write_text("test:\n\tpytest -q\ndocs-test:\n\tsphinx-build -W docs out\n")
    (repo / "b.py").write_text("y = 2\n" * 400)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "two")
    second = head_commit(repo)
    assert first and second and first != second
    assert resolve_commit(repo, "HEAD~1") == first

    change = git_change_source(repo, first, "HEAD")
    meta = dict(change.metadata)
    assert change.kind == "git_change" and change.source_id.startswith("src_git_")
    assert (meta["base"], meta["head"], meta["repo"]) == (first, second, str(repo.resolve()))
    assert meta["paths"] == "Makefile\nb.py" and meta["truncated"] == "false"
    assert "+docs-test:" in change.content and "-\tpytest\n" in change.content
    assert git_change_source(repo, first, "HEAD") == change  # content-addressed, stable

    small = git_change_source(repo, first, "HEAD", max_patch_bytes=300)
    assert dict(small.metadata)["truncated"] == "true" and len(small.content.encode()) <= 300
    assert small.content.endswith("\n")
    assert git_change_source(repo, second, "HEAD") is None
    with pytest.raises(GitError):
        git_change_source(repo, "0" * 40, "HEAD")
    assert file_at(repo, first, "Makefile") == b"test:\n\tpytest\n"
    assert file_at(repo, first, "b.py") is None

    # The same file read from the work tree or from HEAD is the same Source.
    (tree, _), (at_head, _) = contract_sources(repo), contract_sources(repo, commit=second)
    assert tree == at_head and [s.kind for s in tree] == ["file"]
    (old,), _ = contract_sources(repo, commit=first)
    assert old.source_id != tree[0].source_id and old.uri == tree[0].uri
