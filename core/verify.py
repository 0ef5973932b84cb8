"""Verification of a planned Revision against the stored base: the unit of work's rules as
one pure function (Memory RFC, "Concurrency and transactions": "validate identity,
predecessor, manifest, hash and vectors", "reload and validate Source/Artifact evidence";
"Writes and lifecycle"; "MemoryEntryVersion"; "Core invariants").

A plan is untrusted input: any caller (a third party, a model-driven pipeline, a stale
process) may hand one to ``MemoryUnitOfWork.commit``. Inside the write transaction the
adapter:

1. checks the head against the plan with :func:`check_head` (the compare-and-swap
   precondition),
2. reads what :func:`lookups` names, in a few bulk reads, into a :class:`PlanFacts`,
3. calls :func:`verify` with the stored base manifest, which re-derives the Revision from
   the base, the changes and the new entry versions and returns a :class:`VerifiedPlan`,
   or raises the typed error,
4. writes the rows.

No I/O here: every stored value the rules need is in ``facts``.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from powercontext.core import canonical, manifest
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import (
    ArtifactNotFoundError,
    IntegrityError,
    InvalidInputError,
    RevisionConflictError,
)
from powercontext.core.manifest import ManifestView, splice
from powercontext.core.models import (
    MANIFEST_FORMAT,
    MEMORY_SCHEMA,
    ArtifactRef,
    MemoryChange,
    MemoryContent,
    MemoryEntryVersion,
    MemoryManifestEntry,
    MemoryRevision,
    SourceRef,
)
from powercontext.core.plan import MemoryPlan

__all__ = [
    "PlanFacts",
    "PlanLookups",
    "VerifiedPlan",
    "check_canonical_version",
    "check_head",
    "check_version_matches",
    "lookups",
    "verify",
]


@attrs.frozen
class PlanLookups:
    """What :func:`verify` needs read from the store for one plan (well-typed ids only:
    a value of the wrong type cannot be stored, and :func:`verify` refuses it).

    ``entry_version_ids``: the predecessors of the new versions, the versions the plan
    reactivates, and the new version ids themselves (those must not exist), in one list;
    ``added_entry_ids``: the entry ids the plan adds (entry ids are globally unique);
    ``source_ids``: the Sources of the Revision lineage; ``artifacts``: the exact Artifact
    Revisions of the lineage and of the evidence Artifacts."""

    entry_version_ids: tuple[str, ...]
    added_entry_ids: tuple[str, ...]
    source_ids: tuple[str, ...]
    artifacts: tuple[ArtifactRef, ...]


@attrs.frozen(eq=False)
class PlanFacts:
    """Stored facts about a plan, read inside its write transaction.

    ``versions``: entry_version_id -> the stored entry version, for those of
    :attr:`PlanLookups.entry_version_ids` that exist; ``entry_ids_elsewhere``: those of
    :attr:`PlanLookups.added_entry_ids` another Memory uses; ``sources``: source_id -> the
    stored Source content hash (missing ids left out); ``artifacts``: exact ArtifactRef ->
    (family, Artifact content hash) of the stored Revisions (missing ones left out);
    ``analyzer``: the database's analyzer, which wrote every searchable_text."""

    versions: Mapping[str, MemoryEntryVersion]
    entry_ids_elsewhere: frozenset[str]
    sources: Mapping[str, str]
    artifacts: Mapping[ArtifactRef, tuple[str, str]]
    analyzer: Analyzer


@attrs.frozen(eq=False)
class VerifiedPlan:
    """A plan :func:`verify` accepted. ``view`` is the new Revision's manifest (spliced
    from the base's cached item bytes); ``items`` the manifest items the changes produce,
    by entry_id."""

    plan: MemoryPlan
    view: ManifestView
    items: Mapping[str, MemoryManifestEntry]

    @property
    def revision(self) -> MemoryRevision:
        """The Revision the plan commits, as a reader will parse it."""
        plan = self.plan
        return MemoryRevision(
            plan.ref,
            MemoryContent(self.view.manifest, tuple(plan.content.changes)),
            plan.content_hash,
            plan.lineage,
        )


def _is_id(value: object) -> bool:
    return isinstance(value, str)


