"""The Topic generation plugin: registers the built-in providers by name through the
same hook a third-party plugin implements (ARCHITECTURE.md, "Plugins"; Topic Memory RFC,
"Cumulative work and evidence ceilings").

- ``openai``: :class:`~.openai_responses.OpenAIResponsesTopicModel` (the ``openai`` SDK);
- ``anthropic``: :class:`~.anthropic_messages.AnthropicMessagesTopicModel` (the
  ``anthropic`` SDK);
- ``deterministic``: :class:`~.deterministic.DeterministicTopicModel` (no model, no
  request): it gets only the options its class takes (no endpoint or credential).

Each factory takes the options of
:data:`~powercontext.plugins.hookspecs.TopicGenerationModelFactory` and imports its
module when called, so importing this module imports no SDK.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from powercontext.plugins.hookspecs import RegisterTopicGenerationModel, hookimpl

if TYPE_CHECKING:
    from powercontext.adapters.topic_generation.anthropic_messages import (
        AnthropicMessagesTopicModel,
    )
    from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
    from powercontext.adapters.topic_generation.openai_responses import (
        OpenAIResponsesTopicModel,
    )

__all__ = [
    "accepted_options",
    "anthropic",
    "deterministic",
    "openai",
    "powercontext_register_topic_generation_models",
]


def accepted_options(cls: Callable[..., Any], options: dict[str, Any]) -> dict[str, Any]:
    """The items of ``options`` that ``cls`` names as parameters (all of them when it
    takes ``**kwargs``)."""
    params = inspect.signature(cls).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return options
    return {k: v for k, v in options.items() if k in params}


def openai(**options: Any) -> OpenAIResponsesTopicModel:
    """``OpenAIResponsesTopicModel(**options)``; ImportError without the SDK."""
    from powercontext.adapters.topic_generation.openai_responses import (
        OpenAIResponsesTopicModel,
    )

    return OpenAIResponsesTopicModel(**options)


def anthropic(**options: Any) -> AnthropicMessagesTopicModel:
    """``AnthropicMessagesTopicModel(**options)``; ImportError without the SDK."""
    from powercontext.adapters.topic_generation.anthropic_messages import (
        AnthropicMessagesTopicModel,
    )

    return AnthropicMessagesTopicModel(**options)


def deterministic(**options: Any) -> DeterministicTopicModel:
    """``DeterministicTopicModel`` with the options it takes (``context_window_tokens``,
    ``max_requests``); the others (model, endpoint, credential, ...) are dropped."""
    from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel

    return DeterministicTopicModel(**accepted_options(DeterministicTopicModel, options))


@hookimpl
def powercontext_register_topic_generation_models(
        register: RegisterTopicGenerationModel) -> None:
    register("openai", openai)
    register("anthropic", anthropic)
    register("deterministic", deterministic)
