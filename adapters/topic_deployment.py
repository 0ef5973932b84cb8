"""What a Topic Memory database records about its deployment, checked at every open
(Topic Memory RFC, "Storage, Head, and atomic activation", "Configuration";
TOPIC-MEMORY.md, "Per-family readiness"): the database's analyzer (the recorded
``analyzer_version`` in ``powercontext_meta``, chosen as the Memory family chooses it)
and the retrieval shape (``pc_topic_memory_retrieval_shape``).

Readiness is per family: these checks read only Topic Memory's rows, and the Memory
backends never run them. :class:`TopicDeploymentMixin` implements the storage base's
``_check_open_sync`` hook for the Topic family.
"""

from __future__ import annotations

import attrs

from powercontext.adapters.topic_spi import TopicPrimitives
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

__all__ = ["TopicDeploymentMixin"]

_FIX_FTS = ("open it without an embedding configuration (it stays FTS-only; the spec "
            "has no in-place FTS-to-vector conversion)")


class TopicDeploymentMixin(TopicPrimitives):
    """The Topic family's checks at open and the shape the next publication fixes."""

    _profile: EmbeddingProfile | None
    _analyzer_choice: Analyzer | None
    _topic_analyzer: Analyzer | None
    _vectors_ready: bool
    _analyzer_migration: bool

    def _infrastructure_caps(self, fts_ok: bool, vectors_ok: bool,
                             reasons: list[str]) -> TopicCapabilities:
        """What an engine's ``_open_sync`` returns: the capabilities its probes allow
        (``vectors_ok``: the vector projection exists or can be created and its probe
        passed); ``_check_open_sync`` adds the stored shape."""
        self._vectors_ready = self._profile is not None and vectors_ok
        if self._profile is None:
            reasons.append("no embedding profile: Topic Memory is FTS-only (2 channels)")
        elif not vectors_ok:
            reasons.append("the embedding profile is set but the vector projection is not "
                           "usable here: Topic Memory is FTS-only (2 channels)")
        if not fts_ok:
            reasons.append("full-text search is unavailable")
        kind: ShapeKind = "hybrid" if self._vectors_ready else "fts"
        return TopicCapabilities(
            shape=None, pending_kind=kind,
            channels=CHANNELS_HYBRID if kind == "hybrid" else CHANNELS_FTS,
            embedding_profile=self._profile, reasons=tuple(reasons))

    def _new_database_analyzer(self) -> Analyzer:
        """The analyzer a database created now records (the choice, else the default)."""
        return self._analyzer_choice or analyzers.get()

    def _check_open_sync(self) -> None:
        """The Topic family's checks at open: the analyzer, then the retrieval shape
        (RetrievalShapeError: Topic Heads without a shape; a shape of another analyzer or
        chunk policy; an FTS-only shape with Heads opened with an embedding profile; a
        hybrid one opened without its profile, with another one, without usable vector
        infrastructure, or whose active rows lack vectors). Opened for an analyzer
        migration (``allow_analyzer_migration``) the shape is only read."""
        self._topic_analyzer = self._in_tx(False, self._stored_analyzer_sync)
        if self._topic_analyzer is None:
            self._topic_analyzer = self._in_tx(True, self._record_analyzer_sync)
        shape, heads = self._in_tx(False, self._check_shape_sync)
        assert self._db_caps is not None
        caps = attrs.evolve(self._db_caps, shape=shape)
        if heads and shape is not None:
            caps = attrs.evolve(caps, channels=shape.channels)
        self._db_caps = caps

    def _stored_analyzer_sync(self) -> Analyzer | None:
        stored = self._meta_get_sync("analyzer_version")
        if stored is None:
            return None
        known = analyzers.ANALYZERS.get(stored)
        wanted = self._analyzer_choice
        if known is None or (wanted is not None and wanted != known):
            raise AnalyzerMismatchError(stored, (wanted or analyzers.get()).version)
        return known

    def _record_analyzer_sync(self) -> Analyzer:
        found = self._stored_analyzer_sync()  # another process may have been first
        if found is not None:
            return found
        chosen = self._new_database_analyzer()
        self._meta_set_sync("analyzer_version", chosen.version)
        return chosen

    def _check_shape_sync(self) -> tuple[RetrievalShape | None, int]:
        shape = self._shape_sync()
        heads = self._topic_head_count_sync()
        if not heads or self._analyzer_migration:
            # no Heads: the first publication may replace the shape; a migration
            # rewrites the full-text fields whatever the rest of the shape says
            return shape, heads
        if shape is None:
            raise RetrievalShapeError(
                f"this database has {heads} Topic Heads but no retrieval shape "
                "(pc_topic_memory_retrieval_shape is empty): it was damaged or written by "
                "a release without shapes; Topic Memory cannot open it")
        assert self._topic_analyzer is not None
        if shape.analyzer_version != self._topic_analyzer.version:
            raise RetrievalShapeError(
                f"the Topic projections were built by analyzer {shape.analyzer_version!r}, "
                f"the database records {self._topic_analyzer.version!r}: `powercontext "
                f"memory rebuild --analyzer {self._topic_analyzer.version}` migrates them")
        if shape.chunk_policy != CHUNK_POLICY_VERSION:
            raise RetrievalShapeError(
                f"the Topic projections were built by chunk policy {shape.chunk_policy!r}, "
                f"this release has {CHUNK_POLICY_VERSION!r}")
        if shape.kind == "fts":
            if self._profile is not None:
                raise RetrievalShapeError(
                    "this Topic Memory deployment is FTS-only and has Heads, but an "
                    f"embedding profile ({self._profile.profile_id!r}) is configured: "
                    f"{_FIX_FTS}")
            return shape, heads
        if self._profile is None:
            raise RetrievalShapeError(
                "this Topic Memory deployment is hybrid (embedding profile "
                f"{shape.embedding_profile!r}) but no embedding profile is configured: "
                "configure that profile")
        fingerprint = profile_fingerprint(self._profile)
        if shape.profile_fingerprint != fingerprint:
            raise RetrievalShapeError(
                "this Topic Memory deployment is hybrid with embedding profile "
                f"{shape.embedding_profile!r} (fingerprint {shape.profile_fingerprint}); "
                f"refusing {self._profile!r} (fingerprint {fingerprint})")
        if not self._vectors_ready:
            raise RetrievalShapeError(
                "this Topic Memory deployment is hybrid but the vector projection is not "
                "usable here: " + "; ".join(self._db_caps.reasons if self._db_caps else ()))
        missing = self._missing_vectors_sync(fingerprint)
        if missing:
            raise RetrievalShapeError(
                f"this hybrid Topic Memory database has {missing} active rows without a "
                "vector of its embedding profile (damaged: its Heads lack vectors)")
        return shape, heads

    def _wanted_shape(self) -> RetrievalShape:
        """The shape a first publication fixes now: hybrid with the profile when the
        profile is set and vectors work, else fts."""
        assert self._topic_analyzer is not None and self._db_caps is not None
        if self._db_caps.pending_kind == "hybrid":
            assert self._profile is not None
            return RetrievalShape("hybrid", CHUNK_POLICY_VERSION, self._topic_analyzer.version,
                                  self._profile, profile_fingerprint(self._profile))
        return RetrievalShape("fts", CHUNK_POLICY_VERSION, self._topic_analyzer.version)

    @property
    def _db_topic_analyzer(self) -> Analyzer:
        assert self._topic_analyzer is not None, "the database is not open"
        return self._topic_analyzer
