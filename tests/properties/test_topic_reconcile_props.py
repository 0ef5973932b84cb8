"""Properties of second retrieval and related-group reconciliation (Topic Memory RFC,
"Second retrieval and related-group reconciliation"; issue 15, "Done means": no
identity merge).

Over arbitrary Window evolutions, second-retrieval candidates and valid reconcile
decisions (model outputs that pass :func:`parse_reconcile`): no two UPDATEs of one
Topic, every UPDATE based on a head given, an UPDATE of one historical Topic never
becomes an UPDATE of another (two identities never merge), every original CREATE ends
in exactly one final operation with its whole lineage (or is absorbed by a NOOP of its
target), and the final lineage union is the input union (less what a NOOP absorbed).
Every original operation carries a private "tag" SourceRef so the test traces it
without reimplementing the function under test."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.models import SourceRef
from powercontext.core.query import MAX_QUERY_CHARS, MAX_QUERY_TERMS, search_terms
from powercontext.core.topic import reconcile as rc
from powercontext.core.topic.content import make_content
from powercontext.core.topic.history import HistoryCandidate
from powercontext.core.topic.models import TopicHit, TopicMemoryContent, TopicRef, TopicRevision
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Evolution, TopicCreate, TopicUpdate

IDS = ["a", "b", "B", "z", "é", "\ue000", "\U00010000", "aa", "a0"]
HEADS = {f"topic_art_{c}": TopicRevision(
    "project:x", TopicRef(f"topic_art_{c}", n + 1),
    make_content(f"Head {n}", "Head summary.", f"Head detail {n}."), "0" * 64, (), None,
    "2026-12-01T00:00:00.000000Z") for n, c in enumerate(IDS)}
TITLES = ["Deploys", "deploys", " DEPLOYS ", "Rate limits", "rate  limits", "Other"]
SHARED = [SourceRef(f"src_shared_{n}", f"{n:064x}") for n in range(6)]


def tag(kind: str, n: int) -> SourceRef:
    return SourceRef(f"src_{kind}_{n:02d}", "f" * 64)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Evolution, list[list[HistoryCandidate]],
                                     ProcessingSettings]:
    n_creates = draw(st.integers(0, 12))
    creates = tuple(TopicCreate(
        make_content(draw(st.sampled_from(TITLES)), "S.", f"Detail {i}."),
        canonical.sort_source_refs([tag("c", i), *draw(st.lists(st.sampled_from(SHARED),
                                                                max_size=2))]))
        for i in range(n_creates))
    updated = draw(st.lists(st.sampled_from(sorted(HEADS)), unique=True, max_size=4))
    updates = tuple(TopicUpdate(
        HEADS[aid].ref, make_content(HEADS[aid].content.title, "Changed.", f"New {j}."),
        canonical.sort_source_refs([tag("u", j), *draw(st.lists(st.sampled_from(SHARED),
                                                                max_size=2))]))
        for j, aid in enumerate(updated))
    second = []
    for _ in creates:
        picked = draw(st.lists(st.sampled_from(sorted(HEADS)), unique=True, max_size=4))
        second.append([HistoryCandidate(
            HEADS[aid].ref, draw(st.sampled_from([0.0, 50.0, 69.9, 70.0, 85.0, 100.0])),
            TopicHit(HEADS[aid].ref, "t", "s", None, 0.0, ("topic_fts",)), (0,))
            for aid in picked])
    threshold = draw(st.sampled_from([0.0, 70.0, 85.0, 100.0]))
    return (Evolution(creates, updates, draw(st.integers(0, 3))), second,
            ProcessingSettings(history_rrf_threshold=threshold))


@st.composite
def outputs(draw: st.DrawFn, group: rc.RelatedGroup) -> str:
    """A reconcile output that passes the parser: null, or a merged TOPIC folding a
    subset of the candidates (at least one with a target, two without); with a target
    sometimes exactly the head's content (a NOOP)."""
    ids = list(rc.candidate_ids(group))
    least = 1 if group.target is not None else 2
    if draw(st.booleans()) or len(ids) < least:
        return json.dumps({"merged": None})
    cited = draw(st.lists(st.sampled_from(ids), unique=True, min_size=least))
    if group.target is not None and draw(st.integers(0, 3)) == 0:
        c = group.target.content
    else:
        c = TopicMemoryContent("Merged", "Merged summary.", "Merged detail.")
    return json.dumps({"merged": {"title": c.title, "summary": c.summary,
                                  "detail": c.detail, "evidence_ids": cited}})


