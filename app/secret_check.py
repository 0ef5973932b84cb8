"""The secret check every Memory write runs before anything is stored (Memory RFC,
"Security and privacy"; the rules are :mod:`powercontext.core.secrets`)."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.core.models import MemoryEntryInput, Source
from powercontext.ports import SecretScanner

__all__ = ["SecretCheck"]


class SecretCheck:
    """Checks Sources, entry texts, keys and reasons with one scanner. ``scanner``
    (optional; default: the core rules plus detect-secrets, built on first use, see
    :mod:`powercontext.adapters.secret_scanner`)."""

    def __init__(self, scanner: SecretScanner | None = None) -> None:
        self._scanner = scanner

    @property
    def scanner(self) -> SecretScanner:
        """The scanner every write checks Sources and entry texts with."""
        if self._scanner is None:
            from powercontext.adapters.secret_scanner import default_scanner

            self._scanner = default_scanner()
        return self._scanner

    def check(self, sources: Sequence[Source] = (),
              entries: Sequence[MemoryEntryInput] = (), key: str | None = None,
              reason: object = None) -> None:
        """SecretDetectedError when a field holds a secret (see
        ``MemoryService.check_secrets``)."""
        from powercontext.core import secrets  # writes only: reads never compile its rules

        scan = self.scanner.scan
        if key is not None:
            secrets.check_text("key", key, scan)
        secrets.check_sources(sources, scan)
        for i, e in enumerate(entries):
            if isinstance(e, MemoryEntryInput) and isinstance(e.text, str):
                secrets.check_text(f"entries[{i}].text", e.text, scan)
                if isinstance(e.reason, str):
                    secrets.check_text(f"entries[{i}].reason", e.reason, scan)
        if isinstance(reason, str):
            secrets.check_text("reason", reason, scan)
