"""The ``deterministic`` TopicGenerationModel: extractive, reproducible byte for byte,
and its output always passes the server's own checks (TOPIC-MEMORY.md, "Providers")."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.topic_windows import revision, window_of

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.errors import InvalidInputError
from powercontext.core.topic import stages
from powercontext.core.topic.content import MAX_DETAIL_CHARS
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.ports.topic import TopicGenerationModel

MODEL = DeterministicTopicModel()
W = window_of("# Alpha\n\nAlpha is first.", "# Beta\n\nBeta is second.")


def run(req: StageRequest | None) -> str:
    assert req is not None
    return asyncio.run(MODEL.generate(req)).output_text


def test_it_is_a_topic_generation_model_named_deterministic() -> None:
    assert isinstance(MODEL, TopicGenerationModel)
    assert (MODEL.name, MODEL.model, MODEL.context_window_tokens, MODEL.max_requests) == (
        "deterministic", "deterministic", 125_000, 1)


def test_probes_are_each_sources_title_then_its_subject_words() -> None:
    w = window_of("# Alpha\n\nAlpha stores invoices nightly.", "# Beta\n\nBeta is second.")
    probes = stages.parse_probes(run(stages.probe_request(w.sources, ProcessingSettings())), w)
    assert [(p.query, p.evidence_ids) for p in probes] == [
        ("Alpha", ("s1",)), ("stores invoices nightly", ("s1",)), ("Beta", ("s2",))]


def test_evolve_creates_one_topic_per_subject() -> None:
    w = window_of("# Alpha\n\nAlpha is first. It leads.", "# beta\n\nBeta one.",
                  "# BETA\n\nBeta two.")
    evo = stages.parse_evolution(run(stages.evolve_request(w, [], ProcessingSettings())), w, {})
    assert [c.content.title for c in evo.creates] == ["Alpha", "beta"]
    alpha, beta = evo.creates
    assert alpha.content.summary == "Alpha is first. It leads."
    # the first section keeps its heading (the detail names its subject), the next drops
    # the one equal to the title
    assert beta.content.detail == "## beta\n\nBeta one.\n\nBeta two."
    assert beta.content.summary == "Beta one. Latest: Beta two."
    assert beta.sources == tuple(sorted((w.sources[1].ref, w.sources[2].ref)))


def test_evolve_updates_the_history_topic_with_the_same_title_and_noops_the_rest() -> None:
    w = window_of("# Alpha\n\nAlpha grew.")
    history = [revision("topic_art_aaa", "ALPHA", "Old.", "Old detail."),
               revision("topic_art_bbb", "Other", "O.", "Other detail.")]
    handles = stages.history_handles(history)
    evo = stages.parse_evolution(run(stages.evolve_request(w, history, ProcessingSettings())),
                                 w, handles)
    (upd,) = evo.updates
    assert upd.base == history[0].ref
    assert upd.content.detail == "Old detail.\n\nAlpha grew."
    assert (upd.content.title, upd.content.summary) == ("ALPHA", "Old. Latest: Alpha grew.")
    assert not evo.creates and evo.noops == 1


def test_evolve_is_a_noop_when_the_text_is_already_in_the_topic() -> None:
    w = window_of("# Alpha\n\nAlpha grew.")
    history = [revision("topic_art_aaa", "Alpha", "Old.", "Before.\n\nAlpha grew.")]
    evo = stages.parse_evolution(run(stages.evolve_request(w, history, ProcessingSettings())),
                                 w, stages.history_handles(history))
    assert evo.empty and evo.noops == 1


def test_material_over_one_detail_continues_in_parts_citing_what_each_holds() -> None:
    block = "word " * 1_000
    w = window_of(*(f"# Big\n\n{block}{i}" for i in range(8)))
    evo = stages.parse_evolution(run(stages.evolve_request(w, [], ProcessingSettings())), w, {})
    assert [c.content.title for c in evo.creates] == ["Big", "Big (part 2)"]
    first, second = evo.creates
    assert all(len(c.content.detail) <= MAX_DETAIL_CHARS for c in evo.creates)
    kept = len(first.sources)
    assert first.sources == tuple(s.ref for s in w.sources[:kept])
    assert second.sources == tuple(s.ref for s in w.sources[kept:])
    both = first.content.detail + second.content.detail
    assert all(f"{block.strip()} {i}" in both for i in range(8))


def test_a_single_source_over_the_detail_limit_is_split_at_blocks_and_kept_whole() -> None:
    paras = [f"para {i} " * 300 for i in range(40)]
    w = window_of("# Huge\n\n" + "\n\n".join(paras))
    evo = stages.parse_evolution(run(stages.evolve_request(w, [], ProcessingSettings())), w, {})
    n = len(evo.creates)
    assert n >= 3 and [c.content.title for c in evo.creates] == [
        "Huge", *(f"Huge (part {k})" for k in range(2, n + 1))]
    assert all(len(c.content.detail) <= MAX_DETAIL_CHARS for c in evo.creates)
    assert all(c.sources == (w.sources[0].ref,) for c in evo.creates)
    both = "\n\n".join(c.content.detail for c in evo.creates)
    assert all(p.strip() in both for p in paras)


def test_the_same_request_gives_the_same_bytes() -> None:
    req = stages.evolve_request(W, [revision("topic_art_aaa", "Alpha")], ProcessingSettings())
    assert run(req) == run(req) == asyncio.run(DeterministicTopicModel().generate(req)).output_text


def test_it_refuses_a_request_over_its_context_window_and_other_stages() -> None:
    req = stages.probe_request(W.sources, ProcessingSettings())
    assert req is not None
    with pytest.raises(InvalidInputError):
        asyncio.run(DeterministicTopicModel(context_window_tokens=10).generate(req))
    import attrs
    with pytest.raises(InvalidInputError):
        asyncio.run(MODEL.generate(attrs.evolve(req, stage="plan")))


_texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1,
                 max_size=300).filter(lambda t: t.strip())


@given(st.lists(_texts, min_size=1, max_size=5), st.lists(_texts, max_size=3))
def test_its_output_always_passes_the_server_checks(contents: list[str],
                                                    titles: list[str]) -> None:
    """Whatever the Sources, the deterministic answers parse, bind and stay in limits."""
    from powercontext.core.errors import InvalidInputError as Bad
    try:
        w = window_of(*contents)
        history = [revision(f"topic_art_{i:03d}", t[:256]) for i, t in enumerate(titles)]
    except Bad:
        return  # not valid Source/Topic input in the first place
    settings = ProcessingSettings()
    stages.parse_probes(run(stages.probe_request(w.sources, settings)), w)
    handles = stages.history_handles(history)
    evo = stages.parse_evolution(run(stages.evolve_request(w, history, settings)), w, handles)
    refs = {s.ref for s in w.sources}
    for item in (*evo.creates, *evo.updates):
        assert set(item.sources) <= refs
    assert json.loads(run(stages.evolve_request(w, history, settings)))["history"].keys() == \
        handles.keys()
