"""Runtime wiring: which database, which embedding model, and the runtime manifest, a JSON file
beside the database holding integration state (the remembered embedding model, the last
synced commit). Business keys live in the database (ARCHITECTURE.md, Decisions: "Keys
live in the database"); the manifest's ``memories`` mapping of earlier releases is
imported once (:func:`import_manifest_keys`). The names of Memories (business keys in
their one form, ``ID@REV``, ``key:NAME``) and the shared explicit-entries write live in
:mod:`powercontext.memory_names` and are re-exported here.

Nothing here runs at import time; adapters are chosen through the plugin registry.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from powercontext.core import analyzer as analyzers
from powercontext.core import canonical
from powercontext.core.errors import (
    InvalidInputError,
    RevisionConflictError,
    SecretDetectedError,
    SupervisorUnavailableError,
    WritesPausedError,
)
from powercontext.memory_names import (
    identity_root,
    memory_key,
    memory_selector,
    remember_entries,
    repo_key,
    repo_root,
    resolve_memory,
    retire_memory,
)
from powercontext.paths import ENV_DB, ENV_HOME, data_dir, default_db_url
from powercontext.plugins.registry import Registry, url_scheme
from powercontext.service import MemoryService

if TYPE_CHECKING:
    from powercontext.topic_processing import TopicProcessor
    from powercontext.topic_service import TopicMemoryService

__all__ = [
    "ENV_DB",
    "ENV_HOME",
    "RuntimeManifest",
    "SupervisorLock",
    "acquire_supervisor_lock",
    "check_sqlite_path",
    "data_dir",
    "default_db_url",
    "identity_root",
    "import_manifest_keys",
    "memory_key",
    "memory_selector",
    "open_service",
    "open_topic_processor",
    "open_topic_service",
    "refuse_profile_change_over_topics",
    "remember_embedding",
    "remember_entries",
    "repo_key",
    "repo_root",
    "resolve_embedding",
    "resolve_memory",
    "retire_memory",
    "sqlite_path",
    "topic_processing_lock",
]

log = logging.getLogger(__name__)

ENV_EMBEDDING = "POWERCONTEXT_EMBEDDING"
ENV_ANALYZER = "POWERCONTEXT_ANALYZER"


def open_service(
    db: str | os.PathLike[str] | None = None,
    *,
    embedding: str | None = None,
    embedding_options: dict[str, Any] | None = None,
    registry: Registry | None = None,
    analyzer: str | None = None,
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
    """
    registry = registry or Registry()
    url = str(db) if db is not None else default_db_url()
    check_sqlite_path(url)
    _name, _options, model = resolve_embedding(
        url, embedding, embedding_options, registry=registry
    )
    chosen = analyzer if analyzer is not None else os.environ.get(ENV_ANALYZER) or None
    if chosen is not None:
        analyzers.get(chosen)  # InvalidInputError for an unknown name, before any I/O
    backend = registry.backend_for_url(
        url, profile=model.profile if model else None, analyzer=chosen
    )
    return MemoryService(backend, embedding_model=model,
                         key_importer=functools.partial(import_manifest_keys, url))


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
    url = str(db) if db is not None else default_db_url()
    check_sqlite_path(url)
    _name, _options, model = resolve_embedding(
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

    ``config``: a loaded ``PowerContextConfig`` (:func:`powercontext.topic_config.
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
    from powercontext import topic_config
    from powercontext.topic_processing import TopicProcessor as Processor

    env = os.environ if env is None else env
    if config is None or isinstance(config, str | os.PathLike):
        config = topic_config.load_config(config, env=env)
    registry = registry or Registry()
    topic_config.log_effective_config(config, logging.getLogger("powercontext.topic"))
    model = topic_config.topic_generation_model(config, registry, env)
    topic_config.check_worker_model(model, registry)  # Worker bootstrap: the same policy
    settings = config.processing_settings()
    service = open_topic_service(db, embedding=embedding, embedding_options=embedding_options,
                                 registry=registry, analyzer=analyzer)
    topic_config.check_topic_embedding(config, service.embedding_model)
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


_SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_path(url: str) -> Path | None:
    """The file a SQLite database URL or bare path names, or None (``:memory:``, another
    scheme)."""
    scheme = url_scheme(url)
    if scheme is None:
        return None if url == ":memory:" else Path(url).expanduser()
    if scheme != "sqlite":
        return None
    from powercontext.plugins.urls import sqlite_path_from_url

    path = sqlite_path_from_url(url)
    return None if path == ":memory:" else Path(path)


#: Byte ranges of the processing lock file: one per Scope (a hash collision only
#: serialises two Scopes, never lets two processes work on one).
_SCOPE_LOCK_RANGE = 1 << 31


@contextlib.contextmanager
def topic_processing_lock(db: str | os.PathLike[str] | None, scope_id: str, *,
                          on_wait: Any = None) -> Iterator[None]:
    """Hold the per-Scope single-flight lock of ``topic process`` on a SQLite database
    (Topic Memory RFC, "In-memory queue and Workers": at most one Worker per (binding,
    Scope); TOPIC-MEMORY.md, "SQLite and other processes"). Two processes working on
    one Scope at once would each admit an attempt of the same Window, and the durable
    allowance counts every admitted attempt: racing processes could spend the Window's
    three attempts and leave a terminal frontier although no provider failed. So a
    second process WAITS here (``on_wait()`` is called once, before it blocks) and then
    finds the Scope covered. An advisory ``fcntl`` lock on one byte (chosen by a hash
    of the Scope id) of ``<database>-topic.lock`` beside the database file, released
    when the block ends or the process dies. Other databases (OceanBase: fenced by the
    Supervisor's lease, a later part; ``:memory:``): no lock."""
    import hashlib

    url = str(db) if db is not None else default_db_url()
    path = sqlite_path(url)
    if path is None:
        yield
        return
    offset = int.from_bytes(hashlib.sha256(scope_id.encode("utf-8")).digest()[:8],
                            "big") % _SCOPE_LOCK_RANGE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + "-topic.lock"), "a+b") as fh:
        try:
            fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except OSError:
            if on_wait is not None:
                on_wait()
            fcntl.lockf(fh, fcntl.LOCK_EX, 1, offset)
        try:
            yield
        finally:
            fcntl.lockf(fh, fcntl.LOCK_UN, 1, offset)


class SupervisorLock:
    """The whole-file lock a SQLite Supervisor holds for its life (Topic Memory RFC,
    "Process roles": SQLite supports one single-process ``all`` Supervisor;
    TOPIC-MEMORY.md, "SQLite and other processes"): ``fcntl.flock`` LOCK_EX on
    ``<database>-supervisor.lock``, the holder's pid written inside. ``flock`` is held
    by the open file, so a second Supervisor in the same process is refused too. The
    kernel releases it when the process dies. :meth:`release` is idempotent."""

    def __init__(self, path: Path, fh: Any) -> None:
        self.path = path
        self._fh = fh

    def release(self) -> None:
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fcntl.flock(fh, fcntl.LOCK_UN)
        finally:
            fh.close()

    @property
    def held(self) -> bool:
        return self._fh is not None


def supervisor_lock_path(db: str | os.PathLike[str] | None) -> Path | None:
    """``<database>-supervisor.lock`` beside a SQLite database file, else None."""
    url = str(db) if db is not None else default_db_url()
    path = sqlite_path(url)
    return None if path is None else path.with_name(path.name + "-supervisor.lock")


def acquire_supervisor_lock(db: str | os.PathLike[str] | None) -> SupervisorLock | None:
    """Take the SQLite Supervisor lock of ``db`` without waiting (see
    :class:`SupervisorLock`); None for a database that needs none (OceanBase: leases;
    ``:memory:``). SupervisorUnavailableError naming the holder's pid when another
    Supervisor holds it."""
    lock = supervisor_lock_path(db)
    if lock is None:
        return None
    lock.parent.mkdir(parents=True, exist_ok=True)
    fh = open(lock, "a+")  # noqa: SIM115 -- held for the Supervisor's life
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read(32).strip() or "unknown"
        fh.close()
        raise SupervisorUnavailableError(
            f"another Supervisor (pid {holder}) already runs on this SQLite database "
            f"(lock {lock}); SQLite supports one single-process Supervisor: stop it "
            "first, or use OceanBase for several") from None
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()
    return SupervisorLock(lock, fh)


def check_sqlite_path(url: str) -> None:
    """Make sure a SQLite ``url`` (bare path or ``sqlite:///``) can hold a database.
    The per-user data directory (:func:`data_dir`) is created when the database is in
    it; any other missing directory is refused, never created (a mistyped ``--db`` would
    otherwise leave directories anywhere, even at ``/``). InvalidInputError (field
    ``db``) when the path is a directory, its directory is missing (outside the data
    directory), cannot be created or written, or an existing file is not a SQLite
    database or not writable. Other URLs are left to their backend."""
    path = sqlite_path(url)
    if path is None:
        return
    if path.is_dir():
        raise InvalidInputError("db", f"{path} is a directory; name a database file in it, "
                                      f"e.g. {path / 'memory.db'}")
    parent = path.parent
    if not parent.is_dir():
        existing = next(p for p in (parent, *parent.parents) if p.exists())
        if not existing.is_dir():  # mkdir -p would fail too: say what is in the way
            raise InvalidInputError("db", f"cannot create the directory {parent}: "
                                          f"{existing} is a file, not a directory")
        if parent.expanduser().absolute() != data_dir().expanduser().absolute():
            raise InvalidInputError(
                "db", f"the directory {parent} does not exist: create it first "
                f"(mkdir -p {parent}) or name a database in an existing directory")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInputError(
                "db", f"cannot create the directory {parent}: {exc.strerror or exc}") from exc
    if path.exists():
        try:
            with open(path, "rb") as fh:
                header = fh.read(len(_SQLITE_HEADER))
        except OSError as exc:
            raise InvalidInputError("db", f"cannot read {path}: {exc.strerror or exc}") from exc
        if header and header != _SQLITE_HEADER:
            raise InvalidInputError("db", f"{path} is not a SQLite database")
        if not os.access(path, os.W_OK):
            raise InvalidInputError("db", f"{path} is not writable")
        if not os.access(path.parent, os.W_OK | os.X_OK):  # WAL writes files beside it
            raise InvalidInputError("db", f"{path.parent} is not writable: SQLite keeps "
                                          f"{path.name}-wal and {path.name}-shm there")
    elif not os.access(path.parent, os.W_OK | os.X_OK):
        raise InvalidInputError("db", f"cannot create {path}: {path.parent} is not writable")
    else:  # a new database: inside a Git checkout it stays out of `git status`
        from powercontext.git_exclude import exclude_from_git

        exclude_from_git(path)


def resolve_embedding(
    db_url: str,
    embedding: str | None = None,
    embedding_options: dict[str, Any] | None = None,
    *,
    registry: Registry | None = None,
    remember: bool = True,
) -> tuple[str | None, dict[str, Any], Any]:
    """The embedding model every command on ``db_url`` uses: ``(name, options, model)``,
    all None/empty for none.

    ``embedding`` (e.g. the CLI's ``--embedding``) wins, then ``$POWERCONTEXT_EMBEDDING``,
    then the model remembered in the database's runtime manifest (the first one used,
    so vectors stay complete), else none; ``none`` means none. Options not given come
    from ``POWERCONTEXT_EMBEDDING_*`` (``openai``: model, dimension, base URL, API key)
    or from the remembered ones. ``remember`` stores the first model used.
    InvalidInputError when the model needs options nobody gave; UnknownPluginError for
    an unknown name.
    """
    registry = registry or Registry()
    name = embedding if embedding is not None else os.environ.get(ENV_EMBEDDING) or None
    manifest = RuntimeManifest.for_db(db_url)
    if name is None:
        remembered = manifest.get_state("embedding")
        if isinstance(remembered, dict) and remembered.get("name"):
            name = remembered["name"]
            embedding_options = embedding_options or remembered.get("options") or {}
            if embedding_options:  # a credential is never remembered: it comes from the env
                embedding_options = {**_secret_options_from_env(name), **embedding_options}
    elif name == "none":
        name = None
    if name is not None and not embedding_options:
        embedding_options = _options_from_env(name)
    try:
        model = registry.embedding_model(name, **(embedding_options or {})) if name else None
    except TypeError as exc:  # a model that needs options nobody gave
        raise InvalidInputError(
            "embedding", f"{name!r} needs options ({exc}); see docs/configuration.md, "
            "'Embedding model'"
        ) from exc
    if remember and name is not None and manifest.get_state("embedding") is None:
        # only the first model used is remembered: a later mismatch (refused by the
        # database's stored profile) must not change what plain commands use
        remember_embedding(db_url, name, embedding_options or {})
    return name, dict(embedding_options or {}), model


def remember_embedding(db_url: str, name: str, options: dict[str, Any]) -> None:
    """Make ``name`` (with ``options``) the model plain commands on ``db_url`` use (after
    ``memory rebuild --migrate`` moved the database to its profile). Credentials
    (:data:`SECRET_OPTIONS`) are never written to the manifest: each command reads them
    from the environment again."""
    kept = {k: v for k, v in options.items() if k not in SECRET_OPTIONS}
    RuntimeManifest.for_db(db_url).set_state("embedding", {"name": name, "options": kept})


#: Embedding options that are credentials: never remembered on disk.
SECRET_OPTIONS = frozenset({"api_key"})


def _secret_options_from_env(name: str) -> dict[str, Any]:
    return {k: v for k, v in _options_from_env(name).items() if k in SECRET_OPTIONS}


def _options_from_env(name: str) -> dict[str, Any]:
    """Options of the ``openai`` embedding model from ``POWERCONTEXT_EMBEDDING_MODEL``,
    ``_DIMENSION``, ``_BASE_URL`` and ``_API_KEY`` (others need none)."""
    if name != "openai":
        return {}
    env = os.environ
    options: dict[str, Any] = {}
    for key, option in (("MODEL", "model"), ("BASE_URL", "base_url"), ("API_KEY", "api_key")):
        value = env.get(f"{ENV_EMBEDDING}_{key}")
        if value:
            options[option] = value
    dimension = env.get(f"{ENV_EMBEDDING}_DIMENSION")
    if dimension:
        if not dimension.isdigit():
            raise InvalidInputError(f"{ENV_EMBEDDING}_DIMENSION", "must be a positive integer")
        options["dimension"] = int(dimension)
    return options


class RuntimeManifest:
    """A small JSON file of integration state beside a database (``state``: e.g. the
    remembered embedding model). Its ``memories`` mapping (business key -> Memory id) is
    what earlier releases kept keys in: today keys live in the database, and the mapping
    is only read by :func:`import_manifest_keys`.

    Writes are atomic (temp file + rename) under an exclusive ``flock`` so concurrent
    CLI processes never lose a mapping. Only ASCII Artifact ids are stored.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def for_db(cls, db_url: str) -> RuntimeManifest:
        """The manifest beside a SQLite file (named as a path or a ``sqlite:///`` URL, both
        resolved to the file's real path: one database, one manifest), else in the data
        directory."""
        path = sqlite_path(db_url)
        if path is not None:
            p = Path(os.path.realpath(path))
            return cls(p.with_name(p.name + ".runtime.json"))
        safe = canonical.sha256_hex(db_url.encode())[:16]
        return cls(data_dir() / f"runtime-{safe}.json")

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {"memories": {}, "state": {}}
        data.setdefault("memories", {})
        data.setdefault("state", {})
        return data

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._read()
            yield data
            import tempfile  # writes only: a read (the prompt hook) never needs it

            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".runtime-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)

    def get(self, key: str) -> str | None:
        """The Memory Artifact id the legacy ``memories`` mapping gives ``key``, or None
        (not the database's keys: see :meth:`MemoryService.memory_key`)."""
        return self._read()["memories"].get(key)

    def set(self, key: str, artifact_id: str) -> None:
        """Add ``key`` -> ``artifact_id`` to the legacy ``memories`` mapping (as earlier
        releases did; imported into the database at the next open)."""
        canonical.check_id(artifact_id, "artifact_id")
        if not key:
            raise InvalidInputError("key", "must be non-empty")
        with self._locked() as data:
            data["memories"][key] = artifact_id

    def items(self) -> dict[str, str]:
        return dict(self._read()["memories"])

    def get_state(self, key: str) -> Any:
        """Integration state kept beside the mapping (e.g. last processed commit)."""
        return self._read()["state"].get(key)

    def set_state(self, key: str, value: Any) -> None:
        with self._locked() as data:
            data["state"][key] = value


async def import_manifest_keys(db_url: str, service: MemoryService) -> dict[str, str]:
    """Import the business keys of the runtime manifest's ``memories`` mapping (written by
    earlier releases) into the database, once: only keys the database does not hold yet
    and whose Memory it holds (:meth:`MemoryBackend.import_memory_keys`), each in its
    :func:`memory_key` form; malformed pairs are skipped. The mapping stays in the file;
    its digest is recorded (``keys_imported``), so the next open imports nothing unless
    the mapping changed.
    Returns the keys stored. Writes paused by a rebuild: nothing is imported this time."""
    manifest = RuntimeManifest.for_db(db_url)
    mapping = manifest.items()
    if not mapping:
        return {}
    digest = canonical.sha256_hex(json.dumps(mapping, sort_keys=True).encode("utf-8"))
    if manifest.get_state("keys_imported") == digest:
        return {}
    pairs: dict[str, str] = {}
    for key, artifact_id in sorted(mapping.items()):
        try:
            canonical.check_id(artifact_id, "artifact_id")
            stored_key = memory_key(key)
            from powercontext.core.secrets import check_text  # the pure rules: light

            check_text("key", stored_key)
            pairs.setdefault(stored_key, artifact_id)
        except SecretDetectedError as exc:  # never echoed, even to the log
            log.warning("a runtime manifest key is not imported: %s", exc)
        except InvalidInputError as exc:
            log.warning("runtime manifest key %r is not imported: %s", key, exc)
    stored: dict[str, str] = {}
    try:
        for attempt in range(3):
            try:
                stored = await service.backend.import_memory_keys(pairs)
                break
            except RevisionConflictError:  # a concurrent importer stored one first
                if attempt == 2:
                    raise
    except WritesPausedError:
        return {}
    manifest.set_state("keys_imported", digest)
    return stored
