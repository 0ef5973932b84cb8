"""The sentence classifier of bootstrap (core.extraction.rule_kinds, sentence_features) and
the document readers it works on (core.doc_blocks): each kind of sentence, on sentences
written here in the shapes contributor guides use."""

from __future__ import annotations

import pytest

from powercontext.core import canonical, doc_blocks
from powercontext.core import extraction as C
from powercontext.core.extraction import parsers as P
from powercontext.core.extraction.contract_topics import quick_test_command
from powercontext.core.extraction.file_rules import document_rules
from powercontext.core.extraction.rule_kinds import DROP_REASONS, judge
from powercontext.core.extraction.sentence_features import artifacts, is_dependent, modality


@pytest.mark.parametrize(("sentence", "kind"), [
    # rules an agent acts on
    ("Run `make check` before you push.", "preference"),
    ("Never edit files under `gen/` by hand.", "constraint"),
    ("Format your code with black before committing.", "preference"),
    ("Commit messages follow Conventional Commits.", "fact"),
    ("Keep lines under 100 characters.", "preference"),
    ("Name test files `test_<module>.py` and put them in `tests/`.", "preference"),
    ("Pin every dependency in `requirements/dev.txt`.", "preference"),
    ("Migrations live in `app/migrations/`.", "fact"),
    ("Prefer small pull requests with one topic each.", "preference"),
    ("Do not add a runtime dependency without discussing it in an issue first.", "constraint"),
    ("Run `tox` before you open a pull request.", "preference"),
    ("We use `ruff` for linting and formatting.", "fact"),
    ("We generate the API reference from docstrings on every release.", "fact"),
    ("To run one test: `pytest tests/test_io.py::test_read`", "preference"),
    # contributor social process
    ("Help your fellow developers on Stack Overflow.", None),
    ("Join our Discord server to chat with the team.", None),
    ("Thanks for taking the time to contribute!", None),
    ("Open an issue before you start on a large change.", None),
    ("Fork the repository and clone your fork locally.", None),
    ("Fill in the pull request template and link the issue.", None),
    ("A maintainer will review your pull request within a week.", None),
    ("We review pull requests in priority order.", None),
    ("Consider sponsoring the project on Open Collective.", None),
    ("Contributions are licensed under the MIT license.", None),
    # web-UI steps
    ("When you fork, uncheck the `Copy the main branch only` radio button.", None),
    ("Click the green button to open the pull request.", None),
    # navigation and fragments
    ("[Policies & Mandatory Rules](#policies--mandatory-rules)", None),
    ("See the [style guide](docs/style.md) for details.", None),
    # vague or not a rule
    ("Add a new feature", None),
    ("Improve the documentation.", None),
    ("Snapshot tests ensure that widgets look right.", None),
    ("Any developer should feel at home building things with it.", None),
])
def test_sentence_kinds(sentence, kind):
    v = judge(sentence)
    assert v.kind == kind, (sentence, v)
    assert (v.reason is None) == (kind is not None)
    assert v.reason is None or v.reason in DROP_REASONS


@pytest.mark.parametrize(("sentence", "reason"), [
    ("Help your fellow developers on Stack Overflow.", "social"),
    ("When you fork, uncheck the `Copy the main branch only` radio button.", "ui"),
    ("[Policies & Mandatory Rules](#policies--mandatory-rules)", "navigation"),
    ("Add a new feature", "vague"),
    ("Snapshot tests ensure that widgets look right.", "not a rule"),
])
def test_each_drop_has_its_reason(sentence, reason):
    assert judge(sentence).reason == reason


def test_a_process_section_keeps_only_what_names_a_command_or_path():
    assert judge("Squash the commits before merging.", process=True).reason == "social"
    assert judge("Add an entry to `CHANGES.rst` before merging.", process=True).kind == \
        "preference"


def test_the_projects_own_name_is_no_tool():
    assert judge("`just` is extensively tested.").kind == "fact"  # `just` is a program
    assert judge("`just` is extensively tested.", project=frozenset({"just"})).kind is None


@pytest.mark.parametrize(("sentence", "dependent"), [
    ("This will write a new file to `out/`.", True),
    ("You should not modify these files by hand.", True),
    ("Do not prefix either value with a slash.", True),
    ("Update it when adding a page.", True),
    ("The test environments above cover most cases.", True),
    ("Of course, this does not apply to typos.", True),
    ("Use a fixture instead.", True),
    ("This repository uses uv.", False),
    ("This is a pnpm monorepo.", False),
    ("Keep it small and focused.", False),
    ("When you create a test, run it with `pytest -k name`.", False),
])
def test_a_sentence_that_refers_back_is_dependent(sentence, dependent):
    assert is_dependent(sentence) is dependent


