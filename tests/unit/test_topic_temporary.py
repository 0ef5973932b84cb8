"""core.topic.temporary: Source Batches (fragmenting an oversized Source), the
temporary stage, and the final operation from temporary Topics (Topic Memory RFC,
"Oversized Work Items and temporary Topics", "Window selection and context budgets";
issue 15, item 3 and "Bad input and faults")."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import pytest
from support.topic_windows import SCOPE, revision, window_of

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError, TopicProcessingError
from powercontext.core.topic import temporary as tmp
from powercontext.core.topic.accumulate import Live, TemporaryTopic
from powercontext.core.topic.content import make_content
from powercontext.core.topic.planner import WorkItem
from powercontext.core.topic.processing import (
    CODE_COMPLEXITY,
    MAX_SOURCE_CHARS,
    JournalEntry,
    ProcessingSettings,
)
from powercontext.core.topic.stages import Probe
from powercontext.core.topic.window import (
    Fragment,
    Window,
    WindowRejection,
    WindowSource,
    estimate_tokens,
    select_window,
)

SMALL = ProcessingSettings(context_window_tokens=2048, max_output_tokens=256)
CHARS = 400


def item_of(window: Window, ids: Sequence[str] | None = None, *, target: Any = None,
            query: str = "alpha subject") -> WorkItem:
    ids = tuple(ids) if ids is not None else tuple(s.evidence_id for s in window.sources)
    refs = window.refs(list(ids), "ids")
    return WorkItem("update" if target is not None else "create", target,
                    (Probe(query, ids, refs),), ids)


def topic(title: str = "T", summary: str = "S", detail: str = "D",
          ids: Any = ("s1",), **extra: Any) -> dict[str, Any]:
    return {"title": title, "summary": summary, "detail": detail,
            "evidence_ids": list(ids) if isinstance(ids, tuple) else ids, **extra}


def out(value: Any) -> str:
    return json.dumps({"topic": value})


def code_of(fn: Any, *args: Any) -> TopicProcessingError:
    with pytest.raises(TopicProcessingError) as info:
        fn(*args)
    assert not info.value.terminal
    return info.value


def texts_of(batches: Sequence[tmp.SourceBatch]) -> dict[str, str]:
    """Every Source's text as the Batches carry it (whole or fragments joined)."""
    joined: dict[str, str] = {}
    for batch in batches:
        for part in batch.parts:
            if isinstance(part, Fragment):
                assert part.start == len(joined.get(part.evidence_id, ""))
            joined[part.evidence_id] = joined.get(part.evidence_id, "") + part.text
    return joined


def live_of(window: Window, *groups: Sequence[str]) -> tuple[Live, ...]:
    out_: list[Live] = []
    for i, ids in enumerate(groups, start=1):
        t = TemporaryTopic(make_content(f"T{i}", f"S{i}", f"D{i}"), tuple(ids),
                           window.refs(list(ids), "ids"))
        out_.append(Live(t, frozenset({i}), 10))
    return tuple(out_)


# ---------------------------------------------------------------------- schemas

