"""Helpers for the tests that read imports (layer rules, core cycles, the kit's
dependencies)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def owning_module(target: str, modules: Mapping[str, Path]) -> str | None:
    """The longest dotted prefix of ``target`` that names one of ``modules``
    (``powercontext.core.manifest.view`` -> ``powercontext.core.manifest``), or None."""
    parts = target.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in modules:
            return name
    return None
