"""Properties of Topic processing with the offline ``deterministic`` provider (Topic
Memory RFC, "Probe and historical Topic selection", "Second retrieval and related-group
reconciliation"): the same Sources give the same Topics on every run, whatever ids the
service draws and whatever its clock says (ties are broken by content and position,
never by a random id or the clock; two runs over the same 390 Sources once gave 25 and
38 Topics), and at every Window limit (distinct subjects stay distinct, one subject's
notes stay together)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.topic_notes import CHAT, SUBJECTS, chat_turns, note_sources

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.testing import InMemoryTopicBackend
from powercontext.topic_processing import TopicProcessor
from powercontext.topic_service import TopicMemoryService

SCOPE = "project:props"
NAMES = list(SUBJECTS)


def _entropy(step: int) -> Callable[[int], bytes]:
    """Ids in ascending (``step`` 1) or descending (-1) order of creation."""
    counter = itertools.count(0)

    def draw(n: int) -> bytes:
        value = next(counter) if step > 0 else (1 << 70) - next(counter)
        return value.to_bytes(n, "big")
    return draw


async def _topics(texts: list[str], limit: int, entropy: Callable[[int], bytes],
                  clock: Callable[[], int]) -> list[tuple[Any, ...]]:
    svc = TopicMemoryService(InMemoryTopicBackend(), entropy=entropy, clock=clock)
    await svc.add_sources(SCOPE, note_sources(texts))
    await svc.flush(SCOPE)
    report = await TopicProcessor(svc, DeterministicTopicModel(),
                                  ProcessingSettings(window_limit=limit)).process(SCOPE)
    assert report.stopped is None, report.reason
    out = []
    for ref in await svc.backend.heads(SCOPE):
        rev = await svc.get(SCOPE, ref)
        cited: set[str] = set()
        walk: Any = rev
        while True:
            cited.update(s.source_id for s in walk.sources)
            if walk.based_on is None:
                break
            walk = await svc.get(SCOPE, walk.based_on)
        out.append((rev.content.title, rev.content.summary, rev.content.detail,
                    tuple(sorted(cited))))
    return sorted(out)


@st.composite
def notes(draw: st.DrawFn) -> list[str]:
    """Up to 40 Sources: notes (a subject's fact, with or without the subject's heading
    or label) and chat turns (``[date] Name: fact``), facts of one subject sometimes
    repeated or mixed with another's words: many Topics share words, so searches tie."""
    out = []
    for i in range(draw(st.integers(1, 40))):
        subject = draw(st.sampled_from(NAMES[:6]))
        fact = draw(st.sampled_from(SUBJECTS[subject]))
        style = draw(st.sampled_from(["heading", "label", "plain", "turn"]))
        if draw(st.booleans()):
            fact += " " + draw(st.sampled_from(SUBJECTS[draw(st.sampled_from(NAMES))]))
        out.append({"heading": f"# {subject} notes\n\n{fact}",
                    "label": f"{subject}: {fact}", "plain": fact,
                    "turn": f"[{1 + i // 8} May 2026] {('Ana', 'Ben')[i % 2]}: {fact}"}[style])
    return out


@st.composite
def chats(draw: st.DrawFn) -> list[str]:
    """A chat's turns (some of :data:`CHAT`, in order), then maybe some notes."""
    picked = sorted(draw(st.sets(st.integers(0, len(CHAT) - 1), min_size=4)))
    return chat_turns(picked) + draw(notes().map(lambda n: n[:draw(st.integers(0, 8))]))


@pytest.mark.slow  # many Windows per example: over 5 s on two cores
@settings(max_examples=30, deadline=None)
@given(st.one_of(notes(), chats()), st.sampled_from([1, 3, 10]))
def test_the_same_sources_give_the_same_topics_whatever_the_ids_and_the_clock(
        texts: list[str], limit: int) -> None:
    # ids in creation order, then in reverse creation order (a clock that runs back)
    ascending = asyncio.run(_topics(texts, limit, _entropy(1), lambda: 1_700_000_000_000))
    ticks = itertools.count(1_800_000_000_000, -7)
    descending = asyncio.run(_topics(texts, limit, _entropy(-1), lambda: next(ticks)))
    assert ascending == descending


@pytest.mark.slow  # many Windows per example: over 5 s on two cores
@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=20), st.data())
def test_subject_notes_give_the_same_topics_at_every_window_limit(
        subjects: list[str], data: st.DataObject) -> None:
    """Notes naming their subject (a heading or a label) give one Topic per subject,
    the same content and lineage at Window limits 1, 10 and 32."""
    style = data.draw(st.sampled_from(["heading", "label"]))
    facts = {s: iter(SUBJECTS[s] * 4) for s in NAMES}
    texts = [f"# {s} notes\n\n{next(facts[s])}" if style == "heading"
             else f"{s}: {next(facts[s])}" for s in subjects]
    made = {limit: asyncio.run(_topics(texts, limit, _entropy(1), lambda: 0))
            for limit in (1, 10, 32)}
    assert made[1] == made[10] == made[32]
    assert len(made[1]) == len(set(subjects))