def _is_ref(value: object) -> bool:
    return (
        isinstance(value, ArtifactRef)
        and isinstance(value.artifact_id, str)
        and type(value.revision) is int
        and value.revision >= 1
    )


def lookups(plan: MemoryPlan) -> PlanLookups:
    """The stored values :func:`verify` will ask ``facts`` for (see :class:`PlanLookups`)."""
    new = [v for v in plan.new_versions if isinstance(v, MemoryEntryVersion)]
    changes = [c for c in plan.content.changes if isinstance(c, MemoryChange)]
    version_ids = [v.previous_version_id for v in new if v.previous_version_id]
    version_ids += [c.to_entry_version_id for c in changes
                    if c.op == "reactivate" and c.to_entry_version_id]
    version_ids += [v.entry_version_id for v in new]
    added = [c.entry_id for c in changes if c.op == "add"]
    sources = [r.source_id for r in plan.lineage.sources if isinstance(r, SourceRef)]
    artifacts = [*plan.lineage.artifacts, *(a.ref for a in plan.evidence_artifacts)]
    return PlanLookups(
        tuple(dict.fromkeys(i for i in version_ids if _is_id(i))),
        tuple(dict.fromkeys(i for i in added if _is_id(i))),
        tuple(dict.fromkeys(i for i in sources if _is_id(i))),
        tuple(dict.fromkeys(r for r in artifacts if _is_ref(r))),
    )


def check_head(plan: MemoryPlan, head: int | None) -> None:
    """The compare-and-swap precondition: ``head`` (the stored head revision of
    ``plan.artifact_id``, None when there is none) is ``plan.base``. InvalidInputError for
    a malformed target (bad id; a new Memory not at Revision 1; revision not
    base.revision + 1), RevisionConflictError when the head moved or the Memory exists
    already, ArtifactNotFoundError when the base names no Memory."""
    canonical.check_id(plan.artifact_id, "plan.artifact_id")
    if plan.base is None:
        if head is not None:
            raise RevisionConflictError(f"Memory {plan.artifact_id!r} already exists")
        if plan.revision != 1:
            raise InvalidInputError("plan.revision", "a new Memory starts at Revision 1")
        return
    if plan.base.artifact_id != plan.artifact_id or plan.revision != plan.base.revision + 1:
        raise InvalidInputError("plan", "revision must be base.revision + 1")
    if head is None:
        raise ArtifactNotFoundError(f"no Memory Artifact {plan.artifact_id!r}")
    if head != plan.base.revision:
        raise RevisionConflictError(
            f"Memory {plan.artifact_id!r} is at Revision {head}, not {plan.base.revision}"
        )


