"""The embedding side of the Topic provider policy (Topic Memory RFC, "Cumulative work
and evidence ceilings": "Embedding admits only dimensions and truncate"): the
OpenAI-compatible embedding adapter used for Topic processing is refused, before any
request, with any other embedding setting or a dimension it does not produce; the
deterministic provider is built from the configuration by name."""

from __future__ import annotations

import asyncio
import json

import pytest
from support.llm_servers import Reply, llm_server

from powercontext.configuration import load_config
from powercontext.core.errors import TopicProcessingUnavailableError
from powercontext.plugins import Registry
from powercontext.topic_provider import check_startup, check_topic_embedding, topic_generation_model

from .topic_generation_helpers import toml_value

pytest.importorskip("openai")

from powercontext.adapters.embedding.openai_compat import OpenAIEmbedding

pytestmark = pytest.mark.server


def config_with(tmp_path, settings: dict[str, object], *, auto: bool = False):
    lines = []
    if auto:
        lines += ["[runtime]", "topic_memory_auto_interval_seconds = 60"]
    lines += ["[inference]", "generation_provider = 'deterministic'",
              "[inference.embedding_settings]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in settings.items()]
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_config(path, env={"POWERCONTEXT_HOME": str(tmp_path)})


@pytest.mark.parametrize(("key", "value"), [
    ("encoding_format", "base64"), ("extra_body", {"input_type": "query"}),
    ("extra_headers", {"x": "y"}), ("user", "u"), ("dimensions", 0), ("dimensions", 4097),
    ("dimensions", 16), ("truncate", "middle"), ("truncate", "end"),
])
def test_the_openai_embedding_adapter_is_refused_with_other_settings_before_io(
        tmp_path, key, value):
    with llm_server() as server:
        embedding = OpenAIEmbedding("embed-test", 8, server.openai_base_url, api_key="k")
        config = config_with(tmp_path, {key: value})
        with pytest.raises(TopicProcessingUnavailableError) as info:
            check_topic_embedding(config, embedding)
        assert info.value.problems[0].startswith(f"inference.embedding_settings.{key}:")
        with pytest.raises(TopicProcessingUnavailableError, match="start-up refused"):
            check_startup(config_with(tmp_path, {key: value}, auto=True),
                          Registry(entry_points=False), embedding_model=embedding)
        assert server.requests == []


def test_admitted_embedding_settings_leave_the_adapter_unchanged(tmp_path):
    with llm_server() as server:
        embedding = OpenAIEmbedding("embed-test", 2, server.openai_base_url, api_key="k")
        check_topic_embedding(config_with(tmp_path, {"dimensions": 2, "truncate": False}),
                              embedding)
        server.script(Reply({"object": "list", "model": "embed-test", "data": [
            {"object": "embedding", "index": 0, "embedding": [0.6, 0.8]}],
            "usage": {"prompt_tokens": 1, "total_tokens": 1}}))
        result = asyncio.run(embedding.embed(("vec0",)))
        assert len(server.requests) == 1
        assert set(server.requests[0]["body"]) == {"model", "input", "encoding_format"}
        assert json.dumps(server.requests[0]["body"]["input"]) == '["vec0"]'
        assert result is not None


def test_the_deterministic_provider_is_built_by_name(tmp_path):
    pytest.importorskip("powercontext.adapters.topic_generation.deterministic")
    config = config_with(tmp_path, {})
    model = topic_generation_model(config, Registry(entry_points=False), env={})
    assert (model.name, model.max_requests, model.context_window_tokens) == (
        "deterministic", 1, 125_000)
