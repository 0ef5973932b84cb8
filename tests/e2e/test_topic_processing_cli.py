"""Issue 13's "Done means", scripted through the real CLI (each command its own
process) on SQLite and on seekdb: ``source add --scope project:x`` of Markdown files and
chat turns; ``topic flush`` accepted, a second flush coalesces (one Pending row, its
generation 2); ``topic process --scope project:x --once`` with the deterministic
provider (named by a config file) exits 0; ``topic search`` finds the Topics with exact
refs; ``topic get`` returns the complete detail whose SourceRefs are a subset of the
Window's; the next flush is idle; ``topic status`` shows the Cursor at the head and no
budget row. Also: two runs on fresh databases give identical Topic content hashes; an
unusable provider configuration is "Topic processing unavailable" (exit 5, the
problems listed, nothing spent); a terminal frontier stops with exit 8 and its code
while another Scope goes on (Topic Memory RFC, "Automatic processing and explicit
flush", "Pending dirty set", "Cumulative work and evidence ceilings")."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv

pytestmark = pytest.mark.subprocess

SCOPE = "project:x"
DOCS = {
    "releases.md": "# Releases\n\nWe cut a release by tagging main. Then `make release` "
                   "builds the wheel and uploads it to the package index.\n",
    "deploys.md": "# Deploys\n\nDeploys of the web service go out on Tuesdays, after the "
                  "release checklist passes.\n",
    "testing.md": "# Testing\n\nRun `make test` before every commit; the seekdb tests "
                  "start their own server on loopback.\n",
}
TURNS = [
    {"kind": "chat_turn", "content": "user: how do we roll back a bad deploy?",
     "metadata": {"role": "user", "session": "s1"}},
    {"kind": "chat_turn", "content": "assistant: redeploy the previous tag; the rollback "
                                     "takes about five minutes.",
     "metadata": {"role": "assistant", "session": "s1"}},
]
DETERMINISTIC = '[inference]\ngeneration_provider = "deterministic"\n'


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("POWERCONTEXT_") and k not in ("OPENAI_API_KEY",
                                                             "ANTHROPIC_API_KEY")}
    env["POWERCONTEXT_HOME"] = str(tmp_path / "home")
    return env


def pc(db: Path | str, tmp_path: Path, *args: str, expect: int = 0,
       stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``powercontext --db DB --json ARGS`` as its own process; the exit code asserted."""
    argv = [*cli_argv(), "--db", str(db), "--json", *args]
    out = subprocess.run(argv, capture_output=True, text=True, env=_env(tmp_path),
                         input=stdin, timeout=300)
    assert out.returncode == expect, (args, out.returncode, out.stdout, out.stderr)
    return out


