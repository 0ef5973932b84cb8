"""The finished turn as a Topic Memory Source (Topic Memory RFC, "Source, Window, Cursor,
and Pending"; TOPIC-MEMORY.md, "Scopes are new": hooks journal in ``repo:<canonical
path>``): a Stop (Claude Code) or ``agent-turn-complete`` (Codex) adds the user prompt
and the assistant's final reply, bounded and with secrets redacted, to the
repository's Scope as one ``conversation`` Source whose uri names the session and the
turn (:func:`conversation_source`, :func:`record_turn`). One turn is one Source: its
id is derived from the Scope and that uri, and the add checks the (Scope, uri) pair in
its own transaction (``once_per_uri``), so a redelivered event of the same turn stores
nothing new (the first delivery wins; Sources are append-only).
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import quote

__all__ = [
    "MAX_TURN_PROMPT_CHARS",
    "MAX_TURN_REPLY_CHARS",
    "conversation_source",
    "record_turn",
    "turn_uri",
]

#: The user prompt a conversation Source keeps at most (start and end around a cut).
MAX_TURN_PROMPT_CHARS = 8000
#: The assistant reply a conversation Source keeps at most.
MAX_TURN_REPLY_CHARS = 16000


def bounded_text(text: str, limit: int) -> str:
    """``text`` if at most ``limit`` characters, else its first three quarters and last
    quarter of ``limit`` around a ``[... N characters cut ...]`` marker."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def turn_uri(agent: str, session: str, turn: str) -> str:
    """The uri naming one turn: ``claude-code://session/<session_id>/turn/<turn>`` or
    ``codex://thread/<thread-id>/turn/<turn-id>`` (each part percent-encoded)."""
    kind = "thread" if agent == "codex" else "session"
    return f"{agent}://{kind}/{quote(session or '-', safe='')}/turn/{quote(turn, safe='')}"


def _fallback_turn(prompt: str, reply: str) -> str:
    """A turn id for an event that names none: the hash of the turn's own text (so the
    same delivery twice is still one Source)."""
    return "sha256-" + hashlib.sha256(f"{prompt}\0{reply}".encode()).hexdigest()[:32]


def conversation_source(*, scope_id: str, agent: str, session: str, turn: str, prompt: str,
                        reply: str, metadata: dict[str, str], scanner: Any) -> Any | None:
    """The ``conversation`` Source of one turn, or None when the turn has no text.
    Content: ``User:\\n<prompt>\\n\\nAssistant:\\n<reply>`` (a part without text is left
    out), the prompt at most :data:`MAX_TURN_PROMPT_CHARS` and the reply at most
    :data:`MAX_TURN_REPLY_CHARS` characters (start and end kept around a marker);
    secrets are redacted before any cut (``[REDACTED:<rule>]``), in the uri and the
    metadata too. ``turn`` empty: an id from the turn's text. The uri is
    :func:`turn_uri`; the id ``src_<40 hex of SHA-256(scope_id, uri)>``."""
    from powercontext.adapters.secret_scanner import redact_all, redact_fields
    from powercontext.core import canonical

    prompt, reply = (redact_all(t.strip(), scanner) for t in (prompt, reply))
    if not prompt and not reply:
        return None
    uri = turn_uri(agent, session, turn or _fallback_turn(prompt, reply))
    parts = []
    if prompt:
        parts.append("User:\n" + bounded_text(prompt, MAX_TURN_PROMPT_CHARS))
    if reply:
        parts.append("Assistant:\n" + bounded_text(reply, MAX_TURN_REPLY_CHARS))
    content, safe_uri, meta = redact_fields("\n\n".join(parts), uri, dict(metadata),
                                            scanner)
    digest = hashlib.sha256(f"powercontext:conversation-turn:v1\0{scope_id}\0{safe_uri}"
                            .encode("utf-8", "replace")).hexdigest()
    return canonical.make_source(f"src_{digest[:40]}", "conversation", content, safe_uri,
                                 meta)


async def record_turn(svc: Any, scope_id: str, source: Any) -> list[str]:
    """Journal ``source`` (a :func:`conversation_source`) in the Scope ``scope_id``
    through the backend's ``put_scoped_sources`` with ``once_per_uri`` (the (Scope, uri)
    check, the Source, its journal row and the Pending raise in one transaction: a
    redelivered turn keeps its first position and stores nothing). Never raises for
    what the Scope cannot take: a turn already recorded (the same id with other
    content: a later event of the same turn), a Scope id this release cannot journal
    into, a Source in another Scope, or a backend without Scopes each return a note and
    store nothing. Returns the notes."""
    from powercontext.core.errors import InvalidInputError
    from powercontext.core.topic.content import check_scope_id

    if not callable(getattr(svc.backend, "put_scoped_sources", None)):
        return [f"the turn is not journaled: {type(svc.backend).__name__} has no Scope "
                "journal"]
    try:
        await svc.backend.put_scoped_sources(check_scope_id(scope_id), (source,),
                                             once_per_uri=True)
    except InvalidInputError as exc:
        if exc.field == "source_id":
            return [f"the turn {source.uri} is already recorded as {source.source_id}"]
        if exc.field == "scope_id":
            return [f"the turn is not journaled for Topic Memory: {exc}"]
        raise
    return []
