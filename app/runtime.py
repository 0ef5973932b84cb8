"""The composition root: :func:`open_service`, :func:`open_topic_service` and
:func:`open_topic_processor` build the services on a database from the plugin registry
(which database: :mod:`powercontext.paths` and :mod:`powercontext.database_path`; which
embedding model: :mod:`powercontext.embedding_config`; the runtime manifest beside the
database: :mod:`powercontext.runtime_manifest`; the Topic configuration:
:mod:`powercontext.configuration`).

The names this module re-exported before they had homes of their own (the data
directory and database path, the embedding choice, the file locks, the runtime
manifest, the names of Memories) are deprecated here: reading one warns and points at
its home (:mod:`powercontext.moved_names`).

Nothing here runs at import time; adapters are chosen through the plugin registry.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import TYPE_CHECKING, Any

from powercontext import database_path, embedding_config, paths, runtime_manifest
from powercontext.core import analyzer as analyzers
from powercontext.core.errors import InvalidInputError
from powercontext.moved_names import moved_names
from powercontext.plugins.registry import Registry
from powercontext.service import MemoryService

if TYPE_CHECKING:
    from powercontext.topic_processing import TopicProcessor
    from powercontext.topic_service import TopicMemoryService

__all__ = [
    "open_service",
    "open_topic_processor",
    "open_topic_service",
    "refuse_profile_change_over_topics",
]

#: Deprecated names, read from their homes with a DeprecationWarning.
_MOVED = {
    **dict.fromkeys(("ENV_DB", "ENV_HOME", "data_dir", "default_db_url"), "powercontext.paths"),
    **dict.fromkeys(("check_sqlite_path", "sqlite_path"), "powercontext.database_path"),
    **dict.fromkeys(("remember_embedding", "resolve_embedding"),
                    "powercontext.embedding_config"),
    **dict.fromkeys(("SupervisorLock", "acquire_supervisor_lock", "topic_processing_lock"),
                    "powercontext.file_locks"),
    **dict.fromkeys(("identity_root", "memory_key", "memory_selector", "remember_entries",
                     "repo_key", "repo_root", "resolve_memory", "retire_memory"),
                    "powercontext.memory_names"),
    **dict.fromkeys(("RuntimeManifest", "import_manifest_keys"),
                    "powercontext.runtime_manifest"),
}
__getattr__ = moved_names(__name__, _MOVED)

ENV_ANALYZER = "POWERCONTEXT_ANALYZER"
ENV_VECTOR_INDEX = "POWERCONTEXT_VECTOR_INDEX"
#: The vector channel's retrieval a SQLite backend is opened with (docs/search.md).
VECTOR_INDEXES = ("auto", "ivf", "exact", "ann")


def _vector_index(chosen: str | None) -> str | None:
    """``chosen``, else ``$POWERCONTEXT_VECTOR_INDEX``, else None (the backend's
    default); InvalidInputError for another name."""
    value = chosen if chosen is not None else os.environ.get(ENV_VECTOR_INDEX) or None
    if value is not None and value not in VECTOR_INDEXES:
        raise InvalidInputError(
            "vector_index", f"must be one of {', '.join(VECTOR_INDEXES)}, not {value!r}")
    return value


def open_service(
    db: str | os.PathLike[str] | None = None,
    *,
    embedding: str | None = None,
    embedding_options: dict[str, Any] | None = None,
    registry: Registry | None = None,
    analyzer: str | None = None,
    vector_index: str | None = None,
) -> MemoryService:
    """A MemoryService on ``db`` (a path or URL; default :func:`default_db_url`), chosen
    through the plugin registry as the CLI does (``registry``: default a new
    :class:`~powercontext.plugins.registry.Registry`). Public as ``powercontext.open_service``.

    Nothing connects yet: the backend opens on the first call. The service is an async
    context manager that closes the backend (``async with open_service(db) as svc:``), or
    call ``await svc.close()``.

    ``embedding`` names a registered embedding model (``deterministic``, ``local``,
    ``openai``; ``none`` for none), resolved by :func:`resolve_embedding`. The model's
    profile is fixed in the database on first use; opening with another raises
    ProfileMismatchError on the first call. For a path, the parent directory is created;
    a path that cannot hold a database raises InvalidInputError (field ``db``, see
    :func:`check_sqlite_path`).

    ``analyzer`` names the search analyzer version (``v1``, ``v1-porter``, ``v2``; default
    ``$POWERCONTEXT_ANALYZER``, else no choice: ``v2``) a new database records; an existing
    database keeps its own, and a different explicit choice raises AnalyzerMismatchError
    on the first call (docs/analyzers.md). InvalidInputError for an unknown name.

    ``vector_index`` chooses how SQLite answers the vector channel (``auto``, ``ivf``,
    ``exact``, ``ann``; default ``$POWERCONTEXT_VECTOR_INDEX``, else ``auto``:
    docs/search.md); other backends ignore it. InvalidInputError for another name.
    """
    registry = registry or Registry()
    chosen_index = _vector_index(vector_index)
    url = paths.db_url(db)
    database_path.check_sqlite_path(url)
    _name, _options, model = embedding_config.resolve_embedding(
        url, embedding, embedding_options, registry=registry
    )
    chosen = analyzer if analyzer is not None else os.environ.get(ENV_ANALYZER) or None
    if chosen is not None:
        analyzers.get(chosen)  # InvalidInputError for an unknown name, before any I/O
    backend = registry.backend_for_url(
        url, profile=model.profile if model else None, analyzer=chosen,
        vector_index=chosen_index,
    )
    return MemoryService(backend, embedding_model=model,
                         key_importer=functools.partial(runtime_manifest.import_manifest_keys, url))


def open_topic_service(
    db: str | os.PathLike[str] | None = None,
    *,
    embedding: str | None = None,
    embedding_options: dict[str, Any] | None = None,
    registry: Registry | None = None,
    analyzer: str | None = None,
) -> TopicMemoryService:
    """A TopicMemoryService on ``db`` (Topic Memory RFC; TOPIC-MEMORY.md), wired exactly
    as :func:`open_service`: the same default database (:func:`default_db_url`), the same
    path checks, the same embedding model (:func:`resolve_embedding`: ``--embedding``,
    ``$POWERCONTEXT_EMBEDDING``, else the model remembered beside the database) and the
    same analyzer choice; the registry picks the Topic backend by URL scheme
    (``powercontext_register_topic_backends``). Public as
    ``powercontext.open_topic_service``.

    Nothing connects yet. Readiness is per family: the Topic backend checks only Topic
    Memory's retrieval shape (a RetrievalShapeError on the first call when the stored
    shape refuses this configuration; no model over a hybrid shape, another profile,
    vectors configured over FTS-only Heads), never the Memory family's state. An async
    context manager like MemoryService. InvalidInputError for a bad path or analyzer
    name; UnknownPluginError for a scheme without a Topic backend.
    """
    registry = registry or Registry()
    url = paths.db_url(db)
    database_path.check_sqlite_path(url)
    _name, _options, model = embedding_config.resolve_embedding(
        url, embedding, embedding_options, registry=registry
    )
    chosen = analyzer if analyzer is not None else os.environ.get(ENV_ANALYZER) or None
    if chosen is not None:
        analyzers.get(chosen)
    backend = registry.topic_backend_for_url(
        url, profile=model.profile if model else None, analyzer=chosen
    )
    from powercontext.topic_service import TopicMemoryService  # the Memory side needs none

    return TopicMemoryService(backend, embedding_model=model)


def open_topic_processor(
    db: str | os.PathLike[str] | None = None,
    *,
    config: Any = None,
    embedding: str | None = None,
    embedding_options: dict[str, Any] | None = None,
    registry: Registry | None = None,
    analyzer: str | None = None,
    env: Any = None,
) -> TopicProcessor:
    """A :class:`~powercontext.topic_processing.TopicProcessor` on ``db`` for ``topic
    process`` (Topic Memory RFC, "Reference-level explanation"; TOPIC-MEMORY.md,
    "Configuration", "Providers"): the Topic service of :func:`open_topic_service`
    (same database, embedding model and analyzer choice), the TopicGenerationModel and
    the ProcessingSettings of the configuration. Public as
    ``powercontext.open_topic_processor``.

    ``config``: a loaded ``PowerContextConfig`` (:func:`powercontext.configuration.
    load_config`), or the path of a TOML file, or None (``$POWERCONTEXT_CONFIG``, else
    ``<data dir>/config.toml``, a missing default file meaning the defaults); ``env``
    (default ``os.environ``) holds the ``POWERCONTEXT_<SECTION>_<KEY>`` overrides. The
    effective configuration is logged once (logger ``powercontext.topic``, secrets
    masked). Errors, before any connection or provider request:
    TopicProcessingUnavailableError (a CapabilityNotSupportedError whose ``problems``
    list every reason) when no generation provider is configured or its settings are
    refused by the provider policy; InvalidInputError for an unknown key or a value out
    of range in the file. The caller closes ``processor.service`` (an async context
    manager) when done."""
    from powercontext import configuration, topic_provider  # Topic processing only
    from powercontext.topic_processing import TopicProcessor as Processor

    env = os.environ if env is None else env
    if config is None or isinstance(config, str | os.PathLike):
        config = configuration.load_config(config, env=env)
    registry = registry or Registry()
    configuration.log_effective_config(config, logging.getLogger("powercontext.topic"))
    model = topic_provider.topic_generation_model(config, registry, env)
    topic_provider.check_worker_model(model, registry)  # Worker bootstrap: the same policy
    settings = config.processing_settings()
    service = open_topic_service(db, embedding=embedding, embedding_options=embedding_options,
                                 registry=registry, analyzer=analyzer)
    topic_provider.check_topic_embedding(config, service.embedding_model)
    return Processor(service, model, settings, embedding_model=service.embedding_model)


async def refuse_profile_change_over_topics(
    db: str, new_profile: Any, *, registry: Registry | None = None
) -> None:
    """Refuse (RetrievalShapeError) to move the database's embedding profile to
    ``new_profile`` while Topic Heads exist under a hybrid Topic retrieval shape
    (TOPIC-MEMORY.md, "Per-family readiness": the spec has no offline Topic vector
    backfill, so ``memory rebuild --migrate`` must not strand them). No Topic data, an
    FTS-only Topic deployment, or a hybrid one already under ``new_profile`` passes.
    A database whose scheme has no Topic backend holds no Topics and passes. Opens the
    Topic backend at most twice (which may create Topic Memory's empty tables)."""
    from powercontext.core.errors import RetrievalShapeError
    from powercontext.plugins.registry import UnknownPluginError

    registry = registry or Registry()
    for profile in (new_profile, None):
        try:
            backend = registry.topic_backend_for_url(db, profile=profile)
        except (UnknownPluginError, ImportError, AttributeError):
            return  # no Topic backend for this database: no Topics to strand
        from powercontext.topic_service import TopicMemoryService

        svc = TopicMemoryService(backend)
        try:
            await svc.capabilities()
            return  # Topic Memory opens under this profile (or has nothing to strand)
        except RetrievalShapeError:
            continue
        finally:
            await svc.close()
    raise RetrievalShapeError(
        "Topic Memory holds Topics with vectors under this database's current embedding "
        "profile; migrating the profile would leave them without vectors (Topic vectors "
        "are never backfilled). Keep the current model, or use a new database for the "
        "new one")
