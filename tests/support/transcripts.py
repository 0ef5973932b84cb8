"""Session files in the shapes Claude Code and Codex write them (``powercontext import``
fixtures): Claude Code's per-session JSONL under ``<home>/.claude/projects/<the working
directory, every character but ASCII letters and digits as ->/`` (lines with ``type``,
``message``, ``uuid``, ``parentUuid``, ``sessionId``, ``cwd``, ``timestamp``, tool use
and tool results as content blocks, summary and snapshot lines between), and Codex's
rollouts under ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`` (lines
``{"timestamp", "type", "payload"}``: ``session_meta``, ``turn_context``,
``response_item`` messages and calls, ``event_msg`` user/agent messages and task
boundaries)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["claude_dir", "claude_session", "codex_session"]


def claude_dir(home: Path, cwd: Path) -> Path:
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def _ts(i: int) -> str:
    return f"2026-11-{1 + i // 1440:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00.000Z"


def claude_session(home: Path, cwd: Path, session: str,
                   turns: list[tuple[str, str]], *, tools: bool = True,
                   unfinished: str | None = None, extra: list[str] | None = None) -> Path:
    """A Claude Code session file of ``turns`` (prompt, final reply): each turn reads a
    file through a tool before replying when ``tools``; ``unfinished``: a last prompt
    whose reply has not come yet; ``extra``: raw lines appended after the turns."""
    lines: list[str] = [json.dumps({"type": "summary", "summary": "Session", "leafUuid": "x"})]
    parent = None
    n = 0

    def add(kind: str, message: dict[str, Any], **more: Any) -> str:
        nonlocal parent, n
        n += 1
        uuid = f"{session[:8]}-{n:04d}-4000-8000-000000000000"
        rec = {"parentUuid": parent, "isSidechain": False, "userType": "external",
               "cwd": str(cwd), "sessionId": session, "version": "2.1.12",
               "gitBranch": "main", "type": kind, "message": message, "uuid": uuid,
               "timestamp": _ts(n), **more}
        lines.append(json.dumps(rec, ensure_ascii=False))
        parent = uuid
        return uuid

    for i, (prompt, reply) in enumerate(turns):
        add("user", {"role": "user", "content": prompt})
        if tools:
            add("assistant", {"role": "assistant", "model": "claude-opus-4", "id": f"msg_{i}a",
                              "content": [{"type": "text", "text": "Let me look."},
                                          {"type": "tool_use", "id": f"toolu_{i}",
                                           "name": "Read",
                                           "input": {"file_path": str(cwd / "README.md")}}],
                              "stop_reason": "tool_use"})
            add("user", {"role": "user", "content": [
                {"tool_use_id": f"toolu_{i}", "type": "tool_result",
                 "content": "     1→# Project"}]}, toolUseResult={"type": "text"})
        add("assistant", {"role": "assistant", "model": "claude-opus-4", "id": f"msg_{i}b",
                          "content": [{"type": "text", "text": reply}],
                          "stop_reason": "end_turn"})
        lines.append(json.dumps({"type": "system", "subtype": "turn_duration",
                                 "durationMs": 1200, "sessionId": session}))
        if i == 0:
            lines.append(json.dumps({"type": "file-history-snapshot", "messageId": "m",
                                     "snapshot": {}, "isSnapshotUpdate": False}))
    if unfinished is not None:
        add("user", {"role": "user", "content": [{"type": "text", "text": unfinished}]})
        add("assistant", {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_z", "name": "Bash", "input": {"command": "ls"}}]})
    lines += extra or []
    path = claude_dir(home, cwd) / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def codex_session(codex_home: Path, cwd: Path, session: str,
                  turns: list[tuple[str, str]], *, day: int = 1, turn_ids: bool = True,
                  unfinished: str | None = None, extra: list[str] | None = None) -> Path:
    """A Codex rollout file of ``turns`` (prompt, final reply) for a session started in
    ``cwd``; ``turn_ids``: the task events name their turn; ``unfinished``: a last
    prompt without a completed task; ``extra``: raw lines appended."""
    lines: list[str] = []
    n = 0

    def add(kind: str, payload: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        lines.append(json.dumps({"timestamp": _ts(n), "type": kind, "payload": payload},
                                ensure_ascii=False))

    add("session_meta", {"id": session, "timestamp": _ts(0), "cwd": str(cwd),
                         "originator": "codex_cli_rs", "cli_version": "0.139.0",
                         "instructions": None, "git": {"branch": "main"}})
    add("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context>\n  <cwd>" + str(cwd)
         + "</cwd>\n</environment_context>"}]})
    for i, (prompt, reply) in enumerate(turns):
        tid = f"{session[:8]}-turn-{i}"
        add("turn_context", {"cwd": str(cwd), "approval_policy": "on-request",
                             "model": "gpt-5-codex", **({"turn_id": tid} if turn_ids else {})})
        add("event_msg", {"type": "task_started", **({"turn_id": tid} if turn_ids else {}),
                          "model_context_window": 272000})
        add("response_item", {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": prompt}]})
        add("event_msg", {"type": "user_message", "message": prompt, "images": []})
        add("response_item", {"type": "function_call", "name": "shell",
                              "arguments": json.dumps({"command": ["ls"]}), "call_id": f"c{i}"})
        add("response_item", {"type": "function_call_output", "call_id": f"c{i}",
                              "output": "README.md"})
        add("event_msg", {"type": "agent_message", "message": reply})
        add("response_item", {"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": reply}]})
        add("event_msg", {"type": "task_complete", "last_agent_message": reply,
                          **({"turn_id": tid} if turn_ids else {})})
    if unfinished is not None:
        add("event_msg", {"type": "task_started", "model_context_window": 272000})
        add("event_msg", {"type": "user_message", "message": unfinished, "images": []})
    lines += extra or []
    path = (codex_home / "sessions" / "2026" / "11" / f"{day:02d}"
            / f"rollout-2026-11-{day:02d}T10-00-00-{session}.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