def verify(plan: MemoryPlan, base: ManifestView | None, facts: PlanFacts) -> VerifiedPlan:
    """Require ``plan`` to be exactly the Revision its changes make of ``base``.

    ``base``: the stored manifest of ``plan.base`` (None for a new Memory); ``facts``: the
    stored values :func:`lookups` names. Checked, in this order: the content's schema and
    manifest format; changes non-empty (no empty Revision), sorted by UTF-8 entry_id, one
    per entry, reasons normalized; new version ids unique and not stored yet; every
    change fits the base (add: a new entry at version 1; revise: the direct successor of
    the base's active version, version + 1, other content, keeping its predecessor's
    evidence; deactivate / reactivate: the same version, state flipped); every new
    version canonical (:func:`check_canonical_version`) with its content hash; the new
    versions exactly the added and revised ones; added entry ids used by no other
    Memory; the canonical bytes equal to the base spliced with the changes, and the
    Artifact content hash theirs; projection rows exactly the active changed entries,
    with the version's text and the database analyzer's searchable_text; lineage Sources
    stored with those content hashes; evidence Artifacts exactly the lineage's and stored
    with that family and content hash; entry evidence within the operation's plus the
    predecessor's. Cost is proportional to the changes, not to the Memory.

    Raises InvalidInputError naming the field, RevisionConflictError when a new entry
    version id exists already, IntegrityError when a stored version the plan reactivates
    is missing or does not match the manifest.
    """
    content = plan.content
    if not content.changes:
        raise InvalidInputError("plan.changes", "a Revision must change something")
    if content.schema != MEMORY_SCHEMA or content.manifest.format != MANIFEST_FORMAT:
        raise InvalidInputError("plan.content", "unknown schema or manifest format")
    for change in content.changes:
        if not isinstance(change, MemoryChange):
            raise InvalidInputError("changes", "must be MemoryChange values")
        canonical.check_id(change.entry_id, "changes.entry_id")
    ckeys = [c.entry_id.encode() for c in content.changes]
    if ckeys != sorted(ckeys) or len(set(ckeys)) != len(ckeys):
        raise InvalidInputError("changes", "must be sorted by UTF-8 entry_id, one per entry")
    new = {v.entry_version_id: v for v in plan.new_versions}
    if len(new) != len(plan.new_versions):
        raise InvalidInputError("plan.new_versions", "repeat an entry version id")
    if any(version_id in facts.versions for version_id in new):
        raise RevisionConflictError("an entry version id of this plan already exists")
    items: dict[str, MemoryManifestEntry] = {}
    named: set[str] = set()
    for change in content.changes:
        if (
            change.reason is not None
            and canonical.normalize_reason(change.reason) != change.reason
        ):
            raise InvalidInputError("changes.reason", "is not normalized")
        old = base.get(change.entry_id) if base is not None else None
        items[change.entry_id] = _changed_item(change, old, new, facts.versions, plan)
        if change.op in ("add", "revise"):
            named.add(change.to_entry_version_id or "")
    if set(new) != named:
        raise InvalidInputError(
            "plan.new_versions", "must be exactly the added and revised versions"
        )
    added = {c.entry_id for c in content.changes if c.op == "add"}
    taken = added & facts.entry_ids_elsewhere
    if taken:
        raise InvalidInputError(
            "entry_version.entry_id", f"{sorted(taken)[0]!r} belongs to another Memory"
        )
    expected = splice(base, items)  # the planner's splice, when it made this plan
    if not _content_is(plan, expected):
        raise InvalidInputError(
            "plan.content", "is not the base manifest with exactly these changes applied"
        )
    if not plan.content_hash_matches:  # a plan the planner built knows (no second SHA-256)
        raise InvalidInputError("plan.content_hash", "does not match the content")
    _check_projection(plan, items, new, facts)
    _check_evidence(plan, facts)
    return VerifiedPlan(plan, expected, items)


def _content_is(plan: MemoryPlan, expected: ManifestView) -> bool:
    """Whether the plan's canonical bytes are those of ``expected`` (the base spliced
    with the changes) and ``plan.content.changes``. A plan the planner built holds
    ``expected``'s own manifest (the splice memo), made here from the checked items:
    nothing to compare. Any other plan's bytes (given, or derived from its content)
    are compared in place, byte for byte (an item that claims equality with a false
    ``__eq__`` changes its bytes, not this answer)."""
    content = plan.content
    if plan.given_bytes is None and content.manifest is expected.manifest:
        return True
    return manifest.content_bytes_equal(
        MemoryContent(expected.manifest, content.changes), expected, plan.content_bytes)


def _check_projection(
    plan: MemoryPlan,
    items: Mapping[str, MemoryManifestEntry],
    new: Mapping[str, MemoryEntryVersion],
    facts: PlanFacts,
) -> None:
    """Projection rows: exactly the active entries that were added, revised or reactivated."""
    changes = plan.content.changes
    if len({r.entry_id for r in plan.upserts}) != len(plan.upserts) or len(
        set(plan.deletes)
    ) != len(plan.deletes):
        raise InvalidInputError("plan.projection", "names an entry twice")
    want_up = {c.entry_id for c in changes if c.op != "deactivate"}
    want_del = {c.entry_id for c in changes if c.op == "deactivate"}
    if {r.entry_id for r in plan.upserts} != want_up or set(plan.deletes) != want_del:
        raise InvalidInputError("plan.projection", "must cover exactly the changed entries")
    analyzer = facts.analyzer
    for r in plan.upserts:
        item = items[r.entry_id]
        if (item.entry_version_id, item.entry_content_hash) != (
            r.entry_version_id,
            r.entry_content_hash,
        ):
            raise InvalidInputError(
                "plan.projection", f"row of {r.entry_id!r} is not the manifest's"
            )
        version = new.get(r.entry_version_id) or facts.versions.get(r.entry_version_id)
        if version is None or version.text != r.text:
            raise InvalidInputError("plan.projection", "text differs from the entry version")
        if r.searchable_text != analyzer.searchable_text(r.text):
            raise InvalidInputError(
                "plan.projection",
                f"searchable_text is not the output of analyzer {analyzer.version!r}",
            )


