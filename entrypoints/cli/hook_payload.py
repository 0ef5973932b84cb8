"""The hook payload boundary (Memory RFC, "Coding Agent scenario"): what an agent's
event hands us, made safe to store and bounded before any work. stdin is cut while it
is read (:func:`read_stdin`: long strings keep a head and a tail), deep nesting is
refused (:func:`load_object`), every text is clipped (:func:`clip_text`),
:func:`sanitize` replaces lone UTF-16 surrogates (in strings and object keys) by
U+FFFD, stdin is read with invalid UTF-8 replaced,
:func:`extract_transcript_turn` reads the last turn of a Claude Code transcript, and
:func:`repo_root`/:func:`repo_key`/:func:`event_cwd` say which repository an event is
about. Nothing here touches a database.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "TRANSCRIPT_TAIL_BYTES",
    "HookInputError",
    "clean_text",
    "clip_payload",
    "clip_text",
    "event_cwd",
    "extract_transcript_turn",
    "hook_output",
    "load_object",
    "load_payload",
    "read_stdin",
    "repo_key",
    "repo_root",
    "sanitize",
    "transcript_turn",
]


class HookInputError(ValueError):
    """What an agent handed a hook is refused (not JSON, not an object, nested too deep,
    too much left after the cuts): the hook reports it in one line, without a
    traceback."""


#: Only the transcript's last bytes are read.
TRANSCRIPT_TAIL_BYTES = 2 * 1024 * 1024


def repo_root(cwd: str | os.PathLike[str]) -> Path:
    """The Git top level around ``cwd`` (:func:`powercontext.memory_names.repo_root`)."""
    from powercontext.memory_names import repo_root as root

    return root(cwd)


def repo_key(cwd: str | os.PathLike[str]) -> str:
    """The business key of the repository around ``cwd`` (:func:`powercontext.memory_names.
    repo_key`): ``repo:<real path of the Git top level>``."""
    from powercontext.memory_names import repo_key as key

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


#: Read stdin in pieces of this many bytes.
_READ_BYTES = 64 * 1024


def _pieces(raw: bytes) -> Iterator[bytes]:
    return (raw[i:i + _READ_BYTES] for i in range(0, len(raw), _READ_BYTES))


def _stdin_pieces() -> Iterator[bytes]:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text-only stream (click's test runner gives bytes too)
        return _pieces(sys.stdin.read().encode("utf-8", "surrogatepass"))
    return iter(lambda: buffer.read(_READ_BYTES), b"")


def _bounded(pieces: Iterable[bytes], what: str) -> str:
    from powercontext.entrypoints.cli.json_bounds import bounded_json

    try:
        return bounded_json(pieces).decode("utf-8", "replace")
    except ValueError as exc:
        raise HookInputError(f"{what} {exc}") from None


def read_stdin() -> str:
    """stdin as JSON text, cut at the boundary while it is read
    (:func:`~powercontext.entrypoints.cli.json_bounds.bounded_json`: a string longer than
    768 KiB keeps its first 512 KiB and last 256 KiB, at most 8 MiB is kept), so a 50
    MB reply costs one pass over its bytes and never 50 MB of work after it. Invalid
    UTF-8 becomes U+FFFD instead of failing the hook. ValueError (``hook input ...``)
    for input the bounds refuse."""
    return _bounded(_stdin_pieces(), "hook input")


def load_payload(raw: str | bytes | None, what: str) -> dict[str, Any]:
    """The hook's event as a JSON object, bounded and safe before any work: ``raw``
    (None: stdin, :func:`read_stdin`) cut at the boundary, parsed
    (:func:`load_object`), every string clipped (:func:`clip_payload`) and sanitised
    (:func:`sanitize`). ValueError naming ``what`` for input that is not a JSON
    object or that the bounds refuse (too deep, too much)."""
    if raw is None:
        pieces = _stdin_pieces()
    else:
        pieces = _pieces(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str)
                         else raw)
    return sanitize(clip_payload(load_object(_bounded(pieces, what), what)))


def load_object(raw: str, what: str) -> dict[str, Any]:
    """The JSON object ``raw`` holds; ValueError naming ``what`` for anything else, or
    for one nested more than 64 levels deep (the parser's own RecursionError
    included)."""
    from powercontext.entrypoints.cli.json_bounds import MAX_DEPTH, check_depth

    try:
        payload = check_depth(json.loads(raw))
    except RecursionError:
        raise HookInputError(f"{what} is nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        if "nested more than" in str(exc):
            raise HookInputError(f"{what} {exc}") from None
        raise HookInputError(f"{what} is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise HookInputError(f"{what} must be a JSON object")
    return payload


#: A text a hook works on keeps at most this many characters: the first
#: :data:`CLIP_HEAD_CHARS` and the last :data:`CLIP_TAIL_CHARS` around a marker
#: (every stored part is cut much shorter later, after its secrets are redacted).
CLIP_HEAD_CHARS = 24_576
CLIP_TAIL_CHARS = 8_192
#: How far a cut looks for white space to fall on (a token is never split).
_CLIP_SLACK = 256


def clip_text(text: str) -> str:
    """``text`` cut to :data:`CLIP_HEAD_CHARS` + :data:`CLIP_TAIL_CHARS` characters at
    the boundary, before any work: the head ends and the tail starts at white space
    when there is some within 256 characters, around ``\n[... N characters cut at the
    hook boundary ...]\n``. Shorter texts are returned unchanged. The margins keep the
    later cuts (at most 16,000 characters, head and tail) far from this one, so a
    secret is redacted with its context before anything is cut for storage."""
    if len(text) <= CLIP_HEAD_CHARS + CLIP_TAIL_CHARS:
        return text
    head_end = CLIP_HEAD_CHARS
    space = max(text.rfind(" ", head_end - _CLIP_SLACK, head_end),
                text.rfind("\n", head_end - _CLIP_SLACK, head_end))
    if space > 0:
        head_end = space
    tail_start = len(text) - CLIP_TAIL_CHARS
    spaces = [i for i in (text.find(" ", tail_start, tail_start + _CLIP_SLACK),
                          text.find("\n", tail_start, tail_start + _CLIP_SLACK)) if i >= 0]
    if spaces:
        tail_start = min(spaces) + 1
    return (f"{text[:head_end]}\n[... {tail_start - head_end} characters cut at the hook "
            f"boundary ...]\n{text[tail_start:]}")


def clip_payload(value: Any) -> Any:
    """``value`` (decoded JSON) with every string :func:`clip_text` cut."""
    if isinstance(value, str):
        return clip_text(value)
    if isinstance(value, list):
        return [clip_payload(v) for v in value]
    if isinstance(value, dict):
        return {k: clip_payload(v) for k, v in value.items()}
    return value



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
    none. Missing or unreadable file: ``("", "", "")``. Both texts are clipped
    (:func:`clip_text`)."""
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
    return (clip_text("\n\n".join(t.strip() for t in answer if t.strip())), clip_text(request),
            turn)

