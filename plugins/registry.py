"""The plugin registry: one object that owns its pluggy PluginManager (ARCHITECTURE.md,
"Plugins"; no module-global manager).

Building a :class:`Registry` loads the built-in plugins (:data:`DEFAULT_PLUGINS`: the
``plugin`` module of each adapter package, registered exactly as a third party's module
is), any plugins passed in, and the entry-point group ``powercontext`` (read only when a
distribution may declare it: :mod:`powercontext.plugins.discovery`), then calls pluggy's
``check_pending()``, so a plugin whose hook name is misspelled fails at start-up.
Nothing is collected or imported before that, and factories import their adapters only
when called. Precedence: none; a URL scheme or a name has exactly one plugin, and a
second registration (a third party claiming ``sqlite``, say) is refused.
"""

from __future__ import annotations

import importlib
import re
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import pluggy

from powercontext.core.errors import PowerContextError
from powercontext.plugins import hookspecs
from powercontext.plugins.discovery import may_declare_entry_points
from powercontext.plugins.hookspecs import (
    PROJECT_NAME,
    BackendFactory,
    CandidateProviderFactory,
    EmbeddingModelFactory,
    TopicBackendFactory,
    TopicGenerationModelFactory,
)
from powercontext.plugins.urls import sqlite_url_for_path, url_scheme

if TYPE_CHECKING:
    from powercontext.core.models import EmbeddingProfile
    from powercontext.ports import EmbeddingModel, MemoryBackend
    from powercontext.ports.topic import TopicGenerationModel, TopicMemoryBackend

__all__ = [
    "DEFAULT_PLUGINS",
    "DuplicateRegistrationError",
    "PluginError",
    "Registry",
    "UnknownPluginError",
    "url_scheme",
]

DEFAULT_PLUGINS: tuple[str, ...] = (
    "powercontext.adapters.sqlite.plugin",
    "powercontext.adapters.oceanbase.plugin",
    "powercontext.adapters.embedding.plugin",
    "powercontext.adapters.candidates.plugin",
    "powercontext.adapters.topic_generation.plugin",
)
"""The built-in plugins: modules imported by name and registered (under that name) in
every Registry, before the plugins passed in and the entry points. Each is an ordinary
plugin module of ``@hookimpl`` functions, like a third party's; importing one imports no
driver, SDK or backend module (its factories do, when called)."""

_NAME = re.compile(r"^[a-z][a-z0-9_.+\-]*$")


class PluginError(PowerContextError):
    """A plugin failed to load, or registered something invalid."""


class DuplicateRegistrationError(PluginError, ValueError):
    """Two plugins registered the same URL scheme, embedding model or provider name."""


class UnknownPluginError(PluginError, LookupError):
    """No plugin registered the requested URL scheme, embedding model or provider."""


