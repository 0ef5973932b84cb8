"""The deterministic provider's ``temporary`` and final (``topic_item_final``) outputs
pass core.topic.temporary's parsers: for whole-Source Batches, for fragments of a
hostile oversized Source, and for arbitrary texts (issue 15, items 3 and 5: the
provider's outputs always pass the core checks when the request fits)."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given
from hypothesis import strategies as st
from support.topic_windows import SCOPE, revision, window_of

from powercontext import topic_reduction
from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import canonical
from powercontext.core.topic import accumulate
from powercontext.core.topic import temporary as tmp
from powercontext.core.topic.accumulate import Live, TemporaryTopic
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.models import TopicRevision
from powercontext.core.topic.planner import WorkItem
from powercontext.core.topic.processing import JournalEntry, ProcessingSettings
from powercontext.core.topic.stages import Probe
from powercontext.core.topic.window import Window, select_window

#: An accumulator input budget, the token bound of a temporary (B // 8) and the
#: characters shown to the model for it (accumulate.max_result_chars).
BUDGET = 4_800
MAX_TOKENS = BUDGET // accumulate.RESULT_FRACTION
MAX_CHARS = accumulate.max_result_chars(BUDGET)
MODEL = DeterministicTopicModel()


def answer(req: StageRequest | None) -> str:
    assert req is not None
    return asyncio.run(MODEL.generate(req)).output_text


def item_of(window: Window, target: TopicRevision | None = None) -> WorkItem:
    ids = tuple(s.evidence_id for s in window.sources)
    return WorkItem("update" if target is not None else "create", target,
                    (Probe("subject", ids, window.refs(list(ids), "ids")),), ids)


def temporaries(window: Window, item: WorkItem,
                settings: ProcessingSettings) -> tuple[tmp.SourceBatch, list[Live]]:
    live: list[Live] = []
    batches = tmp.source_batches(window, item, settings, MAX_CHARS)
    for batch in batches:
        req = tmp.temporary_request(batch, item, settings, MAX_CHARS)
        t = tmp.parse_temporary(answer(req), window, batch, MAX_TOKENS)
        if t is not None:
            assert set(t.evidence_ids) <= set(batch.evidence_ids)
            live.append(Live(t, frozenset({batch.position}), MAX_TOKENS))
    return batches, live


def test_deterministic_temporaries_and_final_pass_the_parsers_for_whole_sources() -> None:
    settings = ProcessingSettings(context_window_tokens=2048, max_output_tokens=256)
    contents = [f"# Part {i}\n\nPart {i} says " + f"fact{i} " * (40 + 30 * (i % 3))
                for i in range(1, 7)]
    w = window_of(*contents, settings=settings)
    item = item_of(w)
    batches, live = temporaries(w, item, settings)
    assert len(batches) > 1 and len(live) == len(batches)
    final = tmp.final_request(live, item, ProcessingSettings())
    evo = tmp.parse_final(answer(final), w, live, item)
    assert len(evo.creates) == 1
    cited = {ref for entry in live for ref in entry.item.sources}
    assert set(evo.creates[0].sources) <= cited
    assert evo.creates[0].sources == canonical.sort_source_refs(evo.creates[0].sources)


def test_deterministic_final_updates_the_exact_target_or_is_a_noop() -> None:
    w = window_of("# Alpha\n\nAlpha gained a new fact.", "# Alpha\n\nAnd another one.")
    head = revision("topic_art_aaa", "Alpha", "Old.", "Old detail.")
    item = item_of(w, head)
    _, live = temporaries(w, item, ProcessingSettings())
    evo = tmp.parse_final(answer(tmp.final_request(live, item, ProcessingSettings())),
                          w, live, item)
    assert not evo.creates and len(evo.updates) == 1
    assert evo.updates[0].base == head.ref
    assert evo.updates[0].content.detail.startswith("Old detail.")
    # the same again against the updated head: nothing new -> NOOP
    again = revision("topic_art_aaa", "Alpha", "Old.", evo.updates[0].content.detail)
    item2 = item_of(w, again)
    noop = tmp.parse_final(answer(tmp.final_request(live, item2, ProcessingSettings())),
                           w, live, item2)
    assert noop.empty and noop.noops == 1


def test_deterministic_temporaries_of_hostile_fragments_pass_the_parser() -> None:
    settings = ProcessingSettings(context_window_tokens=4096, max_output_tokens=256)
    content = "\U0001F600\"\\\x01\U0001D11E\x1f" * 3000
    entry = JournalEntry(SCOPE, 1, canonical.make_source("src_big", "file", content))
    w = select_window([entry], 0, settings)
    assert isinstance(w, Window) and w.oversized
    item = item_of(w)
    batches, live = temporaries(w, item, settings)
    assert len(batches) > 3 and live
    assert all(e.item.evidence_ids == ("s1",) for e in live)
    assert all(isinstance(e.item, TemporaryTopic) for e in live)


TEXT = st.text(st.one_of(st.sampled_from(["\"", "\\", "\x01", "\n", " ", "\U0001F600", "a"]),
                         st.characters(codec="utf-8",
                                       blacklist_characters="\x00")),
               min_size=1, max_size=600)


@given(st.lists(TEXT, min_size=1, max_size=4), st.integers(4_000, 40_000))
def test_deterministic_temporary_outputs_always_pass_parse_temporary(
        texts: list[str], budget: int) -> None:
    settings = ProcessingSettings(context_window_tokens=3000, max_output_tokens=256)
    w = window_of(*texts, settings=settings)
    item = item_of(w)
    chars = accumulate.max_result_chars(budget)
    max_tokens = budget // accumulate.RESULT_FRACTION
    for batch in tmp.source_batches(w, item, settings, chars):
        out = answer(tmp.temporary_request(batch, item, settings, chars))
        parsed = tmp.parse_temporary(out, w, batch, max_tokens)
        if parsed is None:
            assert json.loads(out) == {"topic": None}


async def _call(req: StageRequest) -> str:
    return (await MODEL.generate(req)).output_text


async def _temporary_path(window: Window, item: WorkItem,
                          settings: ProcessingSettings) -> tuple[int, list[Live], int]:
    budget = accumulate.reduce_budget("temporary", settings, item.focus)
    chars = accumulate.max_result_chars(budget)
    acc = accumulate.Accumulator("temporary", budget)
    batches = tmp.source_batches(window, item, settings, chars)
    calls = 0
    for batch in batches:
        req = tmp.temporary_request(batch, item, settings, chars)
        assert req is not None
        t = tmp.parse_temporary(await _call(req), window, batch,
                                budget // accumulate.RESULT_FRACTION)
        if t is not None:
            calls += await topic_reduction.push(acc, t, batch.position, _call, window, settings,
                                                item.focus)
    calls += await topic_reduction.compact(
        acc, _call, window, settings,
        fits=lambda live: tmp.final_request(live, item, settings) is not None,
        focus=item.focus)
    return len(batches), list(acc.live), calls


def test_an_oversized_item_reduces_its_temporaries_and_publishes_one_create() -> None:
    # a ~1 MB Source: more fragments than the accumulator holds live
    settings = ProcessingSettings(context_window_tokens=16_384, max_output_tokens=256)
    text = "\n\n".join(f"# Note {i}\n\nThe build step {i} needs flag -f{i} and cache {i}."
                       for i in range(1, 16_000))
    w = window_of(text, settings=settings)
    assert w.oversized
    item = item_of(w)
    batches, live, calls = asyncio.run(_temporary_path(w, item, settings))
    assert batches > accumulate.MAX_LIVE_ITEMS and calls > 0
    positions = frozenset().union(*(entry.positions for entry in live))
    assert positions == frozenset(range(1, batches + 1))  # every Batch accounted for
    final = tmp.final_request(live, item, settings)
    evo = tmp.parse_final(answer(final), w, live, item)
    assert len(evo.creates) == 1
    assert evo.creates[0].sources == (w.sources[0].ref,)  # lineage: exactly that Source


def test_an_update_whose_target_leaves_no_room_fails_closed() -> None:
    # the reduced temporaries plus the complete target never fit: final_request stays None
    settings = ProcessingSettings(context_window_tokens=12_000, max_output_tokens=256)
    big = revision("topic_art_big", "Big", "S" * 2048, "D" * 32768)
    text = " ".join(f"word{i}" for i in range(12_000))
    w = window_of(text, settings=settings)
    item = item_of(w, big)
    _, live, _ = asyncio.run(_temporary_path(w, item, settings))
    assert len(live) == 1  # reduced as far as it goes, then stopped (no loop)
    assert tmp.final_request(live, item, settings) is None  # -> work_item_over_budget
