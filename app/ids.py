"""Fresh time-ordered ids (Memory RFC, "Identifiers"): a clock and an entropy source
passed in, so tests and the core stay deterministic."""

from __future__ import annotations

from collections.abc import Callable

from powercontext.core import canonical

__all__ = ["IdFactory"]


class IdFactory:
    """``clock`` gives milliseconds, ``entropy`` n random bytes."""

    def __init__(self, clock: Callable[[], int], entropy: Callable[[int], bytes]) -> None:
        self._clock = clock
        self._entropy = entropy

    def new_id(self, prefix: str) -> str:
        """A fresh time-ordered ASCII id with ``prefix`` (e.g. ``mem_ent_``)."""
        return canonical.make_id(prefix, self._clock(), self._entropy(10))
