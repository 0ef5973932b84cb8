"""The interfaces the application drives (Memory RFC, "Code structure and abstraction
boundaries"): typing.Protocols only, no implementation.

Required ports: :class:`MemoryBackend` (with :class:`SourceStore` and
:class:`MemoryUnitOfWork`), :class:`EmbeddingModel`, :class:`CandidatePipeline`,
:class:`SecretScanner`. Capability ports, which a backend may or may not implement and
callers ask with ``isinstance``: :class:`MemoryRebuild`, :class:`MemoryInventory`,
:class:`SourceCitations`.
Every error named here is in :mod:`powercontext.core.errors`; "ValueError" means
:class:`~powercontext.core.errors.InvalidInputError` (a ValueError naming the field)
unless said otherwise. Ids are ASCII strings of at most 128 characters, hashes 64
lowercase hex characters, Revisions integers from 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: importing ports stays cheap (the prompt hook)
    from powercontext.core.analyzer import Analyzer
    from powercontext.core.models import (
        ArtifactRef,
        EmbeddingProfile,
        EmbeddingResult,
        EmbeddingVector,
        MemoryCapabilities,
        MemoryEntryInput,
        MemoryEntryVersion,
        MemoryHit,
        MemoryRevision,
        MemoryRevisionChanges,
        MemorySearchRequest,
        MemorySearchResult,
        RebuildReport,
        RehashReport,
        Source,
    )
    from powercontext.core.plan import MemoryPlan
    from powercontext.core.secrets import SecretFinding
    from powercontext.core.topic.insight import SourceScope
    from powercontext.core.topic.processing import JournalEntry

__all__ = [
    "CandidatePipeline",
    "EmbeddingModel",
    "EntryKinds",
    "MemoryBackend",
    "MemoryInventory",
    "MemoryRebuild",
    "MemoryUnitOfWork",
    "SecretScanner",
    "SourceCitations",
    "SourceStore",
]


@runtime_checkable
class EmbeddingModel(Protocol):
    """Turns texts into unit vectors of the deployment's fixed profile (Memory RFC,
    "Code structure and abstraction boundaries": EmbeddingModel). ``embed`` returns one
    vector per text, in input order.

    Consumers trust nothing a model returns: any exception from ``embed`` (a
    ``BackendError``, but also a third-party ``ConnectionError``, ``TimeoutError``, ...)
    means "model unavailable", and every vector goes through
    :func:`powercontext.core.vectors.prepare_vector`, which normalises a non-unit vector
    under a unit profile and refuses an empty, zero, non-finite or wrong-dimension
    vector for its own entry only (Memory RFC, "Backend capabilities" and "Vector
    integrity and offline rebuilds")."""

    @property
    def profile(self) -> EmbeddingProfile:
        """The fixed profile every vector of this model has (Memory RFC, "Backend
        capabilities"): ``profile_id``, ``model``, ``dimension`` (floats per vector),
        ``distance`` (``"l2"``) and ``normalization`` (``"unit"``: L2 norm 1). Constant
        for the model's lifetime; it must equal the database's profile for vector
        search. Reading it never raises."""
        ...

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        """One vector per text, in input order (``EmbeddingResult.vectors``, each a
        tuple of ``profile.dimension`` finite floats; unit length under a ``"unit"``
        profile), plus ``usage`` (input tokens, 0 when unknown). Runs outside any
        transaction (Memory RFC, "Concurrency and transactions"). Any exception means
        "model unavailable": writes still commit without vectors and ``auto`` search
        falls back to fts (Memory RFC, "Vector integrity and offline rebuilds")."""
        ...


@runtime_checkable
class SecretScanner(Protocol):
    """Finds secrets in text before anything is stored (Memory RFC, "Memory admission
    rules": never save secrets). ``scan`` is pure CPU work, never a network call, and
    returns every finding (rule, description, 1-based line, span when known) in text
    order; it never raises on any string. The service refuses or redacts with it."""

    def scan(self, text: str) -> tuple[SecretFinding, ...]:
        """Every secret found in ``text`` (any string, any length), in text order: each
        a SecretFinding with the rule, a description, the 1-based line and the span
        (character offsets) when known; ``()`` when clean. Never raises and never
        returns the secret in a description (Memory RFC, "Memory admission rules")."""
        ...


@runtime_checkable
class MemoryUnitOfWork(Protocol):
    """One atomic write: the Revision, entry versions, head projection, FTS and vectors
    commit together or not at all (Memory RFC, "Concurrency and transactions")."""

    async def commit(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None = None,
        *, key: str | None = None,
    ) -> ArtifactRef:
        """Commit ``plan`` (a :class:`~powercontext.core.plan.MemoryPlan`: the new
        Revision's content, canonical bytes and hash, new entry versions, projection
        upserts and deletes) in one transaction and return the new head ArtifactRef
        (Memory RFC, "Concurrency and transactions"): head CAS, re-validation of
        evidence, predecessors, manifest, hashes and vectors, then Revision, entry
        versions, head projection, FTS and vectors, or nothing. ``vectors`` maps
        entry_version_id to its EmbeddingVector (``profile.dimension`` floats) for
        entries the plan projects; an entry without one gets no vector row (Memory
        RFC, "Vector integrity and offline rebuilds").

        Errors, each leaving the database as it was: RevisionConflictError when the
        base is no longer the head; ValueError (InvalidInputError, field named) for a
        plan that fails re-validation (a forged or stale plan); WritesPausedError while
        an offline rebuild runs; CommitOutcomeUnknownError when the connection is lost
        during COMMIT (reread the head, never replay blindly); a unit of work commits
        at most once (RuntimeError on a second commit).

        ``key`` (only with a plan that creates a Memory): the business key stored for the
        new Memory in the same transaction (ARCHITECTURE.md, Decisions: "Keys live in the
        database"). A key another writer stored first is a RevisionConflictError and
        nothing commits: the caller rereads the key and writes to that Memory's head.
        InvalidInputError (field ``key``) for a malformed key or a plan with a base."""
        ...

    async def rollback(self) -> None:
        """Discard the unit of work: nothing of it is stored (Memory RFC, "Concurrency
        and transactions"). Idempotent, also after ``commit``; ``begin()`` calls it when
        its block ends. Never raises for a unit of work that did not commit."""
        ...


@runtime_checkable
class SourceStore(Protocol):
    """Immutable Sources with stable SourceRefs and a journal position per store
    (Memory RFC, "Source changes and incremental evidence" and "Storage abstraction and
    physical model": the backend's SourceStore shares its transaction manager)."""

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        """Persist Sources in one transaction (idempotent for identical ones); returns
        each Source's journal position (int >= 1, in input order; an identical Source
        keeps its first position). ValueError for a value that is not a normalized
        Source (build it with ``core.canonical.make_source``), a wrong content hash or a
        different Source under an existing id; SecretDetectedError (a ValueError naming
        the field, never the secret) for a secret in the content, uri or metadata. On
        any error nothing is stored: Sources are append-only (Memory RFC, "Source changes
        and incremental evidence", "Memory admission rules")."""
        ...

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        """The stored Sources, in the order of ``source_ids`` (Memory RFC, "Source
        changes and incremental evidence"). ArtifactNotFoundError names the first id
        with no stored Source."""
        ...

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        """``(position, Source)`` pairs stored after journal position ``after``
        (exclusive; 0 = from the start), in ascending position order, at most ``limit``
        of them; ``()`` past the end. Positions are ints >= 1, ascending in store order
        and never reused (gaps are possible), so a reader pages with the last one it
        saw (Memory RFC, "Source changes and incremental evidence"). Never raises for
        ``after >= 0``, ``limit >= 1``."""
        ...

    async def put_scoped_sources(self, scope_id: str, sources: Sequence[Source], *,
                                 once_per_uri: bool = False) -> tuple[int, ...]:
        """Persist Sources into one Scope (Topic Memory RFC, "Source, Window, Cursor, and
        Pending"; TOPIC-MEMORY.md, "Scopes are new"): in ONE transaction each Source
        (as :meth:`put_sources`), its row in the Scope's journal (positions 1, 2, ...
        per Scope, increasing, never reused) and the Pending raise of every processing
        binding (``source_through = max(existing, position)``, flush generations
        unchanged). Returns each Source's Scope-journal position in input order; a
        Source already in this Scope keeps its position (idempotent, no new raise
        beyond it). Errors (nothing stored): those of :meth:`put_sources`;
        InvalidInputError naming ``scope_id`` for a bad Scope id
        (:func:`powercontext.core.topic.content.check_scope_id`) or a Source already
        journaled in another Scope (one Scope per Source). The journal row's
        ``lineage_only`` flag is server-owned and always False here. Every Source add
        is a new Source: a producer makes a new id for each add (the same id again is
        the same Source). ``once_per_uri``: a Source whose ``uri`` this Scope has
        journaled already (or earlier in the call) is not added; its position is the
        earlier one (a redelivered event, checked in the same transaction)."""
        ...

    async def scope_position_of_uri(self, scope_id: str, uri: str) -> int | None:
        """Read only (Topic Memory RFC, "Source, Window, Cursor, and Pending"): the lowest
        position of the Scope's journal rows whose Source has exactly this ``uri``, or
        None (an indexed lookup). InvalidInputError naming ``scope_id`` or ``uri``."""
        ...

    async def scope_journal(self, scope_id: str, after: int = 0,
                            limit: int = 100) -> tuple[JournalEntry, ...]:
        """The Scope's journal rows (Topic Memory RFC, "Source, Window, Cursor, and
        Pending") after position ``after`` (exclusive), ascending, at
        most ``limit`` (1..1000), each with its Source and ``lineage_only`` flag.
        InvalidInputError for a bad Scope id, ``after < 0`` or ``limit`` out of range."""
        ...

    async def source_head(self, scope_id: str) -> int:
        """The Scope's highest journal position (0 when it has no Source; Topic Memory
        RFC, "Source, Window, Cursor, and Pending"). InvalidInputError for a bad Scope
        id."""
        ...


@runtime_checkable
class MemoryBackend(SourceStore, Protocol):
    """Capability discovery, exact reads and retrieval (Memory RFC, "Code structure and
    abstraction boundaries": MemoryBackend owns capability discovery, exact reads and
    retrieval; writes go through :meth:`begin`). Every read runs in one read
    transaction. The first call opens the database and may raise what opening does:
    ProfileMismatchError (another embedding profile), AnalyzerMismatchError (another
    analyzer version; names ``memory rebuild``), UpgradeRequiredError (pre-spec hashes;
    names ``memory rebuild --rehash``), BackendError (unreachable)."""

    async def capabilities(self) -> MemoryCapabilities:
        """What the database and adapter can serve, from the start-up probes (Memory
        RFC, "Backend capabilities"): ``fts``, ``vector``, ``hybrid``, the deployment's
        one ``embedding_profile`` (None without vector infrastructure) and ``reasons``
        (why something is off). The model is the caller's: the service turns vector off
        without a matching one. Errors: those of opening (ProfileMismatchError,
        AnalyzerMismatchError, UpgradeRequiredError, BackendError; see the class)."""
        ...

    async def analyzer(self) -> Analyzer:
        """The database's search analyzer (an :class:`~powercontext.core.analyzer.
        Analyzer`, named by its ``version``), whose ``searchable_text`` every projection
        row of a plan must carry; a plan built with another analyzer is refused at
        commit (Memory RFC, "Normalization, hashing, and the search analyzer"). Errors:
        those of opening (AnalyzerMismatchError names ``memory rebuild --analyzer``)."""
        ...

    def begin(self) -> AbstractAsyncContextManager[MemoryUnitOfWork]:
        """``async with backend.begin() as uow: await uow.commit(plan, vectors)``: one
        atomic write (Memory RFC, "Concurrency and transactions"). Leaving the block
        without a commit, or with an exception, rolls back (the exception propagates).
        The write's errors (RevisionConflictError, ...) come from
        :meth:`MemoryUnitOfWork.commit`."""
        ...

    async def head(self, artifact_id: str) -> ArtifactRef | None:
        """The current head ``ArtifactRef(artifact_id, revision)`` of a Memory, or None
        when no Memory has that id (Memory RFC, "Memory identity": a Memory is located
        by its Artifact id alone). Never raises for a missing Memory."""
        ...

    async def load_revision(self, ref: ArtifactRef) -> MemoryRevision:
        """The stored Revision ``ref`` names: its ``content`` (MemoryContent: manifest
        and changes, both sorted by UTF-8 entry_id), ``content_hash`` (verified against
        the canonical bytes) and ``lineage`` (Memory RFC, "Data model", "Revision and
        entry lineage"). Any Revision 1..head may be read; Revisions are immutable.
        ArtifactNotFoundError for an unknown Memory or a Revision outside 1..head;
        IntegrityError when stored bytes fail their hash."""
        ...

    async def load_entry_versions(
        self, ref: ArtifactRef, entry_ids: Sequence[str] | None = None
    ) -> dict[str, MemoryEntryVersion]:
        """The MemoryEntryVersions the manifest of ``ref`` points to, by entry_id: the
        ones ``entry_ids`` names, every entry (active and inactive) when None (Memory RFC,
        "Data model": MemoryEntryVersion). Each is checked against the manifest's id,
        version id and entry content hash. ArtifactNotFoundError for an unknown
        Revision or an entry_id not in its manifest; IntegrityError for a stored version
        that fails the check."""
        ...

    async def changes(
        self, memory: ArtifactRef, since_revision: int | None
    ) -> tuple[MemoryRevisionChanges, ...]:
        """``(memory_ref, changes)`` per Revision after ``since_revision`` up to
        ``memory.revision``, in ascending Revision order (Memory RFC, "changes()").
        ``since_revision`` is exclusive; 0 reads the whole history; None reads the
        target Revision only. Reads only the compact MemoryChange values, never entry
        texts or projections. ArtifactNotFoundError for an unknown Memory or target
        Revision; ValueError (field ``since_revision``) for a non-integer, a negative
        value or one after the target."""
        ...

    async def search(self, request: MemorySearchRequest) -> MemorySearchResult:
        """Hits of ``request.query`` in the active entries of the named current heads,
        in one read transaction (Memory RFC, "Search and reads", "Backend
        capabilities"). ``request.memories``: exact ArtifactRefs, each the current head,
        or CurrentHead names resolved inside the transaction; at most ``limit`` hits;
        ``mode`` fts, vector or hybrid (``query_vector`` of ``profile.dimension``
        floats for the last two; the service resolves ``auto``). Each channel takes
        ``max(limit * 4, 32)`` admitted candidates, each re-checked against the head
        manifest (active, same version, hash); RRF with k = 60, ties by artifact id,
        UTF-8 entry_id, entry_version_id; a smaller limit returns a prefix. Returns a
        MemorySearchResult (``hits``, the ``mode`` that ran, ``fallback_reason``).
        Errors: CapabilityNotSupportedError for a non-head ArtifactRef or a mode the
        database cannot serve (no vector infrastructure, an incomplete vector projection
        of a named Memory); ArtifactNotFoundError for an unknown Memory;
        InvalidInputError (field ``query``) for a query over the bounds of
        :mod:`powercontext.core.query`."""
        ...

    async def memory_key(self, key: str) -> str | None:
        """The Memory Artifact id the business ``key`` (e.g. ``repo:/abs/path``) names,
        or None. Memory RFC, "Memory identity": the mapping from a business object to an
        Artifact id is the runtime's; ARCHITECTURE.md, Decisions: "Keys live in the
        database" (the unit of work writes a key with the Memory it names), so every
        process and host opening it sees the same ones. Compared in NFC form, exactly
        (case and bytes): InvalidInputError (field ``key``) for a key that is not a
        string of 1..``MAX_KEY_CHARS`` characters without control characters or
        surrounding white space (:func:`powercontext.core.keys.normalize_key`)."""
        ...

    async def memory_keys(self) -> dict[str, str]:
        """Every stored business key -> Memory Artifact id, sorted by key (Memory RFC,
        "Memory identity"; ARCHITECTURE.md, Decisions: "Keys live in the database");
        ``{}`` when none. Never raises beyond the errors of opening."""
        ...

    async def remove_memory_key(self, key: str, artifact_id: str) -> bool:
        """Delete, in one transaction, the business ``key`` when it names
        ``artifact_id``: True when it did, False when the key names no Memory or another
        one (Memory RFC, "Memory identity": the key -> Artifact mapping is the
        runtime's; the Memory, its Revisions and Sources are untouched).
        InvalidInputError (field ``key`` or ``artifact_id``) for a malformed argument."""
        ...

    async def import_memory_keys(self, mapping: Mapping[str, str]) -> dict[str, str]:
        """Store, in one transaction, the keys of ``mapping`` (key -> Artifact id) that
        are not stored yet and name an existing Memory (a stored key keeps its Memory;
        a key naming no Memory is skipped; idempotent). Returns the pairs this call
        stored, keys in NFC form (Memory RFC, "Memory identity": keys an earlier
        release kept in its runtime manifest move into the database). InvalidInputError
        (field ``key`` or ``artifact_id``) for a malformed pair, before anything is
        stored."""
        ...

    async def expand(self, hits: Sequence[MemoryHit]) -> tuple[MemoryEntryVersion, ...]:
        """The exact MemoryEntryVersion each anchor (``memory_ref`` + ``entry_id`` +
        ``entry_version_id``) names, in input order (Memory RFC, "expand()", "Handoff
        citation"): the manifest of ``memory_ref`` (any stored Revision, not only the
        head) must hold that entry at that version, with a matching content hash and
        canonical bytes; versions are never joined across Revisions or Memories.
        InvalidCitationError (a ValueError) for any mismatch or missing Revision."""
        ...

    async def close(self) -> None:
        """Release connections and worker threads; idempotent. The backend is not used
        after it. Never raises for an unopened backend (Memory RFC, "Code structure and
        abstraction boundaries")."""
        ...


class CandidatePipeline(Protocol):
    """Proposes untrusted candidates from persisted evidence (Memory RFC, "Candidate
    generation and model-free fallback"). Runs outside any transaction."""

    async def extract(
        self,
        sources: tuple[Source, ...],
        current_entries: tuple[MemoryEntryVersion, ...],
        providers: tuple[str, ...] | None = None,
    ) -> tuple[MemoryEntryInput, ...]:
        """Untrusted MemoryEntryInputs proposed from ``sources`` (persisted Sources, the
        operation's whole evidence) and ``current_entries`` (the active versions of the
        target head, so a candidate may revise one), possibly ``()`` (Memory RFC,
        "Candidate generation and model-free fallback", "Task events and extraction
        boundaries"). Each candidate cites only ``sources``; every one still passes the
        evidence, identity, no-op and head CAS rules of ``remember``. ``providers``:
        the providers to run (None = the configured default). CapabilityNotSupportedError
        when ``providers`` names one that is not registered or not configured; a
        provider that fails otherwise proposes nothing and the others still run."""
        ...


@runtime_checkable
class MemoryRebuild(Protocol):
    """The offline-rebuild capability (Memory RFC, "Vector integrity and offline
    rebuilds"): a backend that can re-derive every projection from its authoritative
    tables implements it; the CLI asks ``isinstance(backend, MemoryRebuild)`` and a
    backend without it answers ``memory rebuild`` with a clear refusal. The contract
    kit runs its rebuild tests only for backends that declare it.

    Every method pauses writers while it runs (``WritesPausedError`` for writers and for
    a second rebuild) and resumes them at the end, even on failure."""

    def allow_analyzer_migration(self) -> None:
        """Let the next open accept a database whose FTS projection was built by another
        Analyzer version (``AnalyzerMismatchError`` otherwise): the rebuild migrates it
        (Memory RFC, "Normalization, hashing, and the search analyzer"). Call it before
        the first use of the backend; it opens nothing and never raises."""
        ...

    async def rebuild(
        self,
        model: Any = None,
        *,
        new_profile: EmbeddingProfile | None = None,
        analyzer: str | Analyzer | None = None,
        progress: Any = None,
        batch_size: int = 64,
    ) -> RebuildReport:
        """Rebuild every Memory's head, FTS and vector projection from the authoritative
        tables, one transaction per Memory (Memory RFC, "Vector integrity and offline
        rebuilds"; manifest membership and canonical hashes are re-checked). ``model``:
        an EmbeddingModel or None (stored vectors that still verify are kept, the
        missing ones reported); ``new_profile``: migrate to this embedding profile (the
        vector projection is reset, then refilled with ``model``); ``analyzer``: the
        Analyzer version (name or value) to rebuild FTS with; ``progress(done, total,
        artifact_id)`` after each Memory; ``batch_size`` texts per embed call.

        Returns a RebuildReport: ``memories``, ``entries`` and ``vectors`` counts,
        ``kept`` (stored vectors reused), ``missing`` (``(artifact_id, entry_id,
        reason)`` per active entry left without a vector) and ``incomplete`` (the
        Memories whose vector projection is not complete). A model failing for one
        entry costs that entry only. Errors: InvalidInputError for ``new_profile``
        without a model; CapabilityNotSupportedError when a migration's model is
        unavailable (nothing changes) or the backend cannot rebuild; WritesPausedError
        while another rebuild runs."""
        ...

    async def rehash(self) -> RehashReport:
        """Rewrite Revisions stored with the pre-spec Artifact content hash to the spec's
        formula SHA-256(canonical MemoryContent bytes), in one write transaction
        (``memory rebuild --rehash``; Memory RFC, "Normalization, hashing, and the
        search analyzer"). Only ``content_hash`` changes, never content, lineage or
        entry versions. Returns a RehashReport: ``rewritten``, ``current`` (already in
        the spec's formula), ``corrupt`` (``(artifact_id, revision, reason)`` matching
        neither formula, left as they were) and ``already`` (True, nothing read, when
        the database was in the spec's format). Idempotent. WritesPausedError while a
        rebuild runs."""
        ...

    async def resume_writes(self) -> None:
        """Clear a pause left by a rebuild or rehash that crashed (Memory RFC, "Vector
        integrity and offline rebuilds": writes resume after the offline task). A no-op
        on an unpaused database; works on one that still needs ``rehash()``. Never
        raises beyond the errors of opening."""
        ...


@runtime_checkable
class MemoryInventory(Protocol):
    """Listing capability: a backend that can enumerate what it holds (``memory list``,
    ``info``). A backend without it gets CapabilityNotSupportedError from those commands.
    The contract kit runs its inventory test only for backends that declare it."""

    async def inventory(self) -> dict[str, Any]:
        """What the database holds, read in one snapshot (Memory RFC, "Storage
        abstraction and physical model": the heads are ``artifact_heads``): ``heads``
        (tuple of every Memory's head ArtifactRef, sorted by artifact id), ``sources``
        (int, how many Sources are stored), ``analyzer_version`` (the Analyzer version
        the FTS projection was built with; None when unrecorded) and ``writes_paused``
        (bool). CapabilityNotSupportedError when the adapter cannot list its heads."""
        ...


@runtime_checkable
class EntryKinds(Protocol):
    """The kinds of a Memory's entry versions without reading them whole (the
    dashboard lists rules before notes across its pages; Memory RFC, "Data model").
    Callers ask ``isinstance``; a backend without it is shown in manifest order."""

    async def entry_kinds(self, artifact_id: str) -> dict[str, str]:
        """``{entry_version_id: kind}`` of every stored version of the Memory
        ``artifact_id`` (current or superseded; empty for an unknown id), read in one
        snapshot (Memory RFC, "Data model": the entry kinds). Display only: a page still
        reads and validates the versions it shows. InvalidInputError for a bad id."""
        ...


@runtime_checkable
class SourceCitations(Protocol):
    """Reverse-evidence capability (issue 17, the dashboard's Evidence page; Memory RFC,
    "Sources", "Memory entry versions"): a backend that can say where a Source is
    journaled and which entry versions cite it. Callers ask ``isinstance``; a backend
    without it shows the Source alone."""

    async def source_scope(self, source_id: str) -> SourceScope | None:
        """The Scope journal row of ``source_id`` (None: not journaled in a Scope;
        Memory RFC, "Source changes and incremental evidence"). InvalidInputError for a
        bad id."""
        ...

    async def citing_entry_versions(self, source_id: str, limit: int = 200
                                    ) -> tuple[MemoryEntryVersion, ...]:
        """Every stored entry version (of any Memory, current or superseded) whose
        SourceRefs name ``source_id``, ordered by entry_version_id, at most ``limit``
        (1..1000), read in one snapshot (Memory RFC, "Revision and entry lineage").
        InvalidInputError for a bad id or limit."""
        ...
