"""What mypy checks here and nothing runs: each engine's classes implement the ports
they stand for (the engine port, the search projections, the family backends). A
change that breaks one fails ``make types``."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__: list[str] = []

if TYPE_CHECKING:
    from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend
    from powercontext.adapters.oceanbase.topic_backend import OceanBaseTopicBackend
    from powercontext.adapters.oceanbase.topic_supervision import OceanBaseLeases
    from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend
    from powercontext.adapters.sqlite.engine import SQLiteEngine
    from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend
    from powercontext.adapters.sqlite.topic_supervision import SQLiteLeases
    from powercontext.adapters.topic_database import SQLTopicBackend
    from powercontext.adapters.topic_ledger_rows import LedgerRows, SQLLedgerRows
    from powercontext.adapters.topic_supervision_rows import (
        SQLSupervisionRows,
        SupervisionRows,
    )
    from powercontext.ports import (
        EntryKinds,
        MemoryBackend,
        MemoryInventory,
        MemoryRebuild,
        SourceCitations,
    )
    from powercontext.ports.engine import (
        EngineBacked,
        MemorySearchProjection,
        SQLEngine,
        SupervisorLeases,
        TopicSearchProjection,
    )
    from powercontext.ports.topic import TopicInsight, TopicMemoryBackend, TopicRebuild
    from powercontext.ports.topic_supervision import SupervisorLockingPolicy

    def _sqlite(memory: SQLiteMemoryBackend, topic: SQLiteTopicBackend) -> None:
        engine: SQLEngine = SQLiteEngine(memory.filename)
        leases: SupervisorLeases = SQLiteLeases(engine)
        backed: EngineBacked = memory
        projection: MemorySearchProjection = memory.projection
        topic_projection: TopicSearchProjection = topic.projection
        port: MemoryBackend = memory
        rebuild: MemoryRebuild = memory
        inventory: MemoryInventory = memory
        citations: SourceCitations = memory
        kinds: EntryKinds = memory
        topic_port: TopicMemoryBackend = topic
        del engine, leases, backed, projection, topic_projection, port
        del rebuild, inventory, citations, kinds, topic_port

    def _topic_facade(topic: SQLTopicBackend) -> None:
        # the engine-neutral facade itself implements the Topic ports
        port: TopicMemoryBackend = topic
        insight: TopicInsight = topic
        rebuild: TopicRebuild = topic
        locking: SupervisorLockingPolicy = topic
        ledger: LedgerRows = SQLLedgerRows(topic.engine)
        rows: SupervisionRows = SQLSupervisionRows(topic.engine, topic.leases)
        del port, insight, rebuild, locking, ledger, rows

    def _oceanbase(memory: OceanBaseMemoryBackend, topic: OceanBaseTopicBackend) -> None:
        engine: SQLEngine = memory.engine
        leases: SupervisorLeases = OceanBaseLeases(topic.ob_engine)
        backed: EngineBacked = topic
        projection: MemorySearchProjection = memory.projection
        topic_projection: TopicSearchProjection = topic.projection
        port: MemoryBackend = memory
        rebuild: MemoryRebuild = memory
        citations: SourceCitations = memory
        topic_port: TopicMemoryBackend = topic
        del engine, leases, backed, projection, topic_projection, port, rebuild, citations
        del topic_port
