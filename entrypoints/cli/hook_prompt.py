"""The prompt hook's recall (``docs/hooks.md``, "Before a prompt"): what a prompt gets
from the repository Memory and its Scope's Topics, and why.

1. The prompt's profile (:func:`powercontext.core.recall.profile_prompt`): the
   development-task intents it asks for and its specific terms. A prompt with neither
   is answered with nothing, without a search (an honest empty).
2. Candidates: full-text searches of the prompt's own words (:func:`prompt_queries`)
   and of the intents' vocabulary (:func:`intent_queries`: "lint" also searches
   ``eslint``, ``ruff``, ``clippy``...; at most :data:`MAX_INTENT_SEARCHES`), plus one
   vector search when that is cheap, fused by RRF (:func:`prompt_hits`).
3. The bar and the slots (:func:`powercontext.core.recall.judge`,
   :func:`~powercontext.core.recall.order_slots`): only a candidate that answers an
   intent of the prompt or matches its specific terms strongly is injected; rules
   before notes, a correction above what it corrects, at most :data:`MAX_NOTES` notes,
   an older note left out once a newer one names its files or commands.
4. Topics of the repository's Scope pass the same bar and are never raw file dumps
   (:func:`prompt_topics`).

Every injected item has a receipt (:func:`receipt`): the channel that found it, its rank
there, its rank in the prompt, the intents and terms it matched; ``--json`` prints them
and the hooks' log (:mod:`~powercontext.entrypoints.cli.hook_log`) keeps them.
:func:`prompt_context` is the whole ``UserPromptSubmit`` answer (None when nothing is
injected).
"""

from __future__ import annotations

import re
from typing import Any

from powercontext.entrypoints.cli.hook_fence import render_context
from powercontext.entrypoints.cli.hook_payload import event_cwd, repo_key, repo_root

__all__ = [
    "CORRECTION_MARKERS",
    "MAX_HOOK_QUERIES",
    "MAX_HOOK_QUERY_TERMS",
    "MAX_INTENT_SEARCHES",
    "MAX_NOTES",
    "MAX_TOPICS",
    "PROMPT_REMOTE_TIMEOUT_S",
    "Injected",
    "intent_queries",
    "prompt_context",
    "prompt_hits",
    "prompt_queries",
    "prompt_topics",
    "receipt",
    "vectors_fit",
]

#: Distinct terms of one query the prompt hook sends (so admission's share stays reachable).
MAX_HOOK_QUERY_TERMS = 8
#: At most this many queries of the prompt's own words (8 x 8 = the search's 64-term bound).
MAX_HOOK_QUERIES = 9
#: At most this many full-text searches of the vocabulary of a prompt's intents (two
#: terms a query, so one matched term is admitted), after those of its own words.
MAX_INTENT_SEARCHES = 8
#: At most this many Topics of the repository's Scope are injected into one prompt.
MAX_TOPICS = 3
#: At most this many ``working_note`` entries are injected into one prompt: the value of
#: :data:`powercontext.core.recall.MAX_NOTES` (a test holds them equal), written here so
#: that a Stop event never imports the recall modules.
MAX_NOTES = 2
#: A remote embedding model is used by the prompt hook's ``auto`` mode only when its
#: request timeout is at most this many seconds (Claude Code's hook timeout is 10 s).
PROMPT_REMOTE_TIMEOUT_S = 3.0

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
    from powercontext.core.recall import FILLER_WORDS

    an = analyzer or analyzers.get(analyzers.DEFAULT_VERSION)
    prompt = clip_query(prompt, an)
    seen: set[str] = set()
    words: list[tuple[str, frozenset[str], int]] = []  # (word, its terms, priority)
    for raw in prompt.split():
        word = raw.strip(_STRIP)
        if not word or word.lower() in FILLER_WORDS:
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


