"""The agent hosts ``powercontext setup``, ``doctor`` and ``hook`` know, one module per
host behind the small registry :data:`HOSTS` (host name -> module under this package).
Each module holds the host's hook command (``hook``), what ``setup`` writes (its
``setup`` command) and what ``doctor`` checks (``state``). Nothing is imported until a
command needs it, so a hook loads only its own host's module.
"""

from __future__ import annotations

__all__ = ["HOSTS"]

#: host name (as in ``powercontext setup NAME``) -> its module in this package
HOSTS: dict[str, str] = {
    "gemini": "gemini",
    "cursor": "cursor",
    "opencode": "opencode",
}
