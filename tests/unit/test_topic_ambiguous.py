"""The Global Topic Evolver's ambiguity rule (TOPIC-MEMORY.md readings, docs/topic-memory.md
part 3; Topic Memory RFC, "Global direct evolution": the Work Planner runs when the
global path cannot bind): a CREATE titled like a history Topic, or two outputs with
equal content, send the Window to the Work Planner."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from support.topic_windows import revision

from powercontext.core.topic import stages
from powercontext.core.topic.content import make_content
from powercontext.core.topic.models import TopicRef

HANDLES = {"h1": revision("topic_art_aaa", "Alpha service"),
           "h2": revision("topic_art_bbb", "Beta queue")}


def create(title: str, detail: str = "D.") -> stages.TopicCreate:
    return stages.TopicCreate(make_content(title, "S.", detail), ())


def update(aid: str, title: str, detail: str = "D.") -> stages.TopicUpdate:
    return stages.TopicUpdate(TopicRef(aid, 3), make_content(title, "S.", detail), ())


def test_a_clean_result_is_not_ambiguous() -> None:
    evo = stages.Evolution((create("Gamma notes"), create("Delta")),
                           (update("topic_art_aaa", "Alpha service", "new"),), 1)
    assert stages.ambiguous(evo, HANDLES) is None
    assert stages.ambiguous(stages.Evolution((), (), 0), {}) is None


def test_a_create_titled_like_a_history_topic_is_ambiguous() -> None:
    evo = stages.Evolution((create("Gamma"), create("  ALPHA\n\tservice ")), (), 0)
    why = stages.ambiguous(evo, HANDLES)
    assert why is not None and "new[1]" in why and "h1" in why
    assert "Alpha" not in why  # handles and positions, never Topic text


def test_two_outputs_with_equal_content_are_ambiguous() -> None:
    twins = stages.Evolution((create("Gamma", "same"), create("Gamma", "same")), (), 0)
    assert stages.ambiguous(twins, {}) is not None
    mixed = stages.Evolution((create("Delta", "x"),),
                             (update("topic_art_bbb", "Delta", "x"),), 0)
    assert stages.ambiguous(mixed, HANDLES) is not None


def test_public_names_are_the_shared_helpers() -> None:
    assert stages.loads_output is stages._loads and stages.exact_fields is stages._exact
    assert stages.invalid_output is stages._invalid and stages.make_request is stages._request
    assert stages.source_item is stages._source_item
    assert stages.TOPIC_SCHEMA is stages._TOPIC_SCHEMA


_TITLE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                 min_size=1, max_size=30).filter(lambda t: t.strip())


@given(st.lists(_TITLE, min_size=1, max_size=6, unique_by=lambda t: " ".join(
    t.casefold().split())), _TITLE)
def test_ambiguity_is_exactly_a_title_collision_with_history(titles: list[str],
                                                             head_title: str) -> None:
    handles = {"h1": revision("topic_art_aaa", head_title)}
    creates = tuple(create(t, f"detail {i}") for i, t in enumerate(titles))
    evo = stages.Evolution(creates, (), 0)
    key = " ".join(make_content(head_title, "S", "D").title.casefold().split())
    collides = any(" ".join(c.content.title.casefold().split()) == key for c in creates)
    assert (stages.ambiguous(evo, handles) is not None) == collides
