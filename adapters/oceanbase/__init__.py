"""The OceanBase (MySQL mode) / seekdb backends over mysqlclient: Memory (Memory RFC,
"OceanBase adapter") and Topic Memory (Topic Memory RFC, "Storage, Head, and atomic
activation"). mysqlclient is imported only when a backend connects."""

from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend, parse_url
from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend

__all__ = ["OceanBaseMemoryBackend", "OceanBaseTopicBackend", "parse_url"]
