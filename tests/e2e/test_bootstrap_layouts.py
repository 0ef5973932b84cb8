"""``powercontext repo bootstrap`` on three project layouts seen in the wild (issue 11
item 4; Memory RFC, "Source changes and incremental evidence"): the fixtures are written
here, in our own words, following the shape of real projects:

- a Flit project whose tox settings live in pyproject.toml (``legacy_tox_ini``), with
  pre-commit hooks and a ``.github/CONTRIBUTING.md`` in hard-wrapped Markdown;
- a Hatch project whose tests run through ``scripts/test`` (named by
  ``docs/contributing.md``), whose README only has a user install line;
- a Node project with an AGENTS.md of hard-wrapped, plainly imperative rules.

Each asserts the entries a maintainer would agree with, that no entry is a sentence
fragment, and that the searches an agent asks find them (real CLI, SQLite, mode fts).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from powercontext.core import extraction as C
from powercontext.entrypoints.cli.main import cli
from powercontext.entrypoints.cli.repo import repo

cli.add_command(repo)

FLIT_PYPROJECT = '''\
[build-system]
requires = ["flit_core >=3.9,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "quillmark"
dynamic = ["version", "description"]
requires-python = ">=3.9"
dependencies = ["markdown-it-py>=3"]

[project.optional-dependencies]
dev = ["pytest>=8", "pre-commit"]

[tool.pytest.ini_options]
addopts = "-ra --strict-markers"
testpaths = ["tests"]

[tool.tox]
legacy_tox_ini = """
[tox]
env_list = py39, py312, docs

[testenv]
deps = pytest
commands = pytest {posargs}

[testenv:docs]
deps = sphinx
commands = sphinx-build -W docs docs/_build
"""
'''
FLIT_PRECOMMIT = """\
repos:
  - repo: https://github.com/psf/black-pre-commit-mirror
    rev: 24.4.2
    hooks:
      - id: black
  - repo: https://github.com/pycqa/isort
    rev: 5.13.2
    hooks:
      - id: isort
  - repo: https://github.com/pycqa/flake8
    rev: 7.0.0
    hooks:
      - id: flake8
"""
FLIT_README = """\
# quillmark

Render annotated Markdown notes to HTML.

    pip install quillmark

Install it with `pip install quillmark` and call `quillmark.render(text)`.
"""
FLIT_CONTRIBUTING = """\
# Contributing to quillmark

Thanks for helping! Set up a development environment with
`pip install -e ".[dev]"` and install the git hooks with `pre-commit install`.

## Running the tests

Run the whole matrix with `tox` before you open a pull request; a single
environment runs with `tox -e py312`.

## Style

- Follow the code style that black, isort and flake8 enforce through
  pre-commit; do not reformat unrelated code.
- The parser is implemented with the standard library, do not pull in an
  extra runtime dependency without an issue first.
- Write a changelog entry in CHANGES.rst for every user-visible
  change.
"""

HATCH_PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "tidewire"
requires-python = ">=3.9"
dynamic = ["version"]

[tool.hatch.version]
path = "tidewire/__version__.py"

[tool.pytest.ini_options]
addopts = "-rxXs"
"""
HATCH_SCRIPTS = {
    "install": """\
#!/bin/sh -e
# Create the development virtual environment in venv/ and install the requirements.
python -m venv venv
PIP="venv/bin/pip"
"$PIP" install -U pip
"$PIP" install -r requirements.txt
""",
    "test": """\
#!/bin/sh
export PREFIX=""
if [ -d 'venv' ] ; then
    export PREFIX="venv/bin/"
fi
set -ex
if [ -z "$CI" ]; then
    scripts/check
fi
${PREFIX}coverage run -m pytest "$@"
""",
    "check": """\
#!/bin/sh -e
export PREFIX="venv/bin/"
export SOURCE_FILES="tidewire tests"
set -x
${PREFIX}ruff check $SOURCE_FILES
${PREFIX}ruff format --check --diff $SOURCE_FILES
${PREFIX}mypy $SOURCE_FILES
""",
    "lint": """\
#!/bin/sh -e
export PREFIX="venv/bin/"
export SOURCE_FILES="tidewire tests"
set -x
${PREFIX}ruff check --fix $SOURCE_FILES
${PREFIX}ruff format $SOURCE_FILES
""",
}
HATCH_README = """\
# tidewire

A small HTTP toolkit.

```shell
$ pip install tidewire
```

Documentation lives in the docs/ folder.
"""
HATCH_CONTRIBUTING = """\
# Contributing

Install the development requirements with `scripts/install`; it creates a virtual
environment in `venv/` and installs everything from requirements.txt.

To run the tests, use:

```shell
$ scripts/test
```

The test script also runs the code checks. Run `scripts/lint` to apply the code
style fixes, and `scripts/check` to verify the code style and types without changing
files.
"""

