"""Topic processing configuration (TOPIC-MEMORY.md, "Configuration" and "Providers";
Topic Memory RFC, "Configuration", "Cumulative work and evidence ceilings", "Process
roles").

One TOML file, read once at start-up with :mod:`tomllib`: ``--config`` (the ``path``
argument), else ``$POWERCONTEXT_CONFIG``, else ``<data dir>/config.toml``
(``$POWERCONTEXT_HOME`` or the platform's data directory). A missing default file
means the defaults; a missing named file is an error. Every key can be overridden by
the environment as ``POWERCONTEXT_<SECTION>_<KEY>`` (upper case), e.g.
``POWERCONTEXT_INFERENCE_GENERATION_PROVIDER=deterministic``; a generation setting as
``POWERCONTEXT_INFERENCE_GENERATION_SETTINGS_<NAME>`` (the value read as a TOML scalar,
else as text). An empty value unsets an optional key.

The file::

    [runtime]
    topic_memory_source_window_limit = 10        # 1..100
    topic_memory_history_max_candidates = 20     # 1..20
    topic_memory_history_rrf_threshold = 70      # 0..100
    topic_memory_history_min_candidates = 5      # 0..max
    artifact_processing_role = "all"             # all | api | background
    artifact_processing_max_workers = 2          # 1..64
    artifact_processing_worker_timeout_seconds = 600
    artifact_processing_lease_seconds = 30       # 2..3600; OceanBase Leader lease
    artifact_processing_poll_seconds = 1.0       # 0.05..60; discovery of persisted flushes
    # topic_memory_auto_interval_seconds = 300   # unset: automatic processing disabled

    [server]                                     # powercontext serve
    host = "127.0.0.1"
    port = 8765                                  # 0: any free port (printed at start)
    # api_token = "..."   # else $POWERCONTEXT_API_TOKEN; masked in logs; none: loopback only
    # allowed_hosts = ["memory.example.com"]   # Host names answered besides loopback and
                                               # the bound address ("*": any; env: a,b)
    session_lifetime_seconds = 28800             # a dashboard login lasts 8 hours

    [inference]
    generation_provider = "openai"     # openai | anthropic | deterministic | a plugin's;
                                       # unset: Topic processing unavailable
    generation_model = "gpt-..."
    # generation_base_url = "http://127.0.0.1:8000/v1"   # a compatible endpoint
    # generation_api_key = "..."   # else $OPENAI_API_KEY / $ANTHROPIC_API_KEY; masked in logs
    generation_model_context_window_tokens = 125000
    generation_timeout_seconds = 60
    generation_max_requests = 1
    generation_max_output_tokens = 8192

    [inference.generation_settings]    # bounded scalars only (provider_policy)
    temperature = 0.2

    [inference.embedding_settings]     # Topic processing's embedding: dimensions, truncate

Errors: an unknown section or key, a value of the wrong type, or a runtime value out
of range is an InvalidInputError naming it (``runtime.artifact_processing_role``, or
the environment variable). A configuration the provider policy refuses is not a load
error: :func:`topic_generation_model` raises TopicProcessingUnavailableError (Topic
processing unavailable), and :func:`check_startup` turns that into a start-up error
only when automatic scheduling is configured.
"""

from __future__ import annotations

import logging
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import attrs

from powercontext.core.errors import InvalidInputError, TopicProcessingUnavailableError
from powercontext.core.topic.processing import ProcessingSettings, check_settings
from powercontext.core.topic.provider_policy import (
    EMBEDDING_SETTINGS,
    GENERATION_SETTINGS,
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
    "ENV_CONFIG",
    "InferenceConfig",
    "PowerContextConfig",
    "RuntimeConfig",
    "ServerConfig",
    "check_startup",
    "check_topic_embedding",
    "check_worker_model",
    "config_path",
    "generation_problems",
    "load_config",
    "log_effective_config",
    "topic_generation_model",
]

ENV_CONFIG = "POWERCONTEXT_CONFIG"
_ENV_PREFIX = "POWERCONTEXT_"
_ROLES = ("all", "api", "background")
_API_KEY_ENV = MappingProxyType({"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"})
_SDK_PROVIDERS = frozenset(_API_KEY_ENV)
_MASK = "********"


def _frozen_table(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value or {}))


@attrs.frozen
class RuntimeConfig:
    """``[runtime]``: the Window limit, history selection (20 / 70 / 5), the process
    role, the Worker pool and timeout, and the automatic interval (None: disabled)."""

    topic_memory_source_window_limit: int = 10
    topic_memory_history_max_candidates: int = 20
    topic_memory_history_rrf_threshold: float = 70
    topic_memory_history_min_candidates: int = 5
    artifact_processing_role: str = "all"
    artifact_processing_max_workers: int = 2
    artifact_processing_worker_timeout_seconds: float = 600
    artifact_processing_lease_seconds: float = 30
    artifact_processing_poll_seconds: float = 1.0
    topic_memory_auto_interval_seconds: float | None = None


