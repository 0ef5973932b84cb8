"""The built-in plugin: our own backends and embedding models, registered through the same
hooks a third party uses (ARCHITECTURE.md, "Plugins").

Adapters are named by dotted path and imported only when a factory is called, so
importing this module (and the registry) never imports APSW, mysqlclient, torch or an
SDK, and ``plugins`` never imports ``adapters`` at module level (adapters import plugins).

Backend URLs:

- ``sqlite:///abs/path/to/memory.db`` (the file-URL form: empty host, percent-encoded
  path) or ``sqlite://:memory:``; the registry turns a bare filesystem path into this
  form. The factory calls ``SQLiteMemoryBackend(path, profile=profile)``.
- ``oceanbase://user:password@host:port/database``: the factory calls
  ``OceanBaseMemoryBackend.from_url(url, profile=profile)`` when that classmethod
  exists, else ``OceanBaseMemoryBackend(url, profile=profile)``.

The Topic generation providers (``TOPIC_GENERATION_MODELS``: ``openai``, ``anthropic``,
``deterministic``) are registered through ``powercontext_register_topic_generation_models``
by dotted path too; the ``deterministic`` factory passes only the options its class
accepts (it makes no request, so it takes no endpoint or credential).

The Topic Memory backends (``TOPIC_BACKENDS``: ``SQLiteTopicBackend``,
``OceanBaseTopicBackend``) are built from the same URLs the same way, through
``powercontext_register_topic_backends``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from powercontext.core.errors import InvalidInputError
from powercontext.plugins.hookspecs import (
    RegisterBackend,
    RegisterCandidateProvider,
    RegisterEmbeddingModel,
    RegisterTopicBackend,
    RegisterTopicGenerationModel,
    hookimpl,
)

if TYPE_CHECKING:
    from powercontext.core.models import EmbeddingProfile
    from powercontext.ports import EmbeddingModel
    from powercontext.ports.topic import TopicMemoryBackend

__all__ = [
    "BACKENDS",
    "CANDIDATE_PROVIDERS",
    "EMBEDDING_MODELS",
    "TOPIC_BACKENDS",
    "TOPIC_GENERATION_MODELS",
    "powercontext_register_backends",
    "powercontext_register_candidate_providers",
    "powercontext_register_embedding_models",
    "powercontext_register_topic_backends",
    "powercontext_register_topic_generation_models",
    "resolve",
    "sqlite_path_from_url",
]

BACKENDS: dict[str, str] = {
    "sqlite": "powercontext.adapters.sqlite:SQLiteMemoryBackend",
    "oceanbase": "powercontext.adapters.oceanbase:OceanBaseMemoryBackend",
}
"""URL scheme -> ``module:attribute`` of the backend class."""

TOPIC_BACKENDS: dict[str, str] = {
    "sqlite": "powercontext.adapters.sqlite:SQLiteTopicBackend",
    "oceanbase": "powercontext.adapters.oceanbase:OceanBaseTopicBackend",
}
"""URL scheme -> ``module:attribute`` of the Topic Memory backend class (built exactly
as the Memory backend of that scheme: same URL, profile and analyzer)."""

EMBEDDING_MODELS: dict[str, str] = {
    "deterministic": "powercontext.adapters.embedding.deterministic:DeterministicEmbedding",
    "local": "powercontext.adapters.embedding.local:LocalEmbedding",
    "openai": "powercontext.adapters.embedding.openai_compat:OpenAIEmbedding",
}
"""Embedding model name -> ``module:attribute`` of its class (called with the options)."""

TOPIC_GENERATION_MODELS: dict[str, str] = {
    "openai": "powercontext.adapters.topic_generation.openai_responses:OpenAIResponsesTopicModel",
    "anthropic":
        "powercontext.adapters.topic_generation.anthropic_messages:AnthropicMessagesTopicModel",
    "deterministic":
        "powercontext.adapters.topic_generation.deterministic:DeterministicTopicModel",
}
"""Topic generation provider name -> ``module:attribute`` of its class (called with the
options of :data:`~powercontext.plugins.hookspecs.TopicGenerationModelFactory`)."""

CANDIDATE_PROVIDERS: dict[str, str] = {
    "contract": "powercontext.adapters.candidates.providers:ContractProvider",
    "rules": "powercontext.adapters.candidates.providers:RuleProvider",
    "git": "powercontext.adapters.candidates.providers:GitChangeProvider",
    "structured": "powercontext.adapters.candidates.providers:StructuredProvider",
    "task_outcome": "powercontext.adapters.candidates.providers:TaskOutcomeProvider",
    "model": "powercontext.adapters.candidates.providers:ModelProvider",
}
"""Candidate provider name -> ``module:attribute`` of its class."""


def resolve(dotted: str) -> Any:
    """Import ``"package.module:attribute"`` and return the attribute.

    Raises ImportError (for example when an extra is not installed) or AttributeError.
    """
    module_name, _, attribute = dotted.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute)


def sqlite_path_from_url(url: str) -> str:
    """The database path of a ``sqlite:`` URL: ``sqlite:///tmp/m.db`` -> ``/tmp/m.db``
    (percent-decoded), ``sqlite://:memory:`` -> ``:memory:``.

    Raises :class:`~powercontext.core.errors.InvalidInputError` (a ValueError) for another
    scheme, a host other than empty or ``localhost``, or an empty path.
    """
    if url in ("sqlite://:memory:", "sqlite:///:memory:"):
        return ":memory:"
    parts = urlsplit(url)
    if parts.scheme.lower() != "sqlite":
        raise InvalidInputError("url", f"{url!r} is not a sqlite: URL")
    if parts.netloc not in ("", "localhost"):
        raise InvalidInputError(
            "url", f"{url!r} names host {parts.netloc!r}; use sqlite:///absolute/path"
        )
    if parts.query or parts.fragment:
        raise InvalidInputError("url", f"{url!r}: sqlite URLs take no query or fragment")
    path = unquote(parts.path)
    if not path or path == "/":
        raise InvalidInputError("url", f"{url!r} has no database path")
    return path


def _sqlite_backend(
    url: str, *, profile: EmbeddingProfile | None, analyzer: str | None = None,
    table: dict[str, str] = BACKENDS,
) -> Any:
    path = sqlite_path_from_url(url)
    backend_class = resolve(table["sqlite"])
    return backend_class(path, profile=profile, analyzer=analyzer)


def _oceanbase_backend(
    url: str, *, profile: EmbeddingProfile | None, analyzer: str | None = None,
    table: dict[str, str] = BACKENDS,
) -> Any:
    backend_class = resolve(table["oceanbase"])
    from_url = getattr(backend_class, "from_url", None)
    return (
        from_url(url, profile=profile, analyzer=analyzer)
        if from_url
        else backend_class(url, profile=profile, analyzer=analyzer)
    )


def _sqlite_topic_backend(
    url: str, *, profile: EmbeddingProfile | None, analyzer: str | None = None
) -> TopicMemoryBackend:
    backend: TopicMemoryBackend = _sqlite_backend(
        url, profile=profile, analyzer=analyzer, table=TOPIC_BACKENDS)
    return backend


def _oceanbase_topic_backend(
    url: str, *, profile: EmbeddingProfile | None, analyzer: str | None = None
) -> TopicMemoryBackend:
    backend: TopicMemoryBackend = _oceanbase_backend(
        url, profile=profile, analyzer=analyzer, table=TOPIC_BACKENDS)
    return backend


def _model_factory(dotted: str) -> Any:
    def factory(**options: Any) -> EmbeddingModel:
        model: EmbeddingModel = resolve(dotted)(**options)
        return model

    factory.__qualname__ = factory.__name__ = f"lazy[{dotted}]"
    return factory


def _topic_model_factory(dotted: str, *, only_accepted: bool = False) -> Any:
    def factory(**options: Any) -> Any:
        cls = resolve(dotted)
        if only_accepted:
            import inspect

            params = inspect.signature(cls).parameters
            if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                options = {k: v for k, v in options.items() if k in params}
        return cls(**options)

    factory.__qualname__ = factory.__name__ = f"lazy[{dotted}]"
    return factory


@hookimpl
def powercontext_register_backends(register: RegisterBackend) -> None:
    register("sqlite", _sqlite_backend)
    register("oceanbase", _oceanbase_backend)


@hookimpl
def powercontext_register_topic_backends(register: RegisterTopicBackend) -> None:
    register("sqlite", _sqlite_topic_backend)
    register("oceanbase", _oceanbase_topic_backend)


@hookimpl
def powercontext_register_embedding_models(register: RegisterEmbeddingModel) -> None:
    for name, dotted in EMBEDDING_MODELS.items():
        register(name, _model_factory(dotted))


@hookimpl
def powercontext_register_candidate_providers(register: RegisterCandidateProvider) -> None:
    for name, dotted in CANDIDATE_PROVIDERS.items():
        register(name, _model_factory(dotted))


@hookimpl
def powercontext_register_topic_generation_models(
        register: RegisterTopicGenerationModel) -> None:
    for name, dotted in TOPIC_GENERATION_MODELS.items():
        register(name, _topic_model_factory(dotted, only_accepted=name == "deterministic"))
