"""The CLI end to end: a real process, a real SQLite file, real files as Sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess


@pytest.fixture(params=["sqlite", pytest.param("oceanbase", marks=pytest.mark.oceanbase)])
def pc(request, tmp_path):
    if request.param == "sqlite":
        db = tmp_path / "memory.db"
    else:  # the same commands against a real seekdb (started once per session)
        import secrets

        db = request.getfixturevalue("seekdb_url").rstrip("/") + f"/cli_{secrets.token_hex(4)}"
    env = dict(os.environ, POWERCONTEXT_HOME=str(tmp_path / "home"))
    env.pop("POWERCONTEXT_DB", None)
    env.pop("POWERCONTEXT_EMBEDDING", None)

    def run(*args: str, expect: int = 0, stdin: str | None = None):
        proc = subprocess.run(
            [sys.executable, "-m", "powercontext.entrypoints.cli.main", "--db", str(db), *args],
            capture_output=True,
            text=True,
            env=env,
            input=stdin,
            timeout=60,
        )
        assert proc.returncode == expect, (args, proc.returncode, proc.stdout, proc.stderr)
        return proc

    return run


def js(proc):
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_cli_scenario_with_exit_codes(pc, tmp_path: Path):
    makefile = tmp_path / "Makefile"
    makefile.write_text("test:\n\tpytest\ncheck:\n\truff check\n")
    out = js(
        pc(
            "--json",
            "memory",
            "remember",
            "--key",
            "repo:demo",
            "--kind",
            "preference",
            "--text",
            "Run make test for routine changes",
            "--source",
            str(makefile),
        )
    )
    ref = out["memory_ref"]
    assert out["changed"] and ref["revision"] == 1
    mem = ref["artifact_id"]
    out = js(
        pc(
            "--json",
            "memory",
            "remember",
            "-m",
            "key:repo:demo",
            "--kind",
            "constraint",
            "--text",
            "Never edit .venv by hand",
        )
    )
    assert out["memory_ref"] == {"artifact_id": mem, "revision": 2}

    shown = js(pc("--json", "memory", "show", mem))
    assert [e["kind"] for e in shown["entries"]].count("preference") == 1
    pref = next(e for e in shown["entries"] if e["kind"] == "preference")
    assert pref["source_refs"][0]["source_id"].startswith("src_")

    hits = js(pc("--json", "memory", "search", "make test", "-m", mem, "--mode", "fts"))
    assert hits["mode"] == "fts" and hits["untrusted"] is True
    assert hits["fallback_reason"] is None
    assert [h["entry_id"] for h in hits["hits"]] == [pref["entry_id"]]
    auto = js(pc("--json", "memory", "search", "make test", "-m", mem))
    assert auto["mode"] == "fts" and "no embedding model" in auto["fallback_reason"]
    human = pc("memory", "search", "make test", "-m", mem).stdout
    assert "mode fts (fell back: no embedding model is configured)" in human

    out = js(
        pc(
            "--json",
            "memory",
            "remember",
            "-m",
            mem,
            "--revise",
            pref["entry_id"],
            "--kind",
            "preference",
            "--text",
            "Run make test; make lint for docs",
            "--reason",
            "user_correction",
        )
    )
    assert out["memory_ref"]["revision"] == 3
    # the same write from the stale Revision 2 conflicts
    pc("memory", "remember", "-m", f"{mem}@2", "--text", "late writer", expect=3)
    pc("memory", "forget", mem, pref["entry_id"], "--reason", "user_requested")
    pc("memory", "forget", mem, pref["entry_id"])  # idempotent: still exit 0
    changes = js(pc("--json", "memory", "changes", mem, "--since", "0"))
    assert [c["changes"][0]["op"] for c in changes] == ["add", "add", "revise", "deactivate"]
    assert (
        js(pc("--json", "memory", "search", "make test", "-m", mem, "--mode", "fts"))["hits"] == []
    )

    citation = pc("memory", "cite", f"{mem}@3", pref["entry_id"]).stdout
    valid = js(pc("--json", "memory", "validate-citation", citation))
    assert valid["valid"] and valid["entry"]["text"] == "Run make test; make lint for docs"
    tampered = json.loads(citation)
    tampered["memory_ref"]["revision"] = 2
    pc("memory", "validate-citation", json.dumps(tampered), expect=6)
    pc("memory", "validate-citation", "-", stdin=citation)

    expanded = js(pc("--json", "memory", "expand", f"{mem}@3", pref["entry_id"]))
    assert expanded[0]["version"] == 2 and expanded[0]["previous_version_id"]

    # distinct exit codes
    err = pc("--json", "memory", "remember", "-m", mem, "--text", "   ", expect=2)
    assert js(err)["error"] == "InvalidInputError"
    pc("memory", "show", "mem_art_missing", expect=4)
    pc("memory", "search", "x", "-m", mem, "--mode", "vector", expect=5)
    pc("memory", "show", "key:nope", expect=4)


def test_cli_help_is_useful(pc):
    out = pc("memory", "--help").stdout
    for command in (
        "remember",
        "forget",
        "reactivate",
        "organize",
        "changes",
        "search",
        "expand",
        "show",
        "cite",
        "validate-citation",
        "list",
    ):
        assert command in out
    top = pc("--help").stdout
    for command in ("info", "source", "setup", "doctor", "mcp"):
        assert command in top
    assert "--source" in pc("memory", "remember", "--help").stdout


@pytest.mark.slow
def test_memory_list_info_source_show_and_key_at_revision(pc, tmp_path: Path):
    info = js(pc("--json", "info"))
    assert info["memories"] == 0 and info["sources"] == 0
    notes = tmp_path / "NOTES.md"
    notes.write_text("Releases are cut from main on Fridays.\n")
    first = js(pc("--json", "memory", "remember", "--key", "repo:demo", "--kind", "decision",
                  "--text", "Releases are cut from main", "--source", str(notes)))
    mem = first["memory_ref"]["artifact_id"]
    other = js(pc("--json", "memory", "remember", "--text", "An unmapped Memory"))
    pc("memory", "remember", "-m", "key:repo:demo", "--text", "Tag releases as vX.Y.Z")
    (entry,) = [c["entry_id"] for c in first["changes"]]
    pc("memory", "forget", "key:repo:demo", entry)

    listed = js(pc("--json", "memory", "list"))["memories"]
    by_id = {m["artifact_id"]: m for m in listed}
    assert by_id[mem]["keys"] == ["repo:demo"]
    assert by_id[mem]["memory_ref"] == {"artifact_id": mem, "revision": 3}
    assert (by_id[mem]["active_entries"], by_id[mem]["entries"]) == (1, 2)
    assert by_id[other["memory_ref"]["artifact_id"]]["keys"] == []
    human = pc("memory", "list").stdout
    assert f"key:repo:demo  {mem}  Revision 3  1 active of 2 entries" in human

    # key:NAME@REV names an exact Revision through the key
    old = js(pc("--json", "memory", "show", "key:repo:demo@1"))
    assert old["memory_ref"] == {"artifact_id": mem, "revision": 1}
    assert [e["text"] for e in old["entries"]] == ["Releases are cut from main"]
    pc("memory", "show", "key:repo:demo@4", expect=4)

    source_id = old["entries"][0]["source_refs"][0]["source_id"]
    src = js(pc("--json", "source", "show", source_id))
    assert src["content"] == "Releases are cut from main on Fridays.\n"
    assert src["kind"] == "file" and src["uri"] == notes.resolve().as_uri()
    assert src["untrusted"] is True
    assert "Releases are cut from main on Fridays." in pc("source", "show", source_id).stdout

    info = js(pc("--json", "info"))
    assert (info["memories"], info["active_entries"], info["entries"], info["sources"]) == (
        2, 2, 3, 1)
    # the version the FTS projection was built with (OceanBase records it after a rebuild)
    # a new database records the default analyzer on both engines
    assert info["analyzer_version"] == info["analyzer_default"] == "v2"
    assert info["analyzer_versions"] == ["v1", "v1-porter", "v2"]
    assert info["embedding_profile"] is None and info["remembered_model"] is None
    assert info["backend"] in ("SQLiteMemoryBackend", "OceanBaseMemoryBackend")
    assert "memories:         2 (2 active of 3 entries)" in pc("info").stdout


def test_search_shows_rank_and_channels_json_keeps_score(pc):
    mem = js(pc("--json", "memory", "remember", "--entries", "-", stdin=json.dumps([
        {"text": "Run make test before review"},
        {"text": "make lint checks the docs", "kind": "preference"}])))["memory_ref"]
    human = pc("memory", "search", "make test", "-m", mem["artifact_id"], "--mode", "fts")
    lines = human.stdout.splitlines()
    assert lines[1] == "1. [fts] Run make test before review"
    assert lines[2].startswith("   (entry mem_ent_") and "fact" in lines[2]
    assert lines[3] == "2. [fts] make lint checks the docs"
    assert "0.0" not in human.stdout  # no bare RRF score for people
    hits = js(pc("--json", "memory", "search", "make test", "-m", mem["artifact_id"],
                 "--mode", "fts"))["hits"]
    assert hits[0]["score"] > hits[1]["score"] > 0


def test_a_memory_source_given_twice_is_one_source_cited_once(pc, tmp_path: Path):
    """``memory remember --source FILE`` cites the file's exact bytes: the same file
    given twice (in one command, or in a later one while unchanged) is one Source and
    one reference, so the entry's hash and the Memory's bytes do not change; a changed
    file is a new Source (docs/topic-memory.md, "Source identity")."""
    notes = tmp_path / "NOTES.md"
    notes.write_text("Deploys go out on Tuesdays.\n")
    first = js(pc("--json", "memory", "remember", "--key", "demo", "--kind", "fact",
                  "--text", "Deploys go out on Tuesdays.", "--source", str(notes),
                  "--source", str(notes)))
    (change,) = first["changes"]
    assert change["op"] == "add"
    shown = js(pc("--json", "memory", "show", "key:demo"))
    (cited,) = [e["source_refs"] for e in shown["entries"]]
    assert len(cited) == 1 and cited[0]["source_id"].startswith("src_")
    again = js(pc("--json", "memory", "remember", "--key", "demo", "--kind", "fact",
                  "--text", "Deploys go out on Tuesdays.", "--source", str(notes)))
    assert again["changed"] is False and again["memory_ref"] == first["memory_ref"]
    notes.write_text("Deploys go out on Wednesdays now.\n")
    later = js(pc("--json", "memory", "remember", "--key", "demo", "--kind", "fact",
                  "--text", "Deploys go out on Tuesdays.", "--source", str(notes)))
    assert later["changed"] is True  # another Source: the entry's evidence grew
