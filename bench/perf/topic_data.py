"""The Topic corpus of the performance benchmark (issue 12): Topics built from the LoCoMo
conversations, their Sources, and their publication through the real path.

A Topic is a run of consecutive turns of one LoCoMo session:

* **title** ``"<A> and <B>, <session date>: <headline>"``, the headline the first
  LoCoMo observation of the run's turns (else its first turn), cut at a word boundary
  to :data:`HEADLINE_CHARS`;
* **summary** the run's observations joined (else its first turns), cut at a word
  boundary to :data:`SUMMARY_CHARS`;
* **detail** Markdown: ``## Session <k> (<date>)``, one paragraph per turn
  (``**<speaker>:** <text>``, plus ``[shares <caption>]`` for an image), then
  ``### Facts`` and a bulleted list of the observations;
* **sources** the turns themselves, each a Source (kind ``agent_turn``, id
  ``locomo:<sample>:<dia_id>``).

Repetition with variation. One pass over the 2,760 turns of ``locomo-dev.json`` yields a
few hundred Topics; pass ``p`` cuts every session into runs of
``WINDOWS[p % len(WINDOWS)]`` turns starting at offset ``(p // len(WINDOWS)) % w`` (so
run boundaries move from pass to pass), and from the second pass on the title ends with
``" (take <p + 1>)"``. Runs within a pass are disjoint, so every Topic is distinct;
passes repeat the same turns in other groupings, as a long-lived Topic set does when
the same conversation is folded again. 1,000 Topics take 3 passes, 10,000 about 29.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.perf.common import log

#: Turns per Topic, one value per pass (cycled).
WINDOWS = (8, 6, 10, 5, 12, 7, 9, 4, 11)
HEADLINE_CHARS = 120
SUMMARY_CHARS = 600
#: Topics per publication (one TopicPublication = one write transaction).
TOPIC_BATCH = 100
#: Sources per put_sources call.
SOURCE_BATCH = 500
#: The Scope every benchmark Topic lives in.
TOPIC_SCOPE = "bench:locomo"
#: Fixed id clock (ms) of the benchmark's Topic ids: ids are reproducible run to run.
ID_EPOCH_MS = 1_764_547_200_000


@dataclass(frozen=True)
class Turn:
    source_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    sample_id: str
    index: int
    date: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    #: dia_id -> the LoCoMo observations that cite it
    observations: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class TopicText:
    """One benchmark Topic before publication: its content and the ids of the Sources
    (turns) it cites, sorted."""

    title: str
    summary: str
    detail: str
    sources: tuple[str, ...]


def _safe(text: str) -> str:
    return re.sub(r"[^\x21-\x7e]", "_", text) or "_"


def load_sessions(path: Path) -> list[Session]:
    """Every session of every conversation of a LoCoMo-format file, in file order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: list[Session] = []
    for n, sample in enumerate(data):
        conv = sample["conversation"]
        sid = _safe(str(sample.get("sample_id", n)))
        speakers = (str(conv.get("speaker_a", "A")), str(conv.get("speaker_b", "B")))
        keys = sorted(
            (k for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)),
            key=lambda k: int(k.split("_")[1]),
        )
        obs_all = sample.get("observation") or {}
        for k in keys:
            idx = int(k.split("_")[1])
            turns = []
            for t in conv[k]:
                text = str(t.get("text", "")).strip()
                if not text:
                    continue
                caption = str(t.get("blip_caption", "") or "").strip()
                if caption:
                    text = f"{text} [shares {caption}]"
                dia = _safe(str(t.get("dia_id", f"S{idx}:{len(turns) + 1}")))
                turns.append(Turn(f"locomo:{sid}:{dia}", str(t.get("speaker", "?")), text))
            if not turns:
                continue
            cited: dict[str, list[str]] = {}
            obs = obs_all.get(f"{k}_observation") or {}
            if isinstance(obs, dict):
                for facts in obs.values():
                    for fact in facts if isinstance(facts, list) else ():
                        if isinstance(fact, list) and len(fact) >= 2:
                            refs = fact[1] if isinstance(fact[1], list) else [fact[1]]
                            for ref in refs:
                                key = f"locomo:{sid}:{_safe(str(ref))}"
                                cited.setdefault(key, []).append(str(fact[0]).strip())
            out.append(
                Session(
                    sid,
                    idx,
                    str(conv.get(f"{k}_date_time", "")).strip() or f"session {idx}",
                    speakers,
                    tuple(turns),
                    tuple((key, tuple(v)) for key, v in cited.items()),
                )
            )
    return out


