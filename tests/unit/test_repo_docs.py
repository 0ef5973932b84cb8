"""The pure contract-document readers of core.repo_docs (issue 11 item 4)."""

from __future__ import annotations

import tomllib

import pytest

from powercontext.core import canonical
from powercontext.core import extraction as C
from powercontext.core import repo_docs as D


def test_native_tool_tox_table_is_read_like_tox_ini():
    data = tomllib.loads('[tool.tox]\nenv_list = ["3.13", "lint"]\n'
                         '[tool.tox.env_run_base]\ncommands = [["pytest", "{posargs}"]]\n'
                         '[tool.tox.env.lint]\ncommands = [["ruff", "check", "."]]\n')
    assert D.pyproject_tox(data) == {"env_list": ("3.13", "lint"),
                                     "commands": {"": ("pytest {posargs}",),
                                                  "lint": ("ruff check .",)}}
    legacy = tomllib.loads('[tool.tox]\nlegacy_tox_ini = "[tox]\\nenv_list = py\\n"\n')
    assert D.pyproject_tox(legacy) == "[tox]\nenv_list = py\n"
    assert D.pyproject_tox({"tool": {"ruff": {}}}) is None


def test_tox_in_pyproject_gives_the_test_and_verification_topics():
    text = ('[project]\nname = "p"\n[tool.tox]\nenv_list = ["py312", "lint"]\n'
            '[tool.tox.env.lint]\ncommands = [["ruff", "check"]]\n')
    src = canonical.make_source("src_py", "file", text, "file:///r/pyproject.toml",
                                {"path": "pyproject.toml"})
    texts = [c.text for c in C.contract_candidates((src,)).candidates]
    assert "Test command: run `tox` (environments py312, lint) for routine code changes." \
        in texts
    assert "Verification commands: tox environments py312, lint." in texts


def test_pre_commit_hook_ids_in_order_without_duplicates():
    text = ("repos:\n- repo: local\n  hooks:\n  - id: ruff\n    args: [--fix]\n"
            "  - id: ruff-format\n- repo: x\n  hooks:\n    - id: 'mypy'\n    - id: ruff\n")
    assert D.parse_precommit(text) == ("ruff", "ruff-format", "mypy")
    assert D.hook_summary(("ruff", "ruff-format", "mypy", "check-yaml")) == (
        "format: ruff-format; lint: ruff; types: mypy; other hooks: check-yaml")


def test_script_mentions_name_only_known_entry_points():
    text = "Run `scripts/test`, then ./scripts/lint; see scripts/publish and myscripts/test."
    assert D.script_mentions(text) == ("scripts/test", "scripts/lint")
    assert D.is_script_path("scripts/check") and not D.is_script_path("scripts/check/x")


def test_a_user_install_line_is_not_the_developer_set_up():
    text = "pip install tide-wire\n    $ pip install 'tide_wire[http2]'\npip install -e .\n"
    assert D.strip_user_installs(text, "tide-wire") == "pip install -e ."


@pytest.mark.parametrize(("sentence", "rule"), [
    ("Run `pnpm test` before every commit.", True),
    ("Use tabs for Makefile recipes.", True),
    ("Set up the environment with `make dev`.", True),
    ("Fork the repository and clone it locally.", False),
    ("See the documentation for more details.", False),
    ("Run the following:", False),
    ("Run it.", False),
])
def test_plain_imperatives_of_a_contract_count_as_rules(sentence, rule):
    assert D.is_imperative_rule(sentence) is rule
    assert (C.classify_rule(sentence) == "preference") is rule


def test_sentences_keep_abbreviations_and_code():
    assert D.sentences("Use e.g. `ruff`. Then run `make`. 3 checks run.") == [
        "Use e.g. `ruff`.", "Then run `make`.", "3 checks run."]
