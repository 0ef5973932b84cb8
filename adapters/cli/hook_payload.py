"""The hook payload boundary (Memory RFC, "Coding Agent scenario"): what an agent's
event hands us, made safe to store. :func:`sanitize` replaces lone UTF-16 surrogates
(in strings and object keys) by U+FFFD, stdin is read with invalid UTF-8 replaced,
:func:`extract_transcript_turn` reads the last turn of a Claude Code transcript, and
:func:`repo_root`/:func:`repo_key`/:func:`event_cwd` say which repository an event is
about. Nothing here touches a database.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "TRANSCRIPT_TAIL_BYTES",
    "clean_text",
    "event_cwd",
    "extract_transcript_turn",
    "hook_output",
    "load_object",
    "read_stdin",
    "repo_key",
    "repo_root",
    "sanitize",
    "transcript_turn",
]

#: Only the transcript's last bytes are read.
TRANSCRIPT_TAIL_BYTES = 2 * 1024 * 1024


def repo_root(cwd: str | os.PathLike[str]) -> Path:
    """The Git top level around ``cwd`` (:func:`powercontext.runtime.repo_root`)."""
    from powercontext.runtime import repo_root as root

    return root(cwd)


def repo_key(cwd: str | os.PathLike[str]) -> str:
    """The business key of the repository around ``cwd`` (:func:`powercontext.runtime.
    repo_key`): ``repo:<real path of the Git top level>``."""
    from powercontext.runtime import repo_key as key

    return key(cwd)



_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    if _SURROGATE.search(text) is None:
        return text
    # a high+low pair becomes its code point; a lone surrogate becomes U+FFFD
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def sanitize(value: Any) -> Any:
    """``value`` (decoded JSON) with every lone UTF-16 surrogate, in strings and in object
    keys alike, replaced by U+FFFD, so that the payload can always be stored as UTF-8
    (agents emit ``"\\ud800"``); other values are returned unchanged."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [sanitize(v) for v in value]
    if isinstance(value, dict):
        return {sanitize(k): sanitize(v) for k, v in value.items()}
    return value


def read_stdin() -> str:
    """stdin as text: invalid UTF-8 becomes U+FFFD instead of failing the hook."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text-only stream (click's test runner gives bytes too)
        return sys.stdin.read()
    return buffer.read().decode("utf-8", "replace")



def load_object(raw: str, what: str) -> dict[str, Any]:
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise ValueError(f"{what} must be a JSON object")
    return payload



def hook_output(data: Any) -> str:
    """What a hook prints for ``data``: one JSON line (keys sorted, non-ASCII kept), or
    nothing for None. The in-process hook and its daemon both print this."""
    if data is None:
        return ""
    return json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n"


def event_cwd(payload: dict[str, Any]) -> str:
    """The event's working directory: ``cwd``, else ``$CLAUDE_PROJECT_DIR``, else ours."""
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else (
        os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())



def _text_blocks(content: Any) -> list[str]:
    """Text of a transcript message ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def _is_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def extract_transcript_turn(path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(last assistant text, last user prompt)`` of a Claude Code transcript (JSONL, one
    object per line with ``type`` and ``message.content``); only the last
    :data:`TRANSCRIPT_TAIL_BYTES` are read. The assistant text is the run of assistant
    text blocks after the last user line (prompt or tool result). Missing or unreadable
    file: ``("", "")``; malformed lines are skipped."""
    answer, request, _turn = transcript_turn(path)
    return answer, request


def transcript_turn(path: str | os.PathLike[str]) -> tuple[str, str, str]:
    """:func:`extract_transcript_turn` plus the turn's id: the ``uuid`` of the user line
    that holds the last prompt (Claude Code writes one per line), ``""`` when there is
    none. Missing or unreadable file: ``("", "", "")``."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            data = fh.read()
    except OSError:
        return "", "", ""
    records: list[dict[str, Any]] = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("message"), dict):
            records.append(sanitize(rec))
    answer: list[str] = []
    request = turn = ""
    in_answer = True
    for rec in reversed(records):
        role = rec.get("type") or rec["message"].get("role")
        content = rec["message"].get("content")
        if in_answer:
            if role == "assistant":
                answer[:0] = _text_blocks(content)
                continue
            in_answer = False
        if role == "user" and not rec.get("isMeta") and not _is_tool_result(content):
            request = "\n".join(_text_blocks(content)).strip()
            if request:
                uuid = rec.get("uuid")
                turn = uuid if isinstance(uuid, str) else ""
                break
    return "\n\n".join(t.strip() for t in answer if t.strip()), request, turn

