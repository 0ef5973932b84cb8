"""The transcripts agents keep, read as turns (``powercontext import``): where Claude Code
and Codex store a repository's sessions, and each session file's turns, a turn being
the user's prompt and the agent's final reply.

- Claude Code writes one JSONL file per session under
  ``$CLAUDE_CONFIG_DIR/projects`` (default ``~/.claude/projects``) in a directory named
  after the session's working directory, every character other than an ASCII letter or
  digit replaced by ``-`` (:func:`claude_project_dirs`). Each line is an object with
  ``type`` (``user``, ``assistant``, ``system``, ...), ``message`` (``role``,
  ``content``: a string or blocks), ``uuid``, ``sessionId``, ``cwd`` and flags
  (``isMeta``, ``isSidechain``, ``isCompactSummary``). A turn starts at a user line
  with text that is neither meta, a tool result nor a compaction summary; its reply is
  the run of assistant text after the turn's last user line (the text the Stop hook
  stores: :func:`powercontext.entrypoints.cli.hook_payload.transcript_turn`), its id the
  prompt line's ``uuid``, so a turn the hook recorded and the same turn imported are
  one Source.
- Codex writes ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (default
  ``~/.codex``; also ``archived_sessions``). A line is ``{"timestamp", "type",
  "payload"}``: ``session_meta`` (``id``, ``cwd``), ``turn_context`` (``cwd``),
  ``event_msg`` (``user_message`` starts a turn, ``agent_message`` is a reply,
  ``task_started``/``turn_started`` and ``task_complete``/``turn_complete`` carry
  ``turn_id``, ``task_complete`` the ``last_agent_message``, ``turn_aborted`` ends a
  turn) and ``response_item`` (``message`` items with ``role`` and ``input_text``/
  ``output_text`` blocks; read only when a file has no ``user_message`` event, the
  context Codex injects as user messages left out). Files of early releases hold the
  bare items, after a first line with the session ``id``.

A line that is not a JSON object is reported and skipped, never fatal; so is a line
longer than the caller's bound (read in chunks, never held whole). The last turn of a
file is left out while it looks unfinished (no reply yet, or a tool call after its
last text), so an import run during a session does not store half a turn.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from powercontext.entrypoints.cli.hook_payload import clean_text, sanitize

__all__ = [
    "Turn",
    "claude_project_dirs",
    "claude_turns",
    "codex_session_files",
    "codex_turns",
    "read_lines",
]

#: A line longer than this is reported and skipped (64 MiB; ``--max-line-bytes``).
MAX_LINE_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
_SLUG = re.compile(r"[^A-Za-z0-9]")
#: user messages Codex injects (instructions, environment), not the user's words
_INJECTED = ("<environment_context>", "<user_instructions>", "<permissions",
             "<user_shell_command>", "# AGENTS.md instructions", "<INSTRUCTIONS>")


@attrs.frozen
class Turn:
    """One turn of a session: ``session`` and ``turn`` ids (``turn`` empty when the file
    names none), the user's ``prompt``, the agent's final ``reply``, the working
    directory ``cwd`` ("" when unknown), the ``timestamp`` of its prompt ("" when
    unknown) and the 1-based ``line`` of its prompt in the file."""

    session: str
    turn: str
    prompt: str
    reply: str
    cwd: str
    timestamp: str
    line: int


Problem = tuple[int, str]
"""(line number, what was wrong with it)."""


def read_lines(path: Path, max_line_bytes: int = MAX_LINE_BYTES
               ) -> Iterator[tuple[int, Any, str | None]]:
    """``(line number, decoded JSON value or None, problem or None)`` for each non-empty
    line of ``path``; a line over ``max_line_bytes`` is skipped in chunks (never held
    whole) and reported, as is a line that is not JSON or nests too deeply. Invalid
    UTF-8 and lone surrogates become U+FFFD
    (:func:`~powercontext.entrypoints.cli.hook_payload.sanitize`)."""
    with open(path, "rb") as fh:
        n = 0
        while True:
            raw = fh.readline(max_line_bytes + 1)
            if not raw:
                return
            n += 1
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                size = len(raw)
                while not raw.endswith(b"\n"):
                    raw = fh.readline(_CHUNK)
                    if not raw:
                        break
                    size += len(raw)
                yield n, None, f"a line of {size} bytes, over the {max_line_bytes}-byte bound"
                continue
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                value = sanitize(json.loads(text))
            except json.JSONDecodeError as exc:
                yield n, None, f"not JSON ({exc.msg} at column {exc.colno})"
            except (ValueError, RecursionError) as exc:
                yield n, None, ("nested too deeply" if isinstance(exc, RecursionError)
                                else f"not JSON ({exc})")
            else:
                yield n, value, None


# --------------------------------------------------------------------------- Claude Code


def claude_home() -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(base).expanduser() if base else Path.home() / ".claude"


def claude_project_dirs(root: Path, home: Path | None = None) -> list[Path]:
    """The directories of ``projects`` under Claude Code's home that may hold sessions
    of the repository ``root``: the one named after ``root`` and those named after a
    directory inside it (the name is lossy, so the caller checks each line's ``cwd``)."""
    base = (home or claude_home()) / "projects"
    slug = _SLUG.sub("-", str(root))
    try:
        names = sorted(p.name for p in base.iterdir() if p.is_dir())
    except OSError:
        return []
    return [base / n for n in names if n == slug or n.startswith(slug + "-")]


def _blocks(content: Any, kind: str = "text") -> list[str]:
    if isinstance(content, str):
        return [content] if kind in ("text", "input_text", "output_text") else []
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == kind
            and isinstance(b.get("text"), str)]


