"""The ``deterministic`` provider on every part-3 stage (plan, Item Evolver, temporary,
reduce, final, reconcile): its rules, and that its answers pass the core's checks when
the request fits (TOPIC-MEMORY.md, "Providers"; design "Deterministic provider").

Requests are built as the stage formats of the part-3 modules' docstrings state
(:mod:`powercontext.core.topic.accumulate`, ``.planner``, ``.temporary``,
``.reconcile``); every answer is also checked to be reproducible byte for byte."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic.content import MAX_DETAIL_CHARS, make_content
from powercontext.core.topic.generation import Stage, StageRequest
from powercontext.core.topic.stages import SYSTEM_PROMPT
from powercontext.core.topic.window import estimate_tokens

MODEL = DeterministicTopicModel()


def request(stage: Stage, payload: Any, schema_name: str) -> StageRequest:
    input_json = canonical.canonical_dumps(payload, "input").decode("utf-8")
    tokens = estimate_tokens(SYSTEM_PROMPT) + estimate_tokens(input_json) + 100
    return StageRequest(stage, SYSTEM_PROMPT, f"Stage: {stage}.", input_json, schema_name,
                        "{}", 100, tokens)


def answer(stage: Stage, payload: Any, schema_name: str) -> Any:
    req = request(stage, payload, schema_name)
    first = asyncio.run(MODEL.generate(req)).output_text
    again = asyncio.run(DeterministicTopicModel().generate(req)).output_text
    assert first == again  # byte-for-byte reproducible
    return json.loads(first)


def size(value: Any) -> int:
    return len(canonical.canonical_dumps(value))


def evidence(content: str, kind: str = "file", uri: str = "file:///d/x.md") -> str:
    """A Source's evidence text as the stage input shows it."""
    return canonical.canonical_dumps(
        {"content": content, "kind": kind, "metadata": {}, "uri": uri}).decode("utf-8")


def chars(t: dict[str, Any]) -> int:
    """The text a ``max_result_chars`` limit counts: title, summary and detail."""
    return len(t["title"]) + len(t["summary"]) + len(t["detail"])


def topic(t: dict[str, Any]) -> None:
    make_content(t["title"], t["summary"], t["detail"])  # passes the content checks
    assert set(t) == {"title", "summary", "detail", "evidence_ids"}


# ---------------------------------------------------------------------- plan

def plan_input(probes: list[tuple[str, list[str]]], titles: list[str]) -> dict[str, Any]:
    return {"probes": [{"id": f"p{i}", "query": q, "evidence_ids": ids}
                       for i, (q, ids) in enumerate(probes, start=1)],
            "sources": [{"id": f"s{i}", "kind": "file", "uri": f"file:///{i}"}
                        for i in range(1, 5)],
            "history": [{"handle": f"h{i}", "title": t, "summary": "S.", "snippet": "x"}
                        for i, t in enumerate(titles, start=1)]}


def test_plan_puts_a_probe_in_the_item_of_the_topic_it_found_or_of_its_title() -> None:
    data = plan_input(
        [("Alpha service", ["s1"]), ("beta notes", ["s2"]),
         ("alpha invoices nightly", ["s1"]), ("beta more words", ["s2"]),
         ("gamma", ["s3"])],
        ["Alpha Service", "alpha", "!!!"])
    data["probes"][4]["found"] = "h3"   # the server's rule: the Topic its search found
    out = answer("plan", data, "topic_plan")
    assert out == {"items": [
        {"operation": "update", "target": "h3", "probes": ["p5"]},
        {"operation": "update", "target": "h1", "probes": ["p1", "p3"]},
        {"operation": "create", "target": None, "probes": ["p2", "p4"]}]}


def test_plan_groups_the_other_probes_by_their_evidence_id_set() -> None:
    out = answer("plan", plan_input(
        [("a", ["s1", "s2"]), ("b", ["s2", "s1"]), ("c", ["s1"]), ("d", ["s3"])], []),
        "topic_plan")
    assert out == {"items": [
        {"operation": "create", "target": None, "probes": ["p1", "p2"]},
        {"operation": "create", "target": None, "probes": ["p3"]},
        {"operation": "create", "target": None, "probes": ["p4"]}]}


