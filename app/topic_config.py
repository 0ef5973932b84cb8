"""The Topic processing configuration under its earlier name: the configuration file and
environment are :mod:`powercontext.configuration`, the generation provider built from
them :mod:`powercontext.topic_provider`; this module re-exports both."""

from __future__ import annotations

from powercontext.configuration import (
    ENV_CONFIG,
    InferenceConfig,
    PowerContextConfig,
    RuntimeConfig,
    ServerConfig,
    config_path,
    load_config,
    log_effective_config,
)
from powercontext.topic_provider import (
    check_startup,
    check_topic_embedding,
    check_worker_model,
    generation_problems,
    topic_generation_model,
)

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