def _has(content: Any, kind: str) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == kind for b in content)


def _joined(parts: list[str]) -> str:
    return "\n\n".join(t.strip() for t in parts if t.strip())


def claude_turns(path: Path, max_line_bytes: int = MAX_LINE_BYTES
                 ) -> tuple[list[Turn], list[Problem]]:
    """The turns of one Claude Code session file, and the lines skipped with why."""
    turns: list[Turn] = []
    problems: list[Problem] = []
    current: dict[str, Any] | None = None
    reply: list[str] = []
    finished = True

    def close() -> None:
        if current is not None:
            turns.append(Turn(reply=_joined(reply), **current))

    for n, rec, problem in read_lines(path, max_line_bytes):
        if problem is not None:
            problems.append((n, problem))
            continue
        if not isinstance(rec, dict):
            problems.append((n, "not a JSON object"))
            continue
        message = rec.get("message")
        if not isinstance(message, dict) or rec.get("isSidechain") is True:
            continue
        role = rec.get("type") or message.get("role")
        content = message.get("content")
        if role == "user":
            prompt = "\n".join(_blocks(content)).strip()
            if (prompt and not rec.get("isMeta") and not rec.get("isCompactSummary")
                    and not _has(content, "tool_result")):
                close()
                uuid, session, cwd, ts = (rec.get(k) for k in ("uuid", "sessionId", "cwd",
                                                                "timestamp"))
                current = {"session": session if isinstance(session, str) else path.stem,
                           "turn": uuid if isinstance(uuid, str) else "", "prompt": prompt,
                           "cwd": cwd if isinstance(cwd, str) else "",
                           "timestamp": ts if isinstance(ts, str) else "", "line": n}
            reply = []
            finished = False
        elif role == "assistant" and current is not None:
            reply += _blocks(content)
            finished = bool(reply) and not _has(content, "tool_use")
    if current is not None and finished:
        close()
    return turns, problems


# --------------------------------------------------------------------------- Codex


def codex_home() -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    base = os.environ.get("CODEX_HOME")
    return Path(base).expanduser() if base else Path.home() / ".codex"


def codex_session_files(home: Path | None = None) -> list[Path]:
    """Every rollout file under ``sessions`` and ``archived_sessions`` of Codex's home,
    sorted by path (so by date)."""
    base = home or codex_home()
    out: list[Path] = []
    for sub in ("sessions", "archived_sessions"):
        d = base / sub
        if d.is_dir():
            out += [p for p in d.rglob("*.jsonl") if p.is_file()]
    return sorted(out)


def _text(value: Any) -> str:
    return clean_text(value).strip() if isinstance(value, str) else ""


