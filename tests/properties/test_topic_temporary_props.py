"""Properties of the temporary-Topic path (Topic Memory RFC, "Oversized Work Items and
temporary Topics", "Window selection and context budgets"; issue 15, item 3): Source
Batches cover every character of the Item's Sources exactly once and in Window order,
every Batch's request fits the context window, a temporary cites only its Batch, and
the final lineage is exactly the union of the cited temporaries' SourceRefs."""

from __future__ import annotations

import itertools
import json

from hypothesis import event, given
from hypothesis import strategies as st
from support.topic_windows import revision, window_of

from powercontext.core import canonical
from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic import temporary as tmp
from powercontext.core.topic.accumulate import Live, TemporaryTopic
from powercontext.core.topic.content import make_content
from powercontext.core.topic.planner import WorkItem
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Probe
from powercontext.core.topic.window import Fragment, Window

#: Letters, white space, the JSON escapes (quotes, backslashes, controls) and astral
#: characters, each drawn often enough to sit at fragment boundaries.
HOSTILE = st.one_of(
    st.sampled_from(["\"", "\\", "\x01", "\x1f", "\n", "\t", " ", "\u2028", "\x7f",
                     "\U0001F600", "\U0001D11E", "\U00010348", "a", "Z", "é"]),
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
)
#: Texts from a few hundred to ~10,000 code points: a drawn piece repeated (so that
#: long, escape-heavy texts are common) followed by a free tail.
TEXTS = st.lists(
    st.builds(lambda piece, times, tail: piece * times + tail,
              st.text(HOSTILE, min_size=1, max_size=40), st.integers(1, 250),
              st.text(HOSTILE, max_size=40)),
    min_size=1, max_size=5)
SETTINGS = st.builds(ProcessingSettings,
                     context_window_tokens=st.integers(1_600, 4_000),
                     max_output_tokens=st.just(256))


def item_of(window: Window, ids: tuple[str, ...], query: str) -> WorkItem:
    return WorkItem("create", None, (Probe(query, ids, window.refs(list(ids), "ids")),), ids)


@given(TEXTS, SETTINGS, st.data())
def test_batches_cover_every_character_once_in_order_and_every_request_fits(
        texts: list[str], settings: ProcessingSettings, data: st.DataObject) -> None:
    window = window_of(*texts, settings=settings)
    ids = tuple(s.evidence_id for s in window.sources)
    chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
    query = data.draw(st.text(st.characters(blacklist_categories=("Cs",),
                                            blacklist_characters="\x00"),
                              min_size=1, max_size=200))
    chars = data.draw(st.integers(1, 5000))
    item = item_of(window, tuple(i for i in ids if i in chosen), query)
    batches = tmp.source_batches(window, item, settings, chars)
    event("fragmented" if any(isinstance(p, Fragment) for b in batches for p in b.parts)
          else "whole Sources only")
    event("several Batches" if len(batches) > 1 else "one Batch")
    assert [b.position for b in batches] == list(range(1, len(batches) + 1))
    seen: list[tuple[str, int, int]] = []
    joined: dict[str, str] = {}
    for batch in batches:
        req = tmp.temporary_request(batch, item, settings, chars)
        assert req is not None
        assert req.estimated_tokens <= settings.context_window_tokens
        if any(isinstance(p, Fragment) for p in batch.parts):
            assert len(batch.parts) == 1
        for part in batch.parts:
            start = part.start if isinstance(part, Fragment) else 0
            end = part.end if isinstance(part, Fragment) else len(part.text)
            assert start == len(joined.get(part.evidence_id, ""))
            seen.append((part.evidence_id, start, end))
            joined[part.evidence_id] = joined.get(part.evidence_id, "") + part.text
            part.text.encode("utf-8")  # no split surrogate pair, no lone surrogate
        assert json.loads(req.input_json)["sources"] == [
            {"id": p.evidence_id, "start": p.start, "end": p.end, "text": p.text}
            if isinstance(p, Fragment) else {"id": p.evidence_id, "text": p.text}
            for p in batch.parts]
    # greedy: a whole-Source Batch could not take the next whole Source too, and the
    # packing's size arithmetic is the built request's estimate exactly
    sizer = tmp._BatchSize(item, settings, chars)
    for prev, nxt in itertools.pairwise(batches):
        whole = not any(isinstance(p, Fragment) for p in (*prev.parts, *nxt.parts))
        if whole:
            grown = tmp.SourceBatch(1, (*prev.parts, nxt.parts[0]))
            assert tmp.temporary_request(grown, item, settings, chars) is None
    for batch in batches:
        if not any(isinstance(p, Fragment) for p in batch.parts):
            req = tmp.temporary_request(batch, item, settings, chars)
            assert req is not None
            assert sizer.tokens(batch.parts) == req.estimated_tokens
    wanted = [s for s in window.sources if s.evidence_id in chosen]
    assert joined == {s.evidence_id: s.text for s in wanted}
    # Window order: the evidence ids appear in one run each, in the Window's order
    order = list(dict.fromkeys(eid for eid, _, _ in seen))
    assert order == [s.evidence_id for s in wanted]