@attrs.frozen
class ServerConfig:
    """``[server]``: where ``powercontext serve`` listens, its bearer token (None:
    ``$POWERCONTEXT_API_TOKEN``, else no token and loopback only; never shown in a repr
    or log), the extra ``Host`` names it answers (a reverse proxy's public name;
    :mod:`powercontext.entrypoints.http.hosts`) and how long a dashboard login lasts
    (seconds, 1..2,592,000)."""

    host: str = "127.0.0.1"
    port: int = 8765
    api_token: str | None = attrs.field(default=None, repr=False)
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    session_lifetime_seconds: float = 28_800


@attrs.frozen
class InferenceConfig:
    """``[inference]``: the Topic generation provider and its model, endpoint,
    credential (never shown in a repr or log), context window (tokens), per-request
    timeout (seconds), requests per stage call, output cap (tokens), and the bounded
    ``generation_settings`` / ``embedding_settings`` tables."""

    generation_provider: str | None = None
    generation_model: str | None = None
    generation_base_url: str | None = None
    generation_api_key: str | None = attrs.field(default=None, repr=False)
    generation_model_context_window_tokens: int = 125_000
    generation_timeout_seconds: float = 60
    generation_max_requests: int = 1
    generation_max_output_tokens: int = 8_192
    generation_settings: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_frozen_table)
    embedding_settings: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_frozen_table)