class _CodexReader:
    """The state of one rollout read line by line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.session = ""
        self.cwd = ""
        m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
                      path.name)
        self.file_id = m.group(1) if m else path.stem
        # turns from user_message events, and from response items (the fallback)
        self.events: list[dict[str, Any]] = []
        self.items: list[dict[str, Any]] = []
        self.turn_id = ""

    def _new(self, into: list[dict[str, Any]], prompt: str, ts: Any, n: int) -> None:
        into.append({"turn": "", "prompt": prompt, "reply": "", "cwd": self.cwd,
                     "timestamp": ts if isinstance(ts, str) else "", "line": n,
                     "done": False})

    def event(self, p: dict[str, Any], ts: Any, n: int) -> None:
        kind = p.get("type")
        last = self.events[-1] if self.events else None
        if kind == "user_message":
            prompt = _text(p.get("message"))
            if prompt:
                self._new(self.events, prompt, ts, n)
                if self.turn_id:
                    self.events[-1]["turn"] = self.turn_id
        elif kind in ("task_started", "turn_started"):
            self.turn_id = _text(p.get("turn_id"))
            if last is not None and not last["done"] and not last["turn"]:
                last["turn"] = self.turn_id
        elif last is None:
            return
        elif kind == "agent_message" and _text(p.get("message")):
            last["reply"] = _text(p.get("message"))
        elif kind in ("task_complete", "turn_complete", "turn_aborted"):
            if _text(p.get("last_agent_message")):
                last["reply"] = _text(p.get("last_agent_message"))
            if _text(p.get("turn_id")) and not last["turn"]:
                last["turn"] = _text(p.get("turn_id"))
            last["done"] = True
            self.turn_id = ""

    def item(self, p: dict[str, Any], ts: Any, n: int) -> None:
        if p.get("type") != "message":
            if self.items and p.get("type") in ("function_call", "local_shell_call",
                                                 "custom_tool_call"):
                self.items[-1]["done"] = False
            return
        role = p.get("role")
        content = p.get("content")
        if role == "user":
            prompt = "\n".join(_text(t) for t in _blocks(content, "input_text")).strip()
            if prompt and not prompt.startswith(_INJECTED):
                self._new(self.items, prompt, ts, n)
        elif role == "assistant" and self.items:
            reply = "\n".join(_text(t) for t in _blocks(content, "output_text")).strip()
            if reply:
                self.items[-1].update(reply=reply, done=True)

    def turns(self) -> list[Turn]:
        rows = self.events or self.items
        if rows and not rows[-1]["done"]:
            rows = rows[:-1]  # unfinished: the session is still going
        session = self.session or self.file_id
        return [Turn(session=session, turn=r["turn"], prompt=r["prompt"], reply=r["reply"],
                     cwd=r["cwd"], timestamp=r["timestamp"], line=r["line"]) for r in rows]


def codex_turns(path: Path, max_line_bytes: int = MAX_LINE_BYTES
                ) -> tuple[list[Turn], list[Problem]]:
    """The turns of one Codex rollout file, and the lines skipped with why."""
    reader = _CodexReader(path)
    problems: list[Problem] = []
    for n, rec, problem in read_lines(path, max_line_bytes):
        if problem is not None:
            problems.append((n, problem))
            continue
        if not isinstance(rec, dict):
            problems.append((n, "not a JSON object"))
            continue
        payload = rec.get("payload")
        kind = rec.get("type")
        if isinstance(payload, dict):
            if kind == "session_meta":
                reader.session = _text(payload.get("id")) or reader.session
                reader.cwd = _text(payload.get("cwd")) or reader.cwd
            elif kind == "turn_context":
                reader.cwd = _text(payload.get("cwd")) or reader.cwd
            elif kind == "event_msg":
                reader.event(payload, rec.get("timestamp"), n)
            elif kind == "response_item":
                reader.item(payload, rec.get("timestamp"), n)
        elif kind == "message" or "role" in rec:  # an early release's bare item
            reader.item(rec, rec.get("timestamp"), n)
        elif n == 1 and isinstance(rec.get("id"), str):
            reader.session = _text(rec["id"])
    return reader.turns(), problems
