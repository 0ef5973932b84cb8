"""StorageEngine: the part of the :class:`~powercontext.ports.engine.SQLEngine` port that
is the same on every engine of ours: its capabilities and the connection lifecycle and
transactions, forwarded to the one storage object that owns the connection (the engine
is a view over it; every statement still goes through the storage's own funnel, where
tests inject faults). Each engine adds its statements (``execute``, ``query`` ...),
its error mapping and its clock."""

from __future__ import annotations

from typing import Any, ClassVar

from powercontext.ports.engine import EngineCapabilities

__all__ = ["StorageEngine"]


class StorageEngine:
    """Lifecycle and transactions of the engine port over ``storage`` (its
    ``_ensure_open_sync``, ``_close_sync``, ``_begin_sync(write)``, ``_commit_sync``,
    ``_rollback_sync``); :data:`CAPABILITIES` is the engine's, fixed by its class."""

    CAPABILITIES: ClassVar[EngineCapabilities]

    def __init__(self, storage: Any) -> None:
        self._storage = storage

    @property
    def engine_capabilities(self) -> EngineCapabilities:
        return self.CAPABILITIES

    def connect(self) -> None:
        self._storage._ensure_open_sync()

    def close(self) -> None:
        self._storage._close_sync()

    def begin(self, write: bool) -> None:
        self._storage._begin_sync(write)

    def commit(self) -> None:
        self._storage._commit_sync()

    def rollback(self) -> None:
        self._storage._rollback_sync()
