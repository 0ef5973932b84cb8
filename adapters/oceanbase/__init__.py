"""The OceanBase (MySQL mode) / seekdb backends over mysqlclient: Memory (Memory RFC,
"OceanBase adapter") and Topic Memory (Topic Memory RFC, "Storage, Head, and atomic
activation"). mysqlclient is imported only when a backend connects. They register
themselves through :mod:`.plugin`; importing this package imports no backend module
(the names below are imported on first use)."""

from typing import TYPE_CHECKING

from powercontext.adapters.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend, parse_url
    from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend

__all__ = ["OceanBaseMemoryBackend", "OceanBaseTopicBackend", "parse_url"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "OceanBaseMemoryBackend": "backend",
    "parse_url": "backend",
    "OceanBaseTopicBackend": "topic_backend",
})