@given(st.lists(st.tuples(st.text(max_size=40), st.sets(st.sampled_from(
    ["s1", "s2", "s3", "s4"]), min_size=1).map(sorted)), min_size=1, max_size=12),
    st.lists(st.text(max_size=20), max_size=4))
def test_plan_puts_every_probe_in_exactly_one_item_and_one_item_per_target(
        probes: list[tuple[str, list[str]]], titles: list[str]) -> None:
    out = answer("plan", plan_input(probes, titles), "topic_plan")
    placed = [p for item in out["items"] for p in item["probes"]]
    assert sorted(placed) == sorted(f"p{i}" for i in range(1, len(probes) + 1))
    targets = [i["target"] for i in out["items"] if i["operation"] == "update"]
    assert len(targets) == len(set(targets))
    assert all((i["target"] is None) == (i["operation"] == "create") for i in out["items"])
    assert all(i["probes"] for i in out["items"])


# ---------------------------------------------------------------------- Item Evolver

def item_input(contents: list[str], target: dict[str, str] | None) -> dict[str, Any]:
    return {"focus": ["q"], "sources": [{"id": f"s{i}", "text": evidence(c)}
                                        for i, c in enumerate(contents, start=1)],
            "target": target}


def test_item_creates_one_topic_titled_by_the_first_source() -> None:
    out = answer("evolve", item_input(["# Alpha\n\nAlpha is first.", "# Other\n\nMore."],
                                      None), "topic_item")
    assert out == {"topic": {"title": "Alpha", "summary": "Alpha is first. Latest: Other.",
                             "detail": "## Alpha\n\nAlpha is first.\n\n## Other\n\nMore.",
                             "evidence_ids": ["s1", "s2"]}}


def test_item_updates_its_target_with_the_new_texts_only_and_noops_when_nothing_is_new(
        ) -> None:
    target = {"title": "Alpha", "summary": "Old.", "detail": "Old.\n\n## A\n\nKnown."}
    out = answer("evolve", item_input(["# A\n\nKnown.", "# A\n\nNew."], target),
                 "topic_item")
    assert out == {"topic": {"title": "Alpha", "summary": "Old. Latest: A.",
                             "detail": "Old.\n\n## A\n\nKnown.\n\n## A\n\nNew.",
                             "evidence_ids": ["s2"]}}
    assert answer("evolve", item_input(["# A\n\nKnown."], target), "topic_item") == {
        "topic": None}


def test_item_keeps_new_material_whole_when_its_target_is_full() -> None:
    """One output per Item: a full target keeps the new Source whole in its next
    Revision and leaves out its oldest blocks, with a line saying they are in older
    Revisions (nothing of the new Source is dropped)."""
    old = "\n\n".join(f"Old block {i}. " + "x" * 300 for i in range(110))[:32_700]
    target = {"title": "Alpha", "summary": "Old.", "detail": old}
    out = answer("evolve", item_input(["# Alpha\n\n" + "New fact. " * 40], target),
                 "topic_item")["topic"]
    topic(out)
    assert out["evidence_ids"] == ["s1"]
    assert out["detail"].startswith("_(Earlier material of this Topic is in its older "
                                    "Revisions.)_\n\nOld block")
    assert out["detail"].endswith(("New fact. " * 40).strip())
    assert "Old block 0." not in out["detail"]


def test_item_keeps_a_detail_within_the_content_limit() -> None:
    out = answer("evolve", item_input(["x " * 20_000, "y " * 20_000], None), "topic_item")
    topic(out["topic"])
    assert out["topic"]["evidence_ids"] == ["s1"]
    assert len(out["topic"]["detail"]) <= MAX_DETAIL_CHARS


