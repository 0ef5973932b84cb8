"""A Window that cannot keep its material fails closed (Topic Memory RFC, "Window
selection and context budgets": every character of an oversized Source is kept;
"Oversized Work Items and temporary Topics": an oversized result aborts the Window).

The failing input: a 3,000-token context window and 400 output tokens, which the
configuration check accepted, and a 1 MB Source. The reduce result budget (1/8 of the
stage input budget, room for the Window's evidence ids kept) computes to nothing, so
every reduced Probe and temporary Topic had to be empty: 157 Probe calls, 7
reductions and 215 temporary calls returned nothing and the Window was published as a
NOOP (the Cursor advanced, the Source is in no Topic). Now such a configuration is
refused at start-up naming the setting, and a Window whose stage result budget holds
no result fails with ``result_budget_too_small`` before any call, the Cursor where it
was."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from powercontext import make_source, open_topic_service
from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.configuration import load_config
from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic import accumulate, result_room
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.topic_processing import TopicProcessor
from powercontext.topic_provider import generation_problems

SMALL = ProcessingSettings(context_window_tokens=3_000, max_output_tokens=400)


def _megabyte() -> str:
    rng = random.Random(7)
    words = ("supervisor", "cursor", "window", "pending", "lease", "worker", "deploy",
             "release", "rollback", "topic")
    return " ".join(rng.choice(words) for _ in range(170_000))[:1_000_000]


def test_the_configuration_check_refuses_a_window_that_keeps_no_result(tmp_path: Path):
    (tmp_path / "c.toml").write_text(
        "[inference]\ngeneration_provider = \"deterministic\"\n"
        "generation_model_context_window_tokens = 3000\n"
        "generation_max_output_tokens = 400\n", encoding="utf-8")
    problems = generation_problems(load_config(tmp_path / "c.toml", env={}))
    assert problems and all(p.startswith("inference.generation_model_context_window_tokens:")
                            for p in problems)
    assert any("temporary result 0 characters" in p for p in problems)


def test_a_configuration_with_room_for_a_result_is_accepted(tmp_path: Path):
    (tmp_path / "c.toml").write_text(
        "[inference]\ngeneration_provider = \"deterministic\"\n"
        "generation_model_context_window_tokens = 4000\n"
        "generation_max_output_tokens = 400\n", encoding="utf-8")
    assert generation_problems(load_config(tmp_path / "c.toml", env={})) == ()


def test_a_megabyte_source_under_a_window_that_keeps_nothing_fails_closed(tmp_path: Path):
    async def body() -> None:
        db = str(tmp_path / "room.db")
        async with open_topic_service(db, embedding="none") as svc:
            await svc.add_sources("repo:/big", [make_source("src_big", "file", _megabyte())])
            model = DeterministicTopicModel(context_window_tokens=3_000)
            report = await TopicProcessor(svc, model, SMALL).process("repo:/big")
            assert report.stopped == result_room.CODE_RESULT_BUDGET
            assert report.windows == ()
            st = report.status
            assert st.cursor == 0 and st.pending is not None  # the Source stays to do
            assert st.budget is not None
            assert st.budget.failure_code == result_room.CODE_RESULT_BUDGET
            assert st.budget.reserved_requests == 0  # refused before any call
            assert await svc.backend.heads("repo:/big") == ()

    asyncio.run(body())


def test_a_focus_that_leaves_a_temporary_no_room_fails_closed():
    """At runtime a Work Item's focus (its Probe queries) shrinks the temporary stage's
    input budget; when its result then holds nothing the Item fails closed."""
    settings = ProcessingSettings(context_window_tokens=4_000, max_output_tokens=400)
    budget = accumulate.reduce_budget("temporary", settings)
    result_room.check_result_room("temporary", budget, "temporary")  # room without focus
    focus = ["release rollback window " * 20] * 8
    narrowed = accumulate.reduce_budget("temporary", settings, focus)
    with pytest.raises(TopicProcessingError) as got:
        result_room.check_result_room("temporary", narrowed, "temporary")
    assert got.value.code == result_room.CODE_RESULT_BUDGET
    assert got.value.stage == "temporary" and not got.value.terminal
