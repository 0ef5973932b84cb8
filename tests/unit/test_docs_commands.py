"""Every ``powercontext ...`` command line in the shell blocks of README.md and docs/*.md
names commands and options that exist (the click tree, read in process), and the README's
tour shows the five things a newcomer does: remember, search, cite, hooks, Topics and the
dashboard. (tests/e2e/test_readme_tour.py runs the tour itself.)"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from powercontext.entrypoints.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

_SHELL_BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "(", ")", "$(", "2>", "<<"}


def shell_blocks(text: str) -> list[str]:
    """The bodies of the ```sh blocks of a Markdown text, line continuations joined."""
    return [m.group(1).replace("\\\n", " ") for m in _SHELL_BLOCK.finditer(text)]


def _tokens(line: str) -> list[str]:
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        return list(lex)
    except ValueError:  # an unbalanced quote: a heredoc line, not a command
        return []


def command_lines(block: str) -> Iterator[list[str]]:
    """The arguments of every ``powercontext`` invocation in a shell block: at the start
    of a command (after an operator, ``$(`` or ``VAR=value`` prefixes), up to the next
    operator."""
    for line in block.splitlines():
        tokens = _tokens(line)
        for i, token in enumerate(tokens):
            if token != "powercontext":
                continue
            before = tokens[:i]
            while before and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", before[-1]):
                before.pop()
            if before and not (before[-1] in _OPERATORS or before[-1].endswith("(")):
                continue  # an argument (a path, a package name), not a command
            args = []
            for arg in tokens[i + 1:]:
                if arg in _OPERATORS or set(arg) <= set("|&;<>()"):
                    break
                args.append(arg)
            yield args


def _option(command: click.Command, name: str) -> click.Parameter | None:
    name = name.split("=", 1)[0]
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def resolve(args: list[str]) -> tuple[list[str], list[str]]:
    """The command path ``args`` names in the click tree and the problems found: unknown
    commands, unknown options, a group given no command."""
    command: click.Command = cli
    path: list[str] = []
    problems: list[str] = []
    ctx = click.Context(cli, info_name="powercontext")
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and arg != "-":
            option = _option(command, arg)
            if option is None:
                problems.append(f"{' '.join(path) or 'powercontext'}: no option {arg}")
            elif arg in ("-h", "--help"):
                return path, problems
            elif not (option.is_flag or option.count) and "=" not in arg:
                i += 1  # its value
            i += 1
            continue
        if isinstance(command, click.Group):
            sub = command.get_command(ctx, arg)
            if sub is None:
                problems.append(f"{' '.join(path) or 'powercontext'}: no command {arg!r}")
                return path, problems
            command, path = sub, [*path, arg]
        i += 1
    if isinstance(command, click.Group):
        problems.append(f"{' '.join(path) or 'powercontext'}: a group, not a command")
    return path, problems


def _doc_commands() -> list[tuple[str, list[str]]]:
    out = []
    for page in DOCS:
        for block in shell_blocks(page.read_text("utf-8")):
            out += [(page.name, args) for args in command_lines(block)]
    return out


def test_the_docs_show_commands() -> None:
    pages = {name for name, _ in _doc_commands()}
    assert {"README.md", "cli.md", "hooks.md", "serving.md"} <= pages


@pytest.mark.parametrize("page", [p.name for p in DOCS])
def test_every_documented_command_exists(page: str) -> None:
    problems = []
    for name, args in _doc_commands():
        if name == page:
            problems += [f"powercontext {' '.join(args)}: {p}" for p in resolve(args)[1]]
    assert problems == []


def _tour() -> str:
    readme = (ROOT / "README.md").read_text("utf-8")
    return readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]


def test_the_tour_shows_remember_search_cite_hooks_topics_and_the_dashboard() -> None:
    paths = {" ".join(resolve(args)[0]) for block in shell_blocks(_tour())
             for args in command_lines(block)}
    assert {"memory remember", "memory search", "memory cite", "memory validate-citation",
            "repo bootstrap", "setup claude-code", "hook claude-code", "source add",
            "topic flush", "topic process", "topic search", "topic get", "serve",
            "memory show", "memory retire"} <= paths


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 250
    assert "make quickstart" in readme and "make test" in readme
    assert not re.search(r"\bissue\s+\d+", readme, re.IGNORECASE)


def test_the_command_finder_reads_pipes_substitutions_and_prefixes() -> None:
    block = shell_blocks(
        "```sh\n"
        "X=$(powercontext --json memory search \"a b\" -m key:x \\\n"
        "    | python -c 'print(1)')   # powercontext info\n"
        "echo '{}' | powercontext hook claude-code\n"
        "FOO=1 powercontext topic process --scope s --once\n"
        "pip install powercontext; mkdir -p ~/.local/share/powercontext\n"
        "```\n")[0]
    assert list(command_lines(block)) == [
        ["--json", "memory", "search", "a b", "-m", "key:x"],
        ["hook", "claude-code"],
        ["topic", "process", "--scope", "s", "--once"],
    ]
    assert resolve(["--json", "memory", "search", "q", "-m", "m"]) == (["memory", "search"], [])
    assert resolve(["memory", "serch"])[1] == ["memory: no command 'serch'"]
    assert resolve(["topic", "search", "--scoop", "x", "q"])[1] == \
        ["topic search: no option --scoop"]
    assert resolve(["memory"])[1] == ["memory: a group, not a command"]
