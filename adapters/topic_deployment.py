"""What a Topic Memory database records about its deployment, checked at every open
(Topic Memory RFC, "Storage, Head, and atomic activation", "Configuration";
TOPIC-MEMORY.md, "Per-family readiness"): the database's analyzer (the recorded
``analyzer_version`` in ``powercontext_meta``, chosen as the Memory family chooses it)
and the retrieval shape (``pc_topic_memory_retrieval_shape``).

Readiness is per family: these checks read only Topic Memory's rows, and the Memory
backends never run them. :class:`TopicDeployment` holds what the deployment is (the
embedding profile, the analyzer choice, the analyzer the database records, whether
vectors work here) and runs the checks the Topic backend's ``_check_open_sync`` hook
delegates to.
"""

from __future__ import annotations

import attrs

from powercontext.adapters.topic_host import TopicHost
from powercontext.adapters.topic_rows import TopicRows
from powercontext.core import analyzer as analyzers
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import AnalyzerMismatchError, RetrievalShapeError
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic.chunks import CHUNK_POLICY_VERSION
from powercontext.core.topic.models import (
    CHANNELS_FTS,
    CHANNELS_HYBRID,
    RetrievalShape,
    ShapeKind,
    TopicCapabilities,
)
from powercontext.core.topic.projection import profile_fingerprint
from powercontext.ports.engine import TopicSearchProjection

__all__ = ["TopicDeployment"]

_FIX_FTS = ("open it without an embedding configuration (it stays FTS-only; the spec "
            "has no in-place FTS-to-vector conversion)")


