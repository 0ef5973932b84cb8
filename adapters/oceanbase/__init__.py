"""The OceanBase (MySQL mode) / seekdb backends over mysqlclient: Memory (Memory RFC,
"OceanBase adapter") and Topic Memory (Topic Memory RFC, "Storage, Head, and atomic
activation"). mysqlclient is imported only when a backend connects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend, parse_url

if TYPE_CHECKING:
    from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend

__all__ = ["OceanBaseMemoryBackend", "OceanBaseTopicBackend", "parse_url"]


def __getattr__(name: str) -> Any:
    """``OceanBaseTopicBackend`` is imported when first named: a Memory command (the prompt hook)
    never loads the Topic family's storage."""
    if name == "OceanBaseTopicBackend":
        from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend

        return OceanBaseTopicBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
