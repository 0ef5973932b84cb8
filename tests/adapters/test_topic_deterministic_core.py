"""The ``deterministic`` provider's part-3 answers pass the core's OWN request builders and
parsers (core.topic.planner, .temporary, .reconcile, .accumulate) whenever the request
fits: whatever the Sources (astral characters, quotes, backslashes, control characters)
and history, nothing it says is refused (TOPIC-MEMORY.md, "Providers"; design
"Deterministic provider")."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.topic_windows import revision, window_of

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic import accumulate, planner, reconcile, stages, temporary
from powercontext.core.topic.accumulate import Live, TemporaryTopic
from powercontext.core.topic.content import make_content
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.history import HistoryCandidate
from powercontext.core.topic.models import TopicHit, TopicRevision
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Evolution, TopicCreate, TopicUpdate
from powercontext.core.topic.window import Window, estimate_tokens

MODEL = DeterministicTopicModel()
SETTINGS = ProcessingSettings()


def run(req: StageRequest | None) -> str:
    assert req is not None
    out = asyncio.run(MODEL.generate(req)).output_text
    assert out == asyncio.run(DeterministicTopicModel().generate(req)).output_text
    return out


def candidate(head: TopicRevision) -> HistoryCandidate:
    hit = TopicHit(head.ref, head.content.title, head.content.summary, "snippet", 0.03,
                   ("topic_fts",))
    return HistoryCandidate(head.ref, 90.0, hit, (0,))


def plan(w: Window, heads: list[TopicRevision]) -> tuple[planner.WorkItem, ...]:
    probes = stages.parse_probes(run(stages.probe_request(w.sources, SETTINGS)), w)
    req = planner.plan_request(w, probes, [candidate(h) for h in heads], SETTINGS)
    return planner.parse_plan(run(req), w, probes, stages.history_handles(heads))


def test_plan_and_items_update_the_matching_history_topic_and_create_the_rest() -> None:
    w = window_of("# Deploy pipeline\n\nThe pipeline runs nightly.",
                  "# Notes\n\nUnrelated notes.")
    heads = [revision("topic_art_ddd", "Deploy pipeline", "How.", "Old detail.")]
    items = plan(w, heads)
    assert [(i.operation, i.target, i.evidence_ids) for i in items] == [
        ("update", heads[0], ("s1",)), ("create", None, ("s2",))]
    upd = planner.parse_item(run(planner.item_request(w, items[0], SETTINGS)), w, items[0])
    (u,) = upd.updates
    assert u.base == heads[0].ref and u.sources == (w.sources[0].ref,)
    assert u.content.detail == "Old detail.\n\nThe pipeline runs nightly."
    new = planner.parse_item(run(planner.item_request(w, items[1], SETTINGS)), w, items[1])
    (c,) = new.creates
    assert c.content.title == "Notes" and c.sources == (w.sources[1].ref,)


_texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1,
                 max_size=200).filter(lambda t: t.strip())


@given(st.lists(_texts, min_size=1, max_size=5), st.lists(_texts, max_size=3))
def test_plan_and_item_answers_always_pass_the_planner_checks(contents: list[str],
                                                              titles: list[str]) -> None:
    try:
        w = window_of(*contents)
        heads = [revision(f"topic_art_{i:03d}", t[:256]) for i, t in enumerate(titles)]
    except InvalidInputError:
        return
    probes = stages.parse_probes(run(stages.probe_request(w.sources, SETTINGS)), w)
    if not probes:
        return
    items = plan(w, heads)
    for item in items:
        evo = planner.parse_item(run(planner.item_request(w, item, SETTINGS)), w, item)
        refs = {w.sources[int(e[1:]) - 1].ref for e in item.evidence_ids}
        for op in (*evo.creates, *evo.updates):
            assert set(op.sources) <= refs


# ---------------------------------------------------------------------- temporary path

def temporaries(w: Window, item: planner.WorkItem, settings: ProcessingSettings,
                budget: int) -> list[TemporaryTopic]:
    """The temporaries of the Item's Batches for an accumulator of input budget
    ``budget`` (max_result_chars and the item-token limit as the pipeline derives them)."""
    max_chars = accumulate.max_result_chars(budget)
    max_tokens = budget // accumulate.RESULT_FRACTION
    out = []
    for batch in temporary.source_batches(w, item, settings, max_chars):
        req = temporary.temporary_request(batch, item, settings, max_chars)
        t = temporary.parse_temporary(run(req), w, batch, max_tokens)
        if t is not None:
            out.append(t)
    return out


HOSTILE = st.text(st.sampled_from(['"', "\\", "\x01", "\x1f", "\n", "a", " ", "é",
                                   "\U0001f600", "\U00010000", "#", "."]),
                  min_size=1, max_size=3_000).filter(lambda t: t.strip())


@given(HOSTILE, st.integers(2_000, 10_000))
def test_temporaries_of_a_fragmented_hostile_source_pass_parse_temporary(
        text: str, budget: int) -> None:
    settings = ProcessingSettings(context_window_tokens=2_500, max_output_tokens=200)
    try:
        w = window_of(text, settings=ProcessingSettings())
    except InvalidInputError:
        return
    item = planner.WorkItem("create", None, (), ("s1",))
    temps = temporaries(w, item, settings, budget)
    for t in temps:
        assert t.evidence_ids == ("s1",)
        assert accumulate.item_tokens(t) <= budget // accumulate.RESULT_FRACTION


def test_a_large_source_goes_through_batches_temporaries_and_the_final_create() -> None:
    settings = ProcessingSettings(context_window_tokens=4_000, max_output_tokens=300)
    body = "\n\n".join(f"Paragraph {i} about the build \"cache\" and C:\\path." for i in
                       range(300))
    w = window_of("# Build cache\n\n" + body)
    item = planner.WorkItem("create", None, (), ("s1",))
    temps = temporaries(w, item, settings, 8_000)
    assert len(temps) >= 3
    assert temps[0].content.title == "Build cache"
    assert "\\path" in temps[1].content.detail  # the fragment's JSON escapes undone
    live = [Live(t, frozenset({i}), estimate_tokens(canonical.canonical_dumps({
        "title": t.content.title, "summary": t.content.summary, "detail": t.content.detail,
        "evidence_ids": list(t.evidence_ids)}).decode())) for i, t in enumerate(temps[:3], 1)]
    evo = temporary.parse_final(run(temporary.final_request(live, item, settings)), w, live,
                                item)
    (c,) = evo.creates
    assert c.content.title == "Build cache" and c.sources == (w.sources[0].ref,)
    head = revision("topic_art_bbb", "Build cache", "S.", temps[0].content.detail)
    upd_item = planner.WorkItem("update", head, (), ("s1",))
    evo = temporary.parse_final(run(temporary.final_request(live, upd_item, settings)), w,
                                live, upd_item)
    (u,) = evo.updates
    assert u.base == head.ref and u.content.detail.startswith(temps[0].content.detail)
    assert temps[1].content.detail in u.content.detail
    only_old = live[:1]
    assert temporary.parse_final(run(temporary.final_request(only_old, upd_item, settings)),
                                 w, only_old, upd_item) == Evolution((), (), 1)


# ---------------------------------------------------------------------- reconcile

D = revision("topic_art_ddd", "Deploy pipeline", "How we deploy.", "Deploys run nightly.")


def create(title: str, detail: str, w: Window, i: int) -> TopicCreate:
    return TopicCreate(make_content(title, "Summary.", detail), (w.sources[i].ref,))


@pytest.mark.parametrize("with_update", [False, True])
def test_a_target_group_folds_every_create_into_one_update(with_update: bool) -> None:
    w = window_of("a", "b", "c")
    updates: tuple[TopicUpdate, ...] = ()
    if with_update:
        updates = (TopicUpdate(D.ref, make_content("Deploy pipeline", "How.",
                                                   "Deploys run nightly.\n\nNew step."),
                               (w.sources[2].ref,)),)
    evo = Evolution((create("Deploy pipeline", "Deploys use canary.", w, 0),
                     create("Deploy again", "Deploys run nightly.", w, 1)), updates, 0)
    group = reconcile.RelatedGroup(D, 0 if with_update else None, (0, 1))
    decision = reconcile.parse_reconcile(run(reconcile.reconcile_request(group, evo,
                                                                         SETTINGS)), group, evo)
    assert decision.folded == (0, 1)
    final = reconcile.apply_reconciliations(evo, [decision])
    (u,) = final.updates
    assert not final.creates and u.base == D.ref
    assert "Deploys use canary." in u.content.detail
    assert set(u.sources) == {s.ref for s in w.sources[:3 if with_update else 2]}


def test_a_create_only_group_becomes_one_create() -> None:
    w = window_of("a", "b")
    evo = Evolution((create("Cache", "One.", w, 0), create("cache", "Two.", w, 1)), (), 0)
    group = reconcile.RelatedGroup(None, None, (0, 1))
    decision = reconcile.parse_reconcile(run(reconcile.reconcile_request(group, evo,
                                                                         SETTINGS)), group, evo)
    final = reconcile.apply_reconciliations(evo, [decision])
    (c,) = final.creates
    assert c.content.title == "Cache" and c.content.detail == "One.\n\nTwo."
    assert set(c.sources) == {s.ref for s in w.sources}
