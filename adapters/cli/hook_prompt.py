"""The prompt hook's recall (docs/hooks.md, "Long prompts still find their entries"): the
bounded full-text queries a prompt becomes (:func:`prompt_queries`), the searches of the
repository Memory fused by RRF (:func:`prompt_hits`), and the slots they fill, rules first
with at most :data:`MAX_NOTES` working_notes (:func:`fill_slots`), then at most
:data:`MAX_TOPICS` Topics of the repository's Scope (:func:`prompt_topics`).
:func:`prompt_context` is the whole ``UserPromptSubmit`` answer (None when nothing is
injected).
"""

from __future__ import annotations

import re
from typing import Any

from powercontext.adapters.cli.hook_fence import render_context
from powercontext.adapters.cli.hook_payload import event_cwd, repo_key, repo_root

__all__ = [
    "MAX_HOOK_QUERIES",
    "MAX_HOOK_QUERY_TERMS",
    "MAX_NOTES",
    "MAX_TOPICS",
    "PROMPT_REMOTE_TIMEOUT_S",
    "fill_slots",
    "kind_tier",
    "prompt_context",
    "prompt_hits",
    "prompt_queries",
    "prompt_topics",
    "vectors_fit",
]

#: Distinct terms of one query the prompt hook sends (so admission's share stays reachable).
MAX_HOOK_QUERY_TERMS = 8
#: At most this many queries per prompt (8 x 8 = the search's 64-term bound).
MAX_HOOK_QUERIES = 9
#: At most this many ``working_note`` entries are injected into one prompt.
MAX_NOTES = 2
#: At most this many Topics of the repository's Scope are injected into one prompt.
MAX_TOPICS = 3
#: A remote embedding model is used by the prompt hook's ``auto`` mode only when its
#: request timeout is at most this many seconds (Claude Code's hook timeout is 10 s).
PROMPT_REMOTE_TIMEOUT_S = 3.0


#: Conversational words that say nothing about the repository (compared lower-case).
_FILLER_WORDS = """
please pls could can would should might may must shall want wanted need needs like just
also really actually basically thing things something anything everything nothing know
think help sure thanks thank hey hi hello okay ok maybe going get got let lets let's way
one now here some any all more most very much many yes no not don't doesn't can't i'm
it's that's there's we're you're thing stuff kind sort bit lot little quite rather
again still even only well yet already ever never always sometime sometimes today
"""
_FILLER = frozenset(_FILLER_WORDS.split())
_IDENTIFIER = re.compile(r"[_./:\\-]|\d|[a-z][A-Z]")
_STRIP = "\"'`.,;:!?()[]{}<>*"


def _word_priority(word: str, raw: str) -> int:
    if raw.startswith("`") or _IDENTIFIER.search(word):
        return 0  # an identifier, a path, a command
    return 1 if len(word) >= 7 else 2  # a long word is usually a rare one


def prompt_queries(prompt: str, analyzer: Any = None) -> list[str]:
    """The full-text queries the prompt hook searches for ``prompt`` (docs/hooks.md, "Long
    prompts still find their entries"): the prompt's informative words in prompt order, each
    query of at most :data:`MAX_HOOK_QUERY_TERMS` distinct terms under ``analyzer``
    (default: the default analyzer), at most :data:`MAX_HOOK_QUERIES` queries, so that
    admission's share of a query's terms (a quarter, at least two) stays reachable for a
    long prompt.

    Informative: a word with analyzer terms (no stopword), not a conversational filler
    word, not a single letter; a word whose terms all came earlier is dropped. When the
    words have at most :data:`MAX_HOOK_QUERY_TERMS` terms the prompt itself is the one
    query; otherwise the first query is the focus (identifiers and backticked words
    first, then long words, up to the term cap, in prompt order), then consecutive
    windows of the words in prompt order. ``[]`` when nothing is informative."""
    from powercontext.core import analyzer as analyzers
    from powercontext.core.query import clip_query

    an = analyzer or analyzers.get(analyzers.DEFAULT_VERSION)
    prompt = clip_query(prompt, an)
    seen: set[str] = set()
    words: list[tuple[str, frozenset[str], int]] = []  # (word, its terms, priority)
    for raw in prompt.split():
        word = raw.strip(_STRIP)
        if not word or word.lower() in _FILLER:
            continue
        if len(word) < 2 and not _IDENTIFIER.search(word):
            continue
        terms = frozenset(an.query_terms(word))
        if not terms - seen or len(terms) > MAX_HOOK_QUERY_TERMS:
            continue  # nothing new, or one word with more terms than a query holds
        seen |= terms
        words.append((word, terms, _word_priority(word, raw)))
    if not words:
        return []
    if len(seen) <= MAX_HOOK_QUERY_TERMS:
        return [prompt] if set(an.query_terms(prompt)) == seen else [
            " ".join(w for w, _, _ in words)]
    queries: list[str] = []
    focus: set[int] = set()
    held: set[str] = set()
    for i in sorted(range(len(words)), key=lambda i: (words[i][2], i)):
        if len(held | words[i][1]) <= MAX_HOOK_QUERY_TERMS:
            focus.add(i)
            held |= words[i][1]
    queries.append(" ".join(words[i][0] for i in sorted(focus)))
    window: list[str] = []
    held = set()
    for word, terms, _ in words:
        if window and len(held | terms) > MAX_HOOK_QUERY_TERMS:
            queries.append(" ".join(window))
            window, held = [], set()
        window.append(word)
        held |= terms
    if window:
        queries.append(" ".join(window))
    return list(dict.fromkeys(queries))[:MAX_HOOK_QUERIES]


