"""Properties of a Memory as an editable Markdown file (core/memory_markdown.py,
app/memory_file.py): any entry text and kind survives render -> parse; an unedited
export plans nothing; an edit (texts changed, entries moved between kinds, deleted,
added) plans exactly those changes; and on a real SQLite database, export -> apply
of an unedited file is a no-op, while export -> edit -> apply -> export gives back
the edit (every kept entry with its edited kind and text, the new ones added, the
deleted ones gone) and re-exports byte-identically."""

from __future__ import annotations

import asyncio
import re
import tempfile
import unicodedata
from collections import Counter
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.memory_markdown import parse, plan_edits, render
from powercontext.core.models import ArtifactRef, MemoryEntryInput, MemoryEntryVersion
from powercontext.memory_file import apply_file, export_text, plan_file
from powercontext.runtime import open_service

HASH = "cd" * 32


def _normal(text: str) -> str | None:
    text = unicodedata.normalize("NFC", text).strip()
    return text if text and len(text.encode()) <= canonical.MAX_TEXT_BYTES else None


#: entry texts: any characters, lines of the export's own shapes included
_LINES = st.sampled_from(["", " ", "  - item", "## heading", "- bullet", "<!-- entry e v1 x -->",
                          "\\<!-- entry e", "\\\\<!-- entry", "\r", "\t<!--", "-->", "a\u2028b",
                          "<!-- powercontext:export m@1 sha256:" + HASH + " -->"])
texts = st.one_of(
    st.text(min_size=1, max_size=60),
    st.lists(st.one_of(_LINES, st.text(max_size=12)), min_size=1, max_size=6).map("\n".join),
).map(_normal).filter(lambda t: t is not None)
kinds = st.one_of(
    st.sampled_from(["fact", "constraint", "preference", "decision", "working_note"]),
    # a kind is an identifier: printable ASCII (control characters are refused on write)
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), min_size=1, max_size=12),
).map(lambda k: k.strip()).filter(bool)


def _version(i: int, kind: str, text: str) -> MemoryEntryVersion:
    digest = canonical.entry_content_hash(kind, text, (), ())
    return MemoryEntryVersion("mem_art_p", f"mem_ent_{i:04d}", f"mem_ver_{i:04d}", 1, None,
                              kind, text, (), (), digest, 1)


@given(st.lists(st.tuples(kinds, texts), max_size=8))
def test_any_text_and_kind_round_trip_and_an_unedited_export_plans_nothing(items):
    versions = [_version(i, k, t) for i, (k, t) in enumerate(items)]
    out = render("mem_art_p", 3, HASH, versions)
    parsed = parse(out)
    assert (parsed.memory_id, parsed.revision, parsed.content_hash) == ("mem_art_p", 3, HASH)
    assert sorted((p.entry_id, p.kind, p.text) for p in parsed.items) == sorted(
        (v.entry_id, v.kind, v.text) for v in versions)
    plan = plan_edits(parsed, {v.entry_id: v for v in versions})
    assert plan.empty and plan.unchanged == len(versions)
    assert render("mem_art_p", 3, HASH, list(reversed(versions))) == out


_MARKER = re.compile(r"\n  <!-- entry mem_ent_new\d+ [^\n]*-->")
ops = st.sampled_from(["keep", "text", "kind", "both", "delete"])


@given(st.lists(st.tuples(kinds, texts, ops, kinds, texts), max_size=6),
       st.lists(st.tuples(kinds, texts), max_size=3))
def test_an_edit_plans_exactly_its_changes(items, new):
    before = [_version(i, k, t) for i, (k, t, *_rest) in enumerate(items)]
    edited, want_revise, want_forget = [], {}, set()
    for v, (_k, _t, op, kind2, text2) in zip(before, items, strict=True):
        kind = kind2 if op in ("kind", "both") else v.kind
        text = text2 if op in ("text", "both") else v.text
        if op == "delete":
            want_forget.add(v.entry_id)
            continue
        edited.append(MemoryEntryVersion(v.memory_artifact_id, v.entry_id, v.entry_version_id,
                                         1, None, kind, text, (), (), v.entry_content_hash, 1))
        if (kind, text) != (v.kind, v.text):
            want_revise[v.entry_id] = (kind, text)
    gone = {(v.kind, v.text) for v in before if v.entry_id in want_forget}
    assume(not any((k, t) in gone for k, t in new))  # a bullet equal to a deleted one keeps it
    fresh = [MemoryEntryVersion("mem_art_p", f"mem_ent_new{i}", "mem_ver_x", 1, None, k, t,
                                (), (), "0" * 64, 1) for i, (k, t) in enumerate(new)]
    text = _MARKER.sub("", render("mem_art_p", 3, HASH, edited + fresh))
    plan = plan_edits(parse(text), {v.entry_id: v for v in before})
    assert {v.entry_id: (k, t) for v, k, t in plan.revise} == want_revise
    assert {v.entry_id for v in plan.forget} == want_forget
    assert Counter(plan.add) == Counter(new)
    assert plan.unchanged == len(edited) - len(want_revise)