def _cut(text: str, limit: int) -> str:
    """``text`` whole when it fits, else up to the last space before ``limit`` + ``…``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:.") + "…"


def _topic(session: Session, run: Sequence[Turn], take: int) -> TopicText:
    cited = dict(session.observations)
    facts = list(dict.fromkeys(f for t in run for f in cited.get(t.source_id, ())))
    headline = _cut(facts[0] if facts else run[0].text, HEADLINE_CHARS)
    a, b = session.speakers
    title = f"{a} and {b}, {session.date}: {headline}"
    if take > 0:
        title += f" (take {take + 1})"
    summary = _cut(" ".join(facts) if facts else " ".join(t.text for t in run[:3]), SUMMARY_CHARS)
    lines = [f"## Session {session.index} ({session.date})", ""]
    for t in run:
        lines += [f"**{t.speaker}:** {t.text}", ""]
    if facts:
        lines += ["### Facts", ""] + [f"- {f}" for f in facts]
    detail = "\n".join(lines).rstrip() + "\n"
    return TopicText(title, summary, detail, tuple(sorted({t.source_id for t in run})))


def make_topics(sessions: Sequence[Session], n: int) -> list[TopicText]:
    """``n`` distinct Topics from ``sessions`` (see the module docstring), in a fixed
    order: pass by pass, session by session, run by run. ValueError without turns."""
    if not any(s.turns for s in sessions):
        raise ValueError("no turns to build Topics from")
    out: list[TopicText] = []
    seen: set[tuple[str, str, str]] = set()
    take = 0
    while len(out) < n:
        w = WINDOWS[take % len(WINDOWS)]
        offset = (take // len(WINDOWS)) % w
        for s in sessions:
            starts = [0, *range(offset or w, len(s.turns), w)] if offset else list(
                range(0, len(s.turns), w))
            bounds = [*starts, len(s.turns)]
            # a one-turn run at either end joins its neighbour
            if len(bounds) > 2 and bounds[-1] - bounds[-2] < 2:
                del bounds[-2]
            if len(bounds) > 2 and bounds[1] - bounds[0] < 2:
                del bounds[1]
            for lo, hi in itertools.pairwise(bounds):
                if lo >= hi:
                    continue
                t = _topic(s, s.turns[lo:hi], take)
                key = (t.title, t.summary, t.detail)
                if key in seen:  # cannot happen with the take suffix; kept as a guard
                    continue
                seen.add(key)
                out.append(t)
                if len(out) == n:
                    return out
        take += 1
    return out


def turn_sources(sessions: Sequence[Session]) -> list[Any]:
    """Every turn as a Source (kind ``agent_turn``), in file order."""
    from powercontext.core.canonical import make_source

    return [
        make_source(t.source_id, "agent_turn", f"{t.speaker}: {t.text}")
        for s in sessions
        for t in s.turns
    ]


def topic_id(i: int) -> str:
    """The reproducible id of the benchmark's ``i``-th Topic."""
    from powercontext.core.topic.content import make_topic_id

    entropy = hashlib.sha256(f"bench-topic-{i}".encode()).digest()[:10]
    return make_topic_id(ID_EPOCH_MS + i, entropy)


async def publish_topics(
    backend: Any,
    topics: Sequence[TopicText],
    sources: Sequence[Any],
    *,
    scope_id: str = TOPIC_SCOPE,
    embed: Callable[[tuple[str, ...]], Awaitable[Any]] | None = None,
    profile: Any = None,
    batch: int = TOPIC_BATCH,
    label: str = "",
    first: int = 0,
    stats: dict[str, int] | None = None,
) -> list[Any]:
    """Publish ``topics`` as CREATEs (revision 1) in ``scope_id`` through
    ``backend.publish``, ``batch`` Topics per TopicPublication (one write transaction
    each), after storing ``sources`` (the Sources they cite) with ``put_sources``. In a
    hybrid deployment ``embed`` (an EmbeddingModel's ``embed``) makes the vectors of
    ``projection.embedding_texts`` outside the transaction and ``profile`` is its
    EmbeddingProfile. Topic ``i`` gets the id :func:`topic_id` ``(first + i)``.
    ``stats["chunks"]`` (when given) counts the Detail chunks published.
    Progress goes to stderr every 10 s. Returns the TopicRefs in order. Raises whatever
    ``publish`` raises (nothing of that batch is written)."""
    from powercontext.core.topic.content import make_content
    from powercontext.core.topic.models import TopicPublication, TopicRef, TopicWrite
    from powercontext.core.topic.projection import build_projection, embedding_texts

    by_id = {s.source_id: s for s in sources}
    for j in range(0, len(sources), SOURCE_BATCH):
        await backend.put_sources(list(sources[j : j + SOURCE_BATCH]))
    analyzer = await backend.analyzer()
    refs: list[Any] = []
    t0 = last = time.perf_counter()
    for j in range(0, len(topics), batch):
        writes = []
        for i, t in enumerate(topics[j : j + batch], start=j):
            content = make_content(t.title, t.summary, t.detail)
            vectors = None
            if embed is not None:
                vectors = (await embed(embedding_texts(content))).vectors
            projection = build_projection(content, analyzer, vectors, profile)
            if stats is not None:
                stats["chunks"] = stats.get("chunks", 0) + len(projection.chunks)
            cites = tuple(
                sorted(
                    (_source_ref(by_id[s]) for s in t.sources),
                    key=lambda r: r.source_id,
                )
            )
            ref = TopicRef(topic_id(first + i), 1)
            writes.append(TopicWrite("create", scope_id, ref, None, content, cites, projection))
        published = await backend.publish(TopicPublication(tuple(writes)))
        refs.extend(r.ref for r in published)
        now = time.perf_counter()
        if now - last > 10 or j + batch >= len(topics):
            last = now
            log(
                f"  {label}published {len(refs)}/{len(topics)} Topics in "
                f"{now - t0:.0f} s ({len(refs) / max(now - t0, 1e-9):.0f} Topics/s)"
            )
    return refs


def _source_ref(source: Any) -> Any:
    from powercontext.core.models import SourceRef

    return SourceRef(source.source_id, source.content_hash)
