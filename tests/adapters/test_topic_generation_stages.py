"""The OpenAI and Anthropic Topic providers carry every part-3 stage (plan, temporary,
final evolve, reconcile) as they carry probe/evolve: StageRequest is generic, nothing
keys on the stage. Loopback servers answer with the deterministic provider's output;
the core parser accepts what comes back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from support.llm_servers import (
    LLMServer,
    Reply,
    llm_server,
    messages_body,
    responses_body,
    tool_use_block,
)
from support.topic_windows import revision, window_of

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.topic import planner, reconcile, stages, temporary
from powercontext.core.topic.content import make_content
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.history import HistoryCandidate
from powercontext.core.topic.models import TopicHit
from powercontext.core.topic.processing import ProcessingSettings
from powercontext.core.topic.stages import Evolution, TopicCreate

pytestmark = pytest.mark.server

SETTINGS = ProcessingSettings()
W = window_of("# Deploy\n\nDeploy pipeline runs nightly.", "# Notes\n\nOther notes.")
HEAD = revision("topic_art_ddd", "Deploy pipeline", "How.", "Old.")
PROBES = stages.parse_probes(asyncio.run(DeterministicTopicModel().generate(
    stages.probe_request(W.sources, SETTINGS))).output_text, W)
ITEM = planner.WorkItem("create", None, PROBES[1:], ("s2",))
GROUP_EVO = Evolution(tuple(TopicCreate(make_content(t, "S.", d), (W.sources[i].ref,))
                            for i, (t, d) in enumerate([("A", "one"), ("a", "two")])), (), 0)
GROUP = reconcile.RelatedGroup(None, None, (0, 1))


def _requests() -> dict[str, StageRequest]:
    hit = TopicHit(HEAD.ref, HEAD.content.title, HEAD.content.summary, "s", 0.1,
                   ("topic_fts",))
    plan = planner.plan_request(W, PROBES, [HistoryCandidate(HEAD.ref, 90.0, hit, (0,))],
                                SETTINGS)
    (batch,) = temporary.source_batches(W, ITEM, SETTINGS, 2_000)
    temp = temporary.temporary_request(batch, ITEM, SETTINGS, 2_000)
    rec = reconcile.reconcile_request(GROUP, GROUP_EVO, SETTINGS)
    out = {"plan": plan, "temporary": temp, "reconcile": rec}
    assert all(r is not None for r in out.values())
    return out  # type: ignore[return-value]


REQUESTS = _requests()


def parse(stage: str, text: str) -> object:
    if stage == "plan":
        return planner.parse_plan(text, W, PROBES, stages.history_handles([HEAD]))
    if stage == "temporary":
        (batch,) = temporary.source_batches(W, ITEM, SETTINGS, 2_000)
        return temporary.parse_temporary(text, W, batch, 10_000)
    return reconcile.parse_reconcile(text, GROUP, GROUP_EVO)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with llm_server() as srv:
        yield srv


@pytest.mark.parametrize("stage", sorted(REQUESTS))
def test_openai_carries_the_stage(server: LLMServer, stage: str) -> None:
    pytest.importorskip("openai")
    from powercontext.adapters.topic_generation.openai_responses import (
        OpenAIResponsesTopicModel,
    )
    req = REQUESTS[stage]
    answer = DeterministicTopicModel().answer(req)
    server.script(Reply(responses_body(answer)))
    m = OpenAIResponsesTopicModel(model="gpt-test", base_url=server.openai_base_url,
                                  api_key="test-key", timeout_seconds=5.0, settings={})
    response = asyncio.run(m.generate(req))
    assert response.output_text == answer
    parse(stage, response.output_text)
    (sent,) = server.requests
    fmt = sent["body"]["text"]["format"]
    assert fmt["name"] == req.schema_name and fmt["schema"] == json.loads(req.schema_json)
    assert req.instructions in sent["body"]["instructions"]


@pytest.mark.parametrize("stage", sorted(REQUESTS))
def test_anthropic_carries_the_stage(server: LLMServer, stage: str) -> None:
    pytest.importorskip("anthropic")
    from powercontext.adapters.topic_generation.anthropic_messages import (
        AnthropicMessagesTopicModel,
        tool_name,
    )
    req = REQUESTS[stage]
    answer = json.loads(DeterministicTopicModel().answer(req))
    server.script(Reply(messages_body([tool_use_block(tool_name(req.schema_name), answer)])))
    m = AnthropicMessagesTopicModel(model="claude-test", base_url=server.root,
                                    api_key="test-key", timeout_seconds=5.0, settings={})
    response = asyncio.run(m.generate(req))
    assert json.loads(response.output_text) == answer
    parse(stage, response.output_text)
    (sent,) = server.requests
    (tool,) = sent["body"]["tools"]
    assert tool["name"] == tool_name(req.schema_name)
    assert tool["input_schema"] == json.loads(req.schema_json)