def test_item_writes_the_part_its_focus_names() -> None:
    big = "# Big\n\n" + "\n\n".join(f"Paragraph {i} " + "w" * 200 for i in range(200))
    data = item_input([big], None)
    data["focus"] = ["Big (part 2)"]
    out = answer("evolve", data, "topic_item")["topic"]
    assert out["title"] == "Big (part 2)" and out["evidence_ids"] == ["s1"]
    assert out["detail"].startswith("_(Continued from “Big”.)_")


# ---------------------------------------------------------------------- temporary

def temporary_input(parts: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    return {"focus": ["q"], "max_result_chars": limit, "sources": parts}


def test_temporary_summarises_the_batch_within_max_result_chars() -> None:
    parts = [{"id": "s1", "text": evidence("# Alpha\n\nOne.\n\n" + "alpha words " * 50)},
             {"id": "s2", "text": evidence("# Beta\n\nTwo.")}]
    whole = answer("temporary", temporary_input(parts, 100_000), "topic_temporary")
    assert whole["topic"]["evidence_ids"] == ["s1", "s2"]
    assert whole["topic"]["title"] == "Alpha"
    small = answer("temporary", temporary_input(parts, 300), "topic_temporary")["topic"]
    topic(small)
    assert chars(small) <= 300
    assert small["evidence_ids"] == ["s1"]
    assert ("# Alpha\n\nOne.\n\n" + "alpha words " * 50).startswith(small["detail"])


def test_temporary_reads_a_fragment_as_its_content_and_is_null_for_no_text() -> None:
    text = evidence("# Log\n\nline one\nline \"two\"")
    cut = text.index("line \\\"two") - 1  # inside the escape of the line end
    frag = {"id": "s1", "start": 0, "end": cut, "text": text[:cut]}
    out = answer("temporary", temporary_input([frag], 10_000), "topic_temporary")["topic"]
    assert out["detail"] == "## Log\n\nline one"
    assert out["title"] == "Log" and out["evidence_ids"] == ["s1"]
    tail = {"id": "s1", "start": cut + 1, "end": len(text), "text": text[cut + 1:]}
    assert answer("temporary", temporary_input([tail], 10_000), "topic_temporary")[
        "topic"]["detail"] == 'line "two"'
    blank = {"id": "s1", "start": 0, "end": 3, "text": "   "}
    assert answer("temporary", temporary_input([blank], 10_000), "topic_temporary") == {
        "topic": None}


# ---------------------------------------------------------------------- reduce

def temp(title: str, detail: str, ids: list[str]) -> dict[str, Any]:
    return {"title": title, "summary": f"{title} summary.", "detail": detail,
            "evidence_ids": ids}


def reduce_input(kind: str, items: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    return {"kind": kind, "focus": [], "max_result_chars": limit,
            "items": [{"position": i, **item} for i, item in enumerate(items, start=1)]}


def test_reduce_probes_joins_the_queries_and_keeps_the_exact_evidence_union() -> None:
    out = answer("reduce", reduce_input("probe", [
        {"query": "alpha beta", "evidence_ids": ["s1"]},
        {"query": "gamma " * 120, "evidence_ids": ["s2", "s1"]}], 10_000), "topic_reduction")
    assert out["positions"] == [1, 2]
    assert out["result"]["evidence_ids"] == ["s1", "s2"]
    query = out["result"]["query"]
    assert query.startswith("alpha beta gamma") and len(query) <= 512
    assert not query.endswith(" ") and query.split()[-1] == "gamma"


def test_reduce_temporaries_keeps_the_first_title_and_fits_the_limit() -> None:
    items = [temp("A", "a " * 400, ["s1"]), temp("B", "b " * 400, ["s2"]),
             temp("C", "c", ["s3", "s1"])]
    out = answer("reduce", reduce_input("temporary", items, 500), "topic_reduction")
    assert out["positions"] == [1, 2, 3]
    res = out["result"]
    topic(res)
    assert (res["title"], res["summary"]) == ("A", "A summary.")
    assert res["evidence_ids"] == ["s1", "s2", "s3"]
    assert chars(res) <= 500


@pytest.mark.parametrize("kind", ["probe", "temporary"])
def test_a_singleton_reduction_shrinks_the_item(kind: str) -> None:
    item = ({"query": "word " * 100, "evidence_ids": ["s1"]} if kind == "probe"
            else temp("Big", "para\n\n" * 400, ["s1"]))
    out = answer("reduce", reduce_input(kind, [item], 1 << 40), "topic_reduction")
    assert out["positions"] == [1]
    assert estimate_tokens(canonical.canonical_dumps(out["result"]).decode()) < \
        estimate_tokens(canonical.canonical_dumps(item).decode())


_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1,
                max_size=200).filter(lambda t: t.strip())


@given(st.lists(st.tuples(_text, _text, st.sets(st.sampled_from(["s1", "s2", "s3"]),
                                                 min_size=1).map(sorted)),
                min_size=1, max_size=6),
       st.integers(400, 3_000))
def test_a_temporary_reduction_always_fits_covers_every_position_and_unions_evidence(
        raw: list[tuple[str, str, list[str]]], limit: int) -> None:
    items = [temp(t.strip()[:200] or "t", d, ids) for t, d, ids in raw]
    out = answer("reduce", reduce_input("temporary", items, limit), "topic_reduction")
    res = out["result"]
    assert out["positions"] == list(range(1, len(items) + 1))
    assert set(res["evidence_ids"]) == {i for item in items for i in item["evidence_ids"]}
    assert len(res["evidence_ids"]) == len(set(res["evidence_ids"]))
    topic(res)
    assert chars(res) <= limit
    if len(items) == 1:
        assert size(res) < size(items[0]) or estimate_tokens(
            canonical.canonical_dumps(res).decode()) < estimate_tokens(
            canonical.canonical_dumps(items[0]).decode())


# ---------------------------------------------------------------------- final

def final_input(temps: list[dict[str, Any]], target: dict[str, str] | None) -> dict[str, Any]:
    return {"focus": ["q"], "target": target,
            "temporaries": [{"id": f"t{i}", **{k: v for k, v in t.items()
                                               if k != "evidence_ids"}}
                            for i, t in enumerate(temps, start=1)]}


def test_final_creates_from_the_temporaries_citing_those_kept() -> None:
    out = answer("evolve", final_input([temp("A", "one", ["s1"]), temp("B", "two", ["s2"])],
                                       None), "topic_item_final")
    assert out == {"topic": {"title": "A", "summary": "A summary. Latest: B summary.",
                             "detail": "one\n\ntwo", "evidence_ids": ["t1", "t2"]}}


def test_final_updates_its_target_or_noops() -> None:
    target = {"title": "T", "summary": "S.", "detail": "old\n\none"}
    out = answer("evolve", final_input([temp("A", "one", ["s1"]), temp("B", "two", ["s2"])],
                                       target), "topic_item_final")
    assert out == {"topic": {"title": "T", "summary": "S. Latest: B summary.",
                             "detail": "old\n\none\n\ntwo", "evidence_ids": ["t2"]}}
    assert answer("evolve", final_input([temp("A", "one", ["s1"])], target),
                  "topic_item_final") == {"topic": None}


# ---------------------------------------------------------------------- reconcile

def reconcile_input(target: dict[str, str] | None, cands: list[dict[str, Any]]
                    ) -> dict[str, Any]:
    return {"target": target,
            "candidates": [{"id": f"c{i}", **{k: v for k, v in c.items()
                                              if k != "evidence_ids"}}
                           for i, c in enumerate(cands, start=1)]}


def test_reconcile_folds_the_candidates_of_the_targets_subject_only() -> None:
    target = {"title": "Deploys", "summary": "D.", "detail": "Deploys run nightly at two."}
    out = answer("reconcile", reconcile_input(target, [
        temp("Deploys", "new note", []),                          # the same title
        temp("B", "Deploys run nightly at two.", []),             # already in the target
        temp("Nightly", "Deploys run nightly with a canary.", []),  # its subject terms
        temp("Cache", "The cache is purged on deploy.", [])]),    # another subject
        "topic_reconcile")
    assert out == {"merged": {
        "title": "Deploys", "summary": "D. Latest: Nightly summary.",
        "detail": "Deploys run nightly at two.\n\nnew note\n\nDeploys run nightly with "
                  "a canary.", "evidence_ids": ["c1", "c2", "c3"]}}


def test_reconcile_joins_a_create_only_group_and_needs_two() -> None:
    out = answer("reconcile", reconcile_input(None, [temp("A", "a", []), temp("A", "b", []),
                                                     temp("a", "a", [])]), "topic_reconcile")
    assert out == {"merged": {"title": "A", "summary": "A summary. Latest: A summary.",
                              "detail": "a\n\nb", "evidence_ids": ["c1", "c2", "c3"]}}
    assert answer("reconcile", reconcile_input(None, [temp("A", "a", [])]),
                  "topic_reconcile") == {"merged": None}


# ---------------------------------------------------------------------- refusals

def test_input_that_is_not_the_stage_input_is_invalid_input() -> None:
    for stage, name in (("plan", "topic_plan"), ("reduce", "topic_reduction"),
                        ("temporary", "topic_temporary"), ("reconcile", "topic_reconcile"),
                        ("evolve", "topic_item_final")):
        with pytest.raises(InvalidInputError, match="request"):
            asyncio.run(MODEL.generate(request(stage, {"sources": []}, name)))


# ---------------------------------------------------------------------- chat-like content

SESSION = ("Caroline and Melanie, session 1, 1:56 pm on 8 May, 2023\n"
           "Caroline: Hey Mel! Good to see you! How have you been?\n"
           "Melanie: Hey Caroline! I'm swamped with the kids & work. Anything new?\n"
           "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.\n"
           "Melanie: Did you hear any inspiring stories?\n"
           "Caroline: The transgender stories were so inspiring! Thankful for the support.")


def test_a_chat_session_is_titled_by_its_central_sentence_and_read_as_turns() -> None:
    out = answer("evolve", item_input([SESSION], None), "topic_item")["topic"]
    # never a greeting or a keyword list: the sentence holding most of its recurring words
    assert out["title"] == "I went to a LGBTQ support group yesterday and it was so powerful"
    assert out["detail"].startswith("**Caroline and Melanie, session 1, 1:56 pm on 8 May, "
                                    "2023**\n\n- **Caroline:** Hey Mel!")
    probes = answer("probe", {"sources": [{"id": "s1", "text": evidence(SESSION)}]},
                    "topic_probes")
    assert probes["probes"][0]["query"] == out["title"]


def test_a_single_dated_turn_is_chat_but_a_key_value_line_or_markdown_is_not() -> None:
    turn = "[1:56 pm on 8 May, 2023] Caroline: I went to a LGBTQ support group yesterday."
    out = answer("evolve", item_input([turn], None), "topic_item")["topic"]
    assert out["title"] == "I went to a LGBTQ support group yesterday"
    assert out["detail"] == ("- **Caroline:** [1:56 pm on 8 May, 2023] I went to a LGBTQ "
                             "support group yesterday.")
    for text, title in (("Decision: use vec0 for vectors", "Decision: use vec0 for vectors"),
                        ("Storage: use vec0 for vectors", "Storage"),
                        ("# Notes\n\nAlice: hi there\nBob: hello there", "Notes"),
                        ("Alice: hi there\nplain line\nBob: hello",
                         "hi there plain line Bob: hello")):
        assert answer("evolve", item_input([text], None), "topic_item")["topic"][
            "title"] == title


def test_a_fragment_probe_reads_its_content_not_the_json_framing() -> None:
    text = evidence("Build log\nline \"one\"\\two")
    cut = text.index("line")
    head = {"id": "s1", "start": 0, "end": cut, "text": text[:cut]}
    tail = {"id": "s1", "start": cut, "end": len(text), "text": text[cut:]}
    out = answer("probe", {"sources": [head]}, "topic_probes")
    assert out["probes"][0]["query"] == "Build log"
    out = answer("probe", {"sources": [tail]}, "topic_probes")
    assert out["probes"][0]["query"] == 'line "one"\\two'