@pytest.mark.parametrize(("sentence", "mode"), [
    ("Pull requests are stored on GitHub.", "description"),
    ("Test files live in `tests/`.", "description"),
    ("A model needs a migration: run `manage.py makemigrations`.", "constraint"),
    ("The short version: run `tox -e lint`.", "imperative"),
    ("If you touch the parser, regenerate the tables.", "imperative"),
    ("You do not need to run the full suite for docs.", "description"),
    ("The parser does not allocate.", "description"),
    ("Pytest could always use more documentation.", "description"),
])
def test_modality(sentence, mode):
    assert modality(sentence) == mode


def test_artifacts_by_class():
    names = artifacts("Run `uv run pytest tests/unit` and follow PEP 8; see "
                      "[the guide](docs/guide.md); configs live in conf/app/ with ruff.")
    assert names["command"] == ("uv run pytest tests/unit",)
    assert names["convention"] == ("PEP 8",)
    assert names["linked"] == ("docs/guide.md",)
    assert "conf/app/" in names["path"] and "ruff" in names["tool"]
    assert "path" not in artifacts("Use and/or, topic/purpose and issue/PR freely.")


# --------------------------------------------------------------------------- readers

RST = """\
=====
Title
=====

Intro with ``code`` and a `link <https://example.org>`_ and :pep:`8`.

Section
-------

#. First step, wrapped
   over two lines::

     $ make setup

#. Second step.

   A paragraph inside the item.

.. note::

   Note body.

.. code-block:: console

   $ make test

.. image:: badge.svg
   :target: https://example.org

Other
~~~~~

* item
"""


def test_restructuredtext_blocks():
    blocks = doc_blocks.read_rst(RST)
    got = [(b.kind, b.section, b.text, b.code) for b in blocks]
    assert got == [
        ("para", ("Title",), "Intro with `code` and a [link](https://example.org) and PEP 8.",
         ()),
        ("item", ("Title", "Section"), "First step, wrapped over two lines:", ("make setup",)),
        ("item", ("Title", "Section"), "Second step.", ()),
        ("para", ("Title", "Section"), "A paragraph inside the item.", ()),
        ("para", ("Title", "Section"), "Note body.", ("make test",)),
        ("item", ("Title", "Section", "Other"), "item", ()),
    ]
    assert blocks[3].depth == 1 and blocks[3].lead_in == "Second step."


MARKDOWN = """\
Project
=======

> [!NOTE]
> Read this first.

Setup
-----

Install with:

```sh
$ make install   # once
```

Command | Does
--- | ---
`make` | builds

- outer:
  - inner one
"""


def test_markdown_blocks():
    blocks = doc_blocks.read_markdown(MARKDOWN)
    got = [(b.kind, b.section, b.text, b.code, b.lead_in) for b in blocks]
    assert got == [
        ("para", ("Project",), "Read this first.", (), ""),
        ("para", ("Project", "Setup"), "Install with:", ("make install",), ""),
        ("table", ("Project", "Setup"), "Command | Does", (), ""),
        ("table", ("Project", "Setup"), "`make` | builds", (), ""),
        ("item", ("Project", "Setup"), "outer:", (), ""),
        ("item", ("Project", "Setup"), "inner one", (), "outer:"),
    ]


def test_code_blocks_carry_only_short_shell_commands():
    assert doc_blocks.command_lines(["$ make test", "12 passed"]) == ("make test",)
    assert doc_blocks.command_lines(["def f():", "    pass"], "") == ()
    assert doc_blocks.command_lines(["make a", "make b", "make c", "make d"]) == ()
    assert doc_blocks.command_lines(["print(1)"], "python") == ()


def test_lead_in_and_list_become_one_sentence():
    doc = "All changes need to:\n\n- be fully type-safe\n- have tests for every branch\n"
    rules, _ = document_rules("AGENTS.md", doc)
    assert [(r.kind, r.text) for r in rules] == [
        ("constraint", "All changes need to be fully type-safe"),
        ("constraint", "All changes need to have tests for every branch"),
    ]


def test_readme_rules_come_only_from_development_sections():
    readme = ("# tool\n\n## Usage\n\nYou should call `flush()` first.\n\n"
              "## Development\n\nRun `make test` before you push.\n\n"
              "## What's the relationship with make?\n\nUse `make` for builds.\n")
    rules, _ = document_rules("README.md", readme, contract_sections_only=True)
    assert [r.text for r in rules] == ["Run `make test` before you push."]


def test_the_flood_guard_drops_the_lowest_ranked_not_the_last():
    n = C.MAX_RULES_PER_FILE
    lines = [f"- Never edit `src/m{i}/` without running `make t{i}`." for i in range(n)]
    lines.insert(0, "- Write tests.")  # kept on its own, but ranked lowest
    rules, dropped = document_rules("AGENTS.md", "\n".join(lines) + "\n")
    assert len(rules) == n
    assert [(d.reason, d.text) for d in dropped] == [("budget", "Write tests.")]
    assert rules[-1].text == f"Never edit `src/m{n - 1}/` without running `make t{n - 1}`."
    assert [r.text for r in document_rules("AGENTS.md", "- Write tests.\n")[0]] == [
        "Write tests."]


