"""Which embedding model the commands on a database use (docs/configuration.md,
"Embedding model"): the ``--embedding`` option, else ``$POWERCONTEXT_EMBEDDING``, else
the model remembered in the database's runtime manifest; its options from
``POWERCONTEXT_EMBEDDING_*``. Credentials are never remembered on disk."""

from __future__ import annotations

import os
from typing import Any

from powercontext.core.errors import InvalidInputError
from powercontext.plugins.registry import Registry
from powercontext.runtime_manifest import RuntimeManifest

__all__ = ["ENV_EMBEDDING", "SECRET_OPTIONS", "remember_embedding", "resolve_embedding"]

ENV_EMBEDDING = "POWERCONTEXT_EMBEDDING"


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
