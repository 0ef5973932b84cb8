"""LoCoMo at the Topic level: processing and retrieval scored (a benchmark, never a gate).

``python -m bench topic-locomo [--data FILE] [--model deterministic|openai|anthropic]
[--quick] [--out DIR]``

Method. Each LoCoMo conversation is one Scope (``locomo:<sample_id>``) of a fresh SQLite
database (FTS-only Topic retrieval, a tmp dir per run). Its Sources are written with
:meth:`TopicMemoryService.add_sources` (the backend's ``put_scoped_sources``) in journal
order, two granularities:

* **session** Sources (every conversation): one Source per session (kind
  ``chat_session``, id ``locomo:<sample>:S<k>``), its first line
  ``"<A> and <B>, session <k>, <date>"``, then one line per turn
  (:func:`bench.locomo.entry_text`, the shared-image caption included);
* **turn** Sources (the first conversation only): one Source per turn (kind
  ``chat_turn``, id ``locomo:<sample>:<dia_id>``), ``"[<date>] <speaker>: <text>"``.

Every (granularity, Window limit) pair with Window limits 1, 10 and 32
(``runtime.topic_memory_source_window_limit``) gets its own database and one
``TopicProcessor(...).process(scope)`` with the configured generation model, built
through the registry exactly as ``topic process`` builds it
(:func:`powercontext.topic_provider.topic_generation_model`; ``deterministic`` by default;
``openai`` / ``anthropic`` need ``inference.generation_model`` and a key in the
environment: what is missing is printed and the exit status is 2). The model is wrapped
to count calls and sum ``StageResponse.usage``.

Scoring (judge-free; the evidence sessions of a question are the sessions of its
evidence dia_ids, :func:`bench.locomo.parse_evidence`):

* **lineage coverage**: |evidence sessions in the Source lineage of the current Heads of
  the Scope| / |evidence sessions|, the lineage of a Revision being its direct SourceRefs
  and those of every Revision it was based on (``direct_coverage``: the Heads' direct
  SourceRefs only);
* **recall@k** (k = 1, 3, 5, 8): ``topic search`` with the question (limit 8); the
  evidence sessions in the lineage (as above) of the top-k hits' exact Revisions;
* **recall at equal returned bytes** (2k, 4k, 8k): hits taken in rank order while the
  UTF-8 bytes of what a hit returns (Topic: title + summary + snippet; Memory: the entry
  text) stay within the budget (the first hit over it ends the list), limit 20 Topics
  (the search's maximum) and 256 Memory hits; compared against (a) Memory turn-level
  search (:func:`bench.locomo.index`: every turn one entry, FTS, the sessions of the
  returned turns) and (b) LoCoMo's own session summaries published as Topics (one per
  session through ``service.publish``, lineage = that session's Source), searched the
  same way;
* Topics per Scope, Revisions per Topic (mean Head revision), the UPDATE / CREATE ratio
  of the published Windows, and per Source the reserved requests
  (``WindowOutcome.reserved_requests``) and tokens (requests x the context window, the
  reservation rule of ``TopicProcessor._call``) and the used requests and tokens (the
  provider's usage).

Per category with the official ids (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial) and overall. Outputs: ``<out>/topic-locomo-<date>[-quick]-<model>.json``,
the same stem ``.md`` (the tables) and ``.png``, and the tables on stdout (judge-free
metrics first).

``--quick``: the first conversation, Windows 1 and 10, session Sources, plus the turn
run on the first :data:`QUICK_TURN_SESSIONS` sessions (Window 10), questions whose
evidence lies in them.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.locomo import (
    CATEGORIES,
    DEFAULT_DATA,
    DEFAULT_OUT,
    Conversation,
    Question,
    entry_text,
    index,
    load,
)
from bench.plotting import NO_PLOT, pyplot

__all__ = ["BYTE_BUDGETS", "KS", "WINDOWS", "main", "run"]

KS = (1, 3, 5, 8)
BYTE_BUDGETS = (2048, 4096, 8192)
WINDOWS = (1, 10, 32)
QUICK_WINDOWS = (1, 10)
#: Sessions of the first conversation whose turns are Sources in the quick turn run.
QUICK_TURN_SESSIONS = 3
TOPIC_LIMIT = 20  # TopicMemoryService.search's maximum
MEMORY_LIMIT = 256
SOURCE_BATCH = 100
MODELS = ("deterministic", "openai", "anthropic")
SUMMARY_SYSTEM = "session-summaries"
MEMORY_SYSTEM = "memory-turns"

_DIA = re.compile(r"^D(\d+):\d+$")


def session_of(dia_id: str) -> int:
    """``"D3:12"`` -> 3."""
    m = _DIA.match(dia_id)
    if m is None:
        raise ValueError(f"not a dia_id: {dia_id!r}")
    return int(m.group(1))


def evidence_sessions(q: Question) -> frozenset[int]:
    return frozenset(session_of(d) for d in q.evidence)


# ---------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Session:
    index: int
    date: str
    text: str  # the Source content
    turns: tuple[Any, ...]  # bench.locomo.Turn


def sessions(conv: Conversation, speakers: tuple[str, str]) -> list[Session]:
    """The conversation's sessions in order, each with its Source text."""
    by: dict[int, list[Any]] = {}
    for t in conv.turns:
        by.setdefault(session_of(t.dia_id), []).append(t)
    out = []
    for k in sorted(by):
        turns = by[k]
        date = turns[0].date
        head = f"{speakers[0]} and {speakers[1]}, session {k}" + (f", {date}" if date else "")
        text = "\n".join([head, *(entry_text(t) for t in turns)])
        out.append(Session(k, date, text, tuple(turns)))
    return out


