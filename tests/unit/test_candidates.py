"""Pure memory-candidate generation and memory admission (core/extraction/; Memory RFC,
"Memory admission rules", "Candidate generation and model-free fallback")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext.core import canonical, secrets
from powercontext.core import extraction as C
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

MAIN = Path(__file__).resolve().parents[2]


def file_src(name: str, text: str, root: str = "/repo") -> Source:
    uri = f"file://{root}/{name}"
    digest = canonical.source_content_hash("file", text, uri, (("path", name),))
    return canonical.make_source(f"src_file_{digest[:12]}", "file", text, uri, {"path": name})


def version(entry_id: str, kind: str, text: str, sources: tuple[Source, ...]) -> MemoryEntryVersion:
    refs = canonical.sort_source_refs(s.ref for s in sources)
    return MemoryEntryVersion("mem_art_1", entry_id, f"mem_ver_{entry_id}", 1, None, kind, text,
                              refs, (), canonical.entry_content_hash(kind, text, refs, ()), 1)


# --------------------------------------------------------------------------- admission

@pytest.mark.parametrize(("text", "name"), [
    ("key AKIAIOSFODNN7EXAMPLE in use", "AWS access key id"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS secret access key"),
    ("token ghp_" + "a1B2" * 9, "GitHub token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "GitHub fine-grained token"),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123", "OpenAI/Anthropic API key"),
    ("slack xoxb-123456789012-abcdefghijkl", "Slack token"),
    ("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "JSON Web Token"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
     "PEM private key"),
    ("-----BEGIN RSA PRIVATE KEY-----", "PEM private key"),
    ("db password = Zx9!qR2#vLm8", "credential assignment (password)"),
])
def test_secrets_are_refused_with_the_kind_of_secret(text, name):
    assert secrets.find_secret(text) == name
    assert C.check_memory_admission("fact", text) == f"contains a secret ({name})"


@pytest.mark.parametrize("text", [
    "password = ${DB_PASSWORD}",
    "api_key: <your key here>",
    "Set token = os.environ['TOKEN'] in settings",
    "Never commit secrets; the password must come from the vault.",
    "Run make test before review.",
    "sk-learn is not a key",
])
def test_placeholders_and_plain_rules_are_not_secrets(text):
    assert secrets.find_secret(text) is None


def test_inventories_dumps_and_command_output_are_refused():
    inventory = "src/a.py\nsrc/b.py\nsrc/c/d.py\ntests/test_a.py\nREADME.md"
    assert C.check_memory_admission("fact", inventory).startswith("file inventory")
    dump = "def add(a, b):\n    return a + b\n\nclass Ledger:\n    pass\nimport os\n"
    assert C.check_memory_admission("fact", dump).startswith("source dump")
    signature = "def remember(memory, *, sources=()) -> ArtifactRef:"
    assert C.check_memory_admission("fact", signature) == (
        "function signature or code, not a durable fact")
    output = "============ test session starts ============\ncollected 12 items\n12 passed in 0.3s"
    assert C.check_memory_admission("working_note", output).startswith("raw command output")
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom'
    assert C.check_memory_admission("fact", tb) == "raw command output: a traceback"
    # Ordinary entries pass, even when they name a path or two.
    assert C.check_memory_admission("constraint", "site/ is generated output and must not be "
                             "modified as source material.") is None
    assert C.check_memory_admission("preference", "Run `make test` (pytest) for routine changes; "
                             "config in pyproject.toml.") is None


# --------------------------------------------------------------------------- parsers

def test_parsers_read_makefile_tox_package_json_and_pyproject():
    mk = C.parse_makefile("X := 1\n.PHONY: test\ntest: install ## run tests\n\t$(BIN)/pytest -q\n"
                          "check: lint test\nlint:\n\truff check \\\n\t  src\n%.o: %.c\n\tcc\n")
    assert list(mk) == ["test", "check", "lint"]
    assert mk["test"].prerequisites == ("install",) and mk["test"].comment == "run tests"
    assert mk["test"].recipe == ("$(BIN)/pytest -q",)
    assert mk["check"].prerequisites == ("lint", "test")
    tox = C.parse_tox("[tox]\nenvlist = py311, lint\n[testenv]\ncommands = pytest {posargs}\n"
                      "[testenv:lint]\ncommands =\n    ruff check .\n")
    assert tox == {"env_list": ("py311", "lint"),
                   "commands": {"": ("pytest {posargs}",), "lint": ("ruff check .",)}}
    pkg = C.parse_package_json(json.dumps({"name": "x", "packageManager": "pnpm@9.1.0",
                                           "engines": {"node": ">=20"},
                                           "scripts": {"test": "vitest"}}))
    assert pkg == {"name": "x", "scripts": {"test": "vitest"}, "node": ">=20",
                   "package_manager": "pnpm"}
    py = C.parse_pyproject((MAIN / "pyproject.toml").read_text())
    assert (py["name"], py["build_backend"], py["requires_python"], py["pytest"]) == (
        "powercontext", "setuptools.build_meta", ">=3.11", True)
    with pytest.raises(ValueError):
        C.parse_pyproject("[project\n")


def test_contract_of_this_repository_is_four_topics_with_their_evidence():
    files = {n: file_src(n, (MAIN / n).read_text()) for n in ("pyproject.toml", "Makefile",
                                                                "tox.ini")}
    result = C.contract_candidates(tuple(files.values()))
    got = {C.topic_label(c.text): c for c in result.candidates}
    assert list(got) == ["Build and dependencies", "Python requirement", "Test command",
                         "Verification commands"]
    assert [got[k].kind for k in got] == ["fact", "constraint", "preference", "preference"]
    cited = {k: {C.source_path(s) for s in c.sources} for k, c in got.items()}
    assert cited == {"Build and dependencies": {"pyproject.toml", "Makefile"},
                     "Python requirement": {"pyproject.toml"},
                     "Test command": {"Makefile", "pyproject.toml"},
                     "Verification commands": {"Makefile", "tox.ini"}}
    assert got["Python requirement"].text == (
        "Python requirement: powercontext requires Python >=3.11 (requires-python in "
        "pyproject.toml).")
    assert all(c.entry is None for c in result.candidates)


def test_uv_and_hatchling_from_pyproject_and_agents_md_as_in_the_spec():
    pyproject = file_src("pyproject.toml", '[project]\nname = "powercontext"\n'
                         'requires-python = ">=3.12"\n[build-system]\nrequires = ["hatchling"]\n'
                         'build-backend = "hatchling.build"\n')
    agents = file_src("AGENTS.md", "# Rules\n- Use `uv sync` to install; never pip.\n")
    (build, *_rest) = C.contract_candidates((pyproject, agents)).candidates
    assert build.text == ("Build and dependencies: powercontext builds with Hatchling "
                          "(build-backend hatchling.build); dependencies are managed with uv "
                          "(see AGENTS.md).")
    assert {C.source_path(s) for s in build.sources} == {"pyproject.toml", "AGENTS.md"}


def test_a_topic_revises_only_a_certainly_linked_untouched_entry():
    old_mk = file_src("Makefile", "test:\n\tpytest\n")
    new_mk = file_src("Makefile", "test:\n\ttox\n")
    (topic,) = C.contract_candidates((old_mk,)).candidates
    entry = version("e1", topic.kind, topic.text, (old_mk,))
    (rev,) = C.contract_candidates((new_mk,), (entry,), {old_mk.source_id: old_mk}).candidates
    assert rev.entry == entry and rev.text.startswith("Test command: run `make test` (tox)")
    # No evidence to read: the link is not certain, so a new entry.
    (new,) = C.contract_candidates((new_mk,), (entry,), {}).candidates
    assert new.entry is None
    # A hand-corrected entry is never overwritten.
    edited = version("e1", "preference", "Test command: run make test; docs use make docs.",
                     (old_mk,))
    (new,) = C.contract_candidates((new_mk,), (edited,), {old_mk.source_id: old_mk}).candidates
    assert new.entry is None
    # The same text as an active entry is not proposed at all.
    assert C.contract_candidates((old_mk,), (entry,), {old_mk.source_id: old_mk}).candidates == ()


# --------------------------------------------------------------------------- rules

@pytest.mark.parametrize(("text", "kind"), [
    ("Never edit generated files under site/.", "constraint"),
    ("You must run make check before review.", "constraint"),
    ("Always use pnpm.", "constraint"),
    ("Do not add dependencies without asking.", "constraint"),
    ("Prefer small commits.", "preference"),
    ("Avoid mocks in tests.", "preference"),
    ("You do not need to run the full make test when editing documentation; "
     "prefer make docs-test.", "preference"),
    ("The code lives in src/.", None),
])
def test_rule_classification(text, kind):
    assert C.classify_rule(text) == kind


def test_rules_of_agent_files_cite_the_file_and_skip_code_and_headings():
    agents = file_src("AGENTS.md", "# Must read\n\n- **Never** push to main.\n"
                      "```sh\n# never run this\nrm -rf /\n```\n"
                      "1. Prefer `uv run` over activating the venv.\nIntro that must end:\n"
                      "| never | table |\n")
    readme = file_src("README.md", "You must star this repo.\n")
    result = C.rule_candidates((agents, readme))
    assert [(c.kind, c.text) for c in result.candidates] == [
        ("constraint", "Never push to main."),
        ("preference", "Prefer `uv run` over activating the venv."),
    ]
    assert all(c.sources == (agents,) for c in result.candidates)
    note = canonical.make_source("src_note", "user_note", "Prefer make docs-test for docs.")
    (c,) = C.rule_candidates((note,)).candidates
    assert (c.kind, c.text, c.sources) == ("preference", "Prefer make docs-test for docs.", (note,))


# --------------------------------------------------------------------------- Git changes

PATCH = """diff --git a/AGENTS.md b/AGENTS.md
index 1..2 100644
--- a/AGENTS.md
+++ b/AGENTS.md
@@ -1,3 +1,3 @@
 # Rules
