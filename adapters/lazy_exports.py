"""Package exports imported on first use (PEP 562), so that importing an adapter package
(as the registry does to reach its ``plugin`` module) imports none of its
implementation modules, drivers or SDKs (ARCHITECTURE.md, "Plugins")."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each public name to
    the submodule (relative to ``package``) that defines it. The name is imported on
    first access and then cached in the package; another name (not a dunder) is looked up as a
    submodule, and AttributeError names the package when there is none."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(package)
        if name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(
                    f"module {package!r} has no attribute {name!r}") from None
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(importlib.import_module(package)), *exports})

    return __getattr__, __dir__