# --------------------------------------------------------------- on a real database


def _with_memory(entries, fn):
    async def run():
        with tempfile.TemporaryDirectory() as tmp:
            async with open_service(Path(tmp) / "m.db") as svc:
                ref = await svc.remember(None, entries=[
                    MemoryEntryInput(kind=k, text=t) for k, t in entries], mode="append")
                return await fn(svc, ref)

    return asyncio.run(run())


def _distinct(items):
    seen, out = set(), []
    for k, t in items:
        if (k, t) not in seen:
            seen.add((k, t))
            out.append((k, t))
    return out


@settings(max_examples=15)
@given(st.lists(st.tuples(kinds, texts), min_size=1, max_size=5).map(_distinct))
def test_export_then_apply_without_an_edit_changes_nothing(entries):
    async def check(svc, ref):
        text, count = await export_text(svc, ref)
        assert count == len(entries)
        planned = await plan_file(svc, text, "MEMORY.md")
        assert planned.plan.empty
        assert await apply_file(svc, planned) == ref == await svc.head(ref.artifact_id)
        assert (await export_text(svc, ref))[0] == text  # byte-identical re-export

    _with_memory(entries, check)


def _state(parsed):
    """kind -> multiset of texts, with the entry ids the bullets name."""
    by_kind: dict[str, Counter[str]] = {}
    for item in parsed.items:
        by_kind.setdefault(item.kind, Counter())[
            unicodedata.normalize("NFC", item.text).strip()] += 1
    return by_kind


@settings(max_examples=15)
@given(st.lists(st.tuples(kinds, texts), min_size=1, max_size=5).map(_distinct),
       st.lists(ops, min_size=5, max_size=5), st.lists(st.tuples(kinds, texts), max_size=5),
       st.lists(st.tuples(kinds, texts), max_size=2))
def test_export_edit_apply_export_gives_back_the_edit(entries, how, changes, new):
    async def check(svc, ref):
        rev = await svc.revision(ref)
        ids = [e.entry_id for e in rev.content.manifest.entries]
        current = await svc.entries(ref, ids)
        edited, kept_ids = [], {}
        for n, (v, op) in enumerate(zip(sorted(current.values(), key=lambda v: v.entry_id),
                                        how, strict=False)):
            if op == "delete":
                continue
            kind2, text2 = changes[n] if n < len(changes) else (v.kind, v.text)
            kind = kind2 if op in ("kind", "both") else v.kind
            new_text = text2 if op in ("text", "both") else v.text
            kept_ids[v.entry_id] = (kind, new_text)
            edited.append(MemoryEntryVersion(v.memory_artifact_id, v.entry_id,
                                             v.entry_version_id, v.version, None, kind,
                                             new_text, v.sources, (), v.entry_content_hash, 1))
        deleted = {(v.kind, v.text) for e, v in current.items() if e not in kept_ids}
        assume(not any(k_t in deleted for k_t in new))
        fresh = [MemoryEntryVersion(ref.artifact_id, f"mem_ent_new{i}", "mem_ver_x", 1, None, k,
                                    t, (), (), "0" * 64, 1) for i, (k, t) in enumerate(new)]
        wanted = _MARKER.sub("", render(ref.artifact_id, ref.revision, rev.content_hash,
                                        edited + fresh))
        planned = await plan_file(svc, wanted, "MEMORY.md")
        after = await apply_file(svc, planned)
        again, _count = await export_text(svc, after)
        got = parse(again)
        assert _state(got) == _state(parse(wanted))
        for item in got.items:  # kept entries keep their identity
            if item.entry_id in kept_ids:
                assert (item.kind, item.text) == kept_ids[item.entry_id]
        assert (await export_text(svc, after))[0] == again
        if planned.plan.empty:
            assert after == ref
        else:
            assert after == ArtifactRef(ref.artifact_id, ref.revision + 1)
            (changed,) = await svc.changes(after)
            assert {c.reason for c in changed.changes} == {"user_edit"}

    _with_memory(entries, check)
