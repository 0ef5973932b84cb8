"""The provider policy of Topic processing (Topic Memory RFC, "Cumulative work and
evidence ceilings"): bounded scalar settings per provider accepted, everything else
refused by name before any provider I/O."""

from __future__ import annotations

import math

import pytest

from powercontext.core.errors import (
    CapabilityNotSupportedError,
    TopicProcessingUnavailableError,
)
from powercontext.core.topic.provider_policy import (
    REFUSED_SETTINGS,
    check_embedding_policy,
    check_generation_model,
    check_generation_policy,
    require_policy,
)

KNOWN = ("anthropic", "deterministic", "openai", "acme")


def check(provider: object, settings: object, **kw):
    return check_generation_policy(provider, settings, known_providers=KNOWN, **kw)


def keys(problems: tuple[str, ...]) -> list[str]:
    return [p.split(":", 1)[0] for p in problems]


def test_bounded_scalars_are_accepted_per_provider():
    assert check("openai", {"temperature": 0.2, "top_p": 1, "max_output_tokens": 4096,
                            "timeout_seconds": 30, "service_tier": "flex"}) == ()
    assert check("anthropic", {"max_output_tokens": 1, "timeout_seconds": 3600,
                               "service_tier": "standard_only"}) == ()
    assert check("deterministic", {}) == ()
    assert check("acme", {"seed": 7, "temperature": 2, "service_tier": "auto"}) == ()


@pytest.mark.parametrize("key", sorted(REFUSED_SETTINGS))
@pytest.mark.parametrize("value", [False, None, "x", {"a": 1}])
def test_each_refused_setting_is_refused_whatever_its_value(key, value):
    problems = check("openai", {key: value, "temperature": 0})
    assert keys(problems) == [key]
    assert REFUSED_SETTINGS[key] in problems[0]


def test_hidden_history_background_and_native_tools_name_their_reason():
    problems = check("openai", {"store": False, "previous_response_id": "r",
                                "conversation": "c", "background": True, "tools": []})
    text = "\n".join(problems)
    assert "hidden response/conversation history" in text
    assert "background generation" in text and "native" in text


def test_unknown_and_unsupported_settings_are_refused_by_name():
    assert keys(check("openai", {"frequency_penalty": 0})) == ["frequency_penalty"]
    assert "unknown setting" in check("openai", {"frequency_penalty": 0})[0]
    # known setting, but the provider's SDK call cannot send it without a raw extra
    (p,) = check("anthropic", {"temperature": 0.5})
    assert p.startswith("temperature: not supported by provider 'anthropic'")
    assert keys(check("openai", {"seed": 1})) == ["seed"]
    assert keys(check("deterministic", {"top_p": 0.5})) == ["top_p"]


@pytest.mark.parametrize(("key", "value"), [
    ("temperature", -0.01), ("temperature", 2.01), ("temperature", math.nan),
    ("temperature", math.inf), ("temperature", True), ("temperature", "0.5"),
    ("top_p", 1.5), ("top_p", -1), ("max_output_tokens", 0), ("max_output_tokens", 1.0),
    ("max_output_tokens", 125_001), ("timeout_seconds", 0), ("timeout_seconds", 3601),
    ("service_tier", "standard_only"), ("service_tier", None), ("service_tier", 1),
])
def test_out_of_range_values_are_refused_naming_the_key(key, value):
    (problem,) = check("openai", {key: value})
    assert problem.startswith(f"{key}: must be")


def test_max_output_tokens_is_bounded_by_the_context_window():
    assert check("openai", {"max_output_tokens": 2000}, context_window_tokens=2000) == ()
    assert keys(check("openai", {"max_output_tokens": 2001},
                      context_window_tokens=2000)) == ["max_output_tokens"]


def test_unknown_or_missing_provider_is_refused():
    (p,) = check("gemini", {})
    assert p.startswith("generation_provider: unknown provider 'gemini'")
    assert keys(check(None, {})) == ["generation_provider"]
    assert keys(check("", {})) == ["generation_provider"]
    assert keys(check("openai", ["temperature"])) == ["generation_settings"]


def test_embedding_admits_only_dimensions_and_truncate():
    assert check_embedding_policy({"dimensions": 384, "truncate": "end"}) == ()
    assert check_embedding_policy({"truncate": True}) == ()
    assert keys(check_embedding_policy({"dimensions": 0})) == ["dimensions"]
    assert keys(check_embedding_policy({"dimensions": 4097})) == ["dimensions"]
    assert keys(check_embedding_policy({"truncate": "middle"})) == ["truncate"]
    assert keys(check_embedding_policy({"encoding_format": "base64", "extra_body": {},
                                        "dimensions": 8})) == ["encoding_format",
                                                               "extra_body"]
    assert keys(check_embedding_policy(None)) == ["embedding_settings"]


class _Model:
    def __init__(self, name="openai", settings=None, max_requests=1, context=125_000):
        self.name, self.settings = name, settings
        self.max_requests, self.context_window_tokens = max_requests, context


def test_a_built_model_is_checked_again_at_worker_start():
    assert check_generation_model(_Model(settings={"temperature": 0}),
                                  known_providers=KNOWN) == ()
    problems = check_generation_model(
        _Model("nope", {"store": True}, max_requests=0, context=10), known_providers=KNOWN)
    assert keys(problems) == ["generation_provider", "store",
                              "generation_model_context_window_tokens",
                              "generation_max_requests"]


def test_require_policy_raises_unavailable_with_the_problems():
    require_policy(())
    with pytest.raises(TopicProcessingUnavailableError) as info:
        require_policy(("store: refused",))
    assert isinstance(info.value, CapabilityNotSupportedError)
    assert info.value.problems == ("store: refused",)
    assert "Topic processing unavailable" in str(info.value)