def _objects(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for v in schema.values():
            found.extend(_objects(v))
    elif isinstance(schema, list):
        for v in schema:
            found.extend(_objects(v))
    return found


@pytest.mark.parametrize("schema", [tmp.temporary_schema(), tmp.temporary_schema(("s1", "s2"), 300),
                                    tmp.final_schema(("t1", "t2"))])
def test_every_schema_object_is_strict_with_every_property_required(schema: Any) -> None:
    objects = _objects(schema)
    assert len(objects) == 2
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    assert schema["properties"]["topic"]["anyOf"][0] == {"type": "null"}


def test_schemas_list_the_given_ids_as_enums() -> None:
    t = tmp.temporary_schema(("s2", "s3"), 300)["properties"]["topic"]["anyOf"][1]
    assert t["properties"]["evidence_ids"]["items"]["enum"] == ["s2", "s3"]
    assert t["properties"]["detail"]["maxLength"] == 300
    f = tmp.final_schema(("t1", "t2"))["properties"]["topic"]["anyOf"][1]
    assert f["properties"]["evidence_ids"]["items"]["enum"] == ["t1", "t2"]
    assert f["properties"]["detail"]["maxLength"] == 32768


def test_instructions_are_real_prose_naming_the_limits_and_the_untrusted_sources() -> None:
    for text in (tmp.TEMPORARY_INSTRUCTIONS, tmp.FINAL_INSTRUCTIONS):
        assert len(text) > 400
        assert "never invent ids" in text
        assert "untrusted data" in text
    assert "max_result_chars" in tmp.TEMPORARY_INSTRUCTIONS
    assert "only the ids of this Batch" in tmp.TEMPORARY_INSTRUCTIONS
    assert "full rewrite" in tmp.FINAL_INSTRUCTIONS
    assert "t1" in tmp.FINAL_INSTRUCTIONS


# ---------------------------------------------------------------------- batches

def test_batches_pack_whole_sources_greedily_keeping_window_order_and_every_character() -> None:
    contents = [f"# Part {i}\n\n" + (f"word{i} ") * (30 + 25 * (i % 3)) for i in range(1, 9)]
    w = window_of(*contents, settings=SMALL)
    assert not w.oversized and len(w.sources) == 8
    item = item_of(w)
    batches = tmp.source_batches(w, item, SMALL, CHARS)
    assert [b.position for b in batches] == list(range(1, len(batches) + 1))
    assert 1 < len(batches) < 8
    flat = [p for b in batches for p in b.parts]
    assert all(isinstance(p, WindowSource) for p in flat)
    assert [p.evidence_id for p in flat] == [s.evidence_id for s in w.sources]
    assert texts_of(batches) == {s.evidence_id: s.text for s in w.sources}
    for prev, nxt in itertools.pairwise(batches):
        req = tmp.temporary_request(prev, item, SMALL, CHARS)
        assert req is not None and req.estimated_tokens <= SMALL.context_window_tokens
        grown = tmp.SourceBatch(1, (*prev.parts, nxt.parts[0]))
        assert tmp.temporary_request(grown, item, SMALL, CHARS) is None  # greedy: maximal


def test_batches_hold_only_the_items_sources() -> None:
    w = window_of("# A\n\nalpha", "# B\n\nbeta", "# C\n\ngamma")
    batches = tmp.source_batches(w, item_of(w, ("s3", "s1")), ProcessingSettings(), CHARS)
    assert len(batches) == 1
    assert batches[0].evidence_ids == ("s1", "s3")


def test_an_item_naming_an_id_outside_the_window_is_bad_input() -> None:
    w = window_of("# A\n\nalpha")
    item = WorkItem("create", None, (), ("s9",))
    with pytest.raises(InvalidInputError) as info:
        tmp.source_batches(w, item, ProcessingSettings(), CHARS)
    assert info.value.field == "item.evidence_ids[0]"
    with pytest.raises(InvalidInputError) as info:
        tmp.source_batches(w, item_of(w), ProcessingSettings(), 0)
    assert info.value.field == "max_result_chars"


def test_a_source_over_the_batch_budget_is_fragmented_between_whole_sources() -> None:
    big = "# Big\n\n" + "0123456789 abcdef " * 400
    w = window_of("# A\n\nsmall one", big, "# C\n\nsmall two",
                  settings=ProcessingSettings(context_window_tokens=8192, max_output_tokens=256))
    settings = SMALL
    item = item_of(w)
    batches = tmp.source_batches(w, item, settings, CHARS)
    kinds = [type(b.parts[0]).__name__ for b in batches]
    assert kinds[0] == "WindowSource" and kinds[-1] == "WindowSource"
    middle = batches[1:-1]
    assert len(middle) > 1
    assert all(len(b.parts) == 1 and isinstance(b.parts[0], Fragment) for b in middle)
    assert all(b.evidence_ids == ("s2",) for b in middle)
    assert texts_of(batches) == {s.evidence_id: s.text for s in w.sources}
    for b in batches:
        req = tmp.temporary_request(b, item, settings, CHARS)
        assert req is not None and req.estimated_tokens <= settings.context_window_tokens
        payload = json.loads(req.input_json)
        assert payload["focus"] == ["alpha subject"]
        assert payload["max_result_chars"] == CHARS
        if isinstance(b.parts[0], Fragment):
            frag = b.parts[0]
            assert payload["sources"] == [{"id": "s2", "start": frag.start, "end": frag.end,
                                           "text": frag.text}]


def test_no_room_for_one_character_fails_the_item_closed() -> None:
    tight = ProcessingSettings(context_window_tokens=1024, max_output_tokens=512)
    w = window_of("# A\n\nalpha beta gamma")
    err = code_of(tmp.source_batches, w, item_of(w, query="q" * 400), tight, CHARS)
    assert err.code == tmp.CODE_ITEM_OVER_BUDGET == "work_item_over_budget"
    assert err.stage == "temporary"


# The issue's hostile input: no whitespace; quotes, backslashes and control characters
# (each grows under JSON escaping, the control characters 6x in the evidence text and
# again inside the request) and astral characters throughout, so fragment boundaries
# fall next to them.
_HOSTILE_UNIT = "\U0001F600\"\\\x01\U0001D11E\x1f"


def _hostile_entry(content: str) -> JournalEntry:
    return JournalEntry(SCOPE, 1, canonical.make_source("src_big", "file", content))


def test_a_4mib_hostile_content_is_rejected_as_source_complexity_limit() -> None:
    content = (_HOSTILE_UNIT * (MAX_SOURCE_CHARS // len(_HOSTILE_UNIT) + 1))[:MAX_SOURCE_CHARS]
    assert len(content) == 4_194_304
    rejected = select_window([_hostile_entry(content)], 0, ProcessingSettings())
    assert isinstance(rejected, WindowRejection)
    assert rejected.code == CODE_COMPLEXITY == "source_complexity_limit"
    assert rejected.position == 1


def test_a_hostile_source_just_under_the_limit_fragments_into_fitting_requests() -> None:
    # the unit's evidence text is 18 code points (\" \\ \u0001 \u001f escaped)
    content = _HOSTILE_UNIT * ((MAX_SOURCE_CHARS - 200) // 18)
    settings = ProcessingSettings()
    w = select_window([_hostile_entry(content)], 0, settings)
    assert isinstance(w, Window) and w.oversized
    text = w.sources[0].text
    assert MAX_SOURCE_CHARS - 300 < len(text) <= MAX_SOURCE_CHARS
    item = item_of(w)
    batches = tmp.source_batches(w, item, settings, CHARS)
    assert len(batches) > 10
    frags = [b.parts[0] for b in batches]
    assert all(len(b.parts) == 1 and isinstance(p, Fragment) for b, p in zip(batches, frags,
                                                                              strict=True))
    assert "".join(f.text for f in frags) == text
    assert [f.start for f in frags] == [0, *(f.end for f in frags[:-1])]
    assert frags[-1].end == len(text)
    astral_edges = 0
    for f in frags:
        f.text.encode("utf-8")  # strict: no lone surrogate, no split pair
        assert json.loads(json.dumps(f.text, ensure_ascii=True)) == f.text
        astral_edges += any(ord(c) > 0xFFFF for c in (f.text[0], f.text[-1]))
        req = tmp.temporary_request(tmp.SourceBatch(1, (f,)), item, settings, CHARS)
        assert req is not None and req.estimated_tokens <= settings.context_window_tokens
        assert json.loads(req.input_json)["sources"][0]["text"] == f.text
    assert astral_edges > 0


def test_fragments_of_astral_only_text_never_split_a_surrogate_pair() -> None:
    # every boundary falls between two astral characters
    content = "\U0001F600\U0001D11E\U00010348" * 900
    w = window_of(content, settings=SMALL)
    assert w.oversized
    batches = tmp.source_batches(w, item_of(w), SMALL, CHARS)
    frags = [b.parts[0] for b in batches]
    assert len(frags) > 3
    assert "".join(f.text for f in frags) == w.sources[0].text
    for f in frags:
        f.text.encode("utf-8")
        utf16 = f.text.encode("utf-16-le")
        assert utf16.decode("utf-16-le") == f.text


# ---------------------------------------------------------------------- temporary

W3 = window_of("# Alpha\n\nAlpha is first.", "# Beta\n\nBeta is second.", "# Gamma\n\nThird.")
B12 = tmp.SourceBatch(1, (W3.sources[0], W3.sources[1]))
B3 = tmp.SourceBatch(2, (W3.sources[2],))


def test_a_temporary_cites_its_batch_ids_in_batch_order_with_exact_refs() -> None:
    t = tmp.parse_temporary(out(topic("Alpha", "New.", "Alpha news.", ("s2", "s1"))), W3, B12,
                            1000)
    assert isinstance(t, TemporaryTopic)
    assert t.evidence_ids == ("s1", "s2")
    assert t.sources == canonical.sort_source_refs([W3.sources[0].ref, W3.sources[1].ref])
    assert t.content == make_content("Alpha", "New.", "Alpha news.")


def test_a_null_temporary_is_nothing() -> None:
    assert tmp.parse_temporary(out(None), W3, B12, 1000) is None


@pytest.mark.parametrize("ids", [["s3"], ["s1", "s3"], ["s9"], ["x"], [], ["s1", "s1"], [1],
                                 "s1", None])
def test_a_temporary_citing_another_batchs_or_an_unknown_id_is_refused(ids: Any) -> None:
    err = code_of(tmp.parse_temporary, out(topic(ids=ids)), W3, B12, 1000)
    assert err.code == "model_output_invalid" and err.stage == "temporary"


@pytest.mark.parametrize("text", [
    "not json", json.dumps([]), json.dumps({}), json.dumps({"topic": None, "extra": 1}),
    '{"topic": null, "topic": null}',
    out(topic(target="h1")), out(topic(artifact_id="topic_art_x")),
    out({"title": "T", "summary": "S", "evidence_ids": ["s1"]}),
    out(topic(title="")), out(topic(detail="x" * 32769)), out(topic(summary="a\x00b")), None,
])
def test_malformed_temporary_output_is_refused(text: Any) -> None:
    err = code_of(tmp.parse_temporary, text, W3, B12, 100_000)
    assert err.code == "model_output_invalid" and err.stage == "temporary"


def test_a_temporary_over_max_tokens_is_refused_never_truncated() -> None:
    raw = out(topic(detail="d" * 600, ids=("s1",)))
    ok = tmp.parse_temporary(raw, W3, B12, 10_000)
    assert ok is not None
    shown = canonical.canonical_dumps(
        {"title": "T", "summary": "S", "detail": "d" * 600, "evidence_ids": ["s1"]},
        "t").decode()
    exact = estimate_tokens(shown)
    assert tmp.parse_temporary(raw, W3, B12, exact) is not None
    err = code_of(tmp.parse_temporary, raw, W3, B12, exact - 1)
    assert err.code == "model_output_invalid" and "estimates" in str(err)


def test_the_temporary_request_shows_no_historical_topic() -> None:
    head = revision("topic_art_aaa", "Alpha", "Old secret summary.", "Old detail.")
    item = item_of(W3, ("s1", "s2"), target=head)
    req = tmp.temporary_request(B12, item, ProcessingSettings(), CHARS)
    assert req is not None
    assert req.stage == "temporary" and req.schema_name == "topic_temporary"
    assert set(json.loads(req.input_json)) == {"focus", "max_result_chars", "sources"}
    assert "Old secret summary." not in req.input_json
    assert json.loads(req.schema_json) == tmp.temporary_schema(("s1", "s2"), CHARS)


# ---------------------------------------------------------------------- final

HEAD = revision("topic_art_aaa", "Alpha", "Old.", "Old detail.")


def test_final_lineage_is_exactly_the_union_of_the_cited_temporaries() -> None:
    live = live_of(W3, ("s1",), ("s1", "s2"), ("s3",))
    evo = tmp.parse_final(out(topic(ids=("t2", "t1"))), W3, live, item_of(W3))
    assert len(evo.creates) == 1 and not evo.updates and evo.noops == 0
    assert evo.creates[0].sources == canonical.sort_source_refs(
        [W3.sources[0].ref, W3.sources[1].ref])
    evo = tmp.parse_final(out(topic(ids=("t3",))), W3, live, item_of(W3))
    assert evo.creates[0].sources == (W3.sources[2].ref,)


def test_final_update_binds_the_exact_target_head_and_equal_content_is_a_noop() -> None:
    live = live_of(W3, ("s1",), ("s3",))
    item = item_of(W3, target=HEAD)
    evo = tmp.parse_final(out(topic("Alpha", "New.", "New detail.", ("t1",))), W3, live, item)
    assert not evo.creates and len(evo.updates) == 1
    assert evo.updates[0].base == HEAD.ref
    assert evo.updates[0].sources == (W3.sources[0].ref,)
    same = tmp.parse_final(out(topic("Alpha", "Old.", "Old detail.", ("t1",))), W3, live, item)
    assert same.empty and same.noops == 1
    null = tmp.parse_final(out(None), W3, live, item)
    assert null.empty and null.noops == 1
    assert tmp.parse_final(out(None), W3, live, item_of(W3)).noops == 1


@pytest.mark.parametrize("ids", [["t4"], ["s1"], ["t1", "t1"], [], ["h1"], [2], None])
def test_a_final_citing_an_unknown_temporary_is_refused(ids: Any) -> None:
    live = live_of(W3, ("s1",), ("s2",), ("s3",))
    err = code_of(tmp.parse_final, out(topic(ids=ids)), W3, live, item_of(W3))
    assert err.code == "model_output_invalid" and err.stage == "evolve"


@pytest.mark.parametrize("text", [
    "[", json.dumps({"topic": None, "history": {}}), out(topic(ids=("t1",), target="h1")),
    '{"topic": null, "topic": {}}', out(topic(title=" ", ids=("t1",))),
])
def test_malformed_final_output_is_refused(text: str) -> None:
    err = code_of(tmp.parse_final, text, W3, live_of(W3, ("s1",)), item_of(W3))
    assert err.code == "model_output_invalid" and err.stage == "evolve"


def test_the_final_request_holds_the_temporaries_and_the_complete_target() -> None:
    live = live_of(W3, ("s1",), ("s2", "s3"))
    req = tmp.final_request(live, item_of(W3, target=HEAD), ProcessingSettings())
    assert req is not None
    assert req.stage == "evolve" and req.schema_name == "topic_item_final"
    payload = json.loads(req.input_json)
    assert payload == {
        "focus": ["alpha subject"],
        "temporaries": [{"id": "t1", "title": "T1", "summary": "S1", "detail": "D1"},
                        {"id": "t2", "title": "T2", "summary": "S2", "detail": "D2"}],
        "target": {"title": "Alpha", "summary": "Old.", "detail": "Old detail."}}
    assert json.loads(req.schema_json) == tmp.final_schema(("t1", "t2"))
    assert req.estimated_tokens <= ProcessingSettings().context_window_tokens
    create = tmp.final_request(live, item_of(W3), ProcessingSettings())
    assert create is not None and json.loads(create.input_json)["target"] is None


def test_the_final_request_is_none_when_the_target_does_not_fit_never_cut() -> None:
    big = revision("topic_art_big", "Big", "S" * 2048, "D" * 32768)
    live = live_of(W3, ("s1",))
    tight = ProcessingSettings(context_window_tokens=8192, max_output_tokens=256)
    assert tmp.final_request(live, item_of(W3, target=big), tight) is None
    assert tmp.final_request(live, item_of(W3), tight) is not None


def test_the_final_needs_temporaries_and_a_consistent_item() -> None:
    with pytest.raises(InvalidInputError) as info:
        tmp.final_request((), item_of(W3), ProcessingSettings())
    assert info.value.field == "live"
    bad = WorkItem("update", None, item_of(W3).probes, ("s1",))
    with pytest.raises(InvalidInputError) as info:
        tmp.parse_final(out(None), W3, live_of(W3, ("s1",)), bad)
    assert info.value.field == "item.target"
    probe_live = (Live(item_of(W3).probes[0], frozenset({1}), 5),)
    with pytest.raises(InvalidInputError):
        tmp.final_request(probe_live, item_of(W3), ProcessingSettings())


def test_temporary_handles_number_the_live_items_in_order() -> None:
    live = live_of(W3, ("s1",), ("s2",))
    assert tmp.temporary_handles(live) == {"t1": live[0], "t2": live[1]}
