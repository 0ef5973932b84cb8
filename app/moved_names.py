"""Names a module kept for one release after they moved to their real home: reading one
still works and warns (DeprecationWarning naming the new import), so code written
against an earlier release keeps running and learns where to look.

Nothing is imported until a moved name is read.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_names"]


def moved_names(module: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module`` (its dotted name): each name of ``homes``
    (name -> dotted module that defines it now) is read from its home with a
    DeprecationWarning pointing at the caller; any other name raises AttributeError as a
    module would."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} moved to {home}.{name}; import it from {home}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)

    return __getattr__