@final
class Registry:
    """What the installed plugins provide: Memory and Topic Memory backends by URL
    scheme, embedding models, candidate providers and Topic generation providers by
    name.

    ``plugins`` are extra plugin objects (modules or instances with ``@hookimpl``
    methods) registered after the built-ins; ``entry_points=False`` skips the
    ``powercontext`` entry-point group (tests). Construction collects every hook
    (cheap: factories import nothing until called) and raises
    :class:`DuplicateRegistrationError` for a scheme or name registered twice, or
    :class:`PluginError` when an entry point fails to import, a hook implementation
    matches no hookspec, or a name or factory is invalid.
    """

    def __init__(self, *, plugins: Iterable[object] = (), entry_points: bool = True) -> None:
        self._pm = pluggy.PluginManager(PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        for dotted in DEFAULT_PLUGINS:
            self._pm.register(importlib.import_module(dotted), name=dotted)
        for plugin in plugins:
            self._add(plugin, None)
        if entry_points and may_declare_entry_points(PROJECT_NAME):
            try:
                self._pm.load_setuptools_entrypoints(PROJECT_NAME)
            except Exception as exc:
                raise PluginError(
                    f"loading the {PROJECT_NAME!r} entry-point plugins failed: {exc!r}"
                ) from exc
        self._backends: dict[str, BackendFactory] = {}
        self._topic_backends: dict[str, TopicBackendFactory] = {}
        self._models: dict[str, EmbeddingModelFactory] = {}
        self._providers: dict[str, CandidateProviderFactory] = {}
        self._topic_models: dict[str, TopicGenerationModelFactory] = {}
        self._refresh()

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The underlying pluggy manager (for introspection and tests)."""
        return self._pm

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register one more plugin object and collect again. Raises the errors of the
        constructor; on error the plugin is unregistered and nothing changes."""
        self._add(plugin, name)
        try:
            self._refresh()
        except Exception:
            self._pm.unregister(plugin)
            self._refresh()
            raise

    def plugin_names(self) -> tuple[str, ...]:
        """Names of the registered plugins, sorted."""
        return tuple(sorted(n for n, _ in self._pm.list_name_plugin() if n is not None))

    # -- backends ---------------------------------------------------------------------

    def backend_factories(self) -> Mapping[str, BackendFactory]:
        """URL scheme -> backend factory, read-only, sorted by scheme."""
        return types.MappingProxyType(self._backends)

    def backend_for_url(
        self, url: str | Path, profile: EmbeddingProfile | None = None,
        analyzer: str | None = None, vector_index: str | None = None,
    ) -> MemoryBackend:
        """Build the MemoryBackend for ``url`` (Memory RFC, "MemoryBackend").

        ``url`` is ``scheme://...`` (``sqlite:///abs/path``,
        ``oceanbase://user:pass@host:port/db``) or a bare filesystem path, which means
        SQLite and becomes ``sqlite:///<absolute path>``. ``profile`` is the
        deployment's embedding profile or None; ``analyzer`` the search analyzer version a
        new database records (None: no choice; passed to the factory only when given);
        ``vector_index`` how the vector channel is answered (SQLite's ``auto``, ``ivf``,
        ``exact``, ``ann``; passed only when given, and a factory may ignore it).
        Raises :class:`UnknownPluginError` for a scheme no plugin registered; the
        factory's own errors (ImportError when an extra is missing, ValueError for a
        malformed URL, backend errors) pass through.
        """
        backend: MemoryBackend = _build(self._backends, "backend", url, profile, analyzer,
                                        vector_index)
        return backend

    def topic_backend_factories(self) -> Mapping[str, TopicBackendFactory]:
        """URL scheme -> Topic Memory backend factory, read-only, sorted by scheme."""
        return types.MappingProxyType(self._topic_backends)

    def topic_backend_for_url(
        self, url: str | Path, profile: EmbeddingProfile | None = None,
        analyzer: str | None = None,
    ) -> TopicMemoryBackend:
        """Build the TopicMemoryBackend for ``url`` (Topic Memory RFC, "Storage, Head,
        and atomic activation"): the same URLs, bare paths and arguments as
        :meth:`backend_for_url` (``profile`` None: an FTS-only deployment), chosen among
        the ``powercontext_register_topic_backends`` factories. Raises
        :class:`UnknownPluginError` for a scheme no plugin registered a Topic backend for;
        the factory's own errors pass through."""
        backend: TopicMemoryBackend = _build(
            self._topic_backends, "Topic Memory backend", url, profile, analyzer)
        return backend

    # -- embedding models -------------------------------------------------------------

    def embedding_model_factories(self) -> Mapping[str, EmbeddingModelFactory]:
        """Embedding model name -> factory, read-only, sorted by name."""
        return types.MappingProxyType(self._models)

    def embedding_model(self, name: str, **options: Any) -> EmbeddingModel:
        """Build the embedding model registered as ``name`` with ``options``
        (model-specific keywords). Raises :class:`UnknownPluginError` for an unknown name;
        the factory's errors (ImportError for a missing extra, ValueError) pass through."""
        factories = self.embedding_model_factories()
        try:
            factory = factories[name]
        except KeyError:
            known = ", ".join(factories) or "none"
            raise UnknownPluginError(f"no embedding model {name!r} (registered: {known})") from None
        return factory(**options)

    # -- candidate providers ----------------------------------------------------------

    def candidate_providers(self) -> Mapping[str, CandidateProviderFactory]:
        """Candidate provider name -> factory, read-only, sorted by name."""
        return types.MappingProxyType(self._providers)

    # -- Topic generation providers ---------------------------------------------------

    def topic_generation_model_factories(self) -> Mapping[str, TopicGenerationModelFactory]:
        """Topic generation provider name -> factory, read-only, sorted by name."""
        return types.MappingProxyType(self._topic_models)

    def topic_generation_model(self, name: str, **options: Any) -> TopicGenerationModel:
        """Build the Topic generation provider registered as ``name`` (Topic Memory RFC,
        "Cumulative work and evidence ceilings") with ``options`` (see
        :data:`~powercontext.plugins.hookspecs.TopicGenerationModelFactory`). It runs no
        policy: ``powercontext.topic_provider.topic_generation_model`` checks first.
        Raises :class:`UnknownPluginError` for an unknown name; the factory's errors
        (ImportError for a missing SDK, InvalidInputError) pass through."""
        factories = self.topic_generation_model_factories()
        try:
            factory = factories[name]
        except KeyError:
            known = ", ".join(factories) or "none"
            raise UnknownPluginError(
                f"no Topic generation provider {name!r} (registered: {known})") from None
        model: TopicGenerationModel = factory(**options)
        return model

    # -- internals --------------------------------------------------------------------

    def _add(self, plugin: object, name: str | None) -> None:
        try:
            self._pm.register(plugin, name=name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            raise PluginError(f"cannot register plugin {plugin!r}: {exc}") from exc

    def _refresh(self) -> None:
        try:
            self._pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(str(exc)) from exc
        hook = self._pm.hook
        backends = self._collect(hook.powercontext_register_backends)
        topic_backends = self._collect(hook.powercontext_register_topic_backends)
        models = self._collect(hook.powercontext_register_embedding_models)
        providers = self._collect(hook.powercontext_register_candidate_providers)
        topic_models = self._collect(hook.powercontext_register_topic_generation_models)
        self._backends, self._models, self._providers = backends, models, providers
        self._topic_backends, self._topic_models = topic_backends, topic_models

    def _collect(self, hook: Any) -> dict[str, Any]:
        found: dict[str, Any] = {}
        kind = hook.name.removeprefix("powercontext_register_").replace("_", " ")

        def register(name: str, factory: Any) -> None:
            if not isinstance(name, str) or not _NAME.match(name):
                raise PluginError(
                    f"invalid {kind} name {name!r}: lowercase ASCII letters, digits, "
                    "'_', '.', '+', '-', starting with a letter"
                )
            if not callable(factory):
                raise PluginError(f"{kind} {name!r}: factory {factory!r} is not callable")
            if name in found:
                raise DuplicateRegistrationError(
                    f"two plugins register {kind} {name!r}: {found[name]!r} and {factory!r}"
                )
            found[name] = factory

        hook(register=register)
        return dict(sorted(found.items()))


def _build(factories: Mapping[str, Any], kind: str, url: str | Path,
           profile: EmbeddingProfile | None, analyzer: str | None,
           vector_index: str | None = None) -> Any:
    text = str(url)
    scheme = url_scheme(text)
    if scheme is None:
        scheme, text = "sqlite", sqlite_url_for_path(text)
    try:
        factory = factories[scheme]
    except KeyError:
        known = ", ".join(factories) or "none"
        raise UnknownPluginError(
            f"no {kind} for URL scheme {scheme!r} (registered: {known}); "
            "install the plugin that provides it"
        ) from None
    options: dict[str, Any] = {}
    if analyzer is not None:
        options["analyzer"] = analyzer
    if vector_index is not None:
        options["vector_index"] = vector_index
    return factory(text, profile=profile, **options)