def _check_evidence(plan: MemoryPlan, facts: PlanFacts) -> None:
    """Evidence exists exactly as cited; entry evidence stays within the operation's and
    the predecessor's (Memory RFC, "MemoryEntryInput", "Revision and entry lineage")."""
    lineage_sources = set(plan.lineage.sources)
    lineage_artifacts = set(plan.lineage.artifacts)
    for r in lineage_sources:
        if not isinstance(r, SourceRef):
            raise InvalidInputError("sources", "the lineage must hold SourceRef values")
        if facts.sources.get(r.source_id) != r.content_hash:
            raise InvalidInputError(
                "sources", f"Source {r.source_id!r} is not stored with that content"
            )
    claimed = {a.ref: a for a in plan.evidence_artifacts}
    if set(claimed) != lineage_artifacts:
        raise InvalidInputError(
            "artifacts", "the lineage's Artifact refs must be the evidence Artifacts given"
        )
    for ref, a in claimed.items():
        stored = facts.artifacts.get(ref) if _is_ref(ref) else None
        if stored is None:
            raise InvalidInputError("artifacts", f"no stored Artifact Revision {ref}")
        if stored != (a.family, a.content_hash):
            raise InvalidInputError(
                "artifacts", f"Artifact {ref} is stored with another family or content hash"
            )
    for v in plan.new_versions:
        # entry evidence: operation evidence plus, for a revision, the predecessor's
        extra_s = set(v.sources) - lineage_sources
        extra_a = set(v.artifacts) - lineage_artifacts
        if extra_s or extra_a:
            prev = facts.versions.get(v.previous_version_id) if v.previous_version_id else None
            if (
                prev is None
                or not extra_s <= set(prev.sources)
                or not extra_a <= set(prev.artifacts)
            ):
                raise InvalidInputError(
                    "entry.sources", "cites evidence outside the operation and its predecessor"
                )


def _changed_item(
    change: MemoryChange,
    old: MemoryManifestEntry | None,
    new: Mapping[str, MemoryEntryVersion],
    stored: Mapping[str, MemoryEntryVersion],
    plan: MemoryPlan,
) -> MemoryManifestEntry:
    """The manifest item a change produces, after checking it against the base."""
    op = change.op
    bad = InvalidInputError("changes", f"{op} of {change.entry_id!r} does not fit the base")
    if op in ("add", "revise"):
        v = new.get(change.to_entry_version_id or "")
        if v is None or v.entry_id != change.entry_id:
            raise bad
        if v.memory_artifact_id != plan.artifact_id or v.created_in_revision != plan.revision:
            raise InvalidInputError("entry_version", "belongs to another Memory or Revision")
        check_canonical_version(v)
        if not canonical.version_hash_ok(v):
            raise InvalidInputError("entry_version.entry_content_hash", "does not match content")
        if op == "add":
            if old is not None or change.from_entry_version_id is not None:
                raise bad
            if v.version != 1 or v.previous_version_id is not None:
                raise InvalidInputError("entry_version", "a first version is 1 of a new entry")
        else:
            _check_successor(change, old, v, stored, bad)
        return MemoryManifestEntry(v.entry_id, v.entry_version_id, v.entry_content_hash, "active")
    if old is None:
        raise bad
    if op == "deactivate":
        if (
            old.state != "active"
            or change.from_entry_version_id != old.entry_version_id
            or change.to_entry_version_id is not None
        ):
            raise bad
        return attrs.evolve(old, state="inactive")
    if op == "reactivate":
        if (
            old.state != "inactive"
            or change.from_entry_version_id is not None
            or change.to_entry_version_id != old.entry_version_id
        ):
            raise bad
        v = stored.get(old.entry_version_id)
        if v is None:
            raise IntegrityError(f"entry version {old.entry_version_id!r} is missing")
        check_version_matches(v, old)
        return attrs.evolve(old, state="active")
    raise InvalidInputError("changes.op", f"unknown op {op!r}")


