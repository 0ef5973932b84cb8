"""The CLI's ``--json``, the MCP tools and the repo commands print one shape per domain
value (issue 10, part D): the same hit, entry version, change and citation come out as
equal dicts on every surface, each the shape :func:`powercontext.core.shapes.to_json`
pins; surfaces only add context keys around it."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from powercontext.core.models import ArtifactRef, HandoffCitation
from powercontext.core.shapes import to_json
from powercontext.entrypoints.cli.main import cli
from powercontext.runtime import open_service

HIT_KEYS = {"memory_ref", "entry_id", "entry_version_id", "kind", "text", "score",
            "matched_by"}
VERSION_KEYS = {"memory_artifact_id", "entry_id", "entry_version_id", "version",
                "previous_version_id", "kind", "text", "source_refs", "artifact_refs",
                "entry_content_hash", "created_in_revision"}
CHANGE_KEYS = {"op", "entry_id", "from_entry_version_id", "to_entry_version_id", "reason"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("POWERCONTEXT_DB", raising=False)
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING", raising=False)


def run(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(db), "--json", *args])
    assert result.exit_code == 0, (args, result.output)
    return json.loads(result.stdout)


@pytest.fixture
def seeded(env: None, tmp_path: Path) -> tuple[Path, str, str]:
    """A Memory under key repo:shapes with a Source-backed entry revised once."""
    db = tmp_path / "memory.db"
    makefile = tmp_path / "Makefile"
    makefile.write_text("test:\n\tpytest -q\n")
    first = run(db, "memory", "remember", "--key", "repo:shapes", "--kind", "preference",
                "--text", "Run make test before review", "--source", str(makefile))
    (entry,) = [c["entry_id"] for c in first["changes"]]
    run(db, "memory", "remember", "--key", "repo:shapes", "--kind", "preference", "--revise",
        entry, "--reason", "clearer", "--text", "Run make test and make lint before review",
        "--source", str(makefile))
    return db, first["memory_ref"]["artifact_id"], entry


def mcp_call(db: Path, calls: list[tuple[str, dict[str, Any]]], *,
             allow_writes: bool = False) -> list[Any]:
    pytest.importorskip("mcp", reason="the MCP server needs the extra powercontext[mcp]")
    from mcp import Client

    from powercontext.entrypoints.mcp.server import build_server

    async def body() -> list[Any]:
        server = build_server(lambda: open_service(db), allow_writes=allow_writes)
        async with Client(server) as client:
            out = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                assert result.is_error is False, result.content[0].text
                out.append(result.structured_content)
            return out

    return asyncio.run(body())


def test_cli_and_mcp_print_the_same_hit_version_changes_and_citation(seeded):
    db, memory, entry = seeded
    name = "key:repo:shapes"
    cli_hits = run(db, "memory", "search", "lint review", "-m", name, "--mode", "fts")
    cli_expand = run(db, "memory", "expand", name, entry)
    cli_changes = run(db, "memory", "changes", name, "--since", "0")
    citation = run(db, "memory", "cite", name, entry)
    cli_valid = run(db, "memory", "validate-citation", json.dumps(citation))
    mcp_hits, mcp_expand, mcp_changes, mcp_valid = mcp_call(db, [
        ("search_memory", {"query": "lint review", "memory": [name], "mode": "fts"}),
        ("expand_memory", {"memory": name, "entry_ids": [entry]}),
        ("memory_changes", {"memory": name, "since_revision": 0}),
        ("validate_citation", {"citation": citation}),
    ])

    assert cli_hits["hits"] and cli_hits["hits"] == mcp_hits["hits"]
    assert set(cli_hits["hits"][0]) == HIT_KEYS
    assert (cli_hits["mode"], cli_hits["fallback_reason"]) == (
        mcp_hits["mode"], mcp_hits["fallback_reason"])
    assert cli_expand == mcp_expand["entries"]
    (version,) = cli_expand
    assert set(version) == VERSION_KEYS
    assert version["previous_version_id"] and version["source_refs"]
    assert cli_changes == mcp_changes["revisions"]
    assert [set(ch) for rc in cli_changes for ch in rc["changes"]] == [CHANGE_KEYS, CHANGE_KEYS]
    assert cli_valid["entry"] == mcp_valid["entry"] == version
    assert citation == to_json(HandoffCitation(ArtifactRef(memory, 2), entry,
                                               version["entry_version_id"]))


def test_cli_and_mcp_writes_report_the_same_changes(seeded):
    db, _, entry = seeded
    name = "key:repo:shapes"
    cli_forget = run(db, "memory", "forget", name, entry, "--reason", "stale")
    (mcp_reactivate,) = mcp_call(db, [("reactivate_memory", {
        "memory": name, "entry_ids": [entry], "reason": "back"})], allow_writes=True)
    forgot, reactivated = run(db, "memory", "changes", name, "--since", "2")
    for write, rc in ((cli_forget, forgot), (mcp_reactivate, reactivated)):
        assert set(write) == {"memory_ref", "changed", "changes"}
        assert write["changed"] is True
        assert (write["memory_ref"], write["changes"]) == (rc["memory_ref"], rc["changes"])
        assert [set(ch) for ch in write["changes"]] == [CHANGE_KEYS]


@pytest.mark.subprocess
def test_repo_change_rows_carry_the_change_shape(env, tmp_path):
    root = (tmp_path / "project").resolve()
    root.mkdir()
    (root / "Makefile").write_text("test:\n\tpytest -q\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    db = tmp_path / "memory.db"
    out = run(db, "repo", "bootstrap", str(root))
    assert out["changes"], out
    (rc,) = run(db, "memory", "changes", out["memory_ref"]["artifact_id"])
    by_entry = {ch["entry_id"]: ch for ch in rc["changes"]}
    for row in out["changes"]:
        change = by_entry[row["entry_id"]]
        # the MemoryChange shape, plus the entry version it leads to
        assert {k: row[k] for k in CHANGE_KEYS} == change
        assert row["entry_version_id"] == change["to_entry_version_id"]
        assert {"kind", "text", "source_ids"} <= set(row)


def test_rebuild_json_is_the_report_shapes_plus_the_model(seeded):
    db, _, _ = seeded
    out = run(db, "memory", "rebuild", "--rehash")
    assert out == {"memories": 1, "entries": 1, "vectors": 0, "kept": 0, "incomplete": [],
                   "missing": [], "corrupt": [], "analyzer": out["analyzer"],
                   "embedding": None,
                   "rehash": {"rewritten": 0, "already_current": True, "corrupt": []},
                   # the Topic projections, brought to the same analyzer (none here)
                   "topics": {"topics": 0, "chunks": 0, "corrupt": [],
                              "analyzer": out["analyzer"]}}
    assert out["analyzer"]


@pytest.mark.subprocess
def test_the_stop_hook_reports_a_refusal_in_the_repo_commands_shape(env, tmp_path):
    root = (tmp_path / "project").resolve()
    (root / ".git").mkdir(parents=True)
    db = tmp_path / "memory.db"
    run(db, "memory", "remember", "--key", f"repo:{root}", "--text", "Run make test first")
    inventory = "\n".join(f"src/pkg/m{i}.py" for i in range(6))  # a file list: refused
    payload = {"session_id": "s1", "cwd": str(root), "hook_event_name": "Stop",
               "stop_hook_active": False, "last_assistant_message": inventory}
    result = CliRunner().invoke(cli, ["--db", str(db), "--json", "hook", "claude-code"],
                                input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["memory_ref"] == {"artifact_id": report["memory_ref"]["artifact_id"],
                                    "revision": 1}
    (refusal,) = report["refused"]
    assert set(refusal) == {"kind", "text", "reason", "provider"}  # as `repo` prints it
    assert (refusal["kind"], refusal["provider"]) == ("working_note", "task_outcome")
    assert refusal["text"].startswith("src/pkg/m0.py")