def _raw(path: Path) -> dict[str, dict[str, Any]]:
    """sample_id -> the raw sample (speakers, session summaries)."""
    data = json.loads(Path(path).read_text("utf-8"))
    return {str(s.get("sample_id", n)): s for n, s in enumerate(data)}


def speakers_of(sample: dict[str, Any]) -> tuple[str, str]:
    c = sample.get("conversation", {})
    return str(c.get("speaker_a", "A")), str(c.get("speaker_b", "B"))


def session_summaries(sample: dict[str, Any]) -> dict[int, str]:
    """session index -> LoCoMo's own summary of it (``session_summary``)."""
    out = {}
    for key, text in (sample.get("session_summary") or {}).items():
        m = re.match(r"^session_(\d+)_summary$", key)
        if m and str(text).strip():
            out[int(m.group(1))] = str(text).strip()
    return out


def scope_of(conv: Conversation) -> str:
    return f"locomo:{conv.sample_id}"


def session_source_id(conv: Conversation, k: int) -> str:
    return f"locomo:{conv.sample_id}:S{k}"


def session_sources(conv: Conversation, sess: Sequence[Session]) -> tuple[list[Any], dict]:
    """(Sources, source_id -> session index)."""
    from powercontext.core.canonical import make_source

    srcs, where = [], {}
    for s in sess:
        sid = session_source_id(conv, s.index)
        srcs.append(make_source(sid, "chat_session", s.text, None,
                                {"session": str(s.index), "date": s.date}))
        where[sid] = s.index
    return srcs, where


def turn_sources(conv: Conversation, turns: Iterable[Any]) -> tuple[list[Any], dict]:
    from powercontext.core.canonical import make_source

    srcs, where, seen = [], {}, set()
    for t in turns:
        sid = f"locomo:{conv.sample_id}:{t.dia_id}"
        if sid in seen:
            continue
        seen.add(sid)
        srcs.append(make_source(sid, "chat_turn", entry_text(t, session_date=True)))
        where[sid] = session_of(t.dia_id)
    return srcs, where


# ---------------------------------------------------------------------------- model


