"""Plugins: pluggy hookspecs and the registry (ARCHITECTURE.md, "Plugins"). The built-in
plugins are the ``plugin`` modules of the adapter packages; third-party plugins use
:data:`hookimpl` and the entry-point group ``powercontext``; hosts build a
:class:`Registry`."""

from __future__ import annotations

from powercontext.plugins.hookspecs import PROJECT_NAME, hookimpl
from powercontext.plugins.registry import (
    DuplicateRegistrationError,
    PluginError,
    Registry,
    UnknownPluginError,
)

__all__ = [
    "PROJECT_NAME",
    "DuplicateRegistrationError",
    "PluginError",
    "Registry",
    "UnknownPluginError",
    "hookimpl",
]
