"""The provider policy of Topic processing (Topic Memory RFC, "Cumulative work and
evidence ceilings": "Topic model settings admit only bounded scalar sampling, output,
timeout, and service-tier settings; Embedding admits only dimensions and truncate.
extra_body, hidden response/conversation history, background generation, native tools,
and unsupported providers are rejected before provider I/O"; TOPIC-MEMORY.md,
"Providers").

Pure: the same check runs when the configuration is assembled
(``powercontext.topic_provider.topic_generation_model``) and when a Worker starts
(:func:`check_generation_model`), so both refuse exactly the same things.

Generation settings (``[inference.generation_settings]``), each a bounded scalar:

=====================  ===============================  ==========================
setting                value                            providers
=====================  ===============================  ==========================
``temperature``        number 0..2                      openai, plugins
``top_p``              number 0..1                      openai, plugins
``seed``               integer 0..2**53                 plugins
``max_output_tokens``  integer 1..context window        all
``timeout_seconds``    number 1..3600                   all
``service_tier``       openai: auto default flex        openai, anthropic, plugins
                       priority scale; anthropic: auto
                       standard_only
=====================  ===============================  ==========================

``plugins`` are providers registered by a third-party plugin (any name outside
:data:`BUILTIN_PROVIDERS`); the built-ins admit only what their SDK call can send
without a raw extra (the Anthropic SDK's ``messages.create`` has no ``temperature``,
``top_p`` or ``seed``; the Responses API has no ``seed``), and ``deterministic`` no
sampling at all. Every other key is refused, those of :data:`REFUSED_SETTINGS` with
their reason. Embedding settings: ``dimensions`` (integer 1..4096) and ``truncate``
(a boolean, or ``"none"`` / ``"start"`` / ``"end"``).

A problem is one string ``"<key>: <why>"``; an empty tuple means accepted.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any

from powercontext.core.errors import TopicProcessingUnavailableError

__all__ = [
    "BUILTIN_PROVIDERS",
    "EMBEDDING_SETTINGS",
    "GENERATION_SETTINGS",
    "REFUSED_SETTINGS",
    "SERVICE_TIERS",
    "allowed_generation_settings",
    "check_embedding_policy",
    "check_generation_model",
    "check_generation_policy",
    "require_policy",
]

BUILTIN_PROVIDERS: frozenset[str] = frozenset({"openai", "anthropic", "deterministic"})
"""The providers powercontext ships (``adapters/topic_generation/plugin.py``)."""

GENERATION_SETTINGS: frozenset[str] = frozenset(
    {"temperature", "top_p", "seed", "max_output_tokens", "timeout_seconds", "service_tier"})
"""Every generation setting any provider admits."""

EMBEDDING_SETTINGS: frozenset[str] = frozenset({"dimensions", "truncate"})
"""The embedding settings Topic processing admits."""

_PROVIDER_SETTINGS: Mapping[str, frozenset[str]] = MappingProxyType({
    "openai": frozenset({"temperature", "top_p", "max_output_tokens", "timeout_seconds",
                         "service_tier"}),
    "anthropic": frozenset({"max_output_tokens", "timeout_seconds", "service_tier"}),
    "deterministic": frozenset({"max_output_tokens", "timeout_seconds"}),
})

SERVICE_TIERS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "openai": ("auto", "default", "flex", "priority", "scale"),
    "anthropic": ("auto", "standard_only"),
})
"""Admitted ``service_tier`` values per provider; a plugin provider admits openai's."""

_HISTORY = "hidden response/conversation history is refused (every stage call is " \
           "self-contained)"
_RAW = "raw request extras are refused (they would bypass this policy)"
_TOOLS = "provider-hosted (native) tools are refused (structured output only)"

REFUSED_SETTINGS: Mapping[str, str] = MappingProxyType({
    "extra_body": _RAW,
    "extra_headers": _RAW,
    "extra_query": _RAW,
    "previous_response_id": _HISTORY,
    "conversation": _HISTORY,
    "store": _HISTORY,
    "background": "background generation is refused (a stage call returns its complete "
                  "answer)",
    "tools": _TOOLS,
    "tool_choice": _TOOLS,
    "parallel_tool_calls": _TOOLS,
    "stream": "streaming is refused (a suspended or partial answer is never used)",
})
"""Settings refused by name, with the reason (any value, even ``false``)."""

SEED_MAX = 2**53
TIMEOUT_RANGE = (1, 3600)
DIMENSIONS_MAX = 4096
TRUNCATE_VALUES = ("none", "start", "end")


def allowed_generation_settings(provider: str) -> frozenset[str]:
    """The generation settings ``provider`` admits (a plugin provider: all of
    :data:`GENERATION_SETTINGS`)."""
    return _PROVIDER_SETTINGS.get(provider, GENERATION_SETTINGS)


