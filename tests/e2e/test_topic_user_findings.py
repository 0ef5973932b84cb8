"""What trying Topic processing as a user found, pinned.

- Several ``topic process`` processes on one Scope of one SQLite database at once:
  racing processes each admitted an attempt of the same Window, the durable allowance
  counted all of them, and the Scope could end at a terminal ``window_attempt_limit``
  although no provider failed. ``topic process`` now holds a per-Scope lock
  (:func:`powercontext.file_locks.topic_processing_lock`): the others wait, then find the
  Scope covered; every process exits 0, the Topics are those of one run, no budget row
  is left, and another Scope is not held up (Topic Memory RFC, "In-memory queue and
  Workers": at most one Worker per key).
- Stored text holding terminal control sequences (an OSC title sequence) was echoed raw
  by the human output of ``topic search`` / ``topic get``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from e2e.test_topic_processing_cli import DETERMINISTIC, _env, js, pc
from support.cli import cli_argv

pytestmark = pytest.mark.subprocess


def _docs(tmp_path: Path, n: int = 6) -> list[Path]:
    out = []
    for i in range(n):
        body = "\n\n".join(f"Paragraph {j} of guide {i}: the service {i} settings, "
                           f"the deploy step {j} and its rollback." for j in range(700))
        path = tmp_path / f"guide{i}.md"
        path.write_text(f"# Guide {i}\n\n{body}\n", encoding="utf-8")
        out.append(path)
    return out


@pytest.mark.slow
def test_four_concurrent_processes_cover_the_scope_without_spending_its_attempts(
        tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    config = tmp_path / "config.toml"
    config.write_text(DETERMINISTIC, encoding="utf-8")
    pc(db, tmp_path, "source", "add", "--scope", "docs", *map(str, _docs(tmp_path)))
    pc(db, tmp_path, "topic", "flush", "--scope", "docs")
    argv = [*cli_argv(), "--db", str(db), "--json", "topic", "process", "--scope", "docs",
            "--once", "--config", str(config)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=_env(tmp_path)) for _ in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outs
    status = js(pc(db, tmp_path, "topic", "status", "--scope", "docs"))
    (row,) = status["scopes"]
    assert row["cursor"] == row["source_head"] == 6 and row["budget"] is None, row

    # the same Topics as one process on a fresh database
    alone = tmp_path / "alone.db"
    pc(alone, tmp_path, "source", "add", "--scope", "docs", *map(str, _docs(tmp_path)))
    pc(alone, tmp_path, "topic", "process", "--scope", "docs", "--once", "--config",
       str(config))

    def titles(path: Path) -> list[str]:
        hits = js(pc(path, tmp_path, "topic", "search", "guide", "--scope", "docs",
                     "--limit", "20"))
        return sorted(h["title"] for h in hits["hits"])

    assert titles(db) == titles(alone)


def test_a_second_process_waits_for_the_lock_then_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from powercontext.file_locks import topic_processing_lock
            with topic_processing_lock({str(db)!r}, "docs"):
                print("held", flush=True)
                sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        waiter = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(f"""
                from powercontext.file_locks import topic_processing_lock
                with topic_processing_lock({str(db)!r}, "other"):
                    print("other scope: no wait", flush=True)
                with topic_processing_lock({str(db)!r}, "docs",
                                           on_wait=lambda: print("waiting", flush=True)):
                    print("got it", flush=True)
            """)], stdout=subprocess.PIPE, text=True)
        assert waiter.stdout is not None
        assert waiter.stdout.readline().strip() == "other scope: no wait"
        assert waiter.stdout.readline().strip() == "waiting"
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert waiter.stdout.readline().strip() == "got it"
        assert waiter.wait(timeout=60) == 0
        waiter.stdout.close()
    finally:
        holder.kill()
        holder.wait()
        for pipe in (holder.stdin, holder.stdout):
            if pipe is not None:
                pipe.close()


@pytest.mark.slow
def test_stored_control_characters_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    # found by trying it: a Source holding an OSC title sequence (ESC ] ... BEL) was
    # echoed raw by `topic search` / `topic get` (and Memory `search`/`show`)
    db = tmp_path / "t.db"
    config = tmp_path / "config.toml"
    config.write_text(DETERMINISTIC, encoding="utf-8")
    doc = tmp_path / "esc.md"
    doc.write_text("# Release \x1b]0;PWNED\x07 alert\n\nThe release \x1b[31mred\x01 "
                   "alert process.\n", encoding="utf-8")
    pc(db, tmp_path, "source", "add", "--scope", "s", str(doc))
    pc(db, tmp_path, "topic", "process", "--scope", "s", "--once", "--config", str(config))
    argv = [*cli_argv(), "--db", str(db), "topic", "search", "release alert", "--scope", "s"]
    out = subprocess.run(argv, capture_output=True, text=True, env=_env(tmp_path),
                         timeout=120)
    assert out.returncode == 0 and "1." in out.stdout, out
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout and "\x01" not in out.stdout
    assert "\\x1b]0;PWNED\\x07" in out.stdout
    ref = js(pc(db, tmp_path, "topic", "search", "release alert", "--scope", "s"))
    ref_text = "{artifact_id}@{revision}".format(**ref["hits"][0]["artifact"])
    got = subprocess.run([*cli_argv(), "--db", str(db), "topic", "get", ref_text, "--scope",
                          "s"], capture_output=True, text=True, env=_env(tmp_path),
                         timeout=120)
    assert got.returncode == 0 and "\x1b" not in got.stdout and "\\x1b" in got.stdout
    # JSON keeps the exact stored text
    assert "\x1b]0;PWNED\x07" in ref["hits"][0]["title"]


@pytest.mark.slow
def test_source_add_warns_when_a_source_is_over_the_topic_processing_ceiling(
        tmp_path: Path) -> None:
    # found by trying it: a Source over the ceiling was stored silently, and the Scope
    # then stopped for good at the first `topic process` (the spec keeps such a Source
    # stored; the user now learns at once that processing will stop at it)
    db = tmp_path / "t.db"
    big = tmp_path / "big.txt"
    big.write_text("x" * 4_194_304, encoding="utf-8")  # + kind/uri/keys: over the ceiling
    small = tmp_path / "small.md"
    small.write_text("# Small\n\nfits.\n", encoding="utf-8")
    argv = [*cli_argv(), "--db", str(db), "source", "add", "--scope", "s", str(small),
            str(big)]
    out = subprocess.run(argv, capture_output=True, text=True, env=_env(tmp_path),
                         timeout=300)
    assert out.returncode == 0, out
    assert "warning: " + str(big) in out.stderr and "source_complexity_limit" in out.stderr
    assert "small.md is stored" not in out.stderr
    rows = js(pc(db, tmp_path, "source", "add", "--scope", "s", str(small), str(big)))
    assert [r["over_topic_ceiling"] is not None for r in rows["sources"]] == [False, True]