W6 = window_of(*(f"# Part {i}\n\nFact number {i}." for i in range(1, 7)))
IDS = tuple(s.evidence_id for s in W6.sources)
REF = {s.evidence_id: s.ref for s in W6.sources}
GROUPS = st.lists(st.lists(st.sampled_from(IDS), min_size=1, unique=True), min_size=1,
                  max_size=12)


def live_of(groups: list[list[str]]) -> tuple[Live, ...]:
    return tuple(
        Live(TemporaryTopic(make_content(f"T{i}", "S", "D"), tuple(g),
                            W6.refs(list(g), "ids")), frozenset({i}), 10)
        for i, g in enumerate(groups, start=1))


@given(GROUPS, st.data(), st.booleans())
def test_final_lineage_is_exactly_the_union_of_the_cited_temporaries(
        groups: list[list[str]], data: st.DataObject, update: bool) -> None:
    live = live_of(groups)
    handles = list(tmp.temporary_handles(live))
    cited = data.draw(st.lists(st.sampled_from(handles), min_size=1, unique=True))
    head = revision("topic_art_aaa", "Old", "Old.", "Old.")
    probes = (Probe("q", IDS, W6.refs(list(IDS), "ids")),)
    item = WorkItem("update" if update else "create", head if update else None, probes, IDS)
    raw = json.dumps({"topic": {"title": "New", "summary": "S", "detail": "D",
                                "evidence_ids": cited}})
    evo = tmp.parse_final(raw, W6, live, item)
    ops = evo.updates if update else evo.creates
    assert len(ops) == 1 and evo.noops == 0
    expected = canonical.sort_source_refs(
        REF[eid] for h in cited for eid in groups[handles.index(h)])
    assert ops[0].sources == expected
    if update:
        assert evo.updates[0].base == head.ref


@given(st.lists(st.sampled_from(IDS), min_size=1, max_size=4, unique=True), st.data())
def test_a_temporary_is_accepted_exactly_when_it_cites_only_its_batch(
        batch_ids: list[str], data: st.DataObject) -> None:
    batch = tmp.SourceBatch(1, tuple(s for s in W6.sources if s.evidence_id in batch_ids))
    cited = data.draw(st.lists(st.sampled_from(IDS), min_size=1, unique=True))
    raw = json.dumps({"topic": {"title": "T", "summary": "S", "detail": "D",
                                "evidence_ids": cited}})
    if set(cited) <= set(batch_ids):
        t = tmp.parse_temporary(raw, W6, batch, 10_000)
        assert t is not None
        assert t.evidence_ids == tuple(i for i in batch.evidence_ids if i in cited)
        assert t.sources == canonical.sort_source_refs(REF[i] for i in cited)
    else:
        try:
            tmp.parse_temporary(raw, W6, batch, 10_000)
        except TopicProcessingError as exc:
            assert exc.code == "model_output_invalid"
        else:
            raise AssertionError("a temporary citing another Batch's id was accepted")
