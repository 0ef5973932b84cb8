"""Unit tests of the pure planners: one test per rule of the Memory RFC."""

from __future__ import annotations

import itertools

import attrs
import pytest

from powercontext.core import canonical, planning
from powercontext.core.models import Artifact, ArtifactRef, MemoryEntryInput
from powercontext.core.plan import NO_CHANGE, MemoryPlan


def ids():
    counter = itertools.count(1)
    return lambda prefix: f"{prefix}{next(counter):04d}"


SRC_A = canonical.make_source("src_a", "file", "alpha evidence")
SRC_B = canonical.make_source("src_b", "user_note", "bravo evidence")
SRC_C = canonical.make_source("src_c", "file", "charlie evidence")


def committed(plan, versions=None):
    store = dict(versions or {})
    store.update({v.entry_id: v for v in plan.new_versions})
    return planning.MemoryBase(plan.ref, plan.content, store)


@pytest.fixture
def base():
    plan = planning.plan_remember(
        None,
        [
            MemoryEntryInput("fact", "uses uv", sources=(SRC_A,)),
            MemoryEntryInput("preference", "run make test", sources=(SRC_A, SRC_B)),
        ],
        sources=[SRC_A, SRC_B],
        new_id=ids(),
    )
    return committed(plan)


def by_kind(base, kind):
    return next(v for v in base.versions.values() if v.kind == kind)


def test_new_memory_gets_revision_one_and_sorted_manifest(base):
    assert base.ref == ArtifactRef("mem_art_0001", 1)
    ids_ = [e.entry_id for e in base.content.manifest.entries]
    assert ids_ == sorted(ids_)
    assert [c.op for c in base.content.changes] == ["add", "add"]


def test_text_is_nfc_and_trimmed():
    plan = planning.plan_remember(None, [MemoryEntryInput("fact", "  cafe\u0301 \n")], new_id=ids())
    assert plan.new_versions[0].text == "café"


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        (MemoryEntryInput("fact", "a" * 8193), "entries[0].text"),
        (MemoryEntryInput("fact", "\u00e9" * 4097), "entries[0].text"),
        (MemoryEntryInput("fact", " \t\n"), "entries[0].text"),
        (MemoryEntryInput("fact", "ok", reason="r" * 513), "entries[0].reason"),
        (MemoryEntryInput("fact", "lone \udc00"), "entries[0].text"),
        (MemoryEntryInput(" ", "ok"), "entries[0].kind"),
    ],
)
def test_bad_input_names_the_field(entry, field):
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        planning.plan_remember(None, [entry], new_id=ids())


def test_limits_are_inclusive():
    plan = planning.plan_remember(
        None, [MemoryEntryInput("fact", "a" * 8192, reason="r" * 512)], new_id=ids()
    )
    assert len(plan.new_versions[0].text) == 8192
    assert plan.content.changes[0].reason == "r" * 512


def test_new_entry_evidence_must_be_operation_evidence():
    with pytest.raises(ValueError, match="operation evidence"):
        planning.plan_remember(
            None, [MemoryEntryInput("fact", "x", sources=(SRC_A,))], sources=[SRC_B], new_id=ids()
        )
    art = Artifact(ArtifactRef("mem_art_x", 1), "memory", "0" * 64)
    with pytest.raises(ValueError, match="operation evidence"):
        planning.plan_remember(
            None, [MemoryEntryInput("fact", "x", artifacts=(art,))], new_id=ids()
        )


def test_tampered_source_is_rejected():
    bad = attrs.evolve(SRC_A, content="changed")
    with pytest.raises(ValueError, match="content_hash"):
        planning.plan_remember(None, [MemoryEntryInput("fact", "x")], sources=[bad], new_id=ids())


def test_revision_unions_predecessor_evidence(base):
    pref = by_kind(base, "preference")
    plan = planning.plan_remember(
        base,
        [
            MemoryEntryInput(
                "preference", "run make docs-test for docs", entry=pref, sources=(SRC_C,)
            )
        ],
        sources=[SRC_C],
        new_id=ids(),
    )
    (v,) = plan.new_versions
    assert v.version == 2 and v.previous_version_id == pref.entry_version_id
    assert v.sources == canonical.sort_source_refs([SRC_A.ref, SRC_B.ref, SRC_C.ref])
    assert plan.lineage.sources == (SRC_C.ref,)  # Revision lineage: operation evidence only
    assert [(c.op, c.from_entry_version_id) for c in plan.content.changes] == [
        ("revise", pref.entry_version_id)
    ]


