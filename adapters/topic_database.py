"""DatabaseTopicBackend: the engine-neutral Topic Memory backend (Topic Memory RFC,
"Storage, Head, and atomic activation"; TOPIC-MEMORY.md), the page an engine author
reads.

:class:`DatabaseTopicBackend` implements :class:`powercontext.ports.topic.TopicMemoryBackend`
for any SQL database. A concrete adapter (SQLite, OceanBase, a third party's)
subclasses it together with its engine's storage class (e.g. ``SQLiteStorage``) and
implements only the synchronous primitives of
:class:`~powercontext.adapters.topic_spi.TopicPrimitives` and of the family-neutral
storage base (connection, transactions, error mapping, metadata, Sources). It never
touches the Memory family's tables, and the Memory backends never check this family's
state: readiness is per family, on one shared database.

The I/O is composed from one mixin per concept, a linear chain of bases:

- :mod:`powercontext.adapters.storage`: worker thread, transactions, retries, Sources;
- :mod:`powercontext.adapters.topic_spi`: the engine primitives (abstract);
- :mod:`powercontext.adapters.topic_deployment`: the checks at open (analyzer,
  retrieval shape) and the shape the first publication fixes;
- :mod:`powercontext.adapters.topic_publication`: the publication unit of work;
- :mod:`powercontext.adapters.topic_reads`: search, get, heads;
- :mod:`powercontext.adapters.topic_rebuild`: the analyzer migration of the full-text
  fields (``memory rebuild --analyzer``);
- :mod:`powercontext.adapters.topic_budget`: the durable allowance (begin_attempt,
  reserve, record_failure; engine primitives in
  :mod:`powercontext.adapters.topic_budget_spi`, also used by the publication guards);
- :mod:`powercontext.adapters.topic_processing_store`: flush and processing status;
- :mod:`powercontext.adapters.topic_supervision_store`: leases, the term fence,
  discovery pages and automatic waves (the Supervisor substrate).

The rules are in :mod:`powercontext.core.topic` (projection checks, chunking, ranking,
snippets); here is only the order of the I/O around them.
"""

from __future__ import annotations

from powercontext.adapters.topic_budget import TopicBudgetMixin
from powercontext.adapters.topic_operator_store import TopicOperatorFront
from powercontext.adapters.topic_rebuild import TopicRebuildMixin
from powercontext.adapters.topic_spi import SHAPE_KEY, TopicCard, TopicPrimitives
from powercontext.adapters.topic_supervision_store import TopicSupervisionFront
from powercontext.core import analyzer as analyzers
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile

__all__ = ["SHAPE_KEY", "DatabaseTopicBackend", "TopicCard", "TopicPrimitives"]


class DatabaseTopicBackend(TopicOperatorFront, TopicSupervisionFront, TopicRebuildMixin,
                           TopicBudgetMixin):
    """Base class of SQL Topic backends; implements the TopicMemoryBackend port.

    ``profile``: the deployment's embedding profile (None: FTS-only). With it and a
    working vector projection the first publication fixes a hybrid shape (4 channels);
    otherwise an fts one (2 channels). ``analyzer`` (a version name or an Analyzer;
    None: no choice) is recorded by a new database; a database recording another
    version than an explicit choice raises AnalyzerMismatchError at open.
    """

    def __init__(self, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        super().__init__()
        self._profile = profile
        # an explicit choice as a registered Analyzer (InvalidInputError when unknown)
        self._analyzer_choice = (analyzer if analyzer is None or isinstance(analyzer, Analyzer)
                                 else analyzers.get(analyzer))
        self._topic_analyzer = None
        self._vectors_ready = False
        self._analyzer_migration = False

    @property
    def profile(self) -> EmbeddingProfile | None:
        """The configured embedding profile (None: FTS-only)."""
        return self._profile
