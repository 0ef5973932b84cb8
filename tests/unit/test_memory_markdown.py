"""The Markdown export of a Memory (core/memory_markdown.py): its shape, what an edit
of it means (revise, add, forget) and the edits it refuses, each naming the line."""

from __future__ import annotations

import pytest

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.memory_markdown import parse, plan_edits, render, source_label
from powercontext.core.models import ArtifactRef, MemoryEntryVersion, SourceRef

HASH = "ab" * 32
SRC = SourceRef("src_agents", "0" * 64)


def version(entry_id: str, kind: str, text: str, n: int = 1,
            sources: tuple[SourceRef, ...] = (SRC,)) -> MemoryEntryVersion:
    digest = canonical.entry_content_hash(kind, text, sources, ())
    return MemoryEntryVersion("mem_art_1", entry_id, f"mem_ver_{entry_id[-1]}{n}", n, None,
                              kind, text, sources, (), digest, 1)


ENTRIES = [
    version("mem_ent_b", "fact", "uv manages the dependencies."),
    version("mem_ent_a", "constraint", "site/ is generated output; never edit it."),
    version("mem_ent_c", "working_note", "Left to do: the docs page.", 3),
    version("mem_ent_d", "preference", "Run `make test` before review:\n\n- unit\n- e2e"),
]


def export() -> str:
    return render("mem_art_1", 7, HASH, ENTRIES, {"src_agents": "file AGENTS.md"})


def test_an_export_groups_entries_by_kind_rules_first_and_names_the_revision():
    text = export()
    assert "<!-- powercontext:export mem_art_1@7 sha256:" + HASH + " -->" in text
    headings = [line for line in text.split("\n") if line.startswith("## ")]
    assert headings == ["## constraint", "## preference", "## fact", "## working_note"]
    assert ("- Run `make test` before review:\n\n  - unit\n  - e2e\n"
            "  <!-- entry mem_ent_d v1 mem_ver_d1 · evidence src_agents (file AGENTS.md) -->"
            ) in text
    assert "<!-- entry mem_ent_c v3 mem_ver_c3 · evidence" in text
    assert text == render("mem_art_1", 7, HASH, list(reversed(ENTRIES)),
                          {"src_agents": "file AGENTS.md"})  # order-free, same bytes
    assert text.endswith("-->\n")


def test_an_unedited_export_plans_nothing():
    plan = plan_edits(parse(export()), {v.entry_id: v for v in ENTRIES})
    assert plan.empty and plan.unchanged == 4


def test_edited_text_moved_kind_new_bullet_and_deleted_bullet():
    text = export()
    text = text.replace("uv manages the dependencies.", "uv manages the dependencies;\n"
                        "  hatchling builds the wheel.")
    text = text.replace("## working_note\n\n- Left to do: the docs page.\n"
                        "  <!-- entry mem_ent_c v3 mem_ver_c3 · evidence src_agents "
                        "(file AGENTS.md) -->\n", "## working_note\n")
    text = text.replace("## fact\n", "## fact\n\n- Use ruff, not flake8.\n")
    # the constraint moves under ## decision
    block = ("- site/ is generated output; never edit it.\n  <!-- entry mem_ent_a v1 "
             "mem_ver_a1 · evidence src_agents (file AGENTS.md) -->\n")
    text = text.replace(block, "") + "\n## decision\n\n" + block
    plan = plan_edits(parse(text), {v.entry_id: v for v in ENTRIES})
    assert [(v.entry_id, kind, t) for v, kind, t in plan.revise] == [
        ("mem_ent_a", "decision", "site/ is generated output; never edit it."),
        ("mem_ent_b", "fact", "uv manages the dependencies;\nhatchling builds the wheel."),
    ]
    assert plan.add == (("fact", "Use ruff, not flake8."),)
    assert [v.entry_id for v in plan.forget] == ["mem_ent_c"]
    assert plan.unchanged == 1


def test_a_bullet_that_lost_its_entry_line_keeps_its_entry():
    text = export().replace("  <!-- entry mem_ent_b v1 mem_ver_b1 · evidence src_agents "
                            "(file AGENTS.md) -->\n", "")
    plan = plan_edits(parse(text), {v.entry_id: v for v in ENTRIES})
    assert plan.empty and plan.unchanged == 4


def test_text_that_looks_like_an_entry_line_round_trips():
    tricky = version("mem_ent_e", "fact", "first\n<!-- entry mem_ent_a v1 mem_ver_a1 -->\n"
                     "\\<!-- entry x\n\\\\<!-- entry y\n  indented")
    parsed = parse(render("mem_art_1", 1, HASH, [tricky]))
    (item,) = parsed.items
    assert (item.text, item.entry_id) == (tricky.text, "mem_ent_e")


def test_odd_kinds_are_written_as_json_strings_and_read_back():
    odd = version("mem_ent_f", 'say "hi" # now', "x")
    text = render("mem_art_1", 1, HASH, [odd])
    assert '## "say \\"hi\\" # now"' in text
    assert parse(text).items[0].kind == 'say "hi" # now'


def test_a_file_saved_with_crlf_line_ends_reads_the_same():
    text = export()
    assert parse(text.replace("\n", "\r\n")).items == parse(text).items


@pytest.mark.parametrize(("edit", "field", "message"), [
    (lambda t: t.replace("<!-- powercontext:export", "<!-- nothing"), "file",
     "not a powercontext memory export"),
    (lambda t: t.replace("## constraint\n", "- a bullet too early\n## constraint\n"),
     "file:12", "before the first `## kind` heading"),
    (lambda t: t.replace("mem_ver_b1", "mem_ver_b9"), "file:", "names version mem_ver_b9"),
    (lambda t: t.replace("mem_ent_b v1", "mem_ent_z v1"), "file:", "not an active entry"),
    (lambda t: t.replace("- uv manages the dependencies.\n", "- uv manages the dependencies."
                         "\n  <!-- entry mem_ent_a v1 mem_ver_a1 -->\n"), "file:",
     "must be the last line"),
    (lambda t: t.replace("## fact\n", "## fact\nloose words\n"), "file:", "text outside an "
     "entry"),
    (lambda t: t.replace("uv manages the dependencies.", ""), "file:", "an empty bullet"),
    (lambda t: t + "\n<!-- powercontext:export mem_art_1@8 sha256:" + HASH + " -->\n",
     "file:", "a second export line"),
])
def test_malformed_edits_are_refused_naming_the_line(edit, field, message):
    with pytest.raises(InvalidInputError) as info:
        plan_edits(parse(edit(export())), {v.entry_id: v for v in ENTRIES})
    assert info.value.field.startswith(field) and message in str(info.value)


def test_an_entry_named_twice_is_refused():
    text = export()
    dup = ("- again\n  <!-- entry mem_ent_b v1 mem_ver_b1 -->\n")
    with pytest.raises(InvalidInputError, match="a second time"):
        plan_edits(parse(text + "\n## fact\n\n" + dup), {v.entry_id: v for v in ENTRIES})


def test_source_labels_keep_only_safe_characters():
    src = canonical.make_source("src_1", "file", "x", "file:///home/dev/p/docs/My%20Guide.md")
    assert source_label(src) == "file My_Guide.md"
    edit = canonical.make_source("src_2", "user_edit", "x", None, {"file": "MEMORY.md"})
    assert source_label(edit) == "user_edit MEMORY.md"
    hostile = canonical.make_source("src_3", "file", "x", "file:///x/a-->b")
    assert "-->" not in source_label(hostile)
    assert ArtifactRef("mem_art_1", 1)  # the header's form ID@REV is the ArtifactRef's