def intent_queries(intents: tuple[str, ...], analyzer: Any = None,
                   limit: int = MAX_INTENT_SEARCHES) -> list[tuple[str, str]]:
    """``(channel, query)`` pairs searching the vocabulary of ``intents``
    (:func:`powercontext.core.intents.search_words`, each intent's words under its own
    channel ``intent:<name>``), each query at most two distinct terms under
    ``analyzer`` (a full-text query of two terms admits an entry matching one), no term
    searched twice. The intents take turns: each one's first query, then the first
    query of each intent they are related to and the prompt does not ask for itself
    (a pull request's ``changelog``, an API change's ``docs``), then each asked
    intent's second, third, ... query; at most ``limit`` queries."""
    from powercontext.core import analyzer as analyzers
    from powercontext.core.intents import intent, search_words

    an = analyzer or analyzers.get(analyzers.DEFAULT_VERSION)
    seen: set[str] = set()

    def queries_of(name: str, most: int = limit) -> list[tuple[str, str]]:
        queries: list[tuple[str, str]] = []
        words: list[str] = []
        held: set[str] = set()
        for word in search_words((name,)):
            terms = set(an.query_terms(word)) - seen
            if not terms or len(terms) > 2:
                continue
            if words and len(held | terms) > 2:
                queries.append((f"intent:{name}", " ".join(words)))
                words, held = [], set()
                if len(queries) >= most:
                    return queries
            words.append(word)
            held |= terms
            seen.update(terms)
        if words:
            queries.append((f"intent:{name}", " ".join(words)))
        return queries

    per_intent = [queries_of(name) for name in intents]
    related = dict.fromkeys(r for name in intents for r in intent(name).related
                            if r not in intents)
    out = [q[0] for q in per_intent if q]
    for name in related:
        out.extend(queries_of(name, 1))
    for turn in range(1, max((len(q) for q in per_intent), default=0)):
        out.extend(q[turn] for q in per_intent if turn < len(q))
    return out[:limit]


class Injected:
    """One item the prompt gets: the search ``hit`` (a MemoryHit, or a Topic
    ContextItem), its :class:`~powercontext.core.recall.Verdict`, and the ``channel``
    that ranked it best with its ``channel_rank`` there (1-based)."""

    __slots__ = ("channel", "channel_rank", "hit", "verdict")

    def __init__(self, hit: Any, verdict: Any, channel: str, channel_rank: int) -> None:
        self.hit, self.verdict = hit, verdict
        self.channel, self.channel_rank = channel, channel_rank

    # order_slots reads these three
    @property
    def kind(self) -> str | None:
        return getattr(self.hit, "kind", None)

    @property
    def text(self) -> str:
        return str(self.hit.text)

    @property
    def entry_version_id(self) -> str:
        return str(getattr(self.hit, "entry_version_id", ""))


def receipt(item: Injected, rank: int) -> dict[str, Any]:
    """The receipt of an injected item: ``{"rank"`` (1-based, in the prompt), ``"kind"``,
    ``"entry_id"`` (or ``"topic"``: ``ID@REV``), ``"channel"`` (``prompt``, ``intent:<name>``,
    ``vector`` or ``topic``), ``"channel_rank"``, ``"intents"`` (those of the prompt it
    answers), ``"matched"`` (the intent's tools or words and the prompt's terms found in
    it), ``"score"``, and when they apply ``"via"`` (the related intents through which it
    answers: ``["changelog"]`` for a pull request) and ``"collapsed"`` (the entry ids
    left out because they gave the same answer: the same command or rule)``}``."""
    from powercontext.core.recall import receipt_terms

    hit = item.hit
    out: dict[str, Any] = {"rank": rank, "kind": getattr(hit, "kind", None) or "topic"}
    if getattr(hit, "entry_id", None):
        out["entry_id"] = hit.entry_id
    else:
        out["topic"] = f"{hit.ref.artifact_id}@{hit.ref.revision}"
    out.update(channel=item.channel, channel_rank=item.channel_rank,
               intents=[name for name, _ in item.verdict.intents],
               matched=receipt_terms(item.verdict, _item_text(hit)),
               score=item.verdict.score)
    if item.verdict.facets:
        out["via"] = list(item.verdict.facets)
    if item.verdict.collapsed:
        out["collapsed"] = list(item.verdict.collapsed)
    return out


def _item_text(hit: Any) -> str:
    if getattr(hit, "entry_id", None):
        return str(hit.text)
    return f"{getattr(hit, 'title', '')}: {getattr(hit, 'summary', '')}"