def test_revision_may_cite_predecessor_evidence_without_operation_evidence(base):
    fact = by_kind(base, "fact")
    plan = planning.plan_remember(
        base,
        [MemoryEntryInput("fact", "uses uv and hatch", entry=fact, sources=(SRC_A,))],
        new_id=ids(),
    )
    assert plan.new_versions[0].sources == (SRC_A.ref,)
    with pytest.raises(ValueError, match="predecessor"):
        planning.plan_remember(
            base,
            [MemoryEntryInput("fact", "uses uv and pdm", entry=fact, sources=(SRC_C,))],
            new_id=ids(),
        )


def test_identical_revision_is_no_change(base):
    fact = by_kind(base, "fact")
    assert (
        planning.plan_remember(
            base, [MemoryEntryInput("fact", "uses uv ", entry=fact)], new_id=ids()
        )
        is NO_CHANGE
    )


def test_stale_unrelated_and_inactive_entries_are_rejected(base):
    fact = by_kind(base, "fact")
    revised = committed(
        planning.plan_remember(
            base, [MemoryEntryInput("fact", "uses uv v2", entry=fact)], new_id=ids()
        ),
        base.versions,
    )
    with pytest.raises(ValueError, match="stale"):
        planning.plan_remember(revised, [MemoryEntryInput("fact", "v3", entry=fact)], new_id=ids())
    other = attrs.evolve(fact, memory_artifact_id="mem_art_other")
    with pytest.raises(ValueError, match="not in this Memory"):
        planning.plan_forget(revised, [other])
    altered = attrs.evolve(revised.versions[fact.entry_id], text="forged")
    with pytest.raises(ValueError, match="does not match"):
        planning.plan_forget(revised, [altered])
    current = revised.versions[fact.entry_id]
    forgotten = committed(planning.plan_forget(revised, [current]), revised.versions)
    with pytest.raises(ValueError, match="inactive"):
        planning.plan_remember(
            forgotten, [MemoryEntryInput("fact", "v3", entry=current)], new_id=ids()
        )


def test_batch_never_touches_an_entry_twice(base):
    fact = by_kind(base, "fact")
    with pytest.raises(ValueError, match="twice"):
        planning.plan_remember(
            base,
            [
                MemoryEntryInput("fact", "one", entry=fact),
                MemoryEntryInput("fact", "two", entry=fact),
            ],
            new_id=ids(),
        )
    with pytest.raises(ValueError, match="twice"):
        planning.plan_forget(base, [fact, fact])


def test_forget_and_reactivate_keep_the_version(base):
    fact = by_kind(base, "fact")
    plan = planning.plan_forget(base, [fact], reason="user_requested")
    assert isinstance(plan, MemoryPlan)
    assert plan.new_versions == () and plan.deletes == (fact.entry_id,)
    (c,) = plan.content.changes
    assert (c.op, c.from_entry_version_id, c.to_entry_version_id, c.reason) == (
        "deactivate",
        fact.entry_version_id,
        None,
        "user_requested",
    )
    after = committed(plan, base.versions)
    assert planning.plan_forget(after, [fact]) is NO_CHANGE
    back = planning.plan_reactivate(after, [fact])
    (c,) = back.content.changes
    assert (c.op, c.from_entry_version_id, c.to_entry_version_id) == (
        "reactivate",
        None,
        fact.entry_version_id,
    )
    assert back.upserts[0].entry_version_id == fact.entry_version_id
    assert planning.plan_reactivate(base, [fact]) is NO_CHANGE


def _with_duplicates():
    """A head with "same" citing A (twice: the second made by revising "other" to the
    same text, which keeps its evidence A), "same" citing B, and "unique" whose stored
    version has unsorted references (written by another implementation)."""
    plan = planning.plan_remember(
        None,
        [
            MemoryEntryInput("fact", "same", sources=(SRC_A,)),
            MemoryEntryInput("fact", "same", sources=(SRC_B,)),
            MemoryEntryInput("fact", "other", sources=(SRC_A,)),
            MemoryEntryInput("fact", "unique", sources=(SRC_A,)),
        ],
        sources=[SRC_A, SRC_B],
        new_id=ids(),
    )
    base = committed(plan)
    other = next(v for v in base.versions.values() if v.text == "other")
    plan = planning.plan_remember(
        base, [MemoryEntryInput("fact", "same", entry=other)], new_id=ids_from(100))
    base = committed(plan, base.versions)
    uniq = next(v for v in base.versions.values() if v.text == "unique")
    unsorted = attrs.evolve(
        uniq,
        sources=(SRC_B.ref, SRC_A.ref, SRC_A.ref),
        entry_content_hash=canonical.entry_content_hash(
            "fact", "unique", (SRC_B.ref, SRC_A.ref, SRC_A.ref), ()
        ),
    )
    entries = tuple(
        attrs.evolve(e, entry_content_hash=unsorted.entry_content_hash)
        if e.entry_id == uniq.entry_id
        else e
        for e in base.content.manifest.entries
    )
    content = attrs.evolve(
        base.content, manifest=attrs.evolve(base.content.manifest, entries=entries)
    )
    return planning.MemoryBase(base.ref, content, {**base.versions, uniq.entry_id: unsorted})


