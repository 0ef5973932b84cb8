"""What a rule answers, so that the prompt hook gives one slot to one answer
(``docs/hooks.md``, "What is injected"): the commands a text names (by their *head*,
the program and its subcommand: ``tox`` of ``tox -e linting,py313``, ``uv run pytest``
of ``uv run pytest path::test``), the repository files it names (``AUTHORS``,
``changelog/``), whether it asks *against* them ("avoid", "never", "instead of"), and its
words. Pure functions of text; nothing is tuned to one repository.

Two rules give the *same answer* (:func:`same_answer`) when they point the same way and
the one names no command or file the other does not (three entries that say "run
`tox`" in different words, two that say "add yourself to `AUTHORS`"), or when their
words are nearly the same (a Jaccard index of at least :data:`NEAR_SAME`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["NEAR_SAME", "Answer", "answer_of", "command_head", "same_answer"]

#: Two texts whose word sets overlap at least this much (Jaccard) say the same thing.
NEAR_SAME = 0.8

#: Programs whose next words (up to a flag, a path or a placeholder) name what is run:
#: ``make test``, ``npm run lint``, ``cargo nextest run``, ``bundle exec rake``.
_RUNNER_NAMES = """
make just npm pnpm yarn bun bunx npx pnpx deno uv uvx poetry pdm hatch rye pipx cargo go
bundle rake mix dotnet gradle ./gradlew mvn swift zig nx turbo lerna pre-commit prek task
"""
_RUNNERS = frozenset(_RUNNER_NAMES.split())
#: Programs that are the command by themselves (their arguments select what is run).
_PROGRAM_NAMES = """
tox nox pytest py.test python python3 ruff mypy pyright black isort flake8 pylint coverage
tsc eslint prettier biome oxlint jest vitest mocha karma playwright cypress rspec rubocop
golangci-lint gofmt goimports staticcheck rustfmt clippy-driver sphinx-build mkdocs
towncrier twine maturin cmake ctest bazel meson ninja composer phpunit changeset
commitlint semantic-release docker
"""
_PROGRAMS = _RUNNERS | frozenset(_PROGRAM_NAMES.split())
_WORDS_AFTER = 3
_ENV = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
_SUB = re.compile(r"^[a-z][a-z0-9_:\-]*$")
_CODE = re.compile(r"`([^`\n]{1,200})`")
_PATHLIKE = re.compile(r"(?<![\w/.:-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.<>*-]*|(?<![\w/.-])[\w-]+"
                       r"\.(?:md|rst|txt|toml|cfg|ini|json|ya?ml|lock|py|rs|go|ts|js|rb)\b")
_KNOWN_FILES = re.compile(r"\b(?:AUTHORS|CONTRIBUTORS|CHANGELOG|CHANGES|NEWS|HISTORY|"
                          r"MAINTAINERS)(?:\.\w+)?\b")
_AGAINST = re.compile(r"\b(?:avoid|never|don't|do not|must not|should not|shouldn't|"
                      r"no longer|instead of|rather than|stop (?:using|running|calling))\b")
#: Substrings one of which every :data:`_AGAINST` match contains (a cheap first test).
_AGAINST_HINTS = ("avoid", "never", "n't", " not", "no longer", "instead", "rather", "stop ")
_KNOWN_HINT = re.compile(r"AUTHORS|CONTRIBUTORS|CHANGE|NEWS|HISTORY|MAINTAINERS")
_WORD = re.compile(r"[a-z0-9]+")


class Answer(NamedTuple):
    """What a text answers: the ``commands`` it names (heads), the repository ``files``
    (lower-cased, without a trailing ``/``), whether it asks ``against`` them, and its
    ``words`` (lower-cased)."""

    commands: frozenset[str]
    files: frozenset[str]
    against: bool
    words: frozenset[str]


def command_head(span: str) -> str | None:
    """The head of the command a code span holds (lower-cased), or None when it is no
    command: environment assignments and a shell prompt dropped, the program (a known
    one, or a ``./``, ``scripts/`` or ``bin/`` path) and, for a runner, the words after
    it up to a flag, a path or a placeholder (``npm run test:unit`` -> ``npm run
    test:unit``; ``tox -e docs`` -> ``tox``; ``python -m pytest -x`` -> ``python -m
    pytest``)."""
    text = _ENV.sub("", span.strip().lstrip("$>% ").strip())
    words = text.split()
    if not words:
        return None
    program = words[0].lower()
    if program not in _PROGRAMS and not program.startswith(("./", "scripts/", "bin/",
                                                             "script/")):
        return None
    head = [program]
    rest = words[1:]
    if program in ("python", "python3") and len(rest) >= 2 and rest[0] == "-m":
        return f"{program} -m {rest[1].lower()}"
    if program in _RUNNERS:
        for word in rest[:_WORDS_AFTER]:
            low = word.lower()
            if not _SUB.match(low):
                break
            head.append(low)
    return " ".join(head)


def answer_of(text: str) -> Answer:
    """The :class:`Answer` of ``text`` (module docstring): the heads of its code spans
    that are commands, the files its code spans and words name, whether it asks
    against them."""
    commands: set[str] = set()
    files: set[str] = set()
    for m in _CODE.finditer(text):
        span = m.group(1).strip()
        head = command_head(span)
        if head is not None:
            commands.add(head)
        elif _PATHLIKE.fullmatch(span) or _KNOWN_FILES.fullmatch(span):
            files.add(span.lower().rstrip("/"))
    bare = _CODE.sub(" ", text)
    # only the words that can be paths are searched (the same matches, found faster)
    pathy = " ".join(w for w in bare.split() if "/" in w or "." in w)
    files.update(m.group(0).lower().rstrip("/.") for m in _PATHLIKE.finditer(pathy)
                 if "://" not in m.group(0))
    if _KNOWN_HINT.search(bare):
        files.update(m.group(0).lower() for m in _KNOWN_FILES.finditer(bare))
    files.discard("")
    low = text.lower()
    against = any(h in low for h in _AGAINST_HINTS) and bool(_AGAINST.search(low))
    return Answer(frozenset(commands), frozenset(files), against,
                  frozenset(_WORD.findall(low)))


def same_answer(worse: Answer, better: Answer) -> bool:
    """Whether ``worse`` says nothing ``better`` does not (module docstring): both ask
    for (or both against) what they name, and ``worse`` names at least one command or
    file, all of them named by ``better``; or their words are nearly the same."""
    if worse.against != better.against:
        return False
    union = worse.words | better.words
    if union and len(worse.words & better.words) >= NEAR_SAME * len(union):
        return True
    named = worse.commands | worse.files
    return bool(named) and worse.commands <= better.commands and worse.files <= better.files
