"""Hypothesis properties of the pure planners (Memory RFC, "Core invariants")."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import canonical, planning
from powercontext.core.models import (
    ArtifactRef,
    MemoryContent,
    MemoryEntryInput,
    MemoryEntryVersion,
    MemoryManifest,
    MemoryManifestEntry,
)
from powercontext.core.plan import MemoryPlan, NoChange
from powercontext.testing import entry_texts

KINDS = st.sampled_from(["fact", "preference", "decision", "constraint", "working_note", "x-new"])


def ids():
    counter = itertools.count()
    # ids deliberately not in creation order, so sorting is exercised
    return lambda prefix: f"{prefix}{(next(counter) * 7919) % 100_003:06d}"


def apply(plan: MemoryPlan, versions: dict[str, MemoryEntryVersion]) -> planning.MemoryBase:
    """The base after committing ``plan``: what a backend would hold."""
    store = dict(versions)
    for v in plan.new_versions:
        store[v.entry_id] = v
    return planning.MemoryBase(plan.ref, plan.content, store)


op = st.one_of(
    st.tuples(st.just("add"), KINDS, entry_texts()),
    st.tuples(st.just("revise"), st.integers(0, 50), entry_texts()),
    st.tuples(st.just("forget"), st.integers(0, 50), st.none()),
    st.tuples(st.just("reactivate"), st.integers(0, 50), st.none()),
    st.tuples(st.just("organize"), st.none(), st.none()),
)


def check_plan(plan: MemoryPlan, base: planning.MemoryBase | None) -> None:
    entries = plan.content.manifest.entries
    keys = [e.entry_id.encode() for e in entries]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    ckeys = [c.entry_id.encode() for c in plan.content.changes]
    assert ckeys == sorted(ckeys) and len(set(ckeys)) == len(ckeys)
    assert plan.content.changes, "never an empty Revision"
    assert plan.content_bytes == canonical.canonical_dumps(plan.content)
    assert plan.content_hash == canonical.artifact_content_hash(plan.content_bytes)
    assert canonical.parse_content(plan.content_bytes) == plan.content
    assert plan.revision == (base.ref.revision + 1 if base else 1)
    old = base.manifest if base else {}
    for v in plan.new_versions:
        assert canonical.version_hash_ok(v)
        if v.previous_version_id is None:
            assert v.version == 1 and v.entry_id not in old
        else:
            prev = base.versions[v.entry_id]  # type: ignore[union-attr]
            assert (
                old[v.entry_id].entry_version_id == v.previous_version_id == prev.entry_version_id
            )
            assert v.version == prev.version + 1
            assert set(prev.sources) <= set(v.sources)
    # unchanged entries stay exactly as they were
    changed = {c.entry_id for c in plan.content.changes}
    for e in entries:
        if e.entry_id not in changed:
            assert old[e.entry_id] == e
    assert set(old) <= {e.entry_id for e in entries}


@given(st.lists(op, min_size=1, max_size=12))
def test_random_operation_sequences_keep_every_invariant(ops):
    new_id = ids()
    base: planning.MemoryBase | None = None
    history: list[tuple[planning.MemoryBase, bytes]] = []
    for kind_, arg, text in ops:
        manifest = base.manifest if base else {}
        ordered = sorted(manifest)
        if kind_ == "add" or base is None:
            kind = arg if kind_ == "add" else "fact"
            plan = planning.plan_remember(
                base, [MemoryEntryInput(kind, text or "seed")], new_id=new_id
            )
        elif kind_ == "revise":
            entry_id = ordered[arg % len(ordered)]
            v = base.versions[entry_id]
            if manifest[entry_id].state != "active":
                continue
            plan = planning.plan_remember(
                base, [MemoryEntryInput(v.kind, text, entry=v)], new_id=new_id
            )
            if canonical.normalize_text(text) == v.text:
                assert isinstance(plan, NoChange)
        elif kind_ in ("forget", "reactivate"):
            entry_id = ordered[arg % len(ordered)]
            fn = planning.plan_forget if kind_ == "forget" else planning.plan_reactivate
            plan = fn(base, [base.versions[entry_id]])
            want = "inactive" if kind_ == "forget" else "active"
            if manifest[entry_id].state == want:
                assert isinstance(plan, NoChange)
        else:
            active = {e: base.versions[e] for e, m in manifest.items() if m.state == "active"}
            plan = planning.plan_organize(
                planning.MemoryBase(base.ref, base.content, active), new_id=new_id
            )
        if isinstance(plan, NoChange):
            continue
        check_plan(plan, base)
        base = apply(plan, base.versions if base else {})
        history.append((base, plan.content_bytes))
        # no operation rewrites an old Revision or entry version
        for old_base, old_bytes in history:
            assert canonical.content_bytes(old_base.content) == old_bytes
            for v in old_base.versions.values():
                assert canonical.version_hash_ok(v)
    revisions = [b.ref.revision for b, _ in history]
    assert revisions == list(range(1, len(history) + 1))


@given(st.lists(st.tuples(KINDS, entry_texts()), min_size=1, max_size=6))
def test_identical_batch_keeps_first_and_replay_is_a_no_op(items):
    new_id = ids()
    inputs = [MemoryEntryInput(k, t) for k, t in items] * 2
    plan = planning.plan_remember(None, inputs, new_id=new_id)
    assert isinstance(plan, MemoryPlan)
    distinct = {(k, canonical.normalize_text(t)) for k, t in items}
    assert len(plan.new_versions) == len(distinct)
    base = apply(plan, {})
    assert isinstance(planning.plan_remember(base, inputs, new_id=new_id), NoChange)


# --- organize never loses evidence (Memory RFC, "organize()") -------------------------

_SOURCES = [canonical.make_source(f"src_{i}", "file", f"evidence {i}") for i in range(3)]
_UPSTREAM = [ArtifactRef(f"mem_art_up{i}", i + 1) for i in range(2)]


def _hand_built_base(rows):
    """A head holding exactly ``rows`` (kind, text, source indexes, artifact indexes) as
    active entries, references possibly unsorted and repeated (as another implementation
    may have written them), so exact and near duplicates both occur."""
    versions = {}
    items = []
    for n, (kind, text, srcs, arts) in enumerate(rows):
        sources = tuple(_SOURCES[i].ref for i in srcs)
        artifacts = tuple(_UPSTREAM[i] for i in arts)
        entry_id, version_id = f"mem_ent_{n:03d}", f"mem_ver_{n:03d}"
        digest = canonical.entry_content_hash(kind, text, sources, artifacts)
        versions[entry_id] = MemoryEntryVersion(
            "mem_art_x", entry_id, version_id, 1, None, kind, text, sources, artifacts,
            digest, 1)
        items.append(MemoryManifestEntry(entry_id, version_id, digest, "active"))
    content = MemoryContent(MemoryManifest(tuple(items)), ())
    return planning.MemoryBase(ArtifactRef("mem_art_x", 1), content, versions)


def _evidence(base):
    active = [base.versions[e] for e, m in base.manifest.items() if m.state == "active"]
    return ({s for v in active for s in v.sources}, {a for v in active for a in v.artifacts})


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["fact", "decision"]),
            st.sampled_from(["same", "other"]),
            st.lists(st.integers(0, 2), max_size=3),
            st.lists(st.integers(0, 1), max_size=2),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([("default",), ("dedupe",), ("normalize",)]),
)
def test_organize_keeps_the_union_of_active_evidence(rows, steps):
    base = _hand_built_base(rows)
    plan = planning.plan_organize(base, steps=steps, new_id=ids())
    if isinstance(plan, NoChange):
        return
    check_plan(plan, base)
    after = apply(plan, dict(base.versions))
    assert _evidence(after) == _evidence(base)
    # what dedupe deactivated has an active twin with exactly the same content
    active = [after.versions[e] for e, m in after.manifest.items() if m.state == "active"]

    def norm(v):
        return (v.kind, v.text, canonical.sort_source_refs(v.sources),
                canonical.sort_artifact_refs(v.artifacts))

    for c in plan.content.changes:
        if c.op == "deactivate":
            assert c.reason == "dedupe"
            assert norm(base.versions[c.entry_id]) in {norm(v) for v in active}
    if "normalize" not in steps:
        assert len({norm(v) for v in active}) == len(active)
