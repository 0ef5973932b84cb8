"""The OceanBase (MySQL mode) / seekdb backends over mysqlclient: Memory (Memory RFC,
"OceanBase adapter") and Topic Memory (Topic Memory RFC, "Storage, Head, and atomic
activation"). mysqlclient is imported only when a backend connects. The backends register
themselves through :mod:`.plugin`.

Each family's backend is imported when it is first named (PEP 562), so opening the
Memory side (every prompt hook) does not import the Topic side's modules."""

from __future__ import annotations

from typing import Any

from powercontext.adapters import lazy_export

__all__ = ["OceanBaseMemoryBackend", "OceanBaseTopicBackend", "parse_url"]

#: Where each public name lives (its module in this package).
_HOMES = {
    "OceanBaseMemoryBackend": "backend",
    "parse_url": "backend",
    "OceanBaseTopicBackend": "topic_backend",
}


def __getattr__(name: str) -> Any:
    return lazy_export(__name__, _HOMES, name)