def _lineage(ops: Any) -> set[SourceRef]:
    return {r for op in ops for r in op.sources}


@given(cases(), st.data())
def test_reconciliation_never_merges_identities_and_keeps_every_lineage(
        case: Any, data: st.DataObject) -> None:
    evolution, second, settings = case
    groups = rc.related_groups(evolution, second, HEADS, settings)
    decisions = [rc.parse_reconcile(data.draw(outputs(g)), g, evolution) for g in groups]
    final = rc.apply_reconciliations(evolution, decisions)

    heads = {h.ref for h in HEADS.values()}
    aids = [u.base.artifact_id for u in final.updates]
    assert len(aids) == len(set(aids))                       # no two UPDATEs of one Topic
    assert all(u.base in heads for u in final.updates)      # every base a head given
    assert all(u.content != HEADS[u.base.artifact_id].content for u in final.updates)

    # what a NOOP (merged content equal to the head) absorbed
    absorbed_creates: set[int] = set()
    absorbed_updates: set[int] = set()
    for d in decisions:
        g = d.group
        if g.target is not None and d.content == g.target.content:
            absorbed_creates.update(d.folded)
            if g.update is not None:
                absorbed_updates.add(g.update)

    ops = [*final.creates, *final.updates]
    for i, create in enumerate(evolution.creates):
        holders = [op for op in ops if tag("c", i) in op.sources]
        if i in absorbed_creates:
            assert holders == []
        else:
            assert len(holders) == 1                         # exactly one final operation
            assert set(create.sources) <= set(holders[0].sources)
    for j, update in enumerate(evolution.updates):
        holders = [op for op in ops if tag("u", j) in op.sources]
        if j in absorbed_updates:
            assert holders == []
            continue
        # an UPDATE of X stays one UPDATE of X: never a CREATE, never another identity
        assert len(holders) == 1 and isinstance(holders[0], TopicUpdate)
        assert holders[0].base == update.base
        assert set(update.sources) <= set(holders[0].sources)
    for u in final.updates:                                   # no UPDATE holds two identities
        owners = {evolution.updates[j].base.artifact_id for j in range(len(evolution.updates))
                  if tag("u", j) in u.sources}
        assert owners <= {u.base.artifact_id}
    touched = {u.base.artifact_id for u in evolution.updates}
    kept = {evolution.updates[j].base.artifact_id for j in absorbed_updates}
    assert touched - kept <= set(aids)                        # identities never shrink into one

    absorbed = [evolution.creates[i] for i in absorbed_creates] + \
        [evolution.updates[j] for j in absorbed_updates]
    inputs = _lineage([*evolution.creates, *evolution.updates])
    assert _lineage(ops) <= inputs
    assert inputs - _lineage(absorbed) <= _lineage(ops)
    if not absorbed:
        assert _lineage(ops) == inputs                        # the final union is the input's
    assert len(ops) <= len(evolution.creates) + len(evolution.updates)
    assert final.noops == evolution.noops + sum(
        1 for d in decisions if d.group.target is not None and d.content == d.group.target.content)