class CountingModel:
    """Wraps a TopicGenerationModel: counts the calls per stage and sums the provider
    requests and the reported usage (``StageResponse.usage``; a missing usage is counted
    in ``usage_missing``)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.reset()

    def reset(self) -> None:
        self.calls: dict[str, int] = {}
        self.requests = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.usage_missing = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    async def generate(self, request: Any) -> Any:
        response = await self.model.generate(request)
        self.calls[request.stage] = self.calls.get(request.stage, 0) + 1
        self.requests += int(getattr(response, "requests", 1) or 0)
        usage = getattr(response, "usage", None)
        if usage is None or usage.input_tokens is None:
            self.usage_missing += 1
        else:
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens or 0
        return response


class MissingConfiguration(Exception):
    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


def build_config(name: str, env: dict[str, str] | None = None) -> Any:
    """The effective configuration of provider ``name`` from the environment's
    ``POWERCONTEXT_INFERENCE_*`` keys and the provider's API key variable, no file."""
    from powercontext import configuration

    base = os.environ if env is None else env
    keep = {k: v for k, v in base.items()
            if k.startswith("POWERCONTEXT_INFERENCE_")
            or k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    keep["POWERCONTEXT_INFERENCE_GENERATION_PROVIDER"] = name
    with tempfile.TemporaryDirectory(prefix="topic-locomo-home-") as home:
        keep["POWERCONTEXT_HOME"] = home  # never the user's config.toml
        return configuration.load_config(None, env=keep), keep


def build_model(name: str, env: dict[str, str] | None = None) -> tuple[Any, Any]:
    """(the TopicGenerationModel built through the registry as ``topic process`` does,
    the ProcessingSettings). MissingConfiguration listing every problem (a key, the
    model name) when the provider cannot run."""
    from powercontext import topic_provider
    from powercontext.core.errors import TopicProcessingUnavailableError
    from powercontext.plugins.registry import Registry

    if name not in MODELS:
        raise MissingConfiguration([f"--model: {name!r} is not one of {', '.join(MODELS)}"])
    config, keep = build_config(name, env)
    registry = Registry()
    problems = topic_provider.generation_problems(config, registry, keep)
    if problems:
        raise MissingConfiguration(problems)
    try:
        model = topic_provider.topic_generation_model(config, registry, keep)
    except TopicProcessingUnavailableError as exc:
        raise MissingConfiguration(exc.problems or (str(exc),)) from None
    return model, config.processing_settings()


# ---------------------------------------------------------------------------- scoring


def recall(evidence: frozenset[int], got: Iterable[int]) -> float:
    return len(evidence & set(got)) / len(evidence)


def prefix_within(sizes: Sequence[int], budget: int) -> int:
    """How many leading hits fit ``budget`` bytes together (the first hit over the
    remaining budget ends the list)."""
    used = n = 0
    for size in sizes:
        if used + size > budget:
            break
        used += size
        n += 1
    return n


def topic_bytes(hit: Any) -> int:
    return len((hit.title + hit.summary + (hit.snippet or "")).encode("utf-8"))


@dataclass
class Scores:
    """One system's per-question scores: (category, {metric: value})."""

    rows: list[tuple[int, dict[str, float]]] = field(default_factory=list)

    def add(self, category: int, values: dict[str, float]) -> None:
        self.rows.append((category, values))

    def summary(self) -> dict[str, Any]:
        def mean(sel: list[dict[str, float]]) -> dict[str, float | int]:
            keys = list(dict.fromkeys(k for r in sel for k in r))
            out: dict[str, float | int] = {
                k: round(sum(r[k] for r in sel) / len(sel), 4) for k in keys}
            out["n"] = len(sel)
            return out

        return {
            "overall": mean([r for _, r in self.rows]),
            "overall_1_4": mean([r for c, r in self.rows if c != 5]),
            "by_category": {
                f"{c} {CATEGORIES.get(c, '?')}": mean([r for cc, r in self.rows if cc == c])
                for c in sorted({c for c, _ in self.rows})
            },
        }


class TopicLineage:
    """Search a Scope's Topics and map hits to the sessions of their lineage."""

    def __init__(self, service: Any, scope: str, where: dict[str, int]) -> None:
        self.service, self.scope, self.where = service, scope, where
        self._cache: dict[Any, frozenset[int]] = {}

    async def sessions(self, ref: Any) -> frozenset[int]:
        """The sessions of ``ref``'s Source lineage: the direct SourceRefs of that
        Revision and of every Revision it was based on (Topic Memory RFC, "Topic
        evidence and Source lineage": an UPDATE stores its own evidence and the exact
        old ref)."""
        if ref not in self._cache:
            rev = await self.service.backend.get(self.scope, ref)
            own = {self.where[s.source_id] for s in rev.sources if s.source_id in self.where}
            if rev.based_on is not None:
                own |= await self.sessions(rev.based_on)
            self._cache[ref] = frozenset(own)
        return self._cache[ref]

    async def direct(self, ref: Any) -> frozenset[int]:
        """The sessions of ``ref``'s direct SourceRefs only."""
        rev = await self.service.backend.get(self.scope, ref)
        return frozenset(self.where[s.source_id] for s in rev.sources
                         if s.source_id in self.where)

    async def search(self, question: str, limit: int) -> list[Any]:
        from powercontext.core.errors import InvalidInputError

        try:
            return list((await self.service.search(self.scope, question, limit)).hits)
        except InvalidInputError:  # a question with no terms under the analyzer
            return []

    async def score(self, q: Question) -> dict[str, float]:
        ev = evidence_sessions(q)
        hits = await self.search(q.question, TOPIC_LIMIT)
        lineage = [await self.sessions(h.ref) for h in hits]
        out = {}
        for k in KS:
            out[f"r@{k}"] = recall(ev, set().union(*lineage[:k]))
        sizes = [topic_bytes(h) for h in hits]
        out.update(_byte_scores(ev, lineage, sizes))
        return out


async def memory_scores(ix: Any, q: Question) -> dict[str, float]:
    """Memory turn-level FTS search: the sessions of the returned turns."""
    ev = evidence_sessions(q)
    result = await ix.service.search(q.question, [ix.ref], limit=MEMORY_LIMIT, mode="fts")
    ranked = [frozenset(session_of(d) for d in ix.dias[h.entry_id]) for h in result.hits]
    out = {f"r@{k}": recall(ev, set().union(*ranked[:k])) for k in KS}
    sizes = [len(h.text.encode("utf-8")) for h in result.hits]
    out.update(_byte_scores(ev, ranked, sizes))
    return out


def _byte_scores(ev: frozenset[int], ranked: Sequence[frozenset[int]],
                 sizes: Sequence[int]) -> dict[str, float]:
    """Per byte budget: the recall of the hits that fit it, how many hits that was and
    the bytes they returned (fewer than the budget when the result ran out)."""
    out = {}
    for b in BYTE_BUDGETS:
        n = prefix_within(sizes, b)
        key = f"{b // 1024}k_bytes"
        out[f"r@{key}"] = recall(ev, set().union(*ranked[:n]))
        out[f"hits@{key}"] = float(n)
        out[f"used@{key}"] = float(sum(sizes[:n]))
    return out


# ---------------------------------------------------------------------------- runs


@dataclass
class RunStats:
    sources: int = 0
    windows: int = 0
    created: int = 0
    updated: int = 0
    noops: int = 0
    reserved_requests: int = 0
    reserved_tokens: int = 0
    topics: int = 0
    revisions: int = 0
    stopped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def public(self, model: CountingModel) -> dict[str, Any]:
        n = max(self.sources, 1)
        return {
            "sources": self.sources,
            "windows": self.windows,
            "created": self.created,
            "updated": self.updated,
            "noops": self.noops,
            "update_create_ratio": round(self.updated / self.created, 4) if self.created else None,
            "topics": self.topics,
            "revisions_per_topic": round(self.revisions / self.topics, 4) if self.topics else 0.0,
            "stopped": self.stopped,
            "calls": dict(sorted(model.calls.items())),
            "per_source": {
                "reserved_requests": round(self.reserved_requests / n, 4),
                "reserved_tokens": round(self.reserved_tokens / n, 1),
                "used_requests": round(model.requests / n, 4),
                "used_tokens": round((model.input_tokens + model.output_tokens) / n, 1),
                "used_input_tokens": round(model.input_tokens / n, 1),
                "used_output_tokens": round(model.output_tokens / n, 1),
            },
            "usage_missing": model.usage_missing,
            "runtime_s": round(self.seconds, 1),
        }


async def process_scope(db: Path, scope: str, sources: Sequence[Any], model: CountingModel,
                        settings: Any, stats: RunStats) -> Any:
    """Store ``sources`` in ``scope`` of a new database and process it; the open
    service."""
    from powercontext import open_topic_service
    from powercontext.topic_processing import TopicProcessor

    svc = open_topic_service(db, embedding="none")
    for i in range(0, len(sources), SOURCE_BATCH):
        await svc.add_sources(scope, list(sources[i : i + SOURCE_BATCH]))
    stats.sources += len(sources)
    report = await TopicProcessor(svc, model, settings).process(scope)
    for w in report.windows:
        stats.windows += 1
        stats.created += len(w.created)
        stats.updated += len(w.updated)
        stats.noops += w.noops
        stats.reserved_requests += w.reserved_requests
        stats.reserved_tokens += w.reserved_requests * model.context_window_tokens
    if report.stopped is not None:
        # the failed Window's reservation lives on its budget row
        budget = report.status.budget
        if budget is not None:
            stats.reserved_requests += int(getattr(budget, "reserved_requests", 0) or 0)
            stats.reserved_tokens += int(getattr(budget, "reserved_tokens", 0) or 0)
        stats.stopped.append(f"{scope}: {report.stopped} at Cursor {report.status.cursor} "
                             f"of {report.status.source_head}")
    heads = await svc.backend.heads(scope)
    stats.topics += len(heads)
    stats.revisions += sum(h.revision for h in heads)
    return svc



@dataclass
class Plan:
    """One conversation's part in one run: its Sources and the questions scored."""

    conv: Conversation
    sources: list[Any]
    where: dict[str, int]
    questions: list[Question]


async def topic_run(name: str, plans: Sequence[Plan], window: int, model: CountingModel,
                    settings: Any, tmp: Path) -> dict[str, Any]:
    import attrs

    model.reset()
    stats = RunStats()
    scores, coverage = Scores(), Scores()
    chosen = attrs.evolve(settings, window_limit=window)
    t0 = time.perf_counter()
    for n, plan in enumerate(plans):
        scope = scope_of(plan.conv)
        svc = await process_scope(tmp / f"{name}-w{window}-{n}.db", scope, plan.sources,
                                  model, chosen, stats)
        try:
            lineage = TopicLineage(svc, scope, plan.where)
            covered: set[int] = set()
            direct: set[int] = set()
            for ref in await svc.backend.heads(scope):
                covered |= await lineage.sessions(ref)
                direct |= await lineage.direct(ref)
            for q in plan.questions:
                ev = evidence_sessions(q)
                coverage.add(q.category, {"coverage": recall(ev, covered),
                                          "direct_coverage": recall(ev, direct)})
                scores.add(q.category, await lineage.score(q))
        finally:
            await svc.close()
    stats.seconds = time.perf_counter() - t0
    return {"granularity": name, "window": window, "stats": stats.public(model),
            "lineage_coverage": coverage.summary(), "retrieval": scores.summary()}


async def summary_run(plans: Sequence[Plan], raw: dict[str, dict[str, Any]],
                      tmp: Path) -> dict[str, Any]:
    """LoCoMo's own session summaries as Topics: one CREATE per session, its lineage
    that session's Source."""
    from bench.perf.topic_data import _cut
    from powercontext import open_topic_service
    from powercontext.core.topic import content as limits

    scores, topics = Scores(), 0
    t0 = time.perf_counter()
    for n, plan in enumerate(plans):
        scope = scope_of(plan.conv)
        sample = raw[plan.conv.sample_id]
        a, b = speakers_of(sample)
        srcs, where = session_sources(plan.conv, sessions(plan.conv, (a, b)))
        by_id = {s.source_id: s for s in srcs}
        creates = []
        for k, text in sorted(session_summaries(sample).items()):
            src = by_id.get(session_source_id(plan.conv, k))
            if src is None:
                continue
            title = f"{a} and {b}, session {k}"[: limits.MAX_TITLE_CHARS]
            summary = _cut(text, limits.MAX_SUMMARY_CHARS)
            creates.append(({"title": title, "summary": summary, "detail": text}, [src]))
        svc = open_topic_service(tmp / f"summaries-{n}.db", embedding="none")
        try:
            await svc.add_sources(scope, srcs)
            for i in range(0, len(creates), 50):
                await svc.publish(scope, creates=creates[i : i + 50])
            topics += len(creates)
            lineage = TopicLineage(svc, scope, where)
            for q in plan.questions:
                scores.add(q.category, await lineage.score(q))
        finally:
            await svc.close()
    return {"topics": topics, "retrieval": scores.summary(),
            "runtime_s": round(time.perf_counter() - t0, 1)}


async def memory_run(plans: Sequence[Plan], tmp: Path) -> dict[str, Any]:
    """Memory turn-level FTS search over every turn of each conversation."""
    from bench.vector_cache import DiskCachedModel
    from powercontext.plugins.registry import Registry

    registry = Registry()
    emb = DiskCachedModel(registry.embedding_model("deterministic"))
    scores = Scores()
    t0 = time.perf_counter()
    for n, plan in enumerate(plans):
        ix = await index(plan.conv, tmp / f"memory-{n}.db", emb, registry, session_date=True)
        try:
            for q in plan.questions:
                scores.add(q.category, await memory_scores(ix, q))
        finally:
            await ix.service.close()
    return {"retrieval": scores.summary(), "runtime_s": round(time.perf_counter() - t0, 1)}


def _slice(conv: Conversation, keep: set[int]) -> Conversation:
    turns = [t for t in conv.turns if session_of(t.dia_id) in keep]
    qs = [q for q in conv.questions if evidence_sessions(q) <= keep]
    return Conversation(conv.sample_id, turns, qs, conv.skipped)


async def run(data: Path, model_name: str = "deterministic", *, quick: bool = False,
              workdir: Path | None = None, windows: Sequence[int] | None = None,
              turn_sessions: int | None = None, model: Any = None,
              settings: Any = None) -> dict[str, Any]:
    """The whole benchmark; the JSON report as a dict. ``model``/``settings`` override
    the registry-built model (tests). ``turn_sessions``: sessions of the first
    conversation in the turn run (None: all; quick: :data:`QUICK_TURN_SESSIONS`)."""
    started = time.perf_counter()
    if model is None:
        model, settings = build_model(model_name)
    if settings is None:
        from powercontext.core.topic.processing import ProcessingSettings

        settings = ProcessingSettings()
    counting = CountingModel(model)
    convs = load(data)
    raw = _raw(data)
    if quick:
        convs = convs[:1]
    windows = tuple(windows or (QUICK_WINDOWS if quick else WINDOWS))
    if turn_sessions is None and quick:
        turn_sessions = QUICK_TURN_SESSIONS
    session_plans = []
    for conv in convs:
        sess = sessions(conv, speakers_of(raw[conv.sample_id]))
        srcs, where = session_sources(conv, sess)
        session_plans.append(Plan(conv, srcs, where, conv.questions))
    first = convs[0]
    if turn_sessions is not None:
        keep = sorted({session_of(t.dia_id) for t in first.turns})[:turn_sessions]
        first = _slice(first, set(keep))
    tsrcs, twhere = turn_sources(first, first.turns)
    turn_plans = [Plan(first, tsrcs, twhere, first.questions)]
    turn_windows = (10,) if quick else windows
    runs = []
    with tempfile.TemporaryDirectory(prefix="topic-locomo-", dir=workdir) as tmp_s:
        tmp = Path(tmp_s)
        for w in windows:
            runs.append(await topic_run("session", session_plans, w, counting, settings, tmp))
            _progress(runs[-1])
        for w in turn_windows:
            runs.append(await topic_run("turn", turn_plans, w, counting, settings, tmp))
            _progress(runs[-1])
        baselines = {
            SUMMARY_SYSTEM: await summary_run(session_plans, raw, tmp),
            MEMORY_SYSTEM: await memory_run(session_plans, tmp),
            f"{SUMMARY_SYSTEM}:turn-slice": await summary_run(turn_plans, raw, tmp),
            f"{MEMORY_SYSTEM}:turn-slice": await memory_run(turn_plans, tmp),
        }
    return {
        "benchmark": "locomo-topic",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": str(data),
        "model": model_name,
        "quick": quick,
        "settings": {
            "windows": list(windows),
            "turn_windows": list(turn_windows),
            "ks": list(KS),
            "byte_budgets": list(BYTE_BUDGETS),
            "topic_limit": TOPIC_LIMIT,
            "memory_limit": MEMORY_LIMIT,
            "context_window_tokens": counting.context_window_tokens,
            "history_max_candidates": settings.history_max_candidates,
            "retrieval": "fts (Topic and Memory)",
            "topic_bytes": "title + summary + snippet (UTF-8)",
            "memory_bytes": "entry text (UTF-8)",
        },
        "counts": {
            "conversations": len(convs),
            "sessions": sum(len(p.sources) for p in session_plans),
            "turn_sources": len(tsrcs),
            "questions": sum(len(p.questions) for p in session_plans),
            "turn_questions": len(first.questions),
        },
        "runs": runs,
        "baselines": baselines,
        "runtime_s": round(time.perf_counter() - started, 1),
    }


def _progress(run: dict[str, Any]) -> None:
    s = run["stats"]
    print(f"  {run['granularity']} w{run['window']}: {s['sources']} Sources, {s['windows']} "
          f"Windows, {s['topics']} Topics, {s['runtime_s']} s"
          + (f", stopped: {s['stopped']}" if s["stopped"] else ""), file=sys.stderr)


# ---------------------------------------------------------------------------- output


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _name(r: dict[str, Any]) -> str:
    return f"Topics, {r['granularity']} Sources, Window {r['window']}"


def _systems(report: dict[str, Any], granularity: str) -> list[tuple[str, dict[str, Any]]]:
    rows = [(_name(r), r["retrieval"]) for r in report["runs"] if r["granularity"] == granularity]
    suffix = "" if granularity == "session" else ":turn-slice"
    b = report["baselines"]
    rows.append(("LoCoMo session summaries as Topics", b[SUMMARY_SYSTEM + suffix]["retrieval"]))
    rows.append(("Memory turn-level search (fts)", b[MEMORY_SYSTEM + suffix]["retrieval"]))
    return rows


def judge_free(report: dict[str, Any]) -> str:
    """The processing metrics of every run (no retrieval)."""
    lines = [
        "| run | Sources | Windows | Topics | Revisions/Topic | UPDATE/CREATE | NOOP outputs | "
        "lineage coverage | direct | reserved req/Source | reserved tok/Source | used req/Source | "
        "used tok/Source | stopped |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["runs"]:
        s, p = r["stats"], r["stats"]["per_source"]
        ratio = "-" if s["update_create_ratio"] is None else f"{s['update_create_ratio']:.2f}"
        lines.append(
            f"| {_name(r)} | {s['sources']} | {s['windows']} | {s['topics']} | "
            f"{s['revisions_per_topic']:.2f} | {ratio} | {s['noops']} | "
            f"{_pct(r['lineage_coverage']['overall']['coverage'])} | "
            f"{_pct(r['lineage_coverage']['overall'].get('direct_coverage'))} | "
            f"{p['reserved_requests']:.2f} | {p['reserved_tokens']:.0f} | "
            f"{p['used_requests']:.2f} | {p['used_tokens']:.0f} | "
            f"{len(s['stopped']) or '-'} |")
    return "\n".join(lines)


def retrieval_table(report: dict[str, Any], granularity: str = "session") -> str:
    keys = [f"r@{k}" for k in KS] + [f"r@{b // 1024}k_bytes" for b in BYTE_BUDGETS]
    head = ["| system | " + " | ".join(f"R@{k}" for k in KS) + " | "
            + " | ".join(f"R@{b // 1024}kB" for b in BYTE_BUDGETS) + " | n |",
            "|---|" + "---:|" * (len(keys) + 1)]
    lines = list(head)
    for name, res in _systems(report, granularity):
        o = res["overall"]
        lines.append(f"| {name} | " + " | ".join(_pct(o.get(k)) for k in keys)
                     + f" | {o['n']} |")
    return "\n".join(lines)


def bytes_table(report: dict[str, Any], granularity: str = "session") -> str:
    """Mean hits and bytes actually returned under each byte budget (a result that runs
    out returns less than its budget)."""
    lines = ["| system | " + " | ".join(f"{b // 1024}kB: hits / bytes" for b in BYTE_BUDGETS)
             + " |", "|---|" + "---:|" * len(BYTE_BUDGETS)]
    for name, res in _systems(report, granularity):
        o = res["overall"]
        cells = [f"{o.get(f'hits@{b // 1024}k_bytes', 0):.1f} / "
                 f"{o.get(f'used@{b // 1024}k_bytes', 0):.0f}" for b in BYTE_BUDGETS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def category_table(report: dict[str, Any], granularity: str = "session") -> str:
    systems = _systems(report, granularity)
    lines = ["| category | n | " + " | ".join(n for n, _ in systems) + " |",
             "|---|---:|" + "---:|" * len(systems)]
    cats = systems[0][1]["by_category"]
    for cat, first in cats.items():
        cells = []
        for _, res in systems:
            c = res["by_category"].get(cat, {})
            cells.append(f"{_pct(c.get('r@5'))} / {_pct(c.get('r@4k_bytes'))}")
        lines.append(f"| {cat} | {first['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def coverage_table(report: dict[str, Any]) -> str:
    runs = report["runs"]
    cats = list(dict.fromkeys(c for r in runs for c in r["lineage_coverage"]["by_category"]))
    lines = ["| run | " + " | ".join(cats) + " | overall |", "|---|" + "---:|" * (len(cats) + 1)]
    for r in runs:
        lc = r["lineage_coverage"]
        cells = [_pct(lc["by_category"].get(c, {}).get("coverage")) for c in cats]
        lines.append(f"| {_name(r)} | " + " | ".join(cells)
                     + f" | {_pct(lc['overall']['coverage'])} |")
    return "\n".join(lines)


def table(report: dict[str, Any]) -> str:
    """Markdown: the judge-free processing metrics first, then lineage coverage per
    category, then evidence-session recall (session runs, then the turn runs), then
    recall per category."""
    c = report["counts"]
    return "\n".join([
        f"Topic Memory on LoCoMo ({report['model']} model; {c['conversations']} "
        f"conversation(s), {c['sessions']} sessions, {c['questions']} questions; turn run: "
        f"{c['turn_sources']} turns, {c['turn_questions']} questions)",
        "", "Processing (judge-free):", "", judge_free(report),
        "", "Lineage coverage of the evidence sessions by current Heads (%):", "",
        coverage_table(report),
        "", "Evidence-session recall (%), session Sources: top-k Topics, and at equal "
        "returned bytes:", "", retrieval_table(report, "session"),
        "", "Mean hits / bytes returned at each budget, session Sources:", "",
        bytes_table(report, "session"),
        "", "Turn Sources (first conversation):", "", retrieval_table(report, "turn"),
        "", "Per category, session Sources (R@5 / R@4kB):", "",
        category_table(report, "session"),
    ])


def plot(report: dict[str, Any], path: Path) -> bool:
    """Write the PNG; False (nothing written) without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    for name, res in _systems(report, "session"):
        o = res["overall"]
        left.plot(KS, [100 * o[f"r@{k}"] for k in KS], marker="o", label=name)
        right.plot([b // 1024 for b in BYTE_BUDGETS],
                   [100 * o[f"r@{b // 1024}k_bytes"] for b in BYTE_BUDGETS], marker="o",
                   label=name)
    left.set_xlabel("k (Topics or turns)")
    left.set_ylabel("evidence-session recall@k (%)")
    left.set_xticks(KS)
    left.set_title(f"LoCoMo, session Sources (model: {report['model']})")
    right.set_xlabel("returned bytes (KiB)")
    right.set_ylabel("evidence-session recall (%)")
    right.set_xticks([b // 1024 for b in BYTE_BUDGETS])
    right.set_title("recall at equal returned bytes")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench topic-locomo",
                                description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA,
                   help=f"LoCoMo-format JSON (default: {DEFAULT_DATA})")
    p.add_argument("--model", default="deterministic", choices=MODELS,
                   help="the Topic generation provider (openai/anthropic: set "
                        "POWERCONTEXT_INFERENCE_GENERATION_MODEL and the API key)")
    p.add_argument("--quick", action="store_true",
                   help="first conversation, Windows 1 and 10, a turn slice")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results directory")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    args = p.parse_args(argv)
    try:
        model, settings = build_model(args.model)
    except MissingConfiguration as exc:
        print(f"topic-locomo: the {args.model} provider cannot run:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    report = asyncio.run(run(args.data, args.model, quick=args.quick, model=model,
                             settings=settings))
    args.out.mkdir(parents=True, exist_ok=True)
    stem = (f"topic-locomo-{dt.date.today().isoformat()}" + ("-quick" if args.quick else "")
            + f"-{args.model}")
    json_path = args.out / f"{stem}.json"
    json_path.write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    md_path = args.out / f"{stem}.md"
    md_path.write_text(table(report) + "\n", "utf-8")
    print(table(report))
    print()
    print(f"counts: {json.dumps(report['counts'])}  runtime: {report['runtime_s']} s")
    print(f"wrote {json_path}")
    print(f"wrote {md_path}")
    if not args.no_plot:
        png = args.out / f"{stem}.png"
        print(f"wrote {png}" if plot(report, png) else NO_PLOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