# --------------------------------------------------------------------------- parsers


def test_justfile_recipes():
    recipes = P.parse_justfile(
        "alias t := test\nlog := 'warn'\n\n# run the tests\ntest *args: (watch 'ltest --all')\n"
        "  cargo test {{args}}\n\n[group('ci')]\nci: fmt test\n  cargo clippy -- -D warnings\n"
        "\nwatch +cmd='check':\n  cargo watch --exec '{{ cmd }}'\n")
    assert list(recipes) == ["test", "ci", "watch"]
    assert recipes["test"].comment == "run the tests"
    assert recipes["test"].calls == ("watch 'ltest --all'",)
    assert recipes["ci"].prerequisites == ("fmt", "test")
    assert recipes["ci"].recipe == ("cargo clippy -- -D warnings",)


def test_cargo_gomod_setup_cfg_and_noxfile():
    cargo = P.parse_cargo('[package]\nname = "x"\nedition.workspace = true\n'
                          'rust-version.workspace = true\n[workspace]\nmembers = ["a"]\n'
                          '[workspace.package]\nedition = "2021"\nrust-version = "1.70"\n')
    assert (cargo["name"], cargo["edition"], cargo["rust_version"]) == ("x", "2021", "1.70")
    mod = P.parse_gomod("module example.com/x\n\ngo 1.21 // min\ntoolchain go1.21.5\n"
                        "require (\n\ta v1\n\tb v2\n)\n")
    assert mod == {"module": "example.com/x", "go": "1.21", "toolchain": "go1.21.5",
                   "requires": 2}
    cfg = P.parse_setup_cfg("[metadata]\nname = x\n[options]\npython_requires = >=3.9\n"
                            "[tool:pytest]\naddopts = -q\n[flake8]\nmax-line-length = 99\n"
                            "[tox:tox]\nenvlist = py{39,312}\n")
    assert (cfg["name"], cfg["python_requires"], cfg["pytest_addopts"]) == ("x", ">=3.9", "-q")
    assert cfg["tox"]["env_list"] == ("py{39,312}",) and cfg["linters"] == ("flake8",)
    nox = P.parse_noxfile("import nox\n@nox.session(name='docs')\ndef d(session):\n"
                          "    session.run('sphinx-build', 'docs', 'out')\n"
                          "os.system('never run')\n")
    assert nox == {"sessions": {"docs": ("sphinx-build docs out",)}, "default": ()}
    with pytest.raises(SyntaxError):
        P.parse_noxfile("def (:\n")


def test_project_names():
    assert P.project_names({"go.mod": "module github.com/a/tool-kit/v2\n"}) >= {
        "tool-kit", "tool_kit"}
    assert P.project_names({"pyproject.toml": "[project\n"}) == frozenset()


def _file(path: str, text: str) -> canonical.Source:  # type: ignore[name-defined]
    return canonical.make_source(f"src_{abs(hash(path))}", "file", text,
                                 f"file:///r/{path}", {"path": path})


def test_the_quick_loop_prefers_a_targeted_direct_runner():
    agents = _file("AGENTS.md", "Run `tox -e py312 -- tests/a.py` or `uv run pytest` or "
                                "`uv run pytest tests/a.py::test_x`.\n")
    got = quick_test_command([agents], exclude=("tox",))
    assert got is not None and got[0] == "uv run pytest tests/a.py::test_x"
    assert quick_test_command([_file("AGENTS.md", "Run `make test`.\n")]) is None


CLAUDE_MD = """\
# Bash commands
- npm run build: Build the project
- npm run typecheck: Run the typechecker
- npm test -- src/cart.test.ts - run one test file

# Code style
- Use ES modules (import/export) syntax, not CommonJS (require)
- Destructure imports when possible (eg. import { foo } from 'bar')

# Workflow
- Be sure to typecheck when you're done making a series of code changes
- IMPORTANT: never commit directly to main
"""


def test_a_claude_md_with_commands_written_without_code_marks():
    """The common CLAUDE.md shape: "npm run build: Build the project" is a command, not
    a lower-case fragment."""
    rules, dropped = document_rules("CLAUDE.md", CLAUDE_MD)
    assert [(r.kind, r.text) for r in rules] == [
        ("fact", "npm run build: Build the project"),
        ("fact", "npm run typecheck: Run the typechecker"),
        ("fact", "npm test -- src/cart.test.ts - run one test file"),
        ("preference", "Use ES modules (import/export) syntax, not CommonJS (require)"),
        ("preference", "Destructure imports when possible (eg. import { foo } from 'bar')"),
        ("constraint", "Be sure to typecheck when you're done making a series of code changes"),
        ("constraint", "IMPORTANT: never commit directly to main"),
    ]
    assert dropped == []
    quick = quick_test_command([_file("CLAUDE.md", CLAUDE_MD)], exclude=("npm test",))
    assert quick is not None and quick[0] == "npm test -- src/cart.test.ts"