def ids_from(start):
    counter = itertools.count(start)
    return lambda prefix: f"{prefix}{next(counter):04d}"


def test_organize_dedupes_exact_duplicates_then_normalizes():
    base = _with_duplicates()
    uniq = next(v for v in base.versions.values() if v.text == "unique")
    out = planning.plan_organize(base, new_id=ids_from(200))
    ops = {c.entry_id: (c.op, c.reason) for c in out.content.changes}
    same_a = sorted(e for e, v in base.versions.items()
                    if v.text == "same" and v.sources == (SRC_A.ref,))
    assert len(same_a) == 2
    assert ops == {same_a[1]: ("deactivate", "dedupe"), uniq.entry_id: ("revise", "normalize")}
    (nv,) = out.new_versions
    assert nv.sources == (SRC_A.ref, SRC_B.ref) and nv.version == 2
    only_dedupe = planning.plan_organize(base, steps=["dedupe"], new_id=ids_from(300))
    assert [c.op for c in only_dedupe.content.changes] == ["deactivate"]
    with pytest.raises(ValueError, match="step"):
        planning.plan_organize(base, steps=["merge"], new_id=ids())


def test_organize_keeps_equal_text_with_different_evidence_active():
    base = _with_duplicates()
    same_b = next(e for e, v in base.versions.items()
                  if v.text == "same" and v.sources == (SRC_B.ref,))
    out = planning.plan_organize(base, steps=["dedupe"], new_id=ids_from(200))
    after = committed(out, base.versions)
    assert after.manifest[same_b].state == "active"  # its evidence B is cited nowhere else
    active = [after.versions[e] for e, m in after.manifest.items() if m.state == "active"]
    assert {s for v in active for s in v.sources} == {SRC_A.ref, SRC_B.ref}


def test_append_needs_an_entry():
    with pytest.raises(ValueError, match="entries"):
        planning.plan_remember(None, [], new_id=ids())


# -- the plan carries its hash: no process-global memo of hashed bytes --------------------


def test_a_planned_plan_knows_its_hash_matches_without_hashing_again(base, monkeypatch):
    plan = planning.plan_remember(
        base, [MemoryEntryInput("fact", "uses ruff", sources=(SRC_C,))],
        sources=[SRC_C], new_id=ids(),
    )
    assert isinstance(plan, MemoryPlan)
    assert plan.content_hash == canonical.artifact_content_hash(plan.content_bytes)

    def refuse(_: bytes) -> str:
        raise AssertionError("the plan's bytes were hashed a second time")

    monkeypatch.setattr("powercontext.core.plan.artifact_content_hash", refuse)
    assert plan.content_hash_matches is True


def test_a_changed_plan_recomputes_whether_its_hash_matches(base):
    plan = planning.plan_remember(
        base, [MemoryEntryInput("fact", "uses ruff", sources=(SRC_C,))],
        sources=[SRC_C], new_id=ids(),
    )
    assert attrs.evolve(plan, content_hash="0" * 64).content_hash_matches is False
    assert attrs.evolve(plan, content_bytes=plan.content_bytes + b" ").content_hash_matches is False
    assert attrs.evolve(plan).content_hash_matches is True
    copy = MemoryPlan(**{f.alias: getattr(plan, f.name) for f in attrs.fields(MemoryPlan)})
    assert copy == plan and copy.content_hash_matches is True


def test_hashed_computes_the_hash_itself(base):
    plan = planning.plan_forget(base, [by_kind(base, "fact")])
    assert isinstance(plan, MemoryPlan)
    fields = {f.alias: getattr(plan, f.name) for f in attrs.fields(MemoryPlan)}
    del fields["content_hash"]
    again = MemoryPlan.hashed(**fields)
    assert again == plan and again.content_hash_matches is True