#: Slot priority by kind: repository rules first, then other durable entries, then
#: session notes (an unknown kind is an ordinary durable entry).
_TIERS = {"constraint": 0, "preference": 0, "decision": 0, "working_note": 2}


def kind_tier(kind: str | None) -> int:
    """0 for constraint, preference and decision (the repository's rules), 2 for
    working_note, 1 for every other kind (fact, unknown kinds)."""
    return _TIERS.get(kind or "", 1)


def fill_slots(hits: Any, limit: int) -> list[Any]:
    """The at most ``limit`` hits injected into a prompt, from ``hits`` in rank order:
    by :func:`kind_tier`, rank order within a tier, and at most :data:`MAX_NOTES`
    working_notes."""
    notes = 0
    kept: list[Any] = []
    for h in hits:
        if h.kind == "working_note":
            if notes >= MAX_NOTES:
                continue
            notes += 1
        kept.append(h)
    ranked = sorted(range(len(kept)), key=lambda i: (kind_tier(kept[i].kind), i))
    return [kept[i] for i in ranked[:limit]]



async def _key_memory(c: Any, key: str) -> str | None:
    """The Memory the database's business ``key`` names, or None. A SQLite database that
    does not exist yet is not created (and not opened); the service is closed when None
    is returned."""
    from powercontext.runtime import sqlite_path

    path = sqlite_path(c.db_url)
    if path is not None and not path.exists():
        return None
    svc = c.service()
    try:
        memory_id = await svc.memory_key(key)
    except BaseException:
        await svc.close()
        raise
    if memory_id is None:
        await svc.close()
    return memory_id


async def prompt_context(c: Any, payload: dict[str, Any], limit: int, mode: str, *,
                         topics: bool = True) -> dict[str, Any] | None:
    """The ``UserPromptSubmit`` answer: the repository Memory's :func:`prompt_hits`,
    then (``topics``) :func:`prompt_topics` of its Scope, rendered by
    :func:`~powercontext.adapters.cli.hook_fence.render_context`; None (no output)
    when neither has a hit."""
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    cwd = event_cwd(payload)
    root = repo_root(cwd)
    key = repo_key(root)
    memory_id = await _key_memory(c, key)
    hits: list[Any] = []
    if memory_id is not None:
        svc = c.service()
        try:
            hits = await prompt_hits(svc, memory_id, prompt, limit, mode)
        finally:
            await svc.close()
    found = await prompt_topics(c, key, prompt, min(limit, MAX_TOPICS), mode) if topics \
        else []
    if not hits and not found:
        return None
    return {"hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit",
        "additionalContext": render_context(hits, repo=str(root), topics=found),
    }}


