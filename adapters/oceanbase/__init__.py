"""The OceanBase (MySQL mode) / seekdb backends over mysqlclient: Memory (Memory RFC,
"OceanBase adapter") and Topic Memory (Topic Memory RFC, "Storage, Head, and atomic
activation"). mysqlclient is imported only when a backend connects.

Each family's backend is imported when it is first named (PEP 562), so opening the
Memory side (every prompt hook) does not import the Topic side's modules."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["OceanBaseMemoryBackend", "OceanBaseTopicBackend", "parse_url"]

#: Where each public name lives (its module in this package).
_HOMES = {
    "OceanBaseMemoryBackend": "backend",
    "parse_url": "backend",
    "OceanBaseTopicBackend": "topic_backend",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