class TopicDeployment:
    """The Topic family's checks at open and the shape the next publication fixes.

    ``profile``: the deployment's embedding profile (None: FTS-only); ``analyzer_choice``
    an explicit Analyzer (None: no choice). After :meth:`check_open`, ``analyzer`` is the
    Analyzer the database records."""

    def __init__(self, host: TopicHost, rows: TopicRows, projection: TopicSearchProjection,
                 profile: EmbeddingProfile | None, analyzer_choice: Analyzer | None) -> None:
        self._host = host
        self._rows = rows
        self._projection = projection
        self.profile = profile
        self.analyzer_choice = analyzer_choice
        self.analyzer: Analyzer | None = None
        self.vectors_ready = False
        #: set by ``allow_analyzer_migration``: the next open only reads the shape
        self.analyzer_migration = False

    def infrastructure_caps(self, fts_ok: bool, vectors_ok: bool,
                             reasons: list[str]) -> TopicCapabilities:
        """What an engine's ``_open_sync`` returns: the capabilities its probes allow
        (``vectors_ok``: the vector projection exists or can be created and its probe
        passed); :meth:`check_open` adds the stored shape."""
        self.vectors_ready = self.profile is not None and vectors_ok
        if self.profile is None:
            reasons.append("no embedding profile: Topic Memory is FTS-only (2 channels)")
        elif not vectors_ok:
            reasons.append("the embedding profile is set but the vector projection is not "
                           "usable here: Topic Memory is FTS-only (2 channels)")
        if not fts_ok:
            reasons.append("full-text search is unavailable")
        kind: ShapeKind = "hybrid" if self.vectors_ready else "fts"
        return TopicCapabilities(
            shape=None, pending_kind=kind,
            channels=CHANNELS_HYBRID if kind == "hybrid" else CHANNELS_FTS,
            embedding_profile=self.profile, reasons=tuple(reasons))

    def new_database_analyzer(self) -> Analyzer:
        """The analyzer a database created now records (the choice, else the default)."""
        return self.analyzer_choice or analyzers.get()

    def check_open(self) -> None:
        """The Topic family's checks at open: the analyzer, then the retrieval shape
        (RetrievalShapeError: Topic Heads without a shape; a shape of another analyzer or
        chunk policy; an FTS-only shape with Heads opened with an embedding profile; a
        hybrid one opened without its profile, with another one, without usable vector
        infrastructure, or whose active rows lack vectors). Opened for an analyzer
        migration (``allow_analyzer_migration``) the shape is only read."""
        self.analyzer = self._host._in_tx(False, self._stored_analyzer_sync)
        if self.analyzer is None:
            self.analyzer = self._host._in_tx(True, self._record_analyzer_sync)
        shape, heads = self._host._in_tx(False, self._check_shape_sync)
        assert self._host._db_caps is not None
        caps = attrs.evolve(self._host._db_caps, shape=shape)
        if heads and shape is not None:
            caps = attrs.evolve(caps, channels=shape.channels)
        self._host._db_caps = caps

    def _stored_analyzer_sync(self) -> Analyzer | None:
        stored = self._host._meta_get_sync("analyzer_version")
        if stored is None:
            return None
        known = analyzers.ANALYZERS.get(stored)
        wanted = self.analyzer_choice
        if known is None or (wanted is not None and wanted != known):
            raise AnalyzerMismatchError(stored, (wanted or analyzers.get()).version)
        return known

    def _record_analyzer_sync(self) -> Analyzer:
        found = self._stored_analyzer_sync()  # another process may have been first
        if found is not None:
            return found
        chosen = self.new_database_analyzer()
        self._host._meta_set_sync("analyzer_version", chosen.version)
        return chosen

    def _check_shape_sync(self) -> tuple[RetrievalShape | None, int]:
        shape = self._rows.shape()
        heads = self._rows.head_count()
        if not heads or self.analyzer_migration:
            # no Heads: the first publication may replace the shape; a migration
            # rewrites the full-text fields whatever the rest of the shape says
            return shape, heads
        if shape is None:
            raise RetrievalShapeError(
                f"this database has {heads} Topic Heads but no retrieval shape "
                "(pc_topic_memory_retrieval_shape is empty): it was damaged or written by "
                "a release without shapes; Topic Memory cannot open it")
        assert self.analyzer is not None
        if shape.analyzer_version != self.analyzer.version:
            raise RetrievalShapeError(
                f"the Topic projections were built by analyzer {shape.analyzer_version!r}, "
                f"the database records {self.analyzer.version!r}: `powercontext "
                f"memory rebuild --analyzer {self.analyzer.version}` migrates them")
        if shape.chunk_policy != CHUNK_POLICY_VERSION:
            raise RetrievalShapeError(
                f"the Topic projections were built by chunk policy {shape.chunk_policy!r}, "
                f"this release has {CHUNK_POLICY_VERSION!r}")
        if shape.kind == "fts":
            if self.profile is not None:
                raise RetrievalShapeError(
                    "this Topic Memory deployment is FTS-only and has Heads, but an "
                    f"embedding profile ({self.profile.profile_id!r}) is configured: "
                    f"{_FIX_FTS}")
            return shape, heads
        if self.profile is None:
            raise RetrievalShapeError(
                "this Topic Memory deployment is hybrid (embedding profile "
                f"{shape.embedding_profile!r}) but no embedding profile is configured: "
                "configure that profile")
        fingerprint = profile_fingerprint(self.profile)
        if shape.profile_fingerprint != fingerprint:
            raise RetrievalShapeError(
                "this Topic Memory deployment is hybrid with embedding profile "
                f"{shape.embedding_profile!r} (fingerprint {shape.profile_fingerprint}); "
                f"refusing {self.profile!r} (fingerprint {fingerprint})")
        if not self.vectors_ready:
            caps = self._host._db_caps
            raise RetrievalShapeError(
                "this Topic Memory deployment is hybrid but the vector projection is not "
                "usable here: " + "; ".join(caps.reasons if caps else ()))
        missing = self._projection.missing_vectors(fingerprint)
        if missing:
            raise RetrievalShapeError(
                f"this hybrid Topic Memory database has {missing} active rows without a "
                "vector of its embedding profile (damaged: its Heads lack vectors)")
        return shape, heads

    def wanted_shape(self) -> RetrievalShape:
        """The shape a first publication fixes now: hybrid with the profile when the
        profile is set and vectors work, else fts."""
        assert self.analyzer is not None and self._host._db_caps is not None
        if self._host._db_caps.pending_kind == "hybrid":
            assert self.profile is not None
            return RetrievalShape("hybrid", CHUNK_POLICY_VERSION, self.analyzer.version,
                                  self.profile, profile_fingerprint(self.profile))
        return RetrievalShape("fts", CHUNK_POLICY_VERSION, self.analyzer.version)

    @property
    def db_analyzer(self) -> Analyzer:
        """The Analyzer the database records (the database is open)."""
        assert self.analyzer is not None, "the database is not open"
        return self.analyzer