NODE_PACKAGE = {
    "name": "trailmix",
    "version": "0.4.0",
    "type": "module",
    "packageManager": "pnpm@9.4.0",
    "engines": {"node": ">=20"},
    "scripts": {"build": "tsc -p .", "test": "vitest run", "lint": "eslint .",
                "typecheck": "tsc --noEmit"},
}
NODE_AGENTS = """\
# AGENTS.md

## Setup

Install dependencies with `pnpm install`; the workspace uses pnpm and the lockfile
is pnpm-lock.yaml.

## Rules

- Run `pnpm test` before every commit.
- Run `pnpm lint` and `pnpm typecheck` before you push; CI runs the same
  commands.
- Keep the public API in src/index.ts; internal modules are not exported.
- This package is implemented with the standard library of Node, do not pull in an
  extra runtime dependency without asking.
- Code style follows Prettier and the shared ESLint config; never disable an ESLint
  rule inline.
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture
def pc(tmp_path, monkeypatch):
    db = tmp_path / "memory.db"
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    for k in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_EXTRACTOR_MODEL"):
        monkeypatch.delenv(k, raising=False)

    def run(*args: str, expect: int = 0):
        result = CliRunner().invoke(cli, ["--db", str(db), "--json", *args],
                                    catch_exceptions=False)
        assert result.exit_code == expect, (args, result.output)
        return json.loads(result.output)

    return run


def entries(out: dict) -> dict[str, dict]:
    return {c["text"]: c for c in out["changes"]}


def labelled(out: dict) -> dict[str, dict]:
    return {c["text"].partition(":")[0]: c for c in out["changes"] if C.topic_label(c["text"])}


def paths_of(out: dict, row: dict) -> set[str]:
    paths = {s["source_id"]: s["path"] for s in out["sources"]}
    return {paths[i] for i in row["source_ids"]}


def assert_no_fragment(out: dict) -> None:
    """Every rule entry is a whole sentence: a capital or code first, a full stop last."""
    for c in out["changes"]:
        if C.topic_label(c["text"]):
            continue
        text = c["text"]
        assert text[0].isupper() or text[0] == "`", text
        assert text.endswith((".", "!", "?", ")", "`")), text


def search_ids(pc, mem: str, query: str) -> list[str]:
    return [h["entry_id"] for h in pc("memory", "search", query, "-m", mem, "--mode",
                                      "fts", "-n", "4")["hits"]]


@pytest.mark.subprocess
def test_flit_project_with_tox_in_pyproject_and_pre_commit(pc, tmp_path):
    root = write(tmp_path / "quillmark", {
        "pyproject.toml": FLIT_PYPROJECT, ".pre-commit-config.yaml": FLIT_PRECOMMIT,
        "README.md": FLIT_README, ".github/CONTRIBUTING.md": FLIT_CONTRIBUTING,
        "quillmark/__init__.py": '"""Render notes."""\n'})
    out = pc("repo", "bootstrap", str(root))
    assert sorted(s["path"] for s in out["sources"]) == [
        ".github/CONTRIBUTING.md", ".pre-commit-config.yaml", "README.md", "pyproject.toml"]
    rows = labelled(out)
    build = rows["Build and dependencies"]["text"]
    assert build == ("Build and dependencies: quillmark builds with Flit (build-backend "
                     "flit_core.buildapi); dependencies are managed with pip (see "
                     ".github/CONTRIBUTING.md).")  # the developer set-up, not the user line
    assert paths_of(out, rows["Build and dependencies"]) == {"pyproject.toml",
                                                             ".github/CONTRIBUTING.md"}
    test = rows["Test command"]
    assert test["text"] == ("Test command: run `tox` (environments py39, py312, docs) for "
                            "routine code changes; pytest is configured in pyproject.toml "
                            "([tool.pytest.ini_options], addopts `-ra --strict-markers`).")
    assert paths_of(out, test) == {"pyproject.toml", ".github/CONTRIBUTING.md"}
    verify = rows["Verification commands"]
    assert verify["text"] == ("Verification commands: `pre-commit run --all-files` (format: "
                              "black, isort; lint: flake8); tox environments py39, py312, docs.")
    assert paths_of(out, verify) == {".pre-commit-config.yaml", "pyproject.toml"}
    rules = {t: c["kind"] for t, c in entries(out).items() if not C.topic_label(t)}
    assert rules == {
        'Set up a development environment with `pip install -e ".[dev]"` and install the git '
        "hooks with `pre-commit install`.": "preference",
        "Run the whole matrix with `tox` before you open a pull request; a single environment "
        "runs with `tox -e py312`.": "preference",
        "Follow the code style that black, isort and flake8 enforce through pre-commit; do not "
        "reformat unrelated code.": "constraint",
        "The parser is implemented with the standard library, do not pull in an extra runtime "
        "dependency without an issue first.": "constraint",
        "Write a changelog entry in CHANGES.rst for every user-visible change.": "preference",
    }
    assert_no_fragment(out)
    mem = out["memory_ref"]["artifact_id"]
    by_text = entries(out)
    tox_rule = by_text["Run the whole matrix with `tox` before you open a pull request; a "
                       "single environment runs with `tox -e py312`."]["entry_id"]
    assert {test["entry_id"], tox_rule} & set(search_ids(pc, mem, "how do I run the tests")[:2])
    style = by_text["Follow the code style that black, isort and flake8 enforce through "
                    "pre-commit; do not reformat unrelated code."]["entry_id"]
    assert search_ids(pc, mem, "code style rules")[0] == style
    assert search_ids(pc, mem, "how do I lint")[0] == verify["entry_id"]


@pytest.mark.subprocess
def test_hatch_project_whose_tests_run_through_scripts_test(pc, tmp_path):
    root = write(tmp_path / "tidewire", {
        "pyproject.toml": HATCH_PYPROJECT, "README.md": HATCH_README,
        "docs/contributing.md": HATCH_CONTRIBUTING,
        **{f"scripts/{n}": t for n, t in HATCH_SCRIPTS.items()},
        "scripts/publish": "#!/bin/sh\necho never read: no document names it\n"})
    out = pc("repo", "bootstrap", str(root))
    assert [s["path"] for s in out["sources"]] == [
        "pyproject.toml", "docs/contributing.md", "README.md", "scripts/install",
        "scripts/test", "scripts/lint", "scripts/check"]
    rows = labelled(out)
    build = rows["Build and dependencies"]
    assert build["text"] == ("Build and dependencies: tidewire builds with Hatchling "
                             "(build-backend hatchling.build); dependencies are managed with "
                             "pip (see scripts/install).")
    assert "README.md" not in paths_of(out, build)  # `pip install tidewire` is a user's line
    test = rows["Test command"]
    assert test["text"] == ("Test command: run `scripts/test` (pytest and coverage) for "
                            "routine code changes; pytest is configured in pyproject.toml "
                            "([tool.pytest.ini_options], addopts `-rxXs`).")
    assert paths_of(out, test) == {"scripts/test", "pyproject.toml", "docs/contributing.md"}
    verify = rows["Verification commands"]
    assert verify["text"] == ("Verification commands: `scripts/lint` (ruff); `scripts/check` "
                              "(ruff and mypy).")
    assert rows["Python requirement"]["text"].startswith("Python requirement: tidewire "
                                                         "requires Python >=3.9")
    rules = {t for t in entries(out) if not C.topic_label(t)}
    lint_rule = ("Run `scripts/lint` to apply the code style fixes, and `scripts/check` to "
                 "verify the code style and types without changing files.")
    assert rules == {
        "Install the development requirements with `scripts/install`; it creates a virtual "
        "environment in `venv/` and installs everything from requirements.txt.",
        "To run the tests, use: `scripts/test`",  # the lead-in carries its code block
        lint_rule,
    }
    assert_no_fragment(out)
    mem = out["memory_ref"]["artifact_id"]
    how = search_ids(pc, mem, "how do I run the tests")[:2]
    assert set(how) == {test["entry_id"], entries(out)["To run the tests, use: `scripts/test`"][
        "entry_id"]}
    assert search_ids(pc, mem, "code style rules")[0] == entries(out)[lint_rule]["entry_id"]
    assert verify["entry_id"] in search_ids(pc, mem, "how do I lint")[:2]


@pytest.mark.subprocess
def test_node_project_with_hard_wrapped_imperative_agents_md(pc, tmp_path):
    root = write(tmp_path / "trailmix", {
        "package.json": json.dumps(NODE_PACKAGE, indent=2) + "\n", "AGENTS.md": NODE_AGENTS,
        "src/index.ts": "export {};\n"})
    out = pc("repo", "bootstrap", str(root))
    rules = {t: c["kind"] for t, c in entries(out).items() if not C.topic_label(t)}
    assert rules == {
        "Install dependencies with `pnpm install`; the workspace uses pnpm and the lockfile is "
        "pnpm-lock.yaml.": "preference",
        "Run `pnpm test` before every commit.": "preference",
        "Run `pnpm lint` and `pnpm typecheck` before you push; CI runs the same commands.":
            "preference",
        "Keep the public API in src/index.ts; internal modules are not exported.": "preference",
        "This package is implemented with the standard library of Node, do not pull in an "
        "extra runtime dependency without asking.": "constraint",
        "Code style follows Prettier and the shared ESLint config; never disable an ESLint rule "
        "inline.": "constraint",
    }
    assert_no_fragment(out)
    rows = labelled(out)
    assert rows["Test command"]["text"] == ("Test command: run `pnpm test` (`vitest run`) for "
                                            "routine code changes.")
    mem = out["memory_ref"]["artifact_id"]
    by_text = entries(out)
    first = search_ids(pc, mem, "how do I run the tests")[:2]
    assert rows["Test command"]["entry_id"] in first
    style = by_text["Code style follows Prettier and the shared ESLint config; never disable an "
                    "ESLint rule inline."]["entry_id"]
    assert search_ids(pc, mem, "code style rules")[0] == style
    lint = search_ids(pc, mem, "how do I lint")[:2]
    assert rows["Verification commands"]["entry_id"] in lint


@pytest.mark.parametrize(("markdown", "expected"), [
    ("Keep it small: this is implemented with the standard library, do not pull in an\n"
     "extra dependency.\n",
     ["Keep it small: this is implemented with the standard library, do not pull in an extra "
      "dependency."]),
    ("- Always run `make test`\n  before review.\n- Never push to main.\n",
     ["Always run `make test` before review.", "Never push to main."]),
    ("Welcome! Run `make check` before every\npush. Thanks e.g. for typos too.\n",
     ["Run `make check` before every push."]),
    ("Avoid global state: tests cannot reset\nit. Use a fixture instead.\n\nShould I always"
     " ask\nfirst?\n",
     ["Avoid global state: tests cannot reset it. Use a fixture instead."]),
])
def test_hard_wrapped_markdown_is_joined_into_sentences_before_rules_are_read(markdown,
                                                                                expected):
    from powercontext.core import canonical

    src = canonical.make_source("src_agents", "file", markdown, "file:///r/AGENTS.md",
                                {"path": "AGENTS.md"})
    assert [c.text for c in C.rule_candidates((src,)).candidates] == expected
