"""The material of the synthetic year: Memory entries per repository and conversation
turns per Scope, grown deterministically (seeded) from the LoCoMo conversations
(``/work/shared/data/locomo-dev.json``) and the agent-eval Stop events
(``/work/shared/agent-eval/stream/stream.json``).

* **Repositories.** :data:`REPOS` (20) at scale 1.0; repository ``r`` holds
  ``2000 + 3000 * r / 19`` entries (2,000 to 5,000, 70,000 in all) times the scale.
* **Entries.** One LoCoMo turn or agent-eval reply sentence per entry, varied by the
  seeded choice of a project word and a day (``"... (payments, day 41)"``), kind
  ``fact``; distinct within a Memory.
* **Turns.** :data:`SOURCES` (500,000) at scale 1.0, spread evenly over the 20 Scopes
  (one Scope per repository, ``repo:<path>``, as the Stop hook and ``import`` write
  them). Turn ``i`` of a Scope pairs a prompt and a reply: alternately a LoCoMo turn pair
  and an agent-eval Stop event (its prompt and reply), each varied by a seeded project
  word, session and day, so no two turns of a Scope are the same text.

Nothing here reads a clock; the same seed gives the same year.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LOCOMO = Path("/work/shared/data/locomo-dev.json")
STREAM = Path("/work/shared/agent-eval/stream/stream.json")
REPOS = 20
SOURCES = 500_000
MIN_ENTRIES, MAX_ENTRIES = 2_000, 5_000
#: Turns per session of the synthetic agent (a session id changes every this many).
SESSION_TURNS = 40
#: Words the variation draws project names from.
PROJECTS = ("payments", "ledger", "checkout", "search", "billing", "gateway", "reports",
            "inventory", "auth", "notifications", "scheduler", "exports", "catalog",
            "onboarding", "metrics", "sync", "invoices", "uploads", "audit", "pricing")


@dataclass(frozen=True)
class Material:
    """Prompt/reply pairs and sentences the year is grown from."""

    pairs: tuple[tuple[str, str], ...]
    sentences: tuple[str, ...]
    questions: tuple[str, ...]


def load_material(locomo: Path = LOCOMO, stream: Path = STREAM) -> Material:
    """The pairs (consecutive LoCoMo turns; agent-eval prompt and reply), the sentences
    (every LoCoMo turn and agent-eval reply) and the LoCoMo questions (the queries)."""
    from bench.perf.common import load_corpus

    turns, questions = load_corpus(locomo)
    pairs = [(turns[i], turns[i + 1]) for i in range(0, len(turns) - 1, 2)]
    sentences = list(turns)
    if stream.exists():
        events = json.loads(stream.read_text(encoding="utf-8")).get("events", [])
        for e in events:
            prompt, reply = str(e.get("prompt", "")), str(e.get("reply", ""))
            if prompt and reply:
                pairs.append((prompt, reply))
                sentences.append(reply)
    return Material(tuple(pairs), tuple(sentences), tuple(questions))


def repo_entries(scale: float) -> list[int]:
    """Entries of each of the :data:`REPOS` Memories at ``scale`` (at least 1 each)."""
    span = MAX_ENTRIES - MIN_ENTRIES
    return [max(1, round((MIN_ENTRIES + span * r / (REPOS - 1)) * scale)) for r in range(REPOS)]


def scope_sources(scale: float) -> int:
    """Turns per Scope at ``scale`` (at least 1)."""
    return max(1, round(SOURCES * scale / REPOS))


def entries(material: Material, repo: int, n: int, seed: int) -> list[str]:
    """``n`` distinct entry texts of repository ``repo``."""
    rng = random.Random(f"{seed}:entries:{repo}")
    out: list[str] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        base = material.sentences[rng.randrange(len(material.sentences))]
        text = f"{base} ({rng.choice(PROJECTS)}, day {rng.randrange(1, 366)})"
        if text in seen:
            text = f"{text} #{i}"
        seen.add(text)
        out.append(text)
        i += 1
    return out


@dataclass(frozen=True)
class Turn:
    session: str
    turn: str
    prompt: str
    reply: str


def turns(material: Material, scope: int, n: int, seed: int) -> Iterator[Turn]:
    """The ``n`` turns of Scope ``scope`` in order (a new session every
    :data:`SESSION_TURNS`)."""
    rng = random.Random(f"{seed}:turns:{scope}")
    for i in range(n):
        prompt, reply = material.pairs[rng.randrange(len(material.pairs))]
        project = rng.choice(PROJECTS)
        day = 1 + i * 365 // max(n, 1)
        yield Turn(f"s{scope:02d}-{i // SESSION_TURNS:06d}", f"t{i:07d}",
                   f"[{project}, day {day}] {prompt}", f"{reply} ({project} work, turn {i})")
