"""Properties of the Work Planner and the Item Evolver (Topic Memory RFC, "Work Planner
and direct Work Items"): for arbitrary Probes, history handles and plan outputs (valid
and invalid), ``parse_plan`` accepts exactly the partitions that obey the Work Item
rules; an accepted plan puts every Probe in exactly one Item, gives each historical
Head to at most one Item, binds every UPDATE Item to a given server-held head and no
CREATE Item to any, and gives each Item the union of its Probes' evidence ids. The
Item Evolver accepts exactly the Item's own evidence and binds only the Item's
target."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.topic_windows import revision, window_of

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic import planner, stages
from powercontext.core.topic.history import HistoryCandidate
from powercontext.core.topic.models import TopicHit
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Probe

W = window_of(*(f"# Source {i}\n\nText {i}." for i in range(1, 6)))
IDS = [s.evidence_id for s in W.sources]
HEADS = [revision(f"topic_art_{c}", f"Topic {c}") for c in "abcde"]

PlanItem = tuple[str, Any, list[str]]


@st.composite
def probes(draw: st.DrawFn) -> tuple[Probe, ...]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        ids = draw(st.lists(st.sampled_from(IDS), min_size=1, unique=True))
        out.append(Probe(f"query {i}", tuple(ids), W.refs(ids, "evidence_ids")))
    return tuple(out)


@st.composite
def valid_plan(draw: st.DrawFn, n: int, k: int) -> list[PlanItem]:
    """A partition of p1..pn into Items, each UPDATE on its own handle of h1..hk."""
    ids = draw(st.permutations([f"p{i}" for i in range(1, n + 1)]))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    groups = [ids[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    free = draw(st.permutations([f"h{i}" for i in range(1, k + 1)]))
    out: list[PlanItem] = []
    for group in groups:
        if free and draw(st.booleans()):
            out.append(("update", free.pop(), group))
        else:
            out.append(("create", None, group))
    return out


CHANGES = ("valid", "arbitrary", "op", "target", "unknown", "drop", "add", "empty", "split",
           "extra")


@st.composite
def any_plan(draw: st.DrawFn, n: int, k: int, change: str) -> list[PlanItem]:
    """A well-typed plan output: ``valid``, ``arbitrary``, or a valid one with one
    ``change`` (most of them break a rule)."""
    plan_ids = [f"p{i}" for i in range(1, n + 2)]           # one unknown Probe id
    handles = [f"h{i}" for i in range(1, k + 2)] + ["topic_art_a"]  # unknown targets
    if change == "arbitrary":
        return draw(st.lists(st.tuples(
            st.sampled_from(["create", "update"]),
            st.one_of(st.none(), st.sampled_from(handles)),
            st.lists(st.sampled_from(plan_ids), max_size=n + 1)), max_size=n + 1))
    items = draw(valid_plan(n, k))
    if change == "valid":
        return items
    i = draw(st.integers(0, len(items) - 1))
    op, target, members = items[i]
    if change == "op":
        items[i] = ("create" if op == "update" else "update", target, members)
    elif change == "target":
        items[i] = (op, draw(st.one_of(st.none(), st.sampled_from(handles))), members)
    elif change == "unknown":
        items[i] = ("update", draw(st.sampled_from(handles[k:])), members)
    elif change == "drop":
        items[i] = (op, target, members[:-1])
    elif change == "add":
        items[i] = (op, target, [*members, draw(st.sampled_from(plan_ids))])
    elif change == "empty":
        items.append(("create", None, []))
    elif change == "split" and len(members) > 1:
        # a Topic's Probes split across two Items (the same target twice for an UPDATE)
        items[i] = (op, target, members[:-1])
        items.append((op, target, members[-1:]))
    else:
        items.append(("update", target, [draw(st.sampled_from(plan_ids))]))
    return items


def obeys(items: list[PlanItem], n: int, handles: dict[str, Any]) -> bool:
    """The Work Item rules, stated directly."""
    listed = [m for _, _, members in items for m in members]
    targets = [t for op, t, _ in items if op == "update"]
    return (sorted(listed) == sorted(f"p{i}" for i in range(1, n + 1))
            and len(set(listed)) == len(listed)
            and all(members for _, _, members in items)
            and all(t in handles for t in targets)
            and len(set(targets)) == len(targets)
            and all(t is None for op, t, _ in items if op == "create"))


def text_of(items: list[PlanItem]) -> str:
    return json.dumps({"items": [{"operation": op, "target": t, "probes": ps}
                                 for op, t, ps in items]})


@pytest.mark.parametrize("change", CHANGES)
@given(data=st.data(), ps=probes(), k=st.integers(0, len(HEADS)))
def test_parse_plan_accepts_exactly_the_plans_that_obey_the_rules(change, data, ps, k):
    handles = stages.history_handles(HEADS[:k])
    items = data.draw(any_plan(len(ps), k, change))
    try:
        out = planner.parse_plan(text_of(items), W, ps, handles)
    except TopicProcessingError as exc:
        assert exc.code == planner.CODE_PLAN_INVALID and exc.stage == "plan"
        assert not obeys(items, len(ps), handles)
        return
    assert obeys(items, len(ps), handles)
    by_id = planner.probe_handles(ps)
    # every Probe in exactly one Item, in the order the plan lists them
    assert [p for item in out for p in item.probes] == [by_id[m] for _, _, ms in items
                                                        for m in ms]
    assert sorted(id(p) for item in out for p in item.probes) == sorted(id(p) for p in ps)
    targets = [item.target.ref for item in out if item.target is not None]
    assert len(set(targets)) == len(targets)
    heads = {r.ref for r in handles.values()}
    for item, (op, target, _) in zip(out, items, strict=True):
        assert item.operation == op
        if op == "update":
            assert item.target is handles[target] and item.target.ref in heads
        else:
            assert item.target is None
        union = {e for p in item.probes for e in p.evidence_ids}
        assert item.evidence_ids == tuple(i for i in IDS if i in union)
        assert [s.evidence_id for s in planner.item_sources(W, item)] == list(item.evidence_ids)


@given(st.data(), probes(), st.integers(0, len(HEADS)),
       st.sampled_from(["artifact_id", "revision", "op"]))
def test_an_extra_field_is_never_accepted(data, ps, k, extra):
    handles = stages.history_handles(HEADS[:k])
    items = data.draw(valid_plan(len(ps), k))
    value = json.loads(text_of(items))
    at = data.draw(st.integers(0, len(items) - 1))
    value["items"][at][extra] = "topic_art_a"
    try:
        planner.parse_plan(json.dumps(value), W, ps, handles)
    except TopicProcessingError as exc:
        assert exc.code == stages.CODE_OUTPUT_INVALID
    else:
        raise AssertionError("a plan Item with an extra field was accepted")


@given(st.data(), probes(), st.integers(0, len(HEADS)),
       st.lists(st.sampled_from([*IDS, "s9", "x"]), max_size=4))
def test_the_item_evolver_binds_only_the_items_target_and_evidence(data, ps, k, cited):
    handles = stages.history_handles(HEADS[:k])
    items = planner.parse_plan(text_of(data.draw(valid_plan(len(ps), k))), W, ps, handles)
    item = data.draw(st.sampled_from(items))
    out = json.dumps({"topic": {"title": "New", "summary": "S.", "detail": "D.",
                                "evidence_ids": cited}})
    ok = bool(cited) and len(set(cited)) == len(cited) and set(cited) <= set(item.evidence_ids)
    try:
        evo = planner.parse_item(out, W, item)
    except TopicProcessingError as exc:
        assert exc.code == stages.CODE_OUTPUT_INVALID and exc.stage == "evolve"
        assert not ok
        return
    assert ok
    refs = W.refs(cited, "e")
    if item.target is None:
        (create,) = evo.creates
        assert not evo.updates and create.sources == refs
    else:
        (update,) = evo.updates
        assert not evo.creates and update.base == item.target.ref and update.sources == refs


# ---------------------------------------------------------------- the deterministic provider

_words = st.lists(st.sampled_from(["deploy", "Deploy", "pipeline", "notes", "ÉTÉ", "été",
                                   "x1", "beta", "_", "日本"]), min_size=0, max_size=4)


@st.composite
def wild_probes(draw: st.DrawFn) -> tuple[Probe, ...]:
    out = []
    for _ in range(draw(st.integers(1, 8))):
        ids = draw(st.lists(st.sampled_from(IDS), min_size=1, unique=True))
        query = " ".join(draw(_words)) + draw(st.sampled_from(["", " !", " \"q\\"]))
        out.append(Probe(query.strip() or "?", tuple(ids), W.refs(ids, "evidence_ids")))
    return tuple(out)


@given(wild_probes(), st.lists(_words.map(" ".join), max_size=5), st.data())
def test_deterministic_plan_and_item_answers_pass_the_planner_checks(ps, titles, data):
    """The deterministic provider's plan (a Probe to the UPDATE Item of the Topic its
    search found first, else of the history Topic with its title, else to the Item of
    its Source's other Probes or a CREATE Item of its own) always passes parse_plan,
    with the rule that Probes that found the same Topic share one Item, and its Item
    answers parse_item."""
    model = DeterministicTopicModel()
    heads = [revision(f"topic_art_{i}", t or "untitled", "S.", f"Old {i}.")
             for i, t in enumerate(titles)]
    candidates = [HistoryCandidate(h.ref, 80.0, TopicHit(h.ref, h.content.title, "S.", None,
                                                         0.03, ("topic_fts",)), (0,))
                  for h in heads]
    found = [data.draw(st.sampled_from([None, *(c.ref for c in candidates)])) for _ in ps]
    handles = stages.history_handles(heads)
    request = planner.plan_request(W, ps, candidates, ProcessingSettings(), found)
    assert request is not None
    shown = planner.found_handles(candidates, found, len(ps))
    items = planner.parse_plan(model.answer(request), W, ps, handles, shown)
    assert sorted(id(p) for i in items for p in i.probes) == sorted(id(p) for p in ps)
    for item in items:
        for p in item.probes:
            hit = shown[ps.index(p)]
            if hit is not None:
                assert item.target is handles[hit]
            elif any(" ".join(p.query.casefold().split()).rstrip(".") ==
                     " ".join(h.content.title.casefold().split()).rstrip(".") for h in heads):
                assert item.target is not None
        req = planner.item_request(W, item, ProcessingSettings())
        assert req is not None
        evo = planner.parse_item(model.answer(req), W, item)
        assert len(evo.creates) + len(evo.updates) + evo.noops == 1
        for u in evo.updates:
            assert u.base == item.target.ref