def js(out: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(out.stdout)


@pytest.fixture(params=["sqlite", pytest.param("oceanbase", marks=pytest.mark.oceanbase)])
def make_db(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """``make_db(name)``: a fresh SQLite file, or a fresh database on the session's
    seekdb server."""
    if request.param == "sqlite":
        return lambda name: tmp_path / f"{name}.db"
    url: str = request.getfixturevalue("seekdb_url")
    return lambda name: url.rstrip("/") + f"/tp_{name}_{secrets.token_hex(4)}"


def write_inputs(tmp_path: Path) -> tuple[list[Path], str, Path]:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    files = []
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
        files.append(docs / name)
    config = tmp_path / "config.toml"
    config.write_text(DETERMINISTIC, encoding="utf-8")
    return files, "".join(json.dumps(t) + "\n" for t in TURNS), config


def scripted_run(db: Path | str, tmp_path: Path) -> dict[str, Any]:
    """The "Done means" script on one database; returns what it saw."""
    files, turns, config = write_inputs(tmp_path)
    added = js(pc(db, tmp_path, "source", "add", "--scope", SCOPE, *map(str, files)))
    chat = js(pc(db, tmp_path, "source", "add", "--scope", SCOPE, "--jsonl", stdin=turns))
    rows = added["sources"] + chat["sources"]
    assert [r["position"] for r in rows] == [1, 2, 3, 4, 5]
    window_ids = {r["source_id"] for r in rows}

    # flush: accepted; a second flush coalesces into the same Pending row
    assert js(pc(db, tmp_path, "topic", "flush", "--scope", SCOPE))["status"] == "accepted"
    assert js(pc(db, tmp_path, "topic", "flush", "--scope", SCOPE))["status"] == "accepted"
    (before,) = js(pc(db, tmp_path, "topic", "status"))["scopes"]
    assert before["scope_id"] == SCOPE and before["source_head"] == 5
    assert before["cursor"] == 0 and before["covered"] is False
    assert before["pending"] == {"source_through": 5, "flush_generation": 2,
                                 "handled_flush_generation": 0}

    done = pc(db, tmp_path, "topic", "process", "--scope", SCOPE, "--once",
              "--config", str(config))
    report = js(done)
    assert report["covered"] is True and report["stopped"] is None
    assert report["windows"] and report["windows"][-1]["through"] == 5
    assert report["windows"][0]["after"] == 0
    assert "window (0, " in done.stderr  # progress per Window on stderr
    created = [r for w in report["windows"] for r in w["created"]]
    assert created, report

    # search finds the Topics with exact refs; get returns the complete detail
    hits = js(pc(db, tmp_path, "topic", "search", "release deploy test rollback",
                 "--scope", SCOPE, "--limit", "20"))["hits"]
    assert hits and {h["artifact"]["artifact_id"] for h in hits} <= {
        r["artifact_id"] for w in report["windows"] for r in w["created"] + w["updated"]}
    revisions = []
    for h in hits:
        ref = h["artifact"]
        assert ref["family"] == "topic-memory" and ref["revision"] >= 1
        got = js(pc(db, tmp_path, "topic", "get", f"{ref['artifact_id']}@{ref['revision']}",
                    "--scope", SCOPE))
        assert got["artifact"] == ref and got["title"] == h["title"]
        assert got["summary"] == h["summary"] and got["detail"]
        assert got["sources"] and {s["source_id"] for s in got["sources"]} <= window_ids
        revisions.append(got)

    # covered: the next flush is idle; status shows the Cursor at the head, no budget row
    assert js(pc(db, tmp_path, "topic", "flush", "--scope", SCOPE))["status"] == "idle"
    (after,) = js(pc(db, tmp_path, "topic", "status", "--scope", SCOPE))["scopes"]
    assert after["cursor"] == after["source_head"] == 5 and after["covered"] is True
    assert after["budget"] is None and after["pending"] is None
    return {"revisions": revisions, "report": report}


@pytest.mark.slow
def test_done_means_scripted_run_through_the_cli(make_db, tmp_path):
    scripted_run(make_db("done"), tmp_path)


@pytest.mark.slow
def test_two_deterministic_runs_on_fresh_databases_give_identical_topic_hashes(tmp_path):
    first = scripted_run(tmp_path / "one.db", tmp_path)
    second = scripted_run(tmp_path / "two.db", tmp_path)

    def hashes(run: dict[str, Any]) -> list[str]:
        return sorted(r["content_hash"] for r in run["revisions"])

    assert hashes(first) == hashes(second) and hashes(first)


@pytest.mark.slow
def test_process_without_a_provider_is_unavailable_and_spends_nothing(make_db, tmp_path):
    db = make_db("unavailable")
    files, _, _ = write_inputs(tmp_path)
    pc(db, tmp_path, "source", "add", "--scope", SCOPE, str(files[0]))
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    err = js(pc(db, tmp_path, "topic", "process", "--scope", SCOPE, "--once", "--config",
                str(empty), expect=5))
    assert err["error"] == "TopicProcessingUnavailableError" and err["exit_code"] == 5
    assert err["problems"], err
    refused = tmp_path / "refused.toml"
    refused.write_text(DETERMINISTIC + "[inference.generation_settings]\nstore = true\n",
                       encoding="utf-8")
    err = js(pc(db, tmp_path, "topic", "process", "--scope", SCOPE, "--once", "--config",
                str(refused), expect=5))
    assert any("store" in p for p in err["problems"]), err
    human = subprocess.run([*cli_argv(), "--db", str(db), "topic", "process", "--scope",
                            SCOPE, "--once", "--config", str(empty)], capture_output=True,
                           text=True, env=_env(tmp_path), timeout=120)
    assert human.returncode == 5
    assert "Topic processing unavailable" in human.stderr
    (st,) = js(pc(db, tmp_path, "topic", "status", "--scope", SCOPE))["scopes"]
    assert st["cursor"] == 0 and st["budget"] is None  # no attempt was admitted


def test_process_needs_once(tmp_path):
    err = js(pc(tmp_path / "m.db", tmp_path, "topic", "process", "--scope", SCOPE,
                expect=2))
    assert "--once" in err["message"]


def _attempts(db: Path | str, scope: str, n: int) -> None:
    """``n`` attempts of the Scope's first Window admitted (and abandoned) in process,
    as a crashed worker would leave them."""
    from powercontext.runtime import open_topic_service

    async def body() -> None:
        async with open_topic_service(db, embedding="none") as svc:
            for _ in range(n):
                await svc.backend.begin_attempt(scope, 0)

    asyncio.run(body())


@pytest.mark.slow
def test_a_fourth_attempt_stops_with_exit_8_and_other_scopes_go_on(make_db, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    db = make_db("terminal")
    files, _, config = write_inputs(tmp_path)
    pc(db, tmp_path, "source", "add", "--scope", "project:stuck", str(files[1]))
    pc(db, tmp_path, "source", "add", "--scope", SCOPE, str(files[0]))
    _attempts(db, "project:stuck", 3)
    stopped = pc(db, tmp_path, "topic", "process", "--scope", "project:stuck", "--once",
                 "--config", str(config), expect=8)
    report = js(stopped)
    assert report["stopped"] == "window_attempt_limit" and report["covered"] is False
    assert report["windows"] == []
    (st,) = js(pc(db, tmp_path, "topic", "status", "--scope", "project:stuck"))["scopes"]
    assert st["cursor"] == 0 and st["source_head"] == 1
    assert st["budget"]["failure_code"] == "window_attempt_limit"
    assert st["budget"]["terminal"] is True and st["budget"]["attempt_count"] == 3
    # a terminal frontier: flush is still accepted, status says why, nothing resets it
    assert js(pc(db, tmp_path, "topic", "flush", "--scope", "project:stuck"))["status"] == \
        "accepted"
    again = pc(db, tmp_path, "topic", "process", "--scope", "project:stuck", "--once",
               "--config", str(config), expect=8)
    assert js(again)["stopped"] == "window_attempt_limit"
    (same,) = js(pc(db, tmp_path, "topic", "status", "--scope", "project:stuck"))["scopes"]
    assert same["budget"] == st["budget"]
    # the other Scope is processed as if nothing happened
    ok = js(pc(db, tmp_path, "topic", "process", "--scope", SCOPE, "--once", "--config",
               str(config)))
    assert ok["covered"] is True
    human = subprocess.run([*cli_argv(), "--db", str(db), "topic", "status"],
                           capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert human.returncode == 0
    lines = human.stdout.splitlines()
    assert lines[0].split()[:3] == ["SCOPE", "HEAD", "CURSOR"]
    stuck = next(line for line in lines if line.startswith("project:stuck"))
    assert "window_attempt_limit (terminal)" in stuck
    done = next(line for line in lines if line.startswith(SCOPE))
    assert done.split()[1:3] == ["1", "1"]
    text = subprocess.run([*cli_argv(), "--db", str(db), "topic", "process", "--scope",
                           "project:stuck", "--once", "--config", str(config)],
                          capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert text.returncode == 8 and "stopped: window_attempt_limit" in text.stdout
    assert "processing stopped: window_attempt_limit" in text.stderr


@pytest.mark.slow
def test_an_oversized_source_is_stored_and_stops_only_its_scope(tmp_path):
    """Issue 13: a Source of 4,194,305 characters is stored; processing stops with
    source_complexity_limit (persisted), other Scopes go on. SQLite only: writing a
    Source at the ceiling costs seconds of secret scanning on either engine."""
    db = tmp_path / "big.db"
    files, _, config = write_inputs(tmp_path)
    big = tmp_path / "big.md"
    line = "word " * 15 + "\n"  # short lines: the secret scanner's cost grows with a line
    big.write_text((line * (4_194_305 // len(line) + 1))[:4_194_305], encoding="utf-8")
    assert len(big.read_text(encoding="utf-8")) == 4_194_305  # one over the ceiling
    (row,) = js(pc(db, tmp_path, "source", "add", "--scope", "project:big",
                   str(big)))["sources"]
    assert row["position"] == 1
    pc(db, tmp_path, "source", "add", "--scope", SCOPE, str(files[0]))
    report = js(pc(db, tmp_path, "topic", "process", "--scope", "project:big", "--once",
                   "--config", str(config), expect=8))
    assert report["stopped"] == "source_complexity_limit"
    (st,) = js(pc(db, tmp_path, "topic", "status", "--scope", "project:big"))["scopes"]
    assert st["cursor"] == 0 and st["budget"]["failure_code"] == "source_complexity_limit"
    assert st["budget"]["terminal"] is True and st["budget"]["reserved_requests"] == 0
    assert js(pc(db, tmp_path, "topic", "process", "--scope", SCOPE, "--once", "--config",
                 str(config)))["covered"] is True


@pytest.mark.slow
def test_a_1mb_file_is_processed_through_the_cli(make_db, tmp_path):
    """Issue 15's "Done means" through the CLI: one 1 MB Markdown file added to a
    Scope, flushed and processed (deterministic provider, default settings) publishes
    Topics whose lineage is exactly that Source, with progress per Window on stderr."""
    db = make_db("big")
    _, _, config = write_inputs(tmp_path)
    paras = [f"Entry {i}: the nightly job {i % 97} wrote batch {i} of the ledger and "
             f"checked {i * 7 % 1000} invoices against account {i % 13}."
             for i in range(11_000)]
    big = tmp_path / "big.md"
    big.write_text("# Ledger log\n\n" + "\n\n".join(paras), encoding="utf-8")
    assert big.stat().st_size >= 1_000_000
    (row,) = js(pc(db, tmp_path, "source", "add", "--scope", SCOPE, str(big)))["sources"]
    assert js(pc(db, tmp_path, "topic", "flush", "--scope", SCOPE))["status"] == "accepted"
    done = pc(db, tmp_path, "topic", "process", "--scope", SCOPE, "--once",
              "--config", str(config))
    report = js(done)
    assert report["covered"] is True and report["stopped"] is None
    assert [(w["after"], w["through"]) for w in report["windows"]] == [(0, 1)]
    assert "window (0, 1]: " in done.stderr
    created = report["windows"][0]["created"]
    assert created
    for ref in created:
        got = js(pc(db, tmp_path, "topic", "get", f"{ref['artifact_id']}@{ref['revision']}",
                    "--scope", SCOPE))
        assert [s["source_id"] for s in got["sources"]] == [row["source_id"]]
    (after,) = js(pc(db, tmp_path, "topic", "status", "--scope", SCOPE))["scopes"]
    assert after["cursor"] == after["source_head"] == 1 and after["budget"] is None


def test_process_and_status_name_the_sources_no_topic_cites(tmp_path):
    """The processing report (stderr, --json) and ``topic status --scope`` name every
    Source whose text no new Revision holds: here a note added again under another uri
    adds nothing to its Topic, so no Revision cites it (before, nothing said so)."""
    db = tmp_path / "left.db"
    _, _, config = write_inputs(tmp_path)
    note = tmp_path / "note.md"
    note.write_text("# Caching\n\nThe CDN caches static assets for one year.\n", "utf-8")
    pc(db, tmp_path, "source", "add", "--scope", SCOPE, "--uri", "file:///a.md", str(note))
    pc(db, tmp_path, "topic", "process", "--scope", SCOPE, "--once", "--config", str(config))
    again = js(pc(db, tmp_path, "source", "add", "--scope", SCOPE, "--uri", "file:///b.md",
                  str(note)))["sources"][0]
    out = pc(db, tmp_path, "topic", "process", "--scope", SCOPE, "--once", "--config",
             str(config))
    (window,) = js(out)["windows"]
    left = [{"position": 2, "source_id": again["source_id"], "how": "uncited"}]
    assert window["left_out"] == left
    assert f"left out: #2 {again['source_id']} (uncited)" in out.stderr
    (row,) = js(pc(db, tmp_path, "topic", "status", "--scope", SCOPE))["scopes"]
    assert row["left_out"] == left
    human = subprocess.run([*cli_argv(), "--db", str(db), "topic", "status", "--scope", SCOPE],
                           capture_output=True, text=True, env=_env(tmp_path), timeout=300)
    assert f"left out: 1 Source(s) up to the Cursor are cited by no Topic: #2 " \
           f"{again['source_id']} (uncited)" in human.stdout
