"""core.topic.reconcile: second retrieval queries, related groups, the reconcile stage and
the final operations (Topic Memory RFC, "Second retrieval and related-group
reconciliation"; issue 15, item 4 and "Bad input and faults")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.topic_windows import revision, schema_objects

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError, TopicProcessingError
from powercontext.core.models import SourceRef
from powercontext.core.query import search_terms
from powercontext.core.topic import reconcile as rc
from powercontext.core.topic.content import MAX_DETAIL_CHARS, make_content
from powercontext.core.topic.history import HistoryCandidate
from powercontext.core.topic.models import TopicHit, TopicMemoryContent, TopicRef
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import SYSTEM_PROMPT, Evolution, TopicCreate, TopicUpdate

SETTINGS = ProcessingSettings()
D = revision("topic_art_ddd", "Deploy pipeline", "How we deploy.", "Deploys run nightly.")
E = revision("topic_art_eee", "Error budget", "SLO notes.", "99.9% monthly.")
HEADS = {D.ref.artifact_id: D, E.ref.artifact_id: E}


def ref(n: int) -> SourceRef:
    return SourceRef(f"src_{n:03d}", f"{n:064x}")


def create(title: str, *sources: int, detail: str = "Detail.") -> TopicCreate:
    return TopicCreate(make_content(title, "Summary.", detail),
                       canonical.sort_source_refs(ref(n) for n in sources))


def cand(head: Any, score: float) -> HistoryCandidate:
    hit = TopicHit(head.ref, head.content.title, head.content.summary, None, 0.0,
                   ("topic_fts",))
    return HistoryCandidate(head.ref, score, hit, (0,))


def merged(title: str = "Deploy pipeline", ids: Any = ("c1", "c2"), **extra: Any) -> str:
    return json.dumps({"merged": {"title": title, "summary": "All of it.",
                                  "detail": "Everything we know.",
                                  "evidence_ids": list(ids), **extra}})


def invalid(fn: Any, *args: Any) -> TopicProcessingError:
    with pytest.raises(TopicProcessingError) as info:
        fn(*args)
    assert info.value.code == "model_output_invalid"
    assert info.value.stage == "reconcile"
    assert not info.value.terminal
    return info.value


# ---------------------------------------------------------------- second queries

def test_second_queries_read_title_summary_detail_in_order() -> None:
    content = make_content("Deploy pipeline", "How we deploy.", "Deploys run nightly.")
    assert rc.second_queries(content) == ("Deploy pipeline How we deploy. Deploys run nightly.",)


def test_a_content_without_terms_has_no_queries() -> None:
    assert rc.second_queries(make_content("...", "!!", "-- ?")) == ()


@pytest.mark.parametrize("detail", [
    " ".join(f"w{i:05d}" for i in range(5462))[:MAX_DETAIL_CHARS],  # 5,462 distinct words
    "x" * MAX_DETAIL_CHARS,                                          # one run, no white space
    "a-" * (MAX_DETAIL_CHARS // 2),                                  # one run, many joiners
    "\U0001f600\u6f22\u5b57" * (MAX_DETAIL_CHARS // 3),              # astral + CJK bigrams
])
def test_second_queries_of_a_32768_char_detail_stay_within_the_search_bounds(
        detail: str) -> None:
    content = make_content("Title words here", "A summary.", detail)
    assert len(content.detail) <= MAX_DETAIL_CHARS
    queries = rc.second_queries(content)
    assert len(queries) >= 1
    assert len(set(queries)) == len(queries)
    searched = {t for q in queries for t in search_terms(q)}
    whole = analyzers.get().query_terms(f"{content.title} {content.summary} {content.detail}")
    # the whole Topic: every term but those of a run too long for one query (halved)
    assert {t for t in whole if not t.startswith(("h_", "j_", "jx_"))} <= searched
    for q in queries:
        assert len(q) <= 8192
        assert 1 <= len(search_terms(q)) <= 64
    assert queries[0].startswith("Title words here A summary.")


def test_the_end_of_a_long_detail_is_searched_too() -> None:
    """Second retrieval reads the whole new Topic (Topic Memory RFC: "using the complete
    title + summary + detail"): a word only at the end of a 32,768-character detail is
    in a query (the first eight queries stopped near character 7,000)."""
    words = [f"w{i:05d}" for i in range(5_000)]
    detail = (" ".join(words) + " zebracrossing")[-MAX_DETAIL_CHARS:]
    queries = rc.second_queries(make_content("Title", "Summary.", detail))
    assert len(queries) > 8
    assert "zebracrossing" in queries[-1]


def test_each_later_query_searches_terms_not_searched_yet() -> None:
    """A piece whose terms an earlier query already searched is left out, so a long
    detail that repeats its words needs fewer queries (each one a search and, in a
    hybrid deployment, a reserved embedding request)."""
    words = [f"w{i:03d}" for i in range(100)]
    detail = " ".join([*words[:70], *words[:10], *words[70:]])
    queries = rc.second_queries(make_content("T", "S", detail))
    assert [q.split() for q in queries] == [["T", "S", *words[:64]], words[64:]]


def test_second_queries_cover_the_content_until_the_query_bound() -> None:
    words = [f"w{i:05d}" for i in range(200)]
    queries = rc.second_queries(make_content("Tango", "Sierra", " ".join(words)))
    # 64 distinct terms each: tango, sierra and 62 words, then 64 words per query
    assert " ".join(queries).split() == ["Tango", "Sierra", *words]
    assert [len(search_terms(q)) for q in queries] == [64, 64, 64, 10]


# ---------------------------------------------------------------- related groups

def test_two_creates_that_both_match_d_form_one_group_with_d() -> None:
    evo = Evolution((create("Deploys", 1), create("Nightly deploy", 2), create("Other", 3)),
                    (), 0)
    second = [[cand(D, 90.0)], [cand(D, 75.0), cand(E, 20.0)], [cand(E, 40.0)]]
    groups = rc.related_groups(evo, second, HEADS, SETTINGS)
    assert groups == (rc.RelatedGroup(D, None, (0, 1)),)


def test_a_create_that_strongly_hits_two_topics_joins_only_its_best() -> None:
    evo = Evolution((create("A", 1), create("B", 2)), (), 0)
    second = [[cand(D, 80.0), cand(E, 95.0)], [cand(D, 85.0), cand(E, 85.0)]]
    groups = rc.related_groups(evo, second, HEADS, SETTINGS)
    # CREATE 0 -> E (higher score); CREATE 1: tie -> UTF-8 smaller id (topic_art_ddd)
    assert groups == (rc.RelatedGroup(E, None, (0,)), rc.RelatedGroup(D, None, (1,)))
    for g in groups:  # never two historical Topics in one group
        assert g.target is not None


def test_the_windows_update_of_the_target_joins_its_group() -> None:
    up = TopicUpdate(D.ref, make_content("Deploy pipeline", "New.", "New detail."), (ref(9),))
    other = TopicUpdate(E.ref, make_content("Error budget", "New.", "New."), (ref(8),))
    evo = Evolution((create("Deploys", 1),), (other, up), 0)
    groups = rc.related_groups(evo, [[cand(D, 70.0)]], HEADS, SETTINGS)
    assert groups == (rc.RelatedGroup(D, 1, (0,)),)


def test_an_update_based_on_an_older_head_is_a_head_conflict() -> None:
    old = TopicRef(D.ref.artifact_id, D.ref.revision - 1)
    up = TopicUpdate(old, make_content("Deploy pipeline", "New.", "New."), (ref(9),))
    evo = Evolution((create("Deploys", 1),), (up,), 0)
    with pytest.raises(TopicProcessingError) as info:
        rc.related_groups(evo, [[cand(D, 99.0)]], HEADS, SETTINGS)
    assert info.value.code == "head_conflict" and info.value.stage == "reconcile"


def test_creates_without_a_strong_hit_group_by_normalised_title() -> None:
    evo = Evolution((create("Rate  limits", 1), create("Solo", 2), create("rate limits", 3),
                     create("RATE\tLIMITS", 4), create("Deploys", 5)), (), 0)
    second = [[cand(D, 69.9)], [], [], [], [cand(D, 70.0)]]
    groups = rc.related_groups(evo, second, HEADS, SETTINGS)
    assert groups == (rc.RelatedGroup(None, None, (0, 2, 3)), rc.RelatedGroup(D, None, (4,)))


def test_groups_are_bounded() -> None:
    n = rc.MAX_GROUP_CREATES + 3
    evo = Evolution(tuple(create("Same", i) for i in range(1, n + 1)), (), 0)
    groups = rc.related_groups(evo, [[cand(D, 100.0)]] * n, HEADS, SETTINGS)
    assert groups == (rc.RelatedGroup(D, None, tuple(range(rc.MAX_GROUP_CREATES))),)


def test_related_groups_refuse_bad_input() -> None:
    evo = Evolution((create("A", 1),), (), 0)
    with pytest.raises(InvalidInputError) as info:
        rc.related_groups(evo, [], HEADS, SETTINGS)
    assert info.value.field == "second"
    with pytest.raises(InvalidInputError) as info:
        rc.related_groups(evo, [[cand(D, 90.0)]], {}, SETTINGS)
    assert info.value.field == "heads"


def test_no_create_no_groups() -> None:
    up = TopicUpdate(D.ref, make_content("Deploy pipeline", "New.", "New."), (ref(9),))
    assert rc.related_groups(Evolution((), (up,), 1), [], HEADS, SETTINGS) == ()


# ---------------------------------------------------------------- request, schema

_objects = schema_objects


def test_reconcile_schema_is_strict_and_lists_the_candidate_ids() -> None:
    schema = rc.reconcile_schema(("c1", "c2"), 2)
    for obj in _objects(schema):
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    body = schema["properties"]["merged"]["anyOf"][1]
    assert schema["properties"]["merged"]["anyOf"][0] == {"type": "null"}
    assert body["properties"]["evidence_ids"]["items"]["enum"] == ["c1", "c2"]
    assert body["properties"]["evidence_ids"]["minItems"] == 2


def test_reconcile_request_shows_the_windows_update_as_the_target() -> None:
    up = TopicUpdate(D.ref, make_content("Deploy pipeline", "New.", "Updated detail."),
                     (ref(9),))
    evo = Evolution((create("Deploys", 1), create("Nightly", 2)), (up,), 0)
    req = rc.reconcile_request(rc.RelatedGroup(D, 0, (0, 1)), evo, SETTINGS)
    assert req is not None
    assert (req.stage, req.schema_name, req.system) == ("reconcile", "topic_reconcile",
                                                        SYSTEM_PROMPT)
    payload = json.loads(req.input_json)
    assert payload["target"] == {"title": "Deploy pipeline", "summary": "New.",
                                 "detail": "Updated detail."}
    assert [c["id"] for c in payload["candidates"]] == ["c1", "c2"]
    assert payload["candidates"][1]["title"] == "Nightly"
    assert json.loads(req.schema_json) == rc.reconcile_schema(("c1", "c2"), 1)
    assert req.input_json == canonical.canonical_dumps(payload, "input").decode()
    assert req.estimated_tokens <= SETTINGS.context_window_tokens
    # without the Window's UPDATE the head's content is shown
    req = rc.reconcile_request(rc.RelatedGroup(D, None, (0,)),
                               Evolution(evo.creates, (), 0), SETTINGS)
    assert req is not None and json.loads(req.input_json)["target"]["detail"] == \
        "Deploys run nightly."


def test_reconcile_request_is_none_when_it_does_not_fit() -> None:
    big = "word " * 6000
    evo = Evolution(tuple(create("Same", i, detail=big) for i in (1, 2)), (), 0)
    small = ProcessingSettings(context_window_tokens=4096, max_output_tokens=512)
    assert rc.reconcile_request(rc.RelatedGroup(None, None, (0, 1)), evo, small) is None


# ---------------------------------------------------------------- parsing

G2 = rc.RelatedGroup(None, None, (0, 2))
EVO3 = Evolution((create("Same", 1), create("Other", 2), create("same", 3)), (), 0)


def test_parse_reconcile_binds_candidate_ids_to_create_indexes() -> None:
    d = rc.parse_reconcile(merged(ids=("c2", "c1")), G2, EVO3)
    assert d.folded == (0, 2)
    assert d.content == TopicMemoryContent("Deploy pipeline", "All of it.",
                                           "Everything we know.")
    assert rc.parse_reconcile('{"merged": null}', G2, EVO3) == rc.Reconciliation(G2, None, ())


@pytest.mark.parametrize("text", [
    merged(target="h2"), merged(artifact_id="topic_art_eee"), merged(op="update"),
    json.dumps({"merged": None, "target": {"title": "E"}}),
    json.dumps({"merged": None, "artifact_id": "topic_art_eee"}),
])
def test_an_attempt_to_merge_two_historical_topics_is_refused(text: str) -> None:
    group = rc.RelatedGroup(D, None, (0, 2))
    err = invalid(rc.parse_reconcile, text, group, EVO3)
    assert "not allowed" in str(err)


@pytest.mark.parametrize("text", [
    "not json", '{"merged": null, "merged": null}', "{}", '{"merged": []}',
    merged(ids=()), merged(ids=("c3",)), merged(ids=("c1", "c1")), merged(ids=("s1", "c1")),
    merged(ids=("c1",)), merged(ids=[1, 2]), merged(title=""), merged(title="x" * 257),
    json.dumps({"merged": {"title": "T", "summary": "S", "detail": "D"}}),
])
def test_bad_reconcile_output_is_refused(text: str) -> None:
    invalid(rc.parse_reconcile, text, G2, EVO3)


def test_a_target_group_may_fold_one_candidate() -> None:
    d = rc.parse_reconcile(merged(ids=("c2",)), rc.RelatedGroup(D, None, (0, 2)), EVO3)
    assert d.folded == (2,)


# ---------------------------------------------------------------- applying decisions

def test_two_creates_that_both_match_historical_topic_d_become_one_update_of_d() -> None:
    evo = Evolution((create("Deploys", 1), create("Nightly deploy", 2), create("Other", 3)),
                    (), 0)
    second = [[cand(D, 90.0)], [cand(D, 80.0)], []]
    (group,) = rc.related_groups(evo, second, HEADS, SETTINGS)
    decision = rc.parse_reconcile(merged(), group, evo)
    final = rc.apply_reconciliations(evo, [decision])
    assert final.creates == (evo.creates[2],)
    (update,) = final.updates
    assert update.base == D.ref
    assert update.sources == (ref(1), ref(2))
    assert update.content.detail == "Everything we know."


def test_a_target_merge_replaces_the_windows_update_and_keeps_its_lineage() -> None:
    up = TopicUpdate(D.ref, make_content("Deploy pipeline", "New.", "New."), (ref(9),))
    keep = TopicUpdate(E.ref, make_content("Error budget", "New.", "New."), (ref(8),))
    evo = Evolution((create("Deploys", 1), create("Nightly", 2)), (up, keep), 2)
    group = rc.RelatedGroup(D, 0, (0, 1))
    final = rc.apply_reconciliations(evo, [rc.parse_reconcile(merged(ids=("c2",)), group,
                                                              evo)])
    assert final.creates == (evo.creates[0],)
    assert [u.base for u in final.updates] == [D.ref, E.ref]
    assert final.updates[0].sources == (ref(2), ref(9))
    assert final.updates[1] is keep
    assert final.noops == 2


def test_a_create_only_merge_is_one_create_at_the_first_folded_index() -> None:
    final = rc.apply_reconciliations(EVO3, [rc.parse_reconcile(merged(), G2, EVO3)])
    assert [c.content.title for c in final.creates] == ["Deploy pipeline", "Other"]
    assert final.creates[0].sources == (ref(1), ref(3))
    assert final.updates == ()


def test_merged_content_equal_to_the_head_is_a_noop_that_absorbs_the_creates() -> None:
    up = TopicUpdate(D.ref, make_content("Deploy pipeline", "New.", "New."), (ref(9),))
    evo = Evolution((create("Deploys", 1), create("Other", 2)), (up,), 0)
    same = json.dumps({"merged": {**{"title": D.content.title, "summary": D.content.summary,
                                     "detail": D.content.detail}, "evidence_ids": ["c1"]}})
    group = rc.RelatedGroup(D, 0, (0, 1))
    final = rc.apply_reconciliations(evo, [rc.parse_reconcile(same, group, evo)])
    assert final == Evolution((evo.creates[1],), (), 1)


def test_a_null_decision_keeps_everything() -> None:
    d = rc.parse_reconcile('{"merged": null}', G2, EVO3)
    assert rc.apply_reconciliations(EVO3, [d]) == EVO3
    assert rc.apply_reconciliations(EVO3, []) == EVO3


def test_overlapping_decisions_are_refused() -> None:
    content = make_content("T", "S", "D")
    a = rc.Reconciliation(rc.RelatedGroup(None, None, (0, 2)), content, (0, 2))
    b = rc.Reconciliation(rc.RelatedGroup(D, None, (2,)), content, (2,))
    c = rc.Reconciliation(rc.RelatedGroup(D, None, (1,)), content, (1,))
    d = rc.Reconciliation(rc.RelatedGroup(D, None, (0,)), None, ())
    for decisions in ([a, b], [b, c], [c, d, c], [a, a]):
        with pytest.raises(InvalidInputError) as info:
            rc.apply_reconciliations(EVO3, decisions)
        assert info.value.field.startswith("decisions[")
        assert "overlaps" in str(info.value)


@pytest.mark.parametrize("decision", [
    rc.Reconciliation(rc.RelatedGroup(None, None, (0, 2)), make_content("T", "S", "D"), (0,)),
    rc.Reconciliation(rc.RelatedGroup(None, None, (0, 2)), make_content("T", "S", "D"), (1, 2)),
    rc.Reconciliation(rc.RelatedGroup(None, None, (0, 2)), None, (0, 2)),
    rc.Reconciliation(rc.RelatedGroup(None, None, (0, 5)), make_content("T", "S", "D"), (0, 5)),
    rc.Reconciliation(rc.RelatedGroup(None, None, (2, 0)), make_content("T", "S", "D"), (0, 2)),
    rc.Reconciliation(rc.RelatedGroup(None, 0, (0, 2)), make_content("T", "S", "D"), (0, 2)),
    rc.Reconciliation(rc.RelatedGroup(D, 0, (0,)), make_content("T", "S", "D"), (0,)),
])
def test_decisions_that_do_not_fit_the_evolution_are_refused(decision: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        rc.apply_reconciliations(EVO3, [decision])
    assert info.value.field.startswith("decisions[0]")


def test_a_target_the_window_updates_outside_its_group_is_refused() -> None:
    up = TopicUpdate(D.ref, make_content("Deploy pipeline", "New.", "New."), (ref(9),))
    evo = Evolution(EVO3.creates, (up,), 0)
    decision = rc.Reconciliation(rc.RelatedGroup(D, None, (0,)), make_content("T", "S", "D"),
                                 (0,))
    with pytest.raises(InvalidInputError) as info:
        rc.apply_reconciliations(evo, [decision])
    assert info.value.field == "decisions[0].group.update"


# ---------------------------------------------------------------- with the deterministic provider

def test_deterministic_reconcile_folds_two_creates_into_one_update_of_d() -> None:
    evo = Evolution((create(D.content.title, 1, detail="Deploys moved to 02:00."),
                     create(D.content.title, 2, detail="Rollbacks are manual."),
                     create("Other", 3)), (), 0)
    second = [[cand(D, 90.0)], [cand(D, 80.0)], []]
    (group,) = rc.related_groups(evo, second, HEADS, SETTINGS)
    request = rc.reconcile_request(group, evo, SETTINGS)
    assert request is not None
    decision = rc.parse_reconcile(DeterministicTopicModel().answer(request), group, evo)
    final = rc.apply_reconciliations(evo, [decision])
    assert final.creates == (evo.creates[2],)
    (update,) = final.updates
    assert update.base == D.ref and update.sources == (ref(1), ref(2))
    assert update.content.title == D.content.title
    assert update.content.detail.startswith(D.content.detail)
    assert "Rollbacks are manual." in update.content.detail


def test_deterministic_reconcile_keeps_a_create_on_another_subject_apart() -> None:
    """A strong search hit is not a subject: the offline provider folds a CREATE into
    the hit Topic only when it belongs to it (same title, or half its subject terms),
    so a small Scope (where any shared word ranks first) does not fold everything into
    its first Topic."""
    evo = Evolution((create("Billing", 1, detail="Invoices are emailed nightly."),), (), 0)
    (group,) = rc.related_groups(evo, [[cand(D, 100.0)]], HEADS, SETTINGS)
    request = rc.reconcile_request(group, evo, SETTINGS)
    assert request is not None
    decision = rc.parse_reconcile(DeterministicTopicModel().answer(request), group, evo)
    assert rc.apply_reconciliations(evo, [decision]) == evo


def test_deterministic_reconcile_of_nothing_new_is_a_noop_absorbing_the_create() -> None:
    evo = Evolution((create("Deploys", 1, detail=D.content.detail),), (), 0)
    (group,) = rc.related_groups(evo, [[cand(D, 90.0)]], HEADS, SETTINGS)
    request = rc.reconcile_request(group, evo, SETTINGS)
    assert request is not None
    decision = rc.parse_reconcile(DeterministicTopicModel().answer(request), group, evo)
    assert rc.apply_reconciliations(evo, [decision]) == Evolution((), (), 1)