async def prompt_topics(c: Any, scope_id: str, prompt: str, limit: int, mode: str
                        ) -> list[Any]:
    """The Topic side of the prompt hook: at most ``limit`` Topic items of the Scope
    ``scope_id`` (``repo:<path>``) for the prompt's first (focus) query of
    :func:`prompt_queries`, through :func:`powercontext.context_prepare.prepare_context`
    (Topic side only: neutral text, never the Detail). Nothing when the SQLite database
    does not exist (it is not created), the prompt has no informative word, or the
    deployment is hybrid and the embedding model does not :func:`vectors_fit` (``fts``
    mode never embeds). Never raises: a failure is logged to ``hooks.log`` and the
    Memory hits are injected without Topics."""
    from powercontext.runtime import sqlite_path

    path = sqlite_path(c.db_url)
    if path is not None and not path.exists():
        return []
    try:
        from powercontext.context_prepare import TOPIC_LIMIT, prepare_context
        from powercontext.runtime import open_topic_service

        registry = c.registry() if hasattr(c, "registry") else None
        tsvc = open_topic_service(c.db_url, embedding=getattr(c, "embedding", None),
                                  analyzer=getattr(c, "analyzer", None), registry=registry)
        try:
            caps = await tsvc.capabilities()
            if "topic_vector" in caps.channels and (
                    mode == "fts" or (mode == "auto" and not vectors_fit(tsvc.embedding_model))):
                return []
            queries = prompt_queries(prompt, await tsvc.backend.analyzer())
            if not queries:
                return []
            prepared = await prepare_context(None, tsvc, scope_id, queries[0])
        finally:
            await tsvc.close()
        return [i for i in prepared.items if i.family == "topic-memory"][:min(limit,
                                                                              TOPIC_LIMIT)]
    except Exception as exc:  # Topics are extra: the Memory hits still go in
        from powercontext.adapters.cli.hook import _log_failure

        _log_failure("claude-code (Topic hits)", exc)
        return []


def vectors_fit(model: Any) -> bool:
    """Whether the prompt hook's ``auto`` mode may embed the prompt within its time
    budget: the deterministic embedder, or a remote model whose request timeout is at
    most :data:`PROMPT_REMOTE_TIMEOUT_S`. A local model (torch) or an unknown plugin
    model never is: loading torch alone takes longer than the hook's timeout."""
    if model is None:
        return False
    from powercontext.adapters.embedding import DeterministicEmbedding, OpenAIEmbedding

    if isinstance(model, DeterministicEmbedding):
        return True
    if isinstance(model, OpenAIEmbedding):
        return float(getattr(model, "_timeout", 30.0)) <= PROMPT_REMOTE_TIMEOUT_S
    return False


async def prompt_hits(svc: Any, memory_id: str, prompt: str, limit: int, mode: str
                       ) -> list[Any]:
    """The hits injected for ``prompt``: each of :func:`prompt_queries` searched on its
    own (full text), plus, when vectors are used, one vector search of the prompt,
    fused by RRF (k = 60, the search's tie-break), then :func:`fill_slots`. ``mode``
    ``auto`` uses vectors only when :func:`vectors_fit`; ``fts`` never does; ``vector``
    and ``hybrid`` always do (and may load the model)."""
    from powercontext.core.errors import CapabilityNotSupportedError
    from powercontext.core.models import CurrentHead
    from powercontext.core.query import clip_query
    from powercontext.core.rrf import RankKey, fuse

    analyzer = await svc.backend.analyzer()  # the database's (opens it)
    queries = prompt_queries(prompt, analyzer)
    use_vectors = mode in ("vector", "hybrid") or (
        mode == "auto" and vectors_fit(svc.embedding_model))
    depth = min(50, max(limit * 4, 20))  # room for the slots' kind priority
    heads = [CurrentHead(memory_id)]
    channels: dict[str, list[RankKey]] = {}
    by_key: dict[tuple[str, str, str], Any] = {}  # RankKey is a tuple

    def add(name: str, hits: Any) -> None:
        keys = []
        for h in hits:
            key = RankKey(h.memory_ref.artifact_id, h.entry_id, h.entry_version_id)
            by_key.setdefault(key, h)
            keys.append(key)
        channels[name] = keys

    if mode != "vector":
        for i, q in enumerate(queries):
            # the head is read inside each search's transaction: a concurrent write is no race
            add(f"fts{i}", (await svc.search(q, heads, limit=depth, mode="fts")).hits)
    if use_vectors:
        text = clip_query(prompt)
        try:
            if text.strip():
                add("vector", (await svc.search(text, heads, limit=depth, mode="vector")).hits)
        except CapabilityNotSupportedError:
            if mode != "auto":
                raise  # asked for explicitly: the hook says why (stderr, log)
    if not channels:
        return []
    if len(channels) == 1:  # one search: its own order
        ranked = [by_key[k] for k in next(iter(channels.values()))]
    else:
        ranked = [by_key[f.key] for f in fuse(channels)]
    return fill_slots(ranked, limit)

