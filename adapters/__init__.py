"""The driven adapters: everything that touches the outside world (ARCHITECTURE.md,
"The layers").

:func:`lazy_export` serves the adapter packages' public names on first use (PEP 562): a
package's ``__init__`` maps each name to the module of the package that defines it, and
its module ``__getattr__`` calls it. Importing a package (or its ``plugin.py``) then
imports no driver, SDK or implementation module; the prompt hook, which runs per
prompt, pays only for what it names. This module imports only the standard library."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["lazy_export"]


def lazy_export(package: str, homes: Mapping[str, str], name: str) -> Any:
    """``name`` of the package ``package``, imported from ``package.<homes[name]>`` and
    kept on the package so the next access is a plain attribute. AttributeError for a
    name ``homes`` does not map (as for any missing module attribute)."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{home}"), name)
    setattr(sys.modules[package], name, value)
    return value
