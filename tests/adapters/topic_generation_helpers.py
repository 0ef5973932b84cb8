"""Shared pieces of the Topic generation provider tests: a stage request, the refused
settings (each must reach no server), configuration files pointing at a loopback
server."""

from __future__ import annotations

import json

from powercontext.core.topic.generation import StageRequest

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["probes"],
    "properties": {"probes": {"type": "array", "items": {
        "type": "object", "additionalProperties": False,
        "required": ["query", "evidence_ids"],
        "properties": {"query": {"type": "string"},
                       "evidence_ids": {"type": "array", "items": {"type": "string"}}}}}},
}

REQUEST = StageRequest(
    stage="probe", system="You are the Probe stage.", instructions="List Probes.",
    input_json=json.dumps({"sources": [{"id": "s1", "text": "vec0 stores vectors"}]}),
    schema_name="probe_output", schema_json=json.dumps(SCHEMA, sort_keys=True),
    max_output_tokens=512, estimated_tokens=900)

REFUSED = [
    ("extra_body", {"x": 1}), ("extra_headers", {"X-A": "b"}), ("extra_query", {"a": "b"}),
    ("previous_response_id", "resp_0"), ("conversation", "conv_1"), ("store", False),
    ("store", True), ("background", True), ("tools", [{"type": "web_search"}]),
    ("tool_choice", "auto"), ("parallel_tool_calls", False), ("stream", True),
    ("frequency_penalty", 0.5), ("temperature", 9), ("service_tier", "ultra"),
]
"""(setting, value) pairs the policy refuses for every built-in provider."""


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return repr(value)


def config_text(provider: str, base_url: str, settings: dict[str, object] | None = None,
                *, timeout: float = 5.0) -> str:
    lines = ["[inference]", f"generation_provider = {json.dumps(provider)}",
             "generation_model = \"test-model\"", f"generation_base_url = \"{base_url}\"",
             "generation_api_key = \"test-key\"", f"generation_timeout_seconds = {timeout}",
             "[inference.generation_settings]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in (settings or {}).items()]
    return "\n".join(lines) + "\n"