@given(cases())
def test_related_groups_are_bounded_disjoint_and_hold_at_most_one_historical_topic(
        case: Any) -> None:
    evolution, second, settings = case
    groups = rc.related_groups(evolution, second, HEADS, settings)
    seen: set[int] = set()
    firsts = [g.creates[0] for g in groups]
    assert firsts == sorted(firsts)
    update_of = {u.base.artifact_id: j for j, u in enumerate(evolution.updates)}
    for g in groups:
        assert 1 <= len(g.creates) <= rc.MAX_GROUP_CREATES
        assert list(g.creates) == sorted(set(g.creates))
        assert not seen & set(g.creates)
        seen.update(g.creates)
        if g.target is None:
            assert g.update is None and len(g.creates) >= 2
            keys = {" ".join(evolution.creates[i].content.title.casefold().split())
                    for i in g.creates}
            assert len(keys) == 1
            assert all(c.score < settings.history_rrf_threshold
                       for i in g.creates for c in second[i])
            continue
        aid = g.target.ref.artifact_id
        assert g.target is HEADS[aid]
        assert g.update == update_of.get(aid)
        for i in g.creates:                                    # each joined its best strong hit
            strong = [c for c in second[i] if c.score >= settings.history_rrf_threshold]
            best = min(strong, key=lambda c: (-c.score, c.ref.artifact_id.encode()))
            assert best.ref.artifact_id == aid
    # deterministic: the order of each candidate list does not matter
    flipped = [list(reversed(s)) for s in second]
    assert rc.related_groups(evolution, flipped, HEADS, settings) == groups


PIECES = [*"ab z-'._ \t\n", "\u00e9", "e\u0301", "\u6f22", "\u5b57", "\U0001f600",
          "\U00010400", "\u0e01", "\u0e34", "the", "and", "x" * 300]
TEXT = st.lists(st.sampled_from(PIECES), max_size=400).map("".join)


@given(st.lists(TEXT, min_size=3, max_size=3).map(lambda t: [s * 20 for s in t]),
       st.sampled_from([analyzers.V1, analyzers.V1_PORTER]))
def test_second_queries_stay_within_the_search_bounds(texts: list[str],
                                                      analyzer: Any) -> None:
    title, summary, detail = (s[:limit].strip() or "x" for s, limit in
                              zip(texts, (256, 2048, 32768), strict=True))
    try:
        content = make_content(title, summary, detail)
    except Exception:  # a field that is blank after NFC + trimming
        return
    queries = rc.second_queries(content, analyzer)
    assert len(set(queries)) == len(queries)
    searched = {t for q in queries for t in search_terms(q, analyzer)}
    whole = analyzer.query_terms(f"{content.title} {content.summary} {content.detail}")
    # every term of the whole Topic but those of a run too long for one query (halved)
    assert {t for t in whole if not t.startswith(("h_", "j_", "jx_"))} <= searched
    stream = "".join(f"{content.title}{content.summary}{content.detail}".split())
    for q in queries:
        assert len(q) <= MAX_QUERY_CHARS
        assert 1 <= len(search_terms(q, analyzer)) <= MAX_QUERY_TERMS
        assert q == q.strip() and "  " not in q
        at = 0  # made of the content's pieces, in order (pieces adding nothing skipped)
        for piece in q.split():
            found = stream.find(piece, at)
            assert found >= 0
            at = found + len(piece)
    if not any(analyzer.query_terms(f) for f in (content.title, content.summary,
                                                  content.detail)):
        assert queries == ()


@given(cases(), st.sampled_from([ProcessingSettings(),
                                 ProcessingSettings(context_window_tokens=3000,
                                                    max_output_tokens=512)]))
def test_the_deterministic_providers_reconcile_answers_pass_the_parser(
        case: Any, sizes: ProcessingSettings) -> None:
    evolution, second, settings = case
    model = DeterministicTopicModel(sizes.context_window_tokens)
    decisions = []
    for group in rc.related_groups(evolution, second, HEADS, settings):
        request = rc.reconcile_request(group, evolution, sizes)
        if request is None:
            continue
        decision = rc.parse_reconcile(model.answer(request), group, evolution)
        # it folds the candidates of its subject: every one with the target's title
        if group.target is not None:
            same = {i for i in group.creates if evolution.creates[i].content.title
                    == group.target.content.title}
            assert same <= set(decision.folded)
        decisions.append(decision)
    final = rc.apply_reconciliations(evolution, decisions)
    aids = [u.base.artifact_id for u in final.updates]
    assert len(aids) == len(set(aids))