async def _key_memory(c: Any, key: str) -> str | None:
    """The Memory the database's business ``key`` names, or None. A SQLite database that
    does not exist yet is not created (and not opened); the service is closed when None
    is returned."""
    from powercontext.database_path import sqlite_path

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
                         topics: bool = True, receipts: bool = False,
                         agent: str = "claude-code", event: str = "UserPromptSubmit"
                         ) -> dict[str, Any] | None:
    """The ``UserPromptSubmit`` answer: the repository Memory's :func:`prompt_hits`,
    then (``topics``) :func:`prompt_topics` of its Scope, rendered by
    :func:`~powercontext.entrypoints.cli.hook_fence.render_context`; None (no output)
    when nothing passes the bar. The receipts of what was injected are logged
    (:func:`~powercontext.entrypoints.cli.hook_log.log_receipts`) and, with ``receipts``
    (``--json``), returned beside ``hookSpecificOutput`` as ``"receipts"``. ``agent``
    names the host in the log and ``event`` the answer's ``hookEventName`` (Gemini CLI
    reads the same shape for ``BeforeAgent``)."""
    from powercontext.core import analyzer as analyzers
    from powercontext.core.recall import profile_prompt

    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    cwd = event_cwd(payload)
    root = repo_root(cwd)
    key = repo_key(root)
    memory_id = await _key_memory(c, key)
    hits: list[Injected] = []
    scoped = True  # whether the Scope may hold Topics
    analyzer: Any = None
    if memory_id is not None:
        svc = c.service()
        try:
            analyzer = await svc.backend.analyzer()  # the database's (opens it)
            hits = await prompt_hits(svc, memory_id, prompt, limit, mode,
                                     own_names=(root.name.lower(),))
            if topics:
                scoped = await _scope_may_hold_topics(svc, key)
        finally:
            await svc.close()
    found: list[Injected] = []
    if topics and scoped:
        profile = profile_prompt(prompt, analyzer or analyzers.get(analyzers.DEFAULT_VERSION))
        if not profile.empty:
            found = await prompt_topics(c, key, prompt, min(limit, MAX_TOPICS), mode)
    if not hits and not found:
        return None
    ranked = [receipt(item, i) for i, item in enumerate([*hits, *found], 1)]
    from powercontext.entrypoints.cli.hook_log import log_receipts

    log_receipts(agent, str(root), ranked)
    out: dict[str, Any] = {"hookSpecificOutput": {
        "hookEventName": event,
        "additionalContext": render_context([i.hit for i in hits], repo=str(root),
                                            topics=[i.hit for i in found], scope=key),
    }}
    if receipts:
        out["receipts"] = ranked
    return out


async def _scope_may_hold_topics(svc: Any, scope_id: str) -> bool:
    """Whether the Scope ``scope_id`` may hold a Topic: its Topic Cursor is past 0 (a
    Window publishes with its Cursor: Topic Memory RFC, "Source, Window, Cursor, and
    Pending"); else the Topic side is not opened. True when the backend cannot tell."""
    cursor = getattr(svc.backend, "processing_cursor", None)
    if not callable(cursor):
        return True
    from powercontext.core.topic.processing import BINDING

    try:
        return bool(await cursor(BINDING, scope_id))
    except Exception:  # an id the Scope journal refuses: the Topic side reports it
        return True


async def prompt_topics(c: Any, scope_id: str, prompt: str, limit: int, mode: str
                        ) -> list[Injected]:
    """The Topic side of the prompt hook: at most ``limit`` Topic items of the Scope
    ``scope_id`` (``repo:<path>``) for the prompt's first (focus) query of
    :func:`prompt_queries`, through :func:`powercontext.context_prepare.prepare_context`
    (Topic side only: neutral text, never the Detail), each passing the same bar as an
    entry (:func:`powercontext.core.recall.judge` on its title and summary) and not a
    raw file dump (:func:`powercontext.core.recall.raw_dump`). Nothing when the SQLite
    database does not exist (it is not created), the prompt has no informative word, or
    the deployment is hybrid and the embedding model does not :func:`vectors_fit`
    (``fts`` mode never embeds). Never raises: a failure is logged to ``hooks.log`` and
    the Memory hits are injected without Topics."""
    from powercontext.database_path import sqlite_path

    path = sqlite_path(c.db_url)
    if path is not None and not path.exists():
        return []
    try:
        from powercontext.context_prepare import TOPIC_LIMIT, prepare_context
        from powercontext.core.recall import judge, order_slots, profile_prompt, raw_dump
        from powercontext.runtime import open_topic_service

        registry = c.registry() if hasattr(c, "registry") else None
        tsvc = open_topic_service(c.db_url, embedding=getattr(c, "embedding", None),
                                  analyzer=getattr(c, "analyzer", None), registry=registry)
        try:
            caps = await tsvc.capabilities()
            if "topic_vector" in caps.channels and (
                    mode == "fts" or (mode == "auto" and not vectors_fit(tsvc.embedding_model))):
                return []
            analyzer = await tsvc.backend.analyzer()
            queries = prompt_queries(prompt, analyzer)
            if not queries:
                return []
            prepared = await prepare_context(None, tsvc, scope_id, queries[0])
        finally:
            await tsvc.close()
        profile = profile_prompt(prompt, analyzer)
        items = [i for i in prepared.items if i.family == "topic-memory"]
        passing = []
        for rank, item in enumerate(items, 1):
            text = f"{item.title}: {item.summary}"
            verdict = judge(profile, text, analyzer)
            if verdict is not None and not raw_dump(item.summary):
                passing.append((Injected(item, verdict, "topic", rank), verdict))
        cap = min(limit, TOPIC_LIMIT)
        chosen = order_slots(passing, cap, intents=profile.intents)[:cap]
        return [item for item, _ in chosen]
    except Exception as exc:  # Topics are extra: the Memory hits still go in
        from powercontext.entrypoints.cli.hook_log import log_failure

        log_failure("claude-code (Topic hits)", exc)
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


