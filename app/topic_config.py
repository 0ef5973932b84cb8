"""Deprecated earlier name of the Topic processing configuration, kept for one release:
the configuration file and environment are :mod:`powercontext.configuration`, the
generation provider built from them :mod:`powercontext.topic_provider`. Reading a name
here still works and warns (DeprecationWarning) with its new import."""

from __future__ import annotations

from powercontext.moved_names import moved_names

__all__: list[str] = []

#: Deprecated names, read from their homes with a DeprecationWarning.
_MOVED = {
    **dict.fromkeys(("ENV_CONFIG", "InferenceConfig", "PowerContextConfig", "RuntimeConfig",
                     "ServerConfig", "config_path", "load_config", "log_effective_config"),
                    "powercontext.configuration"),
    **dict.fromkeys(("check_startup", "check_topic_embedding", "check_worker_model",
                     "generation_problems", "topic_generation_model"),
                    "powercontext.topic_provider"),
}
__getattr__ = moved_names(__name__, _MOVED)
