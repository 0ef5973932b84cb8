"""Invariants of bootstrap's document reading:

- reading never raises, whatever the text (Markdown or reStructuredText);
- sections are judged on their own: the rules of two sections together are the rules
  of each alone (a social or navigation section never changes another's rules);
- hard wrapping never changes the rules of a reStructuredText document;
- contract files reached through links: each file inside the repository is read once,
  whatever the links among the contract names, and nothing outside it is ever read.
"""

from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.adapters.candidates.repository import contract_sources
from powercontext.core.extraction.file_rules import document_rules
from powercontext.core.extraction.rule_kinds import judge

_MARKUP = st.text(alphabet=st.sampled_from(list("ab `*_#:-=~|>[]()!.,;\n\t 1/\\")),
                  max_size=300)


@given(_MARKUP, st.sampled_from(["AGENTS.md", "CONTRIBUTING.rst", "README.md", "README.rst"]))
def test_reading_never_raises(text, path):
    rules, dropped = document_rules(path, text, contract_sections_only=path.startswith("R"))
    for r in rules:
        assert r.kind in ("constraint", "preference", "fact")
    for d in dropped:
        assert d.reason
    judge(text)


_SENTENCES = st.sampled_from([
    "Run `make test` before you push.", "Never edit `gen/` by hand.",
    "Thanks for contributing!", "Open an issue first.", "Keep lines under 88 characters.",
    "[Setup](#setup)", "Make sure these are not in use.", "Join us on Discord.",
    "Format the code with black.", "We review pull requests weekly.",
    "Tests live in `tests/`.", "Add a new feature",
])
_SECTION = st.tuples(st.sampled_from(["Setup", "Community", "Style", "Reviews", "Tests"]),
                     st.lists(st.tuples(st.booleans(), _SENTENCES), min_size=1, max_size=5))


def _markdown(sections) -> str:
    out = []
    for title, blocks in sections:
        out.append(f"## {title}\n")
        out.extend(("- " if item else "") + text + "\n" for item, text in blocks)
    return "\n".join(out)


@given(_SECTION, _SECTION)
def test_sections_are_judged_on_their_own(a, b):
    def rules(sections):
        return [(r.kind, r.text) for r in document_rules("AGENTS.md", _markdown(sections))[0]]

    assert rules([a, b]) == rules([a]) + rules([b])


_RST_WORDS = st.sampled_from(["the", "tests", "build", "code", "docs", "``make test``",
                              "``tox -e lint``", "before", "every", "commit", "run", "files"])
_RST_SENTENCE = st.builds(lambda lead, words: f"{lead} {' '.join(words)}.",
                          st.sampled_from(["Run", "Always run", "Never push", "Keep", "Use"]),
                          st.lists(_RST_WORDS, min_size=3, max_size=12))
_RST_BLOCK = st.tuples(st.booleans(), st.lists(_RST_SENTENCE, min_size=1, max_size=3)
                       .map(" ".join))


def _rst(blocks, width: int | None) -> str:
    parts = ["Contributing\n============\n"]
    for is_item, text in blocks:
        if width is None:
            parts.append(("* " if is_item else "") + text)
        elif is_item:
            parts.append(textwrap.fill(text, width, initial_indent="* ",
                                       subsequent_indent="  ", break_on_hyphens=False,
                                       break_long_words=False))
        else:
            parts.append(textwrap.fill(text, width, break_on_hyphens=False,
                                       break_long_words=False))
    return "\n\n".join(parts) + "\n"


@given(st.lists(_RST_BLOCK, min_size=1, max_size=5), st.integers(30, 90))
def test_restructuredtext_rules_do_not_depend_on_the_wrap_width(blocks, width):
    def rules(text):
        return [(r.kind, r.text) for r in document_rules("CONTRIBUTING.rst", text)[0]]

    assert rules(_rst(blocks, width)) == rules(_rst(blocks, None))


_NAMES = ("AGENTS.md", "CLAUDE.md", "CONTRIBUTING.md", "docs/contributing.md")
# what each name is: a file, a symlink to another name, a placeholder file holding another
# name's path, or a link out of the repository
_ROLE = st.one_of(st.just(("file", None)), st.tuples(st.sampled_from(["link", "placeholder"]),
                                                     st.sampled_from(_NAMES)),
                  st.just(("outside", None)))


@settings(max_examples=60, deadline=None)
@given(st.tuples(*[_ROLE] * len(_NAMES)))
def test_each_file_is_read_once_and_nothing_outside_is_read(roles):
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        secret = base / "outside.md"
        secret.write_text("- Never read me: outside the repository.\n")
        root = base / "repo"
        (root / "docs").mkdir(parents=True)
        for name, (role, target) in zip(_NAMES, roles, strict=True):
            p = root / name
            if role == "file":
                p.write_text(f"- Run `make {name.replace('/', '-')}` first.\n")
            elif role == "outside":
                p.symlink_to(secret)
            elif role == "link" and target != name:
                p.symlink_to(os.path.relpath(root / target, p.parent))
            elif role == "placeholder" and target != name:
                p.write_text(os.path.relpath(root / target, p.parent) + "\n")
        sources, skipped = contract_sources(root)
        read = [s.content for s in sources]
        assert not any("Never read me" in c for c in read)  # nothing outside
        real = [os.path.realpath(root / dict(s.metadata)["path"]) for s in sources]
        assert len(real) == len(set(real))  # no file twice
        for name, (role, _) in zip(_NAMES, roles, strict=True):
            if role == "file":  # a file of the repository is never lost
                assert read.count((root / name).read_text()) == 1
            if role == "outside":
                assert name in {k.path for k in skipped}
