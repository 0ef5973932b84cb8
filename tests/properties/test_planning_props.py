"""Hypothesis properties of the pure planners (Memory RFC, "Core invariants")."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import canonical, planning
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion
from powercontext.core.plan import MemoryPlan, NoChange
from powercontext.plugins.testing import entry_texts

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