async def prompt_hits(svc: Any, memory_id: str, prompt: str, limit: int, mode: str,
                      own_names: tuple[str, ...] = ()) -> list[Injected]:
    """The entries injected for ``prompt`` (module docstring): the full-text searches of
    :func:`prompt_queries` (channel ``prompt``) and :func:`intent_queries`, plus, when
    vectors are used, one vector search of the
    prompt, fused by RRF (k = 60, the search's tie-break); then each candidate is held
    to the bar and the slots are ordered (:func:`powercontext.core.recall.order_slots`,
    a correction above what it corrects). ``mode`` ``auto`` uses vectors only when
    :func:`vectors_fit`; ``fts`` never does; ``vector`` and ``hybrid`` always do (and
    may load the model). Nothing is searched for a prompt with neither an intent nor a
    specific term. ``own_names``: the repository's own names (its folder's name), which
    name the project, not a tool, outside a code span."""
    from powercontext.core.errors import CapabilityNotSupportedError
    from powercontext.core.models import CurrentHead
    from powercontext.core.query import clip_query
    from powercontext.core.recall import judge, order_slots, profile_prompt
    from powercontext.core.rrf import RankKey, fuse

    analyzer = await svc.backend.analyzer()  # the database's (opens it)
    profile = profile_prompt(prompt, analyzer)
    if profile.empty:
        return []
    searches = [("prompt", q) for q in prompt_queries(prompt, analyzer)]
    searches += intent_queries(profile.intents, analyzer)
    use_vectors = mode in ("vector", "hybrid") or (
        mode == "auto" and vectors_fit(svc.embedding_model))
    depth = min(50, max(limit * 4, 20))
    heads = [CurrentHead(memory_id)]
    channels: dict[str, list[RankKey]] = {}
    by_key: dict[tuple[str, str, str], Any] = {}  # RankKey is a tuple
    best: dict[tuple[str, str, str], tuple[int, str]] = {}

    def add(name: str, label: str, hits: Any) -> None:
        keys = []
        for rank, h in enumerate(hits, 1):
            key = RankKey(h.memory_ref.artifact_id, h.entry_id, h.entry_version_id)
            by_key.setdefault(key, h)
            if key not in best or rank < best[key][0]:
                best[key] = (rank, label)
            keys.append(key)
        channels[name] = keys

    if mode != "vector":
        for i, (label, q) in enumerate(searches):
            # the head is read inside each search's transaction: a concurrent write is no race
            add(f"{label}#{i}", label, (await svc.search(q, heads, limit=depth, mode="fts")).hits)
    if use_vectors:
        text = clip_query(prompt)
        try:
            if text.strip():
                add("vector", "vector",
                    (await svc.search(text, heads, limit=depth, mode="vector")).hits)
        except CapabilityNotSupportedError:
            if mode != "auto":
                raise  # asked for explicitly: the hook says why (stderr, log)
    if not channels:
        return []
    # one search: its own order; more: fused
    order = next(iter(channels.values())) if len(channels) == 1 else [
        f.key for f in fuse(channels)]
    passing = []
    for key in order:
        hit = by_key[key]
        verdict = judge(profile, hit.text, analyzer, own_names)
        if verdict is not None:
            rank, label = best[key]
            passing.append((Injected(hit, verdict, label, rank), verdict))
    chosen = order_slots(passing, limit, corrects=_corrects, intents=profile.intents,
                         ident=_entry_id)
    return [Injected(item.hit, verdict, item.channel, item.channel_rank)
            for item, verdict in chosen]


def _entry_id(item: Injected) -> str:
    return str(getattr(item.hit, "entry_id", "") or item.entry_version_id)


#: Words every correction :func:`powercontext.core.corrections.replaced` reads contains
#: (lower-cased); a text without any is no correction, and the module is not loaded.
CORRECTION_MARKERS = ("instead of", "rather than", "in place of", "no longer", "stop using",
                      "stop running", "stop calling", "switched from", "switch from",
                      "switching from", "switch away", "switched away", "replac", ", not ",
                      "any more", "anymore")


def _corrects(new: str, old: str) -> bool:
    """:func:`powercontext.core.corrections.corrects`, imported only for a text that
    may be a correction (:data:`CORRECTION_MARKERS`)."""
    low = " ".join(new.lower().replace(",", ", ").split())
    if not any(m in low for m in CORRECTION_MARKERS):
        return False
    from powercontext.core.corrections import corrects

    return corrects(new, old)
