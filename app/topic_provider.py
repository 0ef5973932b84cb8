"""The Topic generation provider the configuration names (TOPIC-MEMORY.md, "Providers";
Topic Memory RFC, "Cumulative work and evidence ceilings"): the provider policy applied
to the whole configuration (:mod:`powercontext.core.topic.provider_policy`), then the
TopicGenerationModel built through the plugin registry, so a refused setting reaches no
provider; the embedding side of the same policy; and the start-up decision (Topic
processing available, unavailable, or a start-up error when automatic scheduling is
configured). The configuration itself is :mod:`powercontext.configuration`."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from powercontext.configuration import PowerContextConfig
from powercontext.core.errors import InvalidInputError, TopicProcessingUnavailableError
from powercontext.core.topic.provider_policy import (
    check_embedding_policy,
    check_generation_model,
    check_generation_policy,
    require_policy,
)
from powercontext.core.topic.result_room import result_room_problems

if TYPE_CHECKING:
    from powercontext.plugins.registry import Registry
    from powercontext.ports import EmbeddingModel
    from powercontext.ports.topic import TopicGenerationModel

__all__ = [
    "check_startup",
    "check_topic_embedding",
    "check_worker_model",
    "generation_problems",
    "topic_generation_model",
]

_API_KEY_ENV = MappingProxyType({"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"})
_SDK_PROVIDERS = frozenset(_API_KEY_ENV)


def generation_problems(config: PowerContextConfig, registry: Registry | None = None,
                        env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Every reason the configuration cannot run Topic processing (``"key: why"``,
    dotted config keys), as the provider policy and the processing settings see it;
    empty: a provider can be built."""
    inf = config.inference
    known = tuple(_registry(registry).topic_generation_model_factories())
    problems: list[str] = []
    settings = dict(inf.generation_settings)
    for key, own in (("max_output_tokens", "generation_max_output_tokens"),
                     ("timeout_seconds", "generation_timeout_seconds")):
        if key in settings:
            problems.append(f"inference.generation_settings.{key}: set it once, as "
                            f"inference.{own}")
        settings[key] = (config.max_output_tokens() if key == "max_output_tokens"
                         else getattr(inf, own))
    for problem in check_generation_policy(
            inf.generation_provider, settings, known_providers=known,
            context_window_tokens=inf.generation_model_context_window_tokens):
        key, _, why = problem.partition(": ")
        problems.append(f"{_config_key(key)}: {why}")
    try:
        problems.extend(result_room_problems(config.processing_settings()))
    except InvalidInputError as exc:
        problems.append(str(exc))
    provider = inf.generation_provider
    if provider in _SDK_PROVIDERS:
        if not inf.generation_model:
            problems.append(f"inference.generation_model: not set (provider {provider!r} "
                            "needs the model name)")
        if _api_key(config, env) is None and not inf.generation_base_url:
            problems.append(f"inference.generation_api_key: not set, nor "
                            f"${_API_KEY_ENV[provider]}")
    return tuple(dict.fromkeys(problems))


def topic_generation_model(config: PowerContextConfig, registry: Registry | None = None,
                           env: Mapping[str, str] = os.environ) -> TopicGenerationModel:
    """The configured TopicGenerationModel, built only after the provider policy
    accepted the whole configuration, so a refused setting reaches no provider.
    Raises TopicProcessingUnavailableError (``problems``: each offending key) when the
    provider is unset, unknown or refused, a setting is refused, the SDK is missing or
    the provider refuses its options."""
    problems = generation_problems(config, registry, env)
    require_policy(problems)
    inf = config.inference
    reg = _registry(registry)
    provider = inf.generation_provider
    assert provider is not None  # the policy refuses an unset provider
    from powercontext.plugins.registry import UnknownPluginError

    try:
        model = reg.topic_generation_model(
            provider, model=inf.generation_model, base_url=inf.generation_base_url,
            api_key=_api_key(config, env),
            context_window_tokens=inf.generation_model_context_window_tokens,
            max_requests=inf.generation_max_requests,
            timeout_seconds=float(inf.generation_timeout_seconds),
            settings=dict(inf.generation_settings))
    except UnknownPluginError as exc:
        raise TopicProcessingUnavailableError(
            f"Topic processing unavailable: {exc}",
            (f"inference.generation_provider: {exc}",)) from None
    except ImportError as exc:
        problem = f"inference.generation_provider: {provider!r} needs a package that is " \
                  f"not installed ({exc.name or exc})"
        raise TopicProcessingUnavailableError(
            f"Topic processing unavailable: {problem}", (problem,)) from None
    except InvalidInputError as exc:
        problem = f"inference.{exc.field}: {str(exc).partition(': ')[2]}"
        raise TopicProcessingUnavailableError(
            f"Topic processing unavailable: {problem}", (problem,)) from None
    check_worker_model(model, reg)
    return model