@attrs.frozen
class PowerContextConfig:
    """The effective configuration: ``runtime`` and ``inference``, the file it came
    from (None: defaults only) and where each key was set (``origins``: dotted key ->
    file path or environment variable; absent = default)."""

    runtime: RuntimeConfig = attrs.field(factory=RuntimeConfig)
    inference: InferenceConfig = attrs.field(factory=InferenceConfig)
    source: str | None = None
    origins: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_table)
    server: ServerConfig = attrs.field(factory=ServerConfig)

    def max_output_tokens(self) -> int:
        """``inference.generation_max_output_tokens`` when set (file or environment),
        else its default 8,192 capped at half of the context window (so a small
        ``generation_model_context_window_tokens`` alone is a valid configuration)."""
        i = self.inference
        if "inference.generation_max_output_tokens" in self.origins:
            return i.generation_max_output_tokens
        return max(256, min(i.generation_max_output_tokens,
                            i.generation_model_context_window_tokens // 2))

    def processing_settings(self) -> ProcessingSettings:
        """The Worker's :class:`ProcessingSettings` (checked: InvalidInputError naming
        the setting when out of range)."""
        r, i = self.runtime, self.inference
        return check_settings(ProcessingSettings(
            window_limit=r.topic_memory_source_window_limit,
            context_window_tokens=i.generation_model_context_window_tokens,
            max_requests=i.generation_max_requests,
            max_output_tokens=self.max_output_tokens(),
            history_max_candidates=r.topic_memory_history_max_candidates,
            history_rrf_threshold=r.topic_memory_history_rrf_threshold,
            history_min_candidates=r.topic_memory_history_min_candidates,
        ))


# key -> (kind, optional); kinds: int, number, str, table
_SECTIONS: Mapping[str, Mapping[str, tuple[str, bool]]] = MappingProxyType({
    "runtime": MappingProxyType({
        "topic_memory_source_window_limit": ("int", False),
        "topic_memory_history_max_candidates": ("int", False),
        "topic_memory_history_rrf_threshold": ("number", False),
        "topic_memory_history_min_candidates": ("int", False),
        "artifact_processing_role": ("str", False),
        "artifact_processing_max_workers": ("int", False),
        "artifact_processing_worker_timeout_seconds": ("number", False),
        "artifact_processing_lease_seconds": ("number", False),
        "artifact_processing_poll_seconds": ("number", False),
        "topic_memory_auto_interval_seconds": ("number", True),
    }),
    "server": MappingProxyType({
        "host": ("str", False),
        "port": ("int", False),
        "api_token": ("str", True),
        "allowed_hosts": ("strlist", False),
        "session_lifetime_seconds": ("number", False),
    }),
    "inference": MappingProxyType({
        "generation_provider": ("str", True),
        "generation_model": ("str", True),
        "generation_base_url": ("str", True),
        "generation_api_key": ("str", True),
        "generation_model_context_window_tokens": ("int", False),
        "generation_timeout_seconds": ("number", False),
        "generation_max_requests": ("int", False),
        "generation_max_output_tokens": ("int", False),
        "generation_settings": ("table", False),
        "embedding_settings": ("table", False),
    }),
})


def config_path(path: str | os.PathLike[str] | None = None,
                env: Mapping[str, str] = os.environ) -> tuple[Path, bool]:
    """``(file, named)``: ``path``, else ``$POWERCONTEXT_CONFIG``, else
    ``<data dir>/config.toml``; ``named`` is False only for that default."""
    if path is not None:
        return Path(path).expanduser(), True
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser(), True
    home = env.get("POWERCONTEXT_HOME")
    if home:
        return Path(home).expanduser() / "config.toml", False
    from powercontext.runtime import data_dir

    return data_dir() / "config.toml", False


def load_config(path: str | os.PathLike[str] | None = None,
                env: Mapping[str, str] = os.environ) -> PowerContextConfig:
    """Read the configuration file (see the module docstring for where), apply the
    ``POWERCONTEXT_<SECTION>_<KEY>`` overrides of ``env`` and return the effective
    configuration. InvalidInputError naming the key (``runtime.x``) or the variable for
    an unknown section or key, a wrong type, a runtime value out of range, a missing
    named file or malformed TOML."""
    file, named = config_path(path, env)
    values: dict[str, dict[str, Any]] = {"runtime": {}, "inference": {}, "server": {}}
    origins: dict[str, str] = {}
    source: str | None = None
    if file.is_file():
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInputError("config", f"{file}: not valid TOML: {exc}") from None
        source = str(file)
        for section, table in data.items():
            if section not in _SECTIONS:
                raise InvalidInputError(section, f"unknown section in {file} (known: "
                                        f"{', '.join(_SECTIONS)})")
            if not isinstance(table, dict):
                raise InvalidInputError(section, f"must be a table in {file}")
            for key, value in table.items():
                name = f"{section}.{key}"
                values[section][key] = _typed(name, value, f"in {file}")
                for sub in value if isinstance(value, dict) else ():
                    origins[f"{name}.{sub}"] = str(file)
                origins[name] = str(file)
    elif named:
        raise InvalidInputError("config", f"{file}: no such configuration file")
    _apply_env(env, values, origins)
    try:
        runtime = RuntimeConfig(**values["runtime"])
        inference = InferenceConfig(**values["inference"])
        server = ServerConfig(**values["server"])
    except TypeError as exc:  # unreachable: keys are checked above
        raise InvalidInputError("config", str(exc)) from None
    _check_runtime(runtime)
    _check_server(server)
    return PowerContextConfig(runtime, inference, source, origins, server)


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


def log_effective_config(config: PowerContextConfig, logger: logging.Logger) -> None:
    """One INFO line per setting, ``"config <section>.<key> = <value> (<origin>)"``
    (origin: ``default``, the file, or the environment variable), secrets masked
    (the API key, a password in the base URL, any setting value the policy would
    refuse), then a line saying the deterministic provider is in use when it is."""
    for section, keys in _SECTIONS.items():
        part = getattr(config, section)
        for key, (kind, _opt) in keys.items():
            name = f"{section}.{key}"
            value = getattr(part, key)
            if kind == "table":
                allowed = GENERATION_SETTINGS if key == "generation_settings" \
                    else EMBEDDING_SETTINGS
                for sub in sorted(value, key=str):
                    shown = _shown_setting(value[sub], str(sub) in allowed)
                    logger.info("config %s.%s = %s (%s)", name, sub, shown,
                                config.origins.get(f"{name}.{sub}", "default"))
                continue
            logger.info("config %s = %s (%s)", name, _shown(key, value),
                        config.origins.get(name, "default"))
    if config.inference.generation_provider == "deterministic":
        logger.info("Topic generation uses the deterministic provider (extractive, no "
                    "model; for tests, offline use and benchmarks)")


def _typed(name: str, value: Any, where: str) -> Any:
    section, _, key = name.partition(".")
    spec = _SECTIONS[section].get(key)
    if spec is None:
        raise InvalidInputError(name, f"unknown setting {where} (known: "
                                f"{', '.join(_SECTIONS[section])})")
    kind, _optional = spec
    ok = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool)
        and math.isfinite(v),
        "str": lambda v: isinstance(v, str),
        "table": lambda v: isinstance(v, dict),
        "strlist": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    }[kind]
    if not ok(value):
        what = {"int": "an integer", "strlist": "a list of strings"}.get(kind, f"a {kind}")
        raise InvalidInputError(name, f"must be {what} {where}, not "
                                f"{type(value).__name__}")
    return value


