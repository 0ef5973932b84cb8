"""Forged plans against :func:`powercontext.core.verify.verify`, with no database (Memory
RFC, "Concurrency and transactions": the unit of work validates identity, predecessor,
manifest, hash and evidence again; "Core invariants").

Hypothesis builds a valid plan with core's planners over an in-memory store (the facts a
backend would read), checks that it verifies, then tampers with it in one way and checks
that ``verify`` raises the typed error naming the field. The database-level tests (the
contract kit's ``test_forged_plans_are_refused_and_write_nothing``) prove the adapters
gather the same facts.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import analyzer as analyzers
from powercontext.core import canonical, planning, verify
from powercontext.core.errors import (
    ArtifactNotFoundError,
    IntegrityError,
    InvalidInputError,
    RevisionConflictError,
)
from powercontext.core.manifest import ManifestView, splice
from powercontext.core.manifest import view as manifest_view
from powercontext.core.models import (
    Artifact,
    ArtifactRef,
    MemoryChange,
    MemoryContent,
    MemoryEntryInput,
    MemoryEntryVersion,
    MemoryManifest,
    MemoryManifestEntry,
    RevisionLineage,
    Source,
    SourceRef,
)
from powercontext.core.plan import MemoryPlan, NoChange, ProjectionRow

ANALYZER = analyzers.get()
FOREIGN_ENTRY = "mem_ent_foreign"
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


def _utf8(entry_id: str) -> bytes:
    return entry_id.encode()


@attrs.define
class Store:
    """What a backend holds: entry versions, Sources, Artifact Revisions, entry owners."""

    versions: dict[str, MemoryEntryVersion] = attrs.field(factory=dict)
    sources: dict[str, str] = attrs.field(factory=dict)
    artifacts: dict[ArtifactRef, tuple[str, str]] = attrs.field(factory=dict)
    owners: dict[str, str] = attrs.field(factory=dict)

    def commit(self, plan: MemoryPlan) -> planning.MemoryBase:
        for v in plan.new_versions:
            self.versions[v.entry_version_id] = v
            self.owners[v.entry_id] = v.memory_artifact_id
        self.artifacts[plan.ref] = ("memory", plan.content_hash)
        manifest = plan.content.manifest.entries
        return planning.MemoryBase(
            plan.ref, plan.content,
            {e.entry_id: self.versions[e.entry_version_id] for e in manifest})

    def facts(self, plan: MemoryPlan) -> verify.PlanFacts:
        """The facts an adapter reads for ``plan`` (what :func:`verify.lookups` names)."""
        wanted = verify.lookups(plan)
        return verify.PlanFacts(
            {i: self.versions[i] for i in wanted.entry_version_ids if i in self.versions},
            frozenset(e for e in wanted.added_entry_ids
                      if self.owners.get(e, plan.artifact_id) != plan.artifact_id),
            {i: self.sources[i] for i in wanted.source_ids if i in self.sources},
            {r: self.artifacts[r] for r in wanted.artifacts if r in self.artifacts},
            ANALYZER,
        )


@attrs.frozen
class World:
    """A Memory at its head (active and inactive entries), the store behind it, and a
    valid plan of each kind on that head."""

    store: Store
    base: planning.MemoryBase
    sources: tuple[Source, ...]
    upstream: Artifact
    remember: MemoryPlan  # adds and a revision, with Source and Artifact evidence
    forget: MemoryPlan
    reactivate: MemoryPlan

    @property
    def view(self) -> ManifestView:
        return manifest_view(self.base.content.manifest)


def _ids() -> planning.NewId:
    counter = itertools.count()
    # ids not in creation order, so sorting is exercised
    return lambda prefix: f"{prefix}{(next(counter) * 7919) % 100_003:06d}"


def _text(words: list[str]) -> str:
    return " ".join(words)


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(_text)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    new_id = _ids()
    store = Store()
    n_sources = draw(st.integers(1, 3))
    sources = tuple(
        canonical.make_source(f"src_{i}", "user_note", draw(texts)) for i in range(n_sources)
    )
    for s in sources:
        store.sources[s.source_id] = s.content_hash
    upstream = Artifact(ArtifactRef("up_art_1", 1), "handoff", "a" * 64)
    store.artifacts[upstream.ref] = (upstream.family, upstream.content_hash)
    store.owners[FOREIGN_ENTRY] = "mem_art_foreign"
    first = draw(st.lists(texts, min_size=2, max_size=5, unique=True))
    plan1 = planning.plan_remember(
        None,
        [MemoryEntryInput("fact", t, sources=(sources[0],)) for t in first],
        sources=(sources[0],), new_id=new_id, analyzer=ANALYZER)
    assert isinstance(plan1, MemoryPlan)
    base = store.commit(plan1)
    # one entry forgotten, so the head holds active and inactive entries
    entries = sorted(base.versions.values(), key=lambda v: _utf8(v.entry_id))
    gone = entries[draw(st.integers(0, len(entries) - 1))]
    plan_f = planning.plan_forget(base, [gone], "stale", analyzer=ANALYZER)
    assert isinstance(plan_f, MemoryPlan)
    base = store.commit(plan_f)
    active = [v for v in entries if v.entry_id != gone.entry_id]
    target = active[draw(st.integers(0, len(active) - 1))]
    fresh = draw(st.lists(texts.filter(lambda t: t not in first), min_size=1, max_size=3,
                          unique=True))
    revised = draw(texts.filter(lambda t: t != target.text))
    evidence = sources[draw(st.integers(0, n_sources - 1))]
    remember = planning.plan_remember(
        base,
        [*(MemoryEntryInput("decision", t, sources=(evidence,), artifacts=(upstream,))
           for t in fresh),
         MemoryEntryInput("fact", revised, entry=target, reason="corrected")],
        sources=(evidence,), artifacts=(upstream,), new_id=new_id, analyzer=ANALYZER)
    forget = planning.plan_forget(base, [target], analyzer=ANALYZER)
    reactivate = planning.plan_reactivate(base, [gone], analyzer=ANALYZER)
    assert isinstance(remember, MemoryPlan) and isinstance(forget, MemoryPlan)
    assert isinstance(reactivate, MemoryPlan)
    return World(store, base, sources, upstream, remember, forget, reactivate)


def reseal(world: World, plan: MemoryPlan, *, versions: Any = None,
           changes: Any = None, rehash: bool = True, evolve: Any = None) -> MemoryPlan:
    """``plan`` with its new versions (and so its changes) replaced, every derived byte and
    hash recomputed, so a forgery is caught by the rule it breaks, not by a hash."""
    old = plan.new_versions
    versions = list(old if versions is None else versions)
    if rehash:
        versions = [attrs.evolve(v, entry_content_hash=canonical.entry_content_hash(
            v.kind, v.text, v.sources, v.artifacts)) for v in versions]
    by_old = {o.entry_version_id: n for o, n in zip(old, versions, strict=True)}
    if changes is None:
        changes = []
        for c in plan.content.changes:
            n = by_old.get(c.to_entry_version_id or "") if c.op in ("add", "revise") else None
            changes.append(c if n is None else MemoryChange(
                c.op, n.entry_id, c.from_entry_version_id, n.entry_version_id, c.reason))
        changes.sort(key=lambda c: _utf8(c.entry_id))
    by_id = {v.entry_version_id: v for v in versions}
    items = {}
    rows = []
    for c in changes:
        if c.op in ("add", "revise"):
            v = by_id[c.to_entry_version_id]
            items[c.entry_id] = MemoryManifestEntry(
                c.entry_id, v.entry_version_id, v.entry_content_hash, "active")
        else:
            item = world.view.get(c.entry_id)
            assert item is not None
            items[c.entry_id] = attrs.evolve(
                item, state="inactive" if c.op == "deactivate" else "active")
            v = world.store.versions[item.entry_version_id]
        if c.op != "deactivate":
            rows.append(ProjectionRow(c.entry_id, v.entry_version_id, v.entry_content_hash,
                                      ANALYZER.searchable_text(v.text), v.text))
    content = MemoryContent(splice(world.view, items).manifest, tuple(changes))
    if evolve is not None:
        content = evolve(content)
    body = canonical.canonical_dumps(content)
    return attrs.evolve(
        plan, content=content, content_bytes=body,
        content_hash=canonical.artifact_content_hash(body),
        new_versions=tuple(sorted(versions, key=lambda v: _utf8(v.entry_id))),
        upserts=tuple(sorted(rows, key=lambda r: _utf8(r.entry_id))),
        deletes=tuple(sorted((c.entry_id for c in changes if c.op == "deactivate"), key=_utf8)))


def _version(plan: MemoryPlan, op: str) -> tuple[int, MemoryEntryVersion]:
    ops = {c.to_entry_version_id: c.op for c in plan.content.changes}
    return next((i, v) for i, v in enumerate(plan.new_versions)
                if ops[v.entry_version_id] == op)


def forge_version(world: World, op: str = "add", rehash: bool = True,
                  **fields: Any) -> MemoryPlan:
    """The remember plan with one new version (of an ``op`` change) altered."""
    plan = world.remember
    i, v = _version(plan, op)
    versions = list(plan.new_versions)
    versions[i] = attrs.evolve(v, **fields)
    return reseal(world, plan, versions=versions, rehash=rehash)


def _other_stored_version(world: World) -> MemoryEntryVersion:
    _, v = _version(world.remember, "revise")
    return next(s for s in world.store.versions.values() if s.entry_id != v.entry_id)


def _previous(world: World) -> MemoryEntryVersion:
    _, v = _version(world.remember, "revise")
    assert v.previous_version_id is not None
    return world.store.versions[v.previous_version_id]


def _swap_manifest(content: MemoryContent) -> MemoryContent:
    entries = list(content.manifest.entries)
    entries[0], entries[1] = entries[1], entries[0]
    return attrs.evolve(content, manifest=MemoryManifest(tuple(entries)))


def _swap_changes(plan: MemoryPlan) -> MemoryPlan:
    changes = list(plan.content.changes)
    changes[0], changes[-1] = changes[-1], changes[0]
    content = attrs.evolve(plan.content, changes=tuple(changes))
    body = canonical.canonical_dumps(content)
    return attrs.evolve(plan, content=content, content_bytes=body,
                        content_hash=canonical.artifact_content_hash(body))


def _lineage(world: World, **fields: Any) -> MemoryPlan:
    return attrs.evolve(world.remember, lineage=attrs.evolve(world.remember.lineage, **fields))


def _dup_entry(world: World) -> MemoryPlan:
    """Two added versions of one entry id (two changes for one entry)."""
    plan = world.remember
    adds = [v for v in plan.new_versions if v.previous_version_id is None]
    versions = [attrs.evolve(v, entry_id=adds[0].entry_id) if v in adds else v
                for v in plan.new_versions]
    if len(adds) < 2:  # add a second version of the first new entry
        extra = attrs.evolve(adds[0], entry_version_id="mem_ver_twin", text="twin entry")
        plan = attrs.evolve(plan, new_versions=(*plan.new_versions, extra),
                            content=attrs.evolve(plan.content, changes=(
                                *plan.content.changes,
                                MemoryChange("add", adds[0].entry_id, None, "mem_ver_twin"))))
        versions = [*versions, extra]
    return reseal(world, plan, versions=versions)


def _dup_version_id(world: World) -> MemoryPlan:
    plan = world.remember
    first = plan.new_versions[0]
    versions = [first] + [attrs.evolve(v, entry_version_id=first.entry_version_id)
                          for v in plan.new_versions[1:]]
    return reseal(world, plan, versions=versions)


def _missing_reactivated(world: World) -> tuple[MemoryPlan, verify.PlanFacts]:
    plan = world.reactivate
    facts = world.store.facts(plan)
    return plan, attrs.evolve(facts, versions={})


def _damaged_reactivated(world: World) -> tuple[MemoryPlan, verify.PlanFacts]:
    plan = world.reactivate
    facts = world.store.facts(plan)
    damaged = {i: attrs.evolve(v, text=v.text + " tampered") for i, v in facts.versions.items()}
    return plan, attrs.evolve(facts, versions=damaged)


Forgery = Callable[[World], Any]
#: (name, forgery, expected error, expected field or None). A forgery returns a plan or
#: (plan, facts) when it is the store that lies.
FORGERIES: list[tuple[str, Forgery, type[Exception], str | None]] = [
    ("empty revision", lambda w: attrs.evolve(
        w.remember, content=attrs.evolve(w.remember.content, changes=())),
     InvalidInputError, "plan.changes"),
    ("unknown schema", lambda w: attrs.evolve(
        w.remember, content=attrs.evolve(w.remember.content, schema="x")),
     InvalidInputError, "plan.content"),
    ("reordered changes", lambda w: _swap_changes(w.remember), InvalidInputError, "changes"),
    ("two changes for one entry", _dup_entry, InvalidInputError, "changes"),
    ("repeated version id", _dup_version_id, InvalidInputError, "plan.new_versions"),
    ("version id stored already", lambda w: forge_version(
        w, entry_version_id=_other_stored_version(w).entry_version_id),
     RevisionConflictError, None),
    ("wrong predecessor", lambda w: forge_version(
        w, "revise", previous_version_id=_other_stored_version(w).entry_version_id),
     InvalidInputError, "entry_version.previous_version_id"),
    ("unknown predecessor", lambda w: forge_version(
        w, "revise", previous_version_id="mem_ver_nowhere"),
     InvalidInputError, "entry_version.previous_version_id"),
    ("skipped version number", lambda w: forge_version(w, "revise", version=3),
     InvalidInputError, "entry_version.previous_version_id"),
    ("no-op revision", lambda w: forge_version(
        w, "revise", kind=_previous(w).kind, text=_previous(w).text,
        sources=_previous(w).sources, artifacts=_previous(w).artifacts),
     InvalidInputError, "entry_version"),
    ("revision drops predecessor evidence", lambda w: forge_version(
        w, "revise", sources=()), InvalidInputError, "entry_version"),
    ("first version not 1", lambda w: forge_version(w, version=2),
     InvalidInputError, "entry_version"),
    ("another Revision's version", lambda w: forge_version(w, created_in_revision=1),
     InvalidInputError, "entry_version"),
    ("text not NFC", lambda w: forge_version(w, text="e\u0301cole"),
     InvalidInputError, "entry_version.text"),
    ("text not trimmed", lambda w: forge_version(w, text="  padded  "),
     InvalidInputError, "entry_version.text"),
    ("text too long", lambda w: forge_version(w, text="x" * 9000),
     InvalidInputError, "entry_version.text"),
    ("secret text", lambda w: forge_version(
        w, text="key sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"),
     InvalidInputError, "entry_version.text"),
    ("kind not normalized", lambda w: forge_version(w, kind="F\u00e4ct "),
     InvalidInputError, "entry_version.kind"),
    ("id not ASCII", lambda w: forge_version(w, entry_version_id="mem ver x"),
     InvalidInputError, "entry_version.entry_version_id"),
    ("references unsorted", lambda w: forge_version(
        w, sources=tuple(reversed(sorted({*(s.ref for s in w.sources),
                                          SourceRef("src_zz", "b" * 64)})))),
     InvalidInputError, "entry_version"),
    ("forged entry hash", lambda w: forge_version(
        w, rehash=False, entry_content_hash="0" * 64),
     InvalidInputError, "entry_version.entry_content_hash"),
    ("entry id used elsewhere", lambda w: forge_version(w, entry_id=FOREIGN_ENTRY),
     InvalidInputError, "entry_version.entry_id"),
    ("reordered manifest", lambda w: reseal(w, w.remember, evolve=_swap_manifest),
     InvalidInputError, "plan.content"),
    ("bytes of other content", lambda w: attrs.evolve(
        w.remember, content_bytes=w.forget.content_bytes, content_hash=w.forget.content_hash),
     InvalidInputError, "plan.content"),
    ("forged content hash", lambda w: attrs.evolve(w.remember, content_hash="0" * 64),
     InvalidInputError, "plan.content_hash"),
    ("projection row twice", lambda w: attrs.evolve(
        w.remember, upserts=w.remember.upserts * 2), InvalidInputError, "plan.projection"),
    ("projection row missing", lambda w: attrs.evolve(
        w.remember, upserts=w.remember.upserts[1:]), InvalidInputError, "plan.projection"),
    ("delete missing", lambda w: attrs.evolve(w.forget, deletes=()),
     InvalidInputError, "plan.projection"),
    ("searchable_text of another analyzer", lambda w: attrs.evolve(
        w.remember, upserts=tuple(attrs.evolve(r, searchable_text=r.searchable_text + " zz")
                                  for r in w.remember.upserts)),
     InvalidInputError, "plan.projection"),
    ("unknown Source", lambda w: _lineage(
        w, sources=(SourceRef("src_nowhere", "c" * 64),)), InvalidInputError, "sources"),
    ("wrong Source hash", lambda w: _lineage(
        w, sources=tuple(SourceRef(r.source_id, "d" * 64) for r in w.remember.lineage.sources)),
     InvalidInputError, "sources"),
    ("entry cites evidence outside the operation", lambda w: _lineage(w, sources=()),
     InvalidInputError, "entry.sources"),
    ("evidence Artifacts not the lineage's", lambda w: attrs.evolve(
        w.remember, evidence_artifacts=()), InvalidInputError, "artifacts"),
    ("evidence Artifact of another family", lambda w: attrs.evolve(
        w.remember, evidence_artifacts=(attrs.evolve(w.upstream, family="memory"),)),
     InvalidInputError, "artifacts"),
    ("evidence Artifact not stored", lambda w: reseal(w, attrs.evolve(
        w.remember,
        lineage=RevisionLineage(w.remember.lineage.sources, (ArtifactRef("up_art_1", 2),)),
        evidence_artifacts=(attrs.evolve(w.upstream, ref=ArtifactRef("up_art_1", 2)),)),
        versions=[attrs.evolve(v, artifacts=(ArtifactRef("up_art_1", 2),)) if v.artifacts
                  else v for v in w.remember.new_versions]),
     InvalidInputError, "artifacts"),
    ("deactivate of another version", lambda w: reseal(w, w.forget, changes=[
        attrs.evolve(c, from_entry_version_id="mem_ver_other") for c in w.forget.content.changes]),
     InvalidInputError, "changes"),
    ("reactivate of an active entry", lambda w: reseal(w, w.forget, changes=[
        MemoryChange("reactivate", c.entry_id, None, c.from_entry_version_id)
        for c in w.forget.content.changes]),
     InvalidInputError, "changes"),
    ("reactivated version missing from the store", _missing_reactivated, IntegrityError, None),
    ("reactivated version damaged in the store", _damaged_reactivated, IntegrityError, None),
]


@given(worlds())
def test_an_untampered_plan_of_every_kind_verifies(world: World) -> None:
    for plan in (world.remember, world.forget, world.reactivate):
        verify.check_head(plan, world.base.ref.revision)
        verified = verify.verify(plan, world.view, world.store.facts(plan))
        assert verified.plan is plan
        assert verified.view.manifest == plan.content.manifest
        assert verified.revision.content == plan.content
        assert verified.revision.ref == plan.ref
        assert {c.entry_id for c in plan.content.changes} == set(verified.items)


@pytest.mark.parametrize(("name", "forge", "error", "field"), FORGERIES,
                         ids=[f[0] for f in FORGERIES])
@given(world=worlds())
def test_a_forged_plan_raises_the_typed_error_of_the_rule_it_breaks(
    world: World, name: str, forge: Forgery, error: type[Exception], field: str | None
) -> None:
    forged = forge(world)
    plan, facts = forged if isinstance(forged, tuple) else (forged, world.store.facts(forged))
    with pytest.raises(error) as info:
        verify.verify(plan, world.view, facts)
    if field is not None:
        assert getattr(info.value, "field", None) == field, (name, str(info.value))


@given(worlds())
def test_a_plan_on_a_moved_or_missing_head_is_refused_before_any_read(world: World) -> None:
    plan = world.remember
    head = world.base.ref.revision
    with pytest.raises(RevisionConflictError):
        verify.check_head(plan, head + 1)
    with pytest.raises(ArtifactNotFoundError):
        verify.check_head(plan, None)
    new = planning.plan_remember(None, [MemoryEntryInput("fact", "x")], new_id=_ids())
    assert not isinstance(new, NoChange)
    with pytest.raises(RevisionConflictError):
        verify.check_head(new, 1)
    with pytest.raises(InvalidInputError) as info:
        verify.check_head(attrs.evolve(new, revision=2), None)
    assert info.value.field == "plan.revision"
    with pytest.raises(InvalidInputError):
        verify.check_head(attrs.evolve(plan, revision=head + 2), head)


@given(worlds())
def test_lookups_name_every_stored_value_the_rules_read(world: World) -> None:
    plan = world.remember
    wanted = verify.lookups(plan)
    predecessors = {v.previous_version_id for v in plan.new_versions if v.previous_version_id}
    assert predecessors | {v.entry_version_id for v in plan.new_versions} == set(
        wanted.entry_version_ids)
    assert set(wanted.added_entry_ids) == {
        c.entry_id for c in plan.content.changes if c.op == "add"}
    assert set(wanted.source_ids) == {r.source_id for r in plan.lineage.sources}
    assert set(wanted.artifacts) == {world.upstream.ref}
    # ill-typed values are never looked up (verify refuses them)
    odd_ref = ArtifactRef("up_art_1", True)  # type: ignore[arg-type]
    odd = attrs.evolve(plan, lineage=attrs.evolve(plan.lineage, artifacts=(odd_ref,)),
                       evidence_artifacts=(attrs.evolve(world.upstream, ref=odd_ref),))
    assert verify.lookups(odd).artifacts == ()
    with pytest.raises(InvalidInputError) as info:  # though True == 1, it is no revision
        verify.verify(odd, world.view, world.store.facts(odd))
    assert info.value.field == "artifacts"