def check_worker_model(model: object, registry: Registry | None = None) -> None:
    """The Worker start-up check of an already built model (the same policy as the
    configuration): TopicProcessingUnavailableError when it fails."""
    known = tuple(_registry(registry).topic_generation_model_factories())
    require_policy(check_generation_model(model, known_providers=known))


def check_topic_embedding(config: PowerContextConfig,
                          model: EmbeddingModel | None) -> None:
    """The embedding side of the policy for Topic processing: ``[inference.
    embedding_settings]`` admits only ``dimensions`` (which must equal the model
    profile's dimension) and ``truncate`` (false / ``"none"`` unless the model declares
    ``supports_truncate``). TopicProcessingUnavailableError naming each problem."""
    settings = config.inference.embedding_settings
    problems = [f"inference.embedding_settings.{p}"
                for p in check_embedding_policy(dict(settings))]
    if model is not None and not problems:
        dims = settings.get("dimensions")
        if dims is not None and dims != model.profile.dimension:
            problems.append(f"inference.embedding_settings.dimensions: {dims} differs from "
                            f"the embedding profile's dimension {model.profile.dimension}")
        truncate = settings.get("truncate", False)
        if truncate not in (False, "none") and not getattr(model, "supports_truncate", False):
            problems.append(f"inference.embedding_settings.truncate: the embedding model "
                            f"{model.profile.model!r} cannot truncate its input")
    require_policy(tuple(problems), "Topic processing (embedding)")


def check_startup(config: PowerContextConfig, registry: Registry | None = None, *,
                  embedding_model: EmbeddingModel | None = None,
                  logger: logging.Logger | None = None) -> TopicGenerationModel | None:
    """Start-up: the TopicGenerationModel when Topic processing is available, else
    None (Topic processing unavailable; logged as a warning with the problems). When
    automatic scheduling is configured (``runtime.topic_memory_auto_interval_seconds``)
    an unavailable configuration is a start-up error: TopicProcessingUnavailableError."""
    log = logger or logging.getLogger("powercontext.topic")
    try:
        model = topic_generation_model(config, registry)
        check_topic_embedding(config, embedding_model)
    except TopicProcessingUnavailableError as exc:
        if config.runtime.topic_memory_auto_interval_seconds is not None:
            raise TopicProcessingUnavailableError(
                "start-up refused: automatic Topic processing is configured "
                "(runtime.topic_memory_auto_interval_seconds) but " + str(exc),
                exc.problems) from None
        log.warning("Topic processing unavailable: %s", "; ".join(exc.problems))
        return None
    return model


def _config_key(key: str) -> str:
    if key in ("generation_provider", "generation_settings"):
        return f"inference.{key}"
    if key == "max_output_tokens":
        return "inference.generation_max_output_tokens"
    if key == "timeout_seconds":
        return "inference.generation_timeout_seconds"
    return f"inference.generation_settings.{key}"


def _api_key(config: PowerContextConfig, env: Mapping[str, str]) -> str | None:
    inf = config.inference
    if inf.generation_api_key:
        return inf.generation_api_key
    var = _API_KEY_ENV.get(inf.generation_provider or "")
    return (env.get(var) or None) if var else None


def _registry(registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    from powercontext.plugins.registry import Registry

    return Registry()
