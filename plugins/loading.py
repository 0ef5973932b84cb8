"""Plugin objects named by text (ARCHITECTURE.md, "Plugins"): the ``module:attribute``
names of extra plugins the Supervisor passes to its Worker processes (``--plugin``)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["resolve"]


def resolve(dotted: str) -> Any:
    """Import ``"package.module:attribute"`` and return the attribute.

    Raises ImportError (for example when an extra is not installed) or AttributeError.
    """
    module_name, _, attribute = dotted.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute)