def _apply_env(env: Mapping[str, str], values: dict[str, dict[str, Any]],
               origins: dict[str, str]) -> None:
    for var in sorted(env):
        for section, keys in _SECTIONS.items():
            prefix = f"{_ENV_PREFIX}{section.upper()}_"
            if not var.startswith(prefix):
                continue
            rest, raw = var[len(prefix):].lower(), env[var]
            table = next((t for t in ("generation_settings", "embedding_settings")
                          if rest.startswith(t + "_")), None)
            if table is not None:
                sub = rest[len(table) + 1:]
                target = values[section].setdefault(table, {})
                values[section][table] = target = dict(target)
                target[sub] = _scalar(raw)
                origins[f"{section}.{table}.{sub}"] = var
                continue
            spec = keys.get(rest)
            if spec is None or spec[0] == "table":
                raise InvalidInputError(var, f"unknown setting {section}.{rest} (known: "
                                        f"{', '.join(k for k in keys)})")
            kind, optional = spec
            if raw == "" and optional:
                values[section][rest] = None
            else:
                values[section][rest] = _typed(f"{section}.{rest}", _from_text(kind, raw, var),
                                               f"in ${var}")
            origins[f"{section}.{rest}"] = var


def _from_text(kind: str, raw: str, var: str) -> Any:
    if kind == "str":
        return raw
    if kind == "strlist":  # comma-separated
        return [part.strip() for part in raw.split(",") if part.strip()]
    try:
        if kind == "int":
            return int(raw)
        try:
            return int(raw)
        except ValueError:
            return float(raw)
    except ValueError:
        raise InvalidInputError(var, f"must be {'an integer' if kind == 'int' else 'a number'}"
                                f", not {raw[:40]!r}") from None


def _scalar(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _check_runtime(r: RuntimeConfig) -> None:
    if r.artifact_processing_role not in _ROLES:
        raise InvalidInputError("runtime.artifact_processing_role",
                                f"must be one of {', '.join(_ROLES)}, not "
                                f"{r.artifact_processing_role[:40]!r}")
    if not 1 <= r.artifact_processing_max_workers <= 64:
        raise InvalidInputError("runtime.artifact_processing_max_workers",
                                f"must be in 1..64, not {r.artifact_processing_max_workers}")
    if not 1 <= r.artifact_processing_worker_timeout_seconds <= 86_400:
        raise InvalidInputError("runtime.artifact_processing_worker_timeout_seconds",
                                "must be in 1..86400 seconds, not "
                                f"{r.artifact_processing_worker_timeout_seconds}")
    if not 2 <= r.artifact_processing_lease_seconds <= 3_600:
        raise InvalidInputError("runtime.artifact_processing_lease_seconds",
                                "must be in 2..3600 seconds, not "
                                f"{r.artifact_processing_lease_seconds}")
    if not 0.05 <= r.artifact_processing_poll_seconds <= 60:
        raise InvalidInputError("runtime.artifact_processing_poll_seconds",
                                "must be in 0.05..60 seconds, not "
                                f"{r.artifact_processing_poll_seconds}")
    interval = r.topic_memory_auto_interval_seconds
    if interval is not None and not 1 <= interval <= 31_536_000:
        raise InvalidInputError("runtime.topic_memory_auto_interval_seconds",
                                f"must be in 1..31536000 seconds (or unset), not {interval}")


def _check_server(s: ServerConfig) -> None:
    if not 0 <= s.port <= 65_535:
        raise InvalidInputError("server.port", f"must be in 0..65535, not {s.port}")
    if not s.host or len(s.host) > 255:
        raise InvalidInputError("server.host", "must be a host name or address")
    if not 1 <= s.session_lifetime_seconds <= 2_592_000:
        raise InvalidInputError("server.session_lifetime_seconds", "must be in 1..2592000 "
                                f"seconds (30 days), not {s.session_lifetime_seconds}")


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


def _shown(key: str, value: Any) -> str:
    if value is None:
        return "<unset>"
    if key.endswith(("api_key", "api_token")):
        return _MASK
    if key.endswith("base_url") and isinstance(value, str):
        parts = urlsplit(value)
        if parts.username is not None or parts.password is not None:
            host = parts.hostname or ""
            netloc = f"{_MASK}@{host}" + (f":{parts.port}" if parts.port else "")
            return urlunsplit(parts._replace(netloc=netloc))
    return repr(value)


def _shown_setting(value: Any, admitted: bool) -> str:
    if admitted and (isinstance(value, bool | int | float) or
                     (isinstance(value, str) and len(value) <= 40)):
        return repr(value)
    return "<hidden: refused by the provider policy>"


def _registry(registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    from powercontext.plugins.registry import Registry

    return Registry()