-- Never edit site/ by hand.
+- Never edit site/ or build/ by hand.
 - Prefer small commits.
"""


def git_src(patch: str) -> Source:
    return canonical.make_source("src_git_1", "git_change", patch, "file:///repo",
                                 {"repo": "/repo", "base": "a" * 40, "head": "b" * 40,
                                  "paths": "AGENTS.md"})


def test_a_replaced_rule_line_revises_the_entry_citing_that_file():
    agents = file_src("AGENTS.md",
                      "# Rules\n- Never edit site/ by hand.\n- Prefer small commits.\n")
    entry = version("e1", "constraint", "Never edit site/ by hand.", (agents,))
    g = git_src(PATCH)
    (rev,) = C.git_change_candidates((g,), (entry,), {agents.source_id: agents}).candidates
    assert (rev.entry, rev.kind, rev.text, rev.sources) == (
        entry, "constraint", "Never edit site/ or build/ by hand.", (g,))
    # Two rules changed in one hunk: not certain, nothing revised here.
    two = PATCH.replace(" - Prefer small commits.",
                        "-- Prefer small commits.\n+- Prefer tiny commits.")
    assert C.git_change_candidates((git_src(two),), (entry,),
                                   {agents.source_id: agents}).candidates == ()
    # The entry cites another file: not linked.
    other = version("e1", "constraint", "Never edit site/ by hand.", (file_src("CLAUDE.md", "x"),))
    assert C.git_change_candidates((g,), (other,), {}).candidates == ()


# --------------------------------------------------------------------------- structured, outcomes

def test_structured_sources_propose_entries_and_revisions_by_entry_id():
    entry = version("e1", "preference", "Run make test.", ())
    dec = canonical.make_source("src_dec", "decision", "We store vectors in vec0.")
    fix = canonical.make_source("src_fix", "user_note", "prefer docs-test for docs",
                                metadata={"memory.kind": "preference", "memory.revises": "e1",
                                          "memory.text": "Run make test; docs-test for docs.",
                                          "memory.reason": "user_correction"})
    lost = canonical.make_source("src_lost", "note", "x", metadata={"memory.kind": "fact",
                                                                    "memory.revises": "zz"})
    result = C.structured_candidates((dec, fix, lost), (entry,))
    assert [(c.kind, c.text, c.entry, c.reason) for c in result.candidates] == [
        ("decision", "We store vectors in vec0.", None, None),
        ("preference", "Run make test; docs-test for docs.", entry, "user_correction"),
        ("fact", "x", None, None),
    ]
    assert result.notes == ("src_lost: entry 'zz' is not an active entry; proposed as a new entry",)


def test_task_outcome_is_one_mechanical_working_note_never_a_fact():
    report = "## Done\nFixed the flaky search test.\n\nMore details that are dropped."
    src = canonical.make_source("src_out", "task_outcome", report, metadata={
        "status": "completed", "head": "0123456789abcdef", "verification": "make test passed",
        "paths": "\n".join(f"f{i}.py" for i in range(10))})
    (note,) = C.task_outcome_candidates((src,)).candidates
    assert note.kind == "working_note" and note.sources == (src,)
    assert note.text == ("Task outcome (completed): Done Fixed the flaky search test. Changed: "
                         "f0.py, f1.py, f2.py, f3.py, f4.py, f5.py, f6.py, f7.py (+2 more). "
                         "Head: 0123456789ab. Verification: make test passed.")
    assert C.check_memory_admission(note.kind, note.text) is None
    empty = canonical.make_source("src_e", "task_outcome", "   ")
    assert C.task_outcome_candidates((empty,)) == C.ExtractionResult()
    noisy = canonical.make_source("src_n", "task_outcome",
                                  "collected 3 items\n3 passed in 0.1s\nFAILED x\n")
    result = C.task_outcome_candidates((noisy,))
    assert result.candidates == () and result.refused[0].reason.startswith("raw command output")


# --------------------------------------------------------------------------- model answers

def test_model_answers_are_validated_and_a_malformed_one_yields_a_note():
    src = canonical.make_source("src_a", "user_note", "We use vec0.")
    entry = version("e1", "fact", "We use vec1.", ())
    ok = json.dumps({"entries": [
        {"kind": "decision", "text": "Vectors live in vec0.", "evidence": ["src_a"]},
        {"kind": "fact", "text": "We use vec0.", "evidence": ["src_a"], "revises": "e1",
         "reason": "corrected"},
        {"kind": "fact", "text": "x", "evidence": ["src_other"]},
        {"kind": "fact", "text": "y", "evidence": ["src_a"], "revises": "nope"},
        "junk",
    ]})
    result = C.parse_model_answer(f"```json\n{ok}\n```", (src,), (entry,))
    assert [(c.kind, c.text, c.entry, c.reason) for c in result.candidates] == [
        ("decision", "Vectors live in vec0.", None, None),
        ("fact", "We use vec0.", entry, "corrected")]
    assert [r.reason for r in result.refused] == [
        "evidence must name at least one Source of this operation",
        "revises 'nope', which is not an active entry", "entries[4] is not an object"]
    bad = C.parse_model_answer("Sure! Here are your entries:", (src,), ())
    assert bad.candidates == () and bad.notes[0].startswith("model answer is not JSON")
    assert C.parse_model_answer('{"items": []}', (src,), ()).notes == (
        "model answer has no 'entries' list",)
    system, prompt = C.model_prompt((src,), (entry,))
    assert "untrusted" in system and "src_a" in prompt and "e1" in prompt


# --------------------------------------------------------------------------- screening

def test_screening_refuses_what_the_planner_or_admission_would_reject():
    a = canonical.make_source("src_a", "user_note", "a")
    outside = canonical.make_source("src_x", "user_note", "x")
    entry = version("e1", "fact", "Old fact.", (a,))
    stale = version("e9", "fact", "Gone.", (a,))
    cands = [
        ("p", MemoryEntryInput("fact", "New fact.", sources=(a,))),
        ("p", MemoryEntryInput("fact", "New fact.", sources=(a,))),          # duplicate
        ("p", MemoryEntryInput("fact", "Old fact.", sources=(a,))),          # already active
        ("p", MemoryEntryInput("fact", "Cites outside.", sources=(outside,))),
        ("p", MemoryEntryInput("fact", "No evidence.")),
        ("p", MemoryEntryInput("fact", "token ghp_" + "x1Y2" * 9, sources=(a,))),
        ("p", MemoryEntryInput("fact", " ", sources=(a,))),
        ("p", MemoryEntryInput("fact", "x" * 9000, sources=(a,))),
        ("q", MemoryEntryInput("fact", "Revised fact.", entry=entry, sources=(a,))),
        ("q", MemoryEntryInput("fact", "Revised again.", entry=entry, sources=(a,))),
        ("q", MemoryEntryInput("fact", "Stale.", entry=stale, sources=(a,))),
    ]
    result = C.screen_memory_candidates(cands, (a,), (entry,))
    assert [(c.text, c.entry is not None) for c in result.candidates] == [
        ("Revised fact.", True), ("New fact.", False)]
    reasons = [r.reason for r in result.refused]
    assert reasons[:3] == ["a second revision of 'e1' in one operation",
                           "revises 'e9', which is not a current active version",
                           "cites a Source outside this operation"]
    assert reasons[3] == "cites no evidence"
    assert reasons[4] == "contains a secret (GitHub token)"
    assert reasons[5].startswith("text:") and reasons[6].startswith("text:")
    assert len(reasons) == 7


@pytest.mark.parametrize(("name", "recipe", "tool"), [
    ("acceptance", "go test -tags acceptance ./acceptance", "go test"),
    ("smoke", "pytest tests/smoke -x", "pytest"),
    ("functional", "cargo nextest run --features functional", "cargo nextest"),
])
def test_a_make_target_that_runs_another_suite_is_a_verification_command(name, recipe, tool):
    mk = file_src("Makefile", f"test:\n\tgo test ./...\n\n{name}:\n\t{recipe}\n\n"
                              "site:\n\tgit clone https://example.invalid/site site\n")
    got = {C.topic_label(c.text): c.text for c in C.contract_candidates((mk,)).candidates}
    assert f"`make {name}` ({tool})" in got["Verification commands"]
    assert "make site" not in got["Verification commands"]
    assert "make test`" not in got["Verification commands"]
