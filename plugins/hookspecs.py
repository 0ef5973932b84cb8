"""The pluggy hook specifications of powercontext (ARCHITECTURE.md, "Plugins").

Every hook takes a ``register`` callback owned by the host's
:class:`~powercontext.plugins.registry.Registry`; a plugin calls it once per thing it
provides. Each built-in adapter package registers through these same hooks from its own
``plugin`` module (``powercontext.adapters.sqlite.plugin``, ...: the registry's
``DEFAULT_PLUGINS``); third parties through the entry-point group ``powercontext``::

    from powercontext.plugins import hookimpl

    @hookimpl
    def powercontext_register_backends(register):
        register("mydb", lambda url, *, profile: MyDbMemoryBackend(url, profile=profile))

Factories are called only when the host asks for the thing, so a plugin module stays
cheap to import: import heavy SDKs inside the factory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

from powercontext.ports.factories import BackendFactory, TopicBackendFactory

if TYPE_CHECKING:
    from powercontext.ports import EmbeddingModel
    from powercontext.ports.topic import TopicGenerationModel

__all__ = [
    "PROJECT_NAME",
    "BackendFactory",
    "CandidateProviderFactory",
    "EmbeddingModelFactory",
    "RegisterBackend",
    "RegisterCandidateProvider",
    "RegisterEmbeddingModel",
    "RegisterTopicBackend",
    "RegisterTopicGenerationModel",
    "TopicBackendFactory",
    "TopicGenerationModelFactory",
    "hookimpl",
    "hookspec",
    "powercontext_register_backends",
    "powercontext_register_candidate_providers",
    "powercontext_register_embedding_models",
    "powercontext_register_topic_backends",
    "powercontext_register_topic_generation_models",
]

PROJECT_NAME = "powercontext"
"""The pluggy project name and the entry-point group third-party plugins use."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


EmbeddingModelFactory = Callable[..., "EmbeddingModel"]
"""``factory(**options) -> EmbeddingModel``; options are model-specific keywords."""

CandidateProviderFactory = Callable[..., Any]
"""``factory(**options)`` -> a candidate provider (Memory RFC, "Candidate generation")."""

TopicGenerationModelFactory = Callable[..., "TopicGenerationModel"]
"""``factory(*, model, base_url, api_key, context_window_tokens, max_requests,
timeout_seconds, settings) -> TopicGenerationModel`` (Topic Memory RFC, "Cumulative work
and evidence ceilings"): ``model`` the model name (str or None), ``base_url`` an
optional compatible endpoint, ``api_key`` the resolved credential or None,
``context_window_tokens`` and ``max_requests`` (ints) as the model reports them,
``timeout_seconds`` (float) per request, ``settings`` the policy-checked bounded scalar
settings (a dict). The host runs the provider policy before calling it."""

RegisterBackend = Callable[[str, BackendFactory], None]
RegisterTopicBackend = Callable[[str, TopicBackendFactory], None]
RegisterEmbeddingModel = Callable[[str, EmbeddingModelFactory], None]
RegisterCandidateProvider = Callable[[str, CandidateProviderFactory], None]
RegisterTopicGenerationModel = Callable[[str, TopicGenerationModelFactory], None]


@hookspec
def powercontext_register_backends(register: RegisterBackend) -> None:
    """Call ``register(url_scheme, factory)`` for each MemoryBackend the plugin provides.

    ``url_scheme`` is lowercase ASCII (``"sqlite"``, ``"oceanbase"``); one scheme has
    exactly one backend, a second registration raises
    :class:`~powercontext.plugins.registry.DuplicateRegistrationError`.
    """


@hookspec
def powercontext_register_topic_backends(register: RegisterTopicBackend) -> None:
    """Call ``register(url_scheme, factory)`` for each Topic Memory backend the plugin
    provides (the ``topic-memory`` family on the same database a MemoryBackend of that
    scheme opens; one backend class per family). Same scheme rules as
    :func:`powercontext_register_backends`: one scheme, one Topic backend."""


@hookspec
def powercontext_register_embedding_models(register: RegisterEmbeddingModel) -> None:
    """Call ``register(name, factory)`` for each EmbeddingModel the plugin provides;
    ``factory(**options)`` returns the model (Memory RFC, "EmbeddingModel")."""


@hookspec
def powercontext_register_candidate_providers(register: RegisterCandidateProvider) -> None:
    """Call ``register(name, factory)`` for each candidate provider the plugin provides
    (Memory RFC, "Candidate generation and model-free fallback")."""


@hookspec
def powercontext_register_topic_generation_models(
        register: RegisterTopicGenerationModel) -> None:
    """Call ``register(name, factory)`` for each Topic generation provider the plugin
    provides (``openai``, ``anthropic``, ``deterministic`` are built in);
    ``factory(**options)`` returns a
    :class:`~powercontext.ports.topic.TopicGenerationModel` (see
    :data:`TopicGenerationModelFactory` for the options). The configuration names the
    provider (``inference.generation_provider``); an unregistered name makes Topic
    processing unavailable. A plugin provider's settings pass the same policy
    (:mod:`powercontext.core.topic.provider_policy`) before any request."""