def check_generation_policy(provider: object, settings: object, *,
                            known_providers: Collection[str],
                            context_window_tokens: int = 125_000) -> tuple[str, ...]:
    """The problems of generation ``provider`` with ``settings`` (``"key: why"`` each,
    in key order after the provider's; empty: accepted). ``known_providers`` are the
    names registered through ``powercontext_register_topic_generation_models``;
    ``context_window_tokens`` bounds ``max_output_tokens``. Never raises."""
    problems: list[str] = []
    if not isinstance(provider, str) or not provider:
        problems.append("generation_provider: not set (Topic processing needs a provider "
                        "named explicitly: openai, anthropic or deterministic)")
        provider = ""
    elif provider not in known_providers:
        known = ", ".join(sorted(known_providers)) or "none"
        problems.append(f"generation_provider: unknown provider {provider!r} "
                        f"(registered: {known})")
    if not isinstance(settings, Mapping):
        problems.append(f"generation_settings: must be a table of settings, not "
                        f"{type(settings).__name__}")
        return tuple(problems)
    allowed = allowed_generation_settings(provider) if provider else GENERATION_SETTINGS
    for key in sorted(settings, key=repr):
        value = settings[key]
        why = _refusal(key, GENERATION_SETTINGS)
        if why is None and key not in allowed:
            why = f"not supported by provider {provider!r} (it admits: " \
                  f"{', '.join(sorted(allowed)) or 'nothing'})"
        if why is None:
            why = _generation_value(provider, key, value, context_window_tokens)
        if why is not None:
            problems.append(f"{_name(key)}: {why}")
    return tuple(problems)


def check_embedding_policy(settings: object) -> tuple[str, ...]:
    """The problems of the embedding ``settings`` Topic processing would use
    (``dimensions`` 1..4096, ``truncate`` bool or none/start/end; anything else
    refused). Empty: accepted. Never raises."""
    if not isinstance(settings, Mapping):
        return (f"embedding_settings: must be a table of settings, not "
                f"{type(settings).__name__}",)
    problems: list[str] = []
    for key in sorted(settings, key=repr):
        value = settings[key]
        why = _refusal(key, EMBEDDING_SETTINGS)
        if why is None and key == "dimensions":
            why = _integer(value, 1, DIMENSIONS_MAX)
        elif why is None and key == "truncate" and not isinstance(value, bool) \
                and value not in TRUNCATE_VALUES:
            why = f"must be true, false or one of {', '.join(TRUNCATE_VALUES)}, " \
                  f"not {_show(value)}"
        if why is not None:
            problems.append(f"{_name(key)}: {why}")
    return tuple(problems)


def check_generation_model(model: Any, *, known_providers: Collection[str]) -> tuple[str, ...]:
    """The problems of an already built TopicGenerationModel, checked again when a
    Worker starts: its ``name`` must be a known provider, ``max_requests`` 1..16,
    ``context_window_tokens`` 1,024..10,000,000, and its ``settings`` (a mapping, when
    the model exposes them) must pass :func:`check_generation_policy`."""
    name = getattr(model, "name", None)
    context = getattr(model, "context_window_tokens", None)
    problems: list[str] = []
    why = _integer(context, 1_024, 10_000_000)
    if why is not None:
        problems.append(f"generation_model_context_window_tokens: {why}")
        context = 125_000
    why = _integer(getattr(model, "max_requests", None), 1, 16)
    if why is not None:
        problems.append(f"generation_max_requests: {why}")
    settings = getattr(model, "settings", None)
    problems[:0] = check_generation_policy(
        name, {} if settings is None else settings, known_providers=known_providers,
        context_window_tokens=context if isinstance(context, int) else 125_000)
    return tuple(problems)


def require_policy(problems: tuple[str, ...], what: str = "Topic processing") -> None:
    """Raise TopicProcessingUnavailableError(problems) when there is any problem."""
    if problems:
        raise TopicProcessingUnavailableError(
            f"{what} unavailable: " + "; ".join(problems), problems)


def _refusal(key: object, family: frozenset[str]) -> str | None:
    if not isinstance(key, str):
        return "setting names are strings"
    if key in REFUSED_SETTINGS:
        return REFUSED_SETTINGS[key]
    if key not in family:
        return f"unknown setting (admitted: {', '.join(sorted(family))})"
    return None


def _generation_value(provider: str, key: str, value: object, context: int) -> str | None:
    if key == "temperature":
        return _number(value, 0, 2)
    if key == "top_p":
        return _number(value, 0, 1)
    if key == "seed":
        return _integer(value, 0, SEED_MAX)
    if key == "max_output_tokens":
        return _integer(value, 1, context)
    if key == "timeout_seconds":
        return _number(value, *TIMEOUT_RANGE)
    tiers = SERVICE_TIERS.get(provider, SERVICE_TIERS["openai"])
    if not isinstance(value, str) or value not in tiers:
        return f"must be one of {', '.join(tiers)}, not {_show(value)}"
    return None


def _integer(value: object, lo: int, hi: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        return f"must be an integer in {lo}..{hi}, not {_show(value)}"
    return None


def _number(value: object, lo: float, hi: float) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or (isinstance(value, float) and not math.isfinite(value)) \
            or not lo <= value <= hi:
        return f"must be a number in {lo:g}..{hi:g}, not {_show(value)}"
    return None


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__}"


def _name(key: object) -> str:
    return key if isinstance(key, str) and key.isprintable() else repr(key)
