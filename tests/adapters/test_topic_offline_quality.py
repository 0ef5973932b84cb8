"""Topics the offline ``deterministic`` provider makes, end to end through the processing
pipeline on the in-memory and SQLite backends (Topic Memory RFC, "Evolution operations
and model output": supplement and correction are UPDATEs; TOPIC-MEMORY.md, "Size
limits": never truncated silently).

Each example is one of the kinds users met (each failed before this provider and the
pipeline's report were rewritten):

- a correcting note became a second Topic beside the one it corrects, and the stale
  one ranked first in ``topic search`` and in prepared context;
- the same 50 notes on 10 subjects made 10 Topics at Window limit 10 but one Topic
  ("Billing notes", 50 Revisions) at Window limit 1;
- a 33,869-character document became a Topic whose detail stopped at 32,338
  characters, and a full Topic turned the next Source of its subject into a NOOP that
  no Topic cited; now the material continues in a part, and the processing report
  names any Source no new Revision holds whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from typing import Any

import pytest
from support.topic_notes import note_sources, note_texts
from support.topic_services import Factory, service_factory

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.context_prepare import prepare_context
from powercontext.core import canonical
from powercontext.core.models import Source
from powercontext.core.topic.content import MAX_DETAIL_CHARS
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.topic_processing import ProcessReport, TopicProcessor
from powercontext.topic_report import LeftOut, uncited_sources
from powercontext.topic_service import TopicMemoryService

SCOPE = "project:quality"
RELEASE = ("User:\nhow do we release?\n\nAssistant:\nThe release captain cuts the release "
           "branch on Monday and tags it. Production deploys happen on Tuesday after a 48 "
           "hour soak in staging.")
OTHERS = ["# Billing\n\nInvoices are generated nightly by the invoice job.",
          "# Logging\n\nLogs go to the central collector with 14 days of retention.",
          "# Staging\n\nStaging is reset every night from a production snapshot.",
          "# Tests\n\nRun make test before pushing; CI runs the suite on every branch."]
CORRECTION = "production deploys now happen on Wednesday, soak 24 hours"


@pytest.fixture(params=["memory", "sqlite",
                        pytest.param("seekdb", marks=pytest.mark.oceanbase)])
def new_service(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Factory]:
    """A fresh database per call: in memory, a SQLite file, or on the seekdb server."""
    yield from service_factory(request, tmp_path, "pc_quality")


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def note(i: int, text: str, kind: str = "user_note") -> Source:
    return canonical.make_source(f"src_q{i:03d}", kind, text)


async def process(svc: TopicMemoryService, sources: list[Source], limit: int = 10
                  ) -> ProcessReport:
    await svc.add_sources(SCOPE, sources)
    await svc.flush(SCOPE)
    report = await TopicProcessor(svc, DeterministicTopicModel(),
                                  ProcessingSettings(window_limit=limit)).process(SCOPE)
    assert report.stopped is None, report.reason
    return report


async def topics(svc: TopicMemoryService) -> list[Any]:
    return [await svc.get(SCOPE, ref) for ref in await svc.backend.heads(SCOPE)]


async def lineage(svc: TopicMemoryService, topic: Any) -> tuple[str, ...]:
    """Every Source any Revision of the Topic cites (the head back through based_on)."""
    cited: set[str] = set()
    rev = topic
    while True:
        cited.update(s.source_id for s in rev.sources)
        if rev.based_on is None:
            return tuple(sorted(cited))
        rev = await svc.get(SCOPE, rev.based_on)


# ---------------------------------------------------------------------- corrections

@pytest.mark.parametrize("same_window", [False, True])
def test_a_correction_updates_the_topic_it_corrects_and_ranks_first(
        new_service: Factory, same_window: bool) -> None:
    async def go() -> None:
        svc = new_service()
        first = [note(1, RELEASE, "conversation"), *(note(i, t) for i, t in
                                                     enumerate(OTHERS, start=2))]
        if same_window:
            await process(svc, [*first, note(9, CORRECTION)])
        else:
            await process(svc, first)
            await process(svc, [note(9, CORRECTION)])
        made = await topics(svc)
        assert len(made) == 5  # no second release Topic beside the first
        (release,) = [t for t in made if "release" in t.content.title]
        assert CORRECTION in release.content.detail
        assert release.content.summary.endswith(
            "Latest: production deploys now happen on Wednesday, soak 24 hours.")
        for query in ("when do production deploys happen", "deploy soak hours"):
            hits = (await svc.search(SCOPE, query, 5)).hits
            assert hits[0].ref == release.ref  # the current Revision, with the correction
        prepared = await prepare_context(None, svc, SCOPE, "when do production deploys happen")
        assert prepared.items[0].ref.artifact_id == release.ref.artifact_id
        assert "Wednesday" in prepared.items[0].summary
        assert not any(i.ref.artifact_id != release.ref.artifact_id
                       and "Tuesday" in i.summary for i in prepared.items)
    run(go())


# ---------------------------------------------------------------------- window limits

@pytest.mark.slow  # three full runs per case: over 5 s on two cores
@pytest.mark.parametrize("headings", [True, False])
def test_the_same_notes_give_the_same_topics_at_window_limits_1_10_and_32(
        new_service: Factory, headings: bool) -> None:
    async def go() -> None:
        made = {}
        for limit in (1, 10, 32):
            svc = new_service()
            await process(svc, note_sources(note_texts(headings)), limit)
            made[limit] = sorted([(t.content.title, t.content.summary, t.content.detail,
                                   await lineage(svc, t)) for t in await topics(svc)])
        titles = [m[0] for m in made[1]]
        assert len(titles) == 10 and len(set(titles)) == 10  # one Topic per subject
        assert made[1] == made[10] == made[32]
    run(go())


# ---------------------------------------------------------------------- size

def _paragraphs(n: int, start: int = 0) -> list[str]:
    return [f"Paragraph {i}: the storage layer keeps revision {i} of every entry in the "
            "manifest, and the search index is rebuilt from it when the analyzer changes."
            for i in range(start, start + n)]


def test_a_document_longer_than_one_detail_continues_in_a_part_and_keeps_every_word(
        new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        text = ("# Storage design\n\n" + "\n\n".join(_paragraphs(224))
                + "\n\nThe end of these notes.")
        assert len(text) == 33_869  # the size of the document users reported
        report = await process(svc, [note(1, text)])
        assert report.windows[0].left_out == ()
        made = sorted(await topics(svc), key=lambda t: t.content.title)
        assert [t.content.title for t in made] == ["Storage design",
                                                   "Storage design (part 2)"]
        assert all(len(t.content.detail) <= MAX_DETAIL_CHARS for t in made)
        assert all(t.sources == (note(1, text).ref,) for t in made)
        whole = "\n\n".join(t.content.detail for t in made)
        assert all(p in whole for p in [*_paragraphs(224), "The end of these notes."])
        assert made[0].content.detail.endswith("_(Continued in “Storage design (part 2)”.)_")
        assert made[1].content.detail.startswith("_(Continued from “Storage design”.)_")
    run(go())


@pytest.mark.parametrize("same_window", [False, True])
def test_a_full_topic_continues_in_a_part_instead_of_a_noop(
        new_service: Factory, same_window: bool) -> None:
    async def go() -> None:
        svc = new_service()
        full = "# Storage design\n\n" + "\n\n".join(_paragraphs(216))
        more = ("# Storage design\n\nThe manifest is now compressed with zstd, and the "
                "analyzer version is recorded so that a mismatch is refused on open. "
                "Rebuilding the index reads every revision once; a rebuild of a large "
                "store takes minutes, so it runs in the background with its progress on "
                "stderr.")
        if same_window:
            reports = [await process(svc, [note(1, full), note(2, more)])]
        else:
            reports = [await process(svc, [note(1, full)]),
                       await process(svc, [note(2, more)])]
        assert all(w.left_out == () for r in reports for w in r.windows)
        made = sorted(await topics(svc), key=lambda t: t.content.title)
        assert [t.content.title for t in made] == ["Storage design",
                                                   "Storage design (part 2)"]
        assert made[1].sources == (note(2, more).ref,)
        assert "compressed with zstd" in made[1].content.detail
    run(go())


# ---------------------------------------------------------------------- the report

def test_the_report_and_status_name_the_sources_no_revision_cites(
        new_service: Factory) -> None:
    async def go() -> None:
        svc = new_service()
        text = "# Caching\n\nThe CDN caches static assets for one year."
        await process(svc, [note(1, text), note(2, OTHERS[0])])
        report = await process(svc, [note(3, text)])  # the same text again: nothing new
        (window,) = report.windows
        assert window.left_out == (LeftOut(3, "src_q003", "uncited"),)
        assert await uncited_sources(svc, SCOPE) == (LeftOut(3, "src_q003", "uncited"),)
    run(go())
