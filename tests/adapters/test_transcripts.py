"""The transcript readers of ``powercontext import`` (entrypoints/cli/transcripts.py) on
files written in each agent's shape: whatever junk lines are mixed in (not JSON, not an
object, deeply nested, invalid UTF-8, lone surrogates, over-long), reading never fails,
reports each bad line with its number, and returns the same turns as the clean file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from support.transcripts import claude_session, codex_session

from powercontext.entrypoints.cli.hook_payload import transcript_turn
from powercontext.entrypoints.cli.transcripts import (
    claude_project_dirs,
    claude_turns,
    codex_turns,
    read_lines,
)

S = "0f0f0f0f-0000-4000-8000-000000000001"
TURNS = [("Fix the flaky io test", "Fixed: it waits for the lock."),
         ("Which checks run in CI?", "ruff, mypy and pytest.")]
JUNK = [b"{not json", b"[1, 2, 3]", b'"a string"', b"\xff\xfe\xfa broken utf-8",
        b"[" * 1500 + b"]" * 1500, b'{"type": "user", "message": "not a dict"}',
        b'{"type": "assistant"}', b"x" * 5000, b"   ", b"\r"]


def _mixed(path: Path, junk: list[tuple[int, bytes]]) -> None:
    lines = path.read_bytes().split(b"\n")
    for at, raw in sorted(junk, reverse=True):
        lines.insert(min(at, len(lines) - 1), raw)
    path.write_bytes(b"\n".join(lines))


@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from(JUNK)), max_size=8))
def test_junk_lines_are_reported_and_never_change_the_turns(junk):
    with tempfile.TemporaryDirectory() as tmp:
        home, cwd = Path(tmp), Path(tmp) / "project"
        clean = claude_session(home, cwd, S, TURNS)
        want, problems = claude_turns(clean)
        assert problems == [] and [(t.prompt, t.reply) for t in want] == TURNS
        _mixed(clean, junk)
        got, problems = claude_turns(clean, max_line_bytes=4096)
        assert [(t.prompt, t.reply, t.turn) for t in got] == [
            (t.prompt, t.reply, t.turn) for t in want]
        bad = sum(1 for _at, raw in junk if raw.strip() and not raw.startswith(b'{"type"'))
        assert len(problems) == bad
        codex = codex_session(home / "codex", cwd, S, TURNS)
        want_c, _ = codex_turns(codex)
        _mixed(codex, junk)
        got_c, _ = codex_turns(codex, max_line_bytes=4096)
        assert [(t.prompt, t.reply, t.turn) for t in got_c] == [
            (t.prompt, t.reply, t.turn) for t in want_c]


def test_a_turn_reads_as_the_stop_hook_reads_it(tmp_path):
    """The import and the Stop hook see the same prompt, reply and turn id for the last
    turn of a session, so the hook's Source and the imported one are one."""
    path = claude_session(tmp_path, tmp_path / "p", S, TURNS)
    turns, _ = claude_turns(path)
    reply, prompt, turn = transcript_turn(path)
    assert (turns[-1].reply, turns[-1].prompt, turns[-1].turn) == (reply, prompt, turn)


def test_over_long_lines_are_skipped_without_being_held(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"y" * (3 * 1024 * 1024 + 7) + b"\n" + b'{"b": 2}\n')
    rows = list(read_lines(path, max_line_bytes=1024))
    assert [(n, v) for n, v, _p in rows] == [(1, {"a": 1}), (2, None), (3, {"b": 2})]
    assert rows[1][2] == "a line of 3145736 bytes, over the 1024-byte bound"


def test_lone_surrogates_and_bad_bytes_become_replacement_characters(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps({"type": "user", "uuid": "u1", "message": {
        "role": "user", "content": "bad \ud800 here"}}).encode() + b"\n"
        + json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "ok"}]}}).encode().replace(b"ok", b"o\xffk") + b"\n")
    (turn,), problems = claude_turns(path)
    assert problems == [] and turn.prompt == "bad \ufffd here" and turn.reply == "o\ufffdk"


def test_project_directories_match_the_repository_and_its_subdirectories(tmp_path):
    root = Path("/home/dev/my_project.v2")
    base = tmp_path / ".claude" / "projects"
    for name in ("-home-dev-my-project-v2", "-home-dev-my-project-v2-src",
                 "-home-dev-my-project-v20", "-home-dev-other"):
        (base / name).mkdir(parents=True)
    assert [p.name for p in claude_project_dirs(root, tmp_path / ".claude")] == [
        "-home-dev-my-project-v2", "-home-dev-my-project-v2-src"]