def _check_successor(
    change: MemoryChange,
    old: MemoryManifestEntry | None,
    v: MemoryEntryVersion,
    stored: Mapping[str, MemoryEntryVersion],
    bad: InvalidInputError,
) -> None:
    """A revision: the direct successor of the base's active version (Memory RFC,
    "MemoryEntryVersion": version + 1, previous_version_id the base's)."""
    if old is None or old.state != "active" or change.from_entry_version_id != old.entry_version_id:
        raise bad
    prev = stored.get(v.previous_version_id or "")
    if (
        prev is None
        or prev.entry_version_id != old.entry_version_id
        or prev.entry_id != v.entry_id
        or prev.memory_artifact_id != v.memory_artifact_id
        or v.version != prev.version + 1
    ):
        raise InvalidInputError(
            "entry_version.previous_version_id",
            "must be the version of the same entry in the base manifest",
        )
    if v.entry_content_hash == prev.entry_content_hash:
        raise InvalidInputError("entry_version", "identical content is a no-op")
    if not set(prev.sources) <= set(v.sources) or not set(prev.artifacts) <= set(v.artifacts):
        raise InvalidInputError("entry_version", "a revision keeps its predecessor's evidence")


def check_canonical_version(v: MemoryEntryVersion) -> None:
    """A new entry version in canonical form: ASCII ids, integer version, NFC-trimmed
    text within limits, normalized kind, sorted and deduplicated references of the right
    types, and no secret. The hash alone cannot prove this: it is computed over whatever
    values the plan holds. InvalidInputError naming the field (Memory RFC,
    "MemoryEntryVersion", "MemoryEntryInput")."""
    from powercontext.core.secrets import stored_text_secret  # writes only

    for field in ("memory_artifact_id", "entry_id", "entry_version_id"):
        canonical.check_id(getattr(v, field), f"entry_version.{field}")
    if v.previous_version_id is not None:
        canonical.check_id(v.previous_version_id, "entry_version.previous_version_id")
    for field in ("version", "created_in_revision"):
        value = getattr(v, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"entry_version.{field}", "must be an integer >= 1")
    if canonical.normalize_kind(v.kind, "entry_version.kind") != v.kind:
        raise InvalidInputError("entry_version.kind", "is not normalized")
    if canonical.normalize_text(v.text, "entry_version.text") != v.text:
        raise InvalidInputError("entry_version.text", "is not NFC and trimmed")
    if stored_text_secret(v.text) is not None:
        raise InvalidInputError("entry_version.text", "looks like a secret")
    if not isinstance(v.sources, tuple) or not isinstance(v.artifacts, tuple):
        raise InvalidInputError("entry_version", "references must be tuples")
    for r in v.sources:
        if not isinstance(r, SourceRef):
            raise InvalidInputError("entry_version.sources", "must be SourceRef values")
        canonical.check_id(r.source_id, "entry_version.sources.source_id")
        canonical.check_hash(r.content_hash, "entry_version.sources.content_hash")
    for a in v.artifacts:
        if not isinstance(a, ArtifactRef):
            raise InvalidInputError("entry_version.artifacts", "must be exact ArtifactRefs")
        canonical.check_json_int(a.revision, "entry_version.artifacts.revision", 1)
        canonical.check_id(a.artifact_id, "entry_version.artifacts.artifact_id")
    if canonical.sort_source_refs(v.sources) != v.sources or canonical.sort_artifact_refs(
        v.artifacts
    ) != v.artifacts:
        raise InvalidInputError("entry_version", "references must be sorted and unique")


def check_version_matches(v: MemoryEntryVersion, item: MemoryManifestEntry) -> None:
    """A stored entry version is the one ``item`` names and its canonical bytes hash to
    the manifest's entry content hash (Memory RFC, "Search and reads" conditions 2 and
    3). IntegrityError otherwise."""
    if v.entry_id != item.entry_id or v.entry_version_id != item.entry_version_id:
        raise IntegrityError(f"entry version {v.entry_version_id!r} is not the manifest's")
    if v.entry_content_hash != item.entry_content_hash or not canonical.version_hash_ok(v):
        raise IntegrityError(
            f"entry version {v.entry_version_id!r}: content does not match the manifest hash"
        )
