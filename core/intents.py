"""Development-task intents: a small, general vocabulary of what coding prompts ask for
and of what a repository's rules and commands answer (the prompt hook's recall, see
``docs/hooks.md``, "What is injected").

An :class:`Intent` names one kind of development task (run the tests, lint, format,
type-check, change the public API (add an option, a parameter, a flag), build, write
docs, a commit message, a pull request, a release or version bump, dependencies, the
language or runtime version, the changelog, CI, and verifying a change before it goes
out). Each holds three lists of phrases, matched on a text's tokens (:func:`tokens`):

- ``signals``: what says a *prompt* asks for it ("make sure lint passes", "run the
  tests", "bump the minimum Python version");
- ``words``: what says an *entry* is about it ("tests", "linter", "docs");
- ``tools``: the tools and commands that realise it in an entry (``pytest``,
  ``npm run lint``, ``cargo fmt``, ``mypy``, ``mkdocs``, ``commitlint``): an entry that
  names one tells the agent *how*, which counts more than a word. A tool's last word
  also matches a longer command it starts (``make test`` in ``make test-snapshot-update``,
  ``npm run test`` in ``npm run test:eslint``), never a file name (``tox.ini`` is not
  ``tox``).

A prompt's own tool names signal their intent too ("make sure clippy passes" is lint).
``search`` lists plain words the prompt hook adds to its full-text queries for an
intent the prompt has, so an entry that says ``eslint`` is found for "lint".

A phrase is written as space-separated slots, each slot the tokens it accepts separated
by ``|``; ``~N`` skips up to N tokens and ``#ver`` is a version number (``3.10``).
Everything here is a pure function of text; nothing is tuned to one repository: the
vocabulary is what these tasks are called across ecosystems (Python, JavaScript, Go,
Rust, Ruby, Java, PHP).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

__all__ = [
    "INTENTS",
    "LEAD_WORDS",
    "Intent",
    "Phrases",
    "entry_intents",
    "intent",
    "plain",
    "prompt_intents",
    "search_words",
    "tokens",
]

#: An entry is about an intent's *words* only when it names one within its first this
#: many tokens (a word in passing later on does not make the entry about it).
LEAD_WORDS = 16

_TOKEN = re.compile(r"[a-z0-9][a-z0-9_]*(?:[.:/+-]+[a-z0-9_]+)*|>=|==|~=|[\^~]")
_VERSION = re.compile(r"\d+(?:\.\d+)+")
_URL = re.compile(r"\]\((?:[^()\s]|\([^()\s]*\))*\)|<?https?://[^\s>)\]]+>?")


def tokens(text: str) -> list[str]:
    """The lower-cased tokens of ``text``: words, with ``. : / + -`` inside a word kept
    (``pre-commit``, ``test:eslint``, ``go.mod``, ``src/app.py``), and the version
    operators ``>= == ~= ^ ~``."""
    return _TOKEN.findall(text.lower())


def plain(text: str) -> str:
    """``text`` without its URLs: a Markdown link keeps its text, a bare URL goes (an
    address says nothing about the task)."""
    return _URL.sub(lambda m: "]" if m.group(0).startswith("]") else " ", text)


class Phrases:
    """Compiled phrases (module docstring): ``slots`` per phrase, each slot a frozenset
    of accepted tokens or an int gap; ``loose``: the last slot also accepts a token that
    starts with an accepted one followed by ``-`` or ``:``; ``first``: first token ->
    the phrases that may start with it; ``tags``: what each phrase stands for. A plain
    slotted class, built once at import (the prompt hook imports it on every prompt)."""

    __slots__ = ("first", "loose", "slots", "tags")

    def __init__(self, slots: tuple[tuple[frozenset[str] | int, ...], ...], loose: bool,
                 first: Mapping[str, Sequence[int]], tags: tuple[str, ...]) -> None:
        self.slots, self.loose, self.first, self.tags = slots, loose, first, tags

    @classmethod
    def of(cls, *phrases: str, loose: bool = False, tags: Sequence[str] = ()) -> Phrases:
        """Compile ``phrases``; ``tags`` (one per phrase, optional) name what each
        phrase stands for (:meth:`tagged`)."""
        compiled: list[tuple[frozenset[str] | int, ...]] = []
        first: dict[str, list[int]] = {}  # read-only once built
        for n, phrase in enumerate(phrases):
            slots: list[frozenset[str] | int] = []
            for slot in phrase.split():
                slots.append(int(slot[1:]) if slot.startswith("~")
                             else frozenset(slot.lower().split("|")))
            compiled.append(tuple(slots))
            head = slots[0]
            assert isinstance(head, frozenset), phrase  # a phrase starts with words
            for tok in head:
                first.setdefault(tok, []).append(n)
        return cls(tuple(compiled), loose, first, tuple(tags))

    def _takes(self, slot: frozenset[str], token: str, last: bool) -> bool:
        if token in slot or ("#ver" in slot and _VERSION.fullmatch(token)):
            return True
        return last and self.loose and _stem(token) in slot

    def _match(self, slots: tuple[frozenset[str] | int, ...], toks: Sequence[str],
               at: int) -> int:
        """The end of a match of ``slots`` at ``toks[at]``, or -1."""
        if not slots:
            return at
        head, rest = slots[0], slots[1:]
        if isinstance(head, int):
            for skip in range(head + 1):
                end = self._match(rest, toks, at + skip)
                if end >= 0:
                    return end
            return -1
        if at < len(toks) and self._takes(head, toks[at], not rest):
            return self._match(rest, toks, at + 1)
        return -1

    def _matches(self, toks: Sequence[str], stems: Sequence[str] | None
                 ) -> list[tuple[int, int, int]]:
        """(phrase index, start, end) of every match in ``toks``."""
        out: list[tuple[int, int, int]] = []
        first = self.first
        for at, tok in enumerate(toks):
            tried = list(first.get(tok, ()))
            if self.loose:
                stem = stems[at] if stems is not None else _stem(tok)
                if stem != tok:
                    tried += first.get(stem, ())
            for n in tried:
                end = self._match(self.slots[n], toks, at)
                if end > at:
                    out.append((n, at, end))
        return out

    def find(self, toks: Sequence[str], stems: Sequence[str] | None = None
             ) -> tuple[str, ...]:
        """The matched phrases in ``toks`` (their tokens joined by spaces), in order,
        without repeats. ``stems``: ``[_stem(t) for t in toks]`` when the caller has
        them."""
        return tuple(dict.fromkeys(" ".join(toks[a:b]) for _, a, b in self._matches(toks, stems)))

    def tagged(self, toks: Sequence[str], stems: Sequence[str] | None = None) -> set[str]:
        """The tags of the phrases found in ``toks``."""
        return {self.tags[n] for n, _, _ in self._matches(toks, stems)}


def _stem(token: str) -> str:
    """The command a longer token starts: ``test`` of ``test-snapshot-update`` and of
    ``test:eslint`` (the token itself otherwise)."""
    return _STEM.split(token, maxsplit=1)[0] or token


_STEM = re.compile(r"(?<=.)[-:]")


class Intent:
    """One development-task intent (see the module docstring): its ``name``, the
    :class:`Phrases` of its ``signals``, ``words`` and ``tools``, its ``search`` words.
    A ``meta`` intent is realised by the intents it names as well as by its own words and
    tools (``verify`` is answered by any test, lint, format or type-check command, as
    strongly); the ``related`` intents answer it too, more weakly, when the prompt does
    not ask for them itself (preparing a pull request involves the changelog and the
    checks; adding an option, its docs and tests). Read-only by convention (a slotted
    class, cheap to build at import)."""

    __slots__ = ("meta", "name", "related", "search", "signals", "tools", "words")

    def __init__(self, name: str, signals: Phrases, words: Phrases, tools: Phrases,
                 search: tuple[str, ...], meta: tuple[str, ...] = (),
                 related: tuple[str, ...] = ()) -> None:
        self.name, self.signals, self.words, self.tools = name, signals, words, tools
        self.search, self.meta, self.related = search, meta, related


def _intent(name: str, signals: Sequence[str], words: Sequence[str], tools: Sequence[str],
            search: str, meta: str = "", related: str = "") -> Intent:
    """An Intent; a prompt naming one of its ``tools`` signals it too."""
    return Intent(name, Phrases.of(*signals, *tools, loose=True), Phrases.of(*words),
                  Phrases.of(*tools, loose=True), tuple(search.split()),
                  tuple(meta.split()), tuple(related.split()))



_LANGS = ("python|node|nodejs|node.js|go|golang|rust|ruby|java|jdk|php|deno|bun|typescript"
          "|dotnet|.net|elixir|erlang|swift|kotlin|scala|perl|lua|zig|dart")
_RUNNERS = "go|cargo|npm|pnpm|yarn|bun|deno|make|just|mix|dotnet|swift|gradle|mvn|rake|task"
_TEST_TOOLS = (
    "pytest|py.test|tox|nox|jest|mocha|vitest|karma|jasmine|rspec|minitest|phpunit|ctest"
    "|nextest|unittest|gotestsum|playwright|cypress|pytester",
    f"{_RUNNERS} test|tests|ltest", f"{_RUNNERS} run test|tests", "bundle exec rspec")
_LINT_TOOLS = (
    "eslint|ruff|flake8|pylint|clippy|lclippy|golangci-lint|golangci|staticcheck|rubocop"
    "|stylelint|shellcheck|biome|oxlint|tslint|hadolint|markdownlint|yamllint|ktlint"
    "|checkstyle|phpcs|credo", "go vet", f"{_RUNNERS} lint|linting",
    f"{_RUNNERS} run lint|linting", "tox -e lint|linting")
_FORMAT_TOOLS = (
    "black|prettier|isort|rustfmt|gofmt|goimports|clang-format|autopep8|yapf|dprint"
    "|format-check", "ruff format", "cargo fmt", f"{_RUNNERS} fmt|format",
    f"{_RUNNERS} run fmt|format")
_TYPE_TOOLS = ("mypy|pyright|basedpyright|pytype|pyre|tsc|typecheck|type-check|dtslint|tsd"
               "|sorbet", "flow check")

_SPECS: tuple[tuple[Any, ...], ...] = (
    ("test", ("test|tests|testing|flaky",), ("test|tests|testing", "test suite"),
     _TEST_TOOLS,
     "test tests testing pytest tox nox jest mocha vitest karma rspec phpunit nextest "
     "unittest cypress playwright pytester"),
    ("lint", ("lint|lints|linted|linter|linters|linting", "static analysis"),
     ("lint|lints|linted|linter|linters|linting", "static analysis"), _LINT_TOOLS,
     "lint linter linting eslint ruff flake8 pylint clippy golangci vet staticcheck "
     "rubocop stylelint shellcheck biome"),
    ("format",
     ("format|formats|formatted|formatting|formatter|formatters|reformat|reformatted"
      "|fmt", "code style"),
     ("format|formats|formatted|formatting|formatter|formatters|reformat|fmt",
      "code style", "style guide"), _FORMAT_TOOLS,
     "format formatter formatting fmt black prettier isort rustfmt gofmt goimports "
     "autopep8 yapf dprint"),
    ("typecheck",
     ("typecheck|typechecks|typechecker|typechecking|type-check|type-checks"
      "|type-checker|type-checking|typing",
      "type check|checks|checker|checkers|checking|errors|error|hints|annotations"
      "|safety", "static types|type"),
     ("typecheck|typechecker|typechecking|type-check|type-checker|type-checking"
      "|typing", "type check|checker|checking|hints|annotations"), _TYPE_TOOLS,
     "typecheck checker mypy pyright pytype tsc dtslint"),
    ("api",
     ("add|adds|added|adding|new|rename|renames|renamed|remove|removes|removed|deprecate"
      "|deprecates|deprecated|change|changes|expose ~3 option|options|parameter"
      "|parameters|param|params|argument|arguments|arg|args|flag|flags|setting|settings"
      "|attribute|attributes|field|fields|keyword|keywords|kwarg|kwargs|endpoint"
      "|endpoints|subcommand|subcommands|method|methods",
      "public api", "breaking change|changes", "deprecation"),
     ("backward-compatible|backwards-compatible|backward-compatibility"
      "|backwards-compatibility|non-breaking|breaking|deprecated|deprecation|api",
      "backward|backwards compatible|compatibility",
      "new option|options|parameter|parameters|argument|arguments|flag|flags|feature"
      "|features|attribute|attributes"), (),
     "compatibility compatible breaking deprecation deprecated api", "",
     "docs test changelog"),
    ("build",
     ("build|builds|building|rebuild|rebuilds|rebuilding|built|rebuilt|compile|compiles"
      "|compiled|compiling|compilation|bundle|bundles|bundled|bundling|binary|binaries"
      "|executable",),
     ("build|builds|building|built|compile|compiles|compiled|compiling|compilation"
      "|bundle|bundles|bundled|bundling",),
     ("rollup|webpack|vite|esbuild|tsup|parcel|gulp|bazel|cmake|ninja|meson|maturin",
      "cargo build|lbuild", "go build", "python -m build", f"{_RUNNERS} build",
      f"{_RUNNERS} run build", "script/build"),
     "build building compile bundle rollup webpack vite esbuild tsup gulp bazel cmake"),
    ("docs",
     ("doc|docs|documentation|document|documents|documented|documenting|docstring"
      "|docstrings|readme|manual|tutorial|tutorials", "the book", "man page|pages",
      "manpage|manpages", "api reference"),
     ("doc|docs|documentation|document|documented|documenting|docstring|docstrings"
      "|readme|book|manual|manpage|manpages", "man page|pages"),
     ("mkdocs|sphinx|mdbook|docusaurus|jsdoc|typedoc|rustdoc|godoc|pdoc|readthedocs"
      "|gen-docs|build-book|docs-serve|docs-build", "cargo doc",
      "tox -e doc|docs", f"{_RUNNERS} doc|docs", f"{_RUNNERS} run doc|docs"),
     "docs documentation docstring readme book manual mkdocs sphinx mdbook docusaurus "
     "jsdoc typedoc rustdoc godoc"),
    ("commit", ("commit|commits|committed|committing|amend|squash",),
     ("commit|commits|committed|committing|co-author|co-authors|co-authored|coauthor"
      "|co-authored-by|signed-off-by|sign-off|signoff|dco",),
     ("commitlint|husky|gitmoji", "git commit", "conventional commit|commits"),
     "commit commits commitlint conventional author signed"),
    ("pr",
     ("pr|prs|pull-request", "pull request|requests", "merge request|requests",
      "code review"),
     ("pr|prs|pull-request|force-push", "pull request|requests",
      "merge request|requests", "force push"),
     ("gh pr", "pull_request_template|pull_request_template.md", "pr template|title"),
     "pr pull request merge template", "", "changelog verify"),
    ("release",
     ("release|releases|released|releasing|publish|publishes|published|publishing|bump"
      "|bumps|bumped|bumping|semver", "new version", "version bump|number",
      "tag a|the release|version"),
     ("release|releases|released|releasing|publish|published|publishing|version"
      "|versions|versioning|bump|bumps|bumped|semver",),
     ("release-it|semantic-release|release-please|goreleaser|twine|bumpversion"
      "|bump-my-version", "npm|cargo|poetry|uv|hatch|flit publish"),
     "release releasing publish version bump semver twine goreleaser", "",
     "changelog"),
    ("dependencies",
     ("dependency|dependencies|deps|install|installs|installed|installing|installation"
      "|upgrade|upgrades|upgraded|upgrading|lockfile|lockfiles|requirements|venv"
      "|virtualenv", "lock file|files", "virtual environment|environments",
      "add a|the library|dependency|package"),
     ("dependency|dependencies|deps|install|installs|installed|installing|installation"
      "|lockfile|venv|virtualenv", "lock file|files", "virtual environment",
      "managed with", "package manager"),
     ("uv sync|add|lock|pip", "poetry install|add|lock|shell", "pip|pip3 install",
      "pipenv|conda|renovate|dependabot", "pdm install|add|sync",
      "npm|pnpm|yarn|bun install|ci|add|i", "cargo add|update", "go mod|get",
      "bundle install", "composer install|require"),
     "dependency dependencies install lock venv requirements uv poetry pip pnpm yarn "
     "npm"),
    ("runtime",
     (f"{_LANGS} ~1 version|versions|support|requirement|runtime|toolchain",
      "msrv|requires-python|python_requires|rust-version|toolchain",
      "minimum supported", f"drop|add|end support for {_LANGS}"),
     ("require|requires|requirement|requirements|minimum", "supported version|versions",
      f"{_LANGS} #ver", f"{_LANGS} >=|^|~|~=|== #ver"),
     ("requires-python|python_requires|rust-version|msrv|engines|envlist|rust-toolchain"
      "|go.mod|python-version|nvmrc|py36|py37|py38|py39|py310|py311|py312|py313|py314"
      "|py315", "go #ver"),
     "python node go rust ruby version requirement requires minimum msrv engines "
     "toolchain envlist", "", "dependencies"),
    ("changelog",
     ("changelog|changelogs|changes.md|changes.rst|changes.txt|changelog.md|changelog.rst"
      "|changelog.txt|history.md|history.rst|news.md|news.rst", "change log|logs",
      "release notes", "news entry|fragment|file|entries|fragments|files",
      "what's new"),
     ("changelog|changelogs|changes.md|changes.rst|changes.txt|changelog.md|changelog.rst"
      "|changelog.txt|history.md|history.rst|news.md|news.rst", "change log|logs",
      "release notes", "news entry|fragment|file|entries|fragments|files"),
     ("towncrier|changeling|git-cliff|changeset|changesets|scriv|reno",
      "changelog/"),
     "changelog changelogs changeset news towncrier changeling"),
    ("ci",
     ("ci|pipeline|pipelines|workflow|workflows", "continuous integration",
      "github action|actions", "check|checks fail|failed|failing|pass|passed|passing"),
     ("ci|pipeline|pipelines|workflow|workflows", "continuous integration",
      "github action|actions"),
     ("github/workflows", f"{_RUNNERS} ci", "npm run ci"),
     "ci continuous integration actions workflow workflows pipeline"),
    ("verify",
     ("verify|verifies|verified|verifying|verification|validate|validates|validated"
      "|validating|validation|pre-commit|precommit",
      "the|which|what|all|required|needed checks", "checks do|should|to",
      "sanity check", "sanity-check",
      "before committing|pushing|merging|review|submitting|opening",
      "before i commit|push", "ready to|for merge|review|commit|push",
      "check my|the|this|your change|changes|work|code|fix|patch|branch"),
     ("verify|verifies|verification|check|checks|validate|validation|pre-commit",
      "before committing|pushing|review|merging|submitting"),
     ("pre-commit run", f"{_RUNNERS} check|verify|ci|validate",
      "npm|pnpm|yarn run check|verify|validate", "tox|nox"),
     "verify verification check checks validate pre commit",
     "test lint format typecheck"),
)
"""The vocabulary's table: (name, signals, words, tools, search, meta, related)."""
INTENTS: tuple[Intent, ...] = tuple(_intent(*spec) for spec in _SPECS)
"""The vocabulary, in a fixed order (the order of receipts and of search words)."""

_BY_NAME: Mapping[str, Intent] = MappingProxyType({i.name: i for i in INTENTS})


def _merged(column: int, loose: bool) -> Phrases:
    """Every intent's phrases of one column of :data:`_SPECS` (2: words, 3: tools) in one
    :class:`Phrases`, each tagged with its intent's name."""
    phrases = [(spec[0], p) for spec in _SPECS for p in spec[column]]
    return Phrases.of(*(p for _, p in phrases), loose=loose, tags=[n for n, _ in phrases])


_PATHISH = re.compile(r"\S*/\S*")
_TOOLS = _merged(3, loose=True)
_WORDS = _merged(2, loose=False)


def intent(name: str) -> Intent:
    """The :class:`Intent` named ``name``; KeyError for an unknown name."""
    return _BY_NAME[name]


def prompt_intents(prompt: str) -> dict[str, tuple[str, ...]]:
    """The intents ``prompt`` asks for: intent name -> the phrases that signalled it (in
    text order, lower-cased tokens), in :data:`INTENTS` order. A path-like word
    (``pkg/cmd/pr/create``) signals nothing. A release signalled only by "bump" is the
    ``runtime`` intent's when the prompt names a language version ("bump the Go
    version"): it is not also a release."""
    toks = tokens(_PATHISH.sub(" ", prompt))
    found = {i.name: f for i in INTENTS if (f := i.signals.find(toks))}
    if "runtime" in found and "release" in found and set(found["release"]) <= {
            "bump", "bumps", "bumped", "bumping"}:
        del found["release"]
    return found


def _own_prose(text: str, names: tuple[str, ...]) -> list[str]:
    """The tokens of ``text``, each of ``names`` dropped outside a code span."""
    out: list[str] = []
    for i, part in enumerate(text.split("`")):
        toks = tokens(part)
        out.extend(toks if i % 2 else [t for t in toks if t not in names])
    return out


def entry_intents(text: str, own_names: tuple[str, ...] = ()) -> dict[str, int]:
    """The intents an entry's ``text`` (URLs dropped, :func:`plain`) realises: intent
    name -> 2 when it names one of the intent's tools or commands anywhere, 1 when it
    names one of its words within its first :data:`LEAD_WORDS` tokens; a ``meta``
    intent also takes the strongest of the intents it names (``related`` intents are the
    caller's: :func:`powercontext.core.recall.judge`). In :data:`INTENTS` order.
    ``own_names`` are the repository's own names (its folder's name): outside a code
    span such a name is the project, not a tool ("pytest requires Python >=3.10" in
    pytest's repository), so it realises nothing there."""
    text = plain(text)
    toks = _own_prose(text, own_names) if own_names else tokens(text)
    stems = [_stem(t) for t in toks]
    tools = _TOOLS.tagged(toks, stems)
    words = _WORDS.tagged(toks[:LEAD_WORDS])
    out: dict[str, int] = {}
    for i in INTENTS:
        strength = 2 if i.name in tools else 1 if i.name in words else 0
        for name in i.meta:
            strength = max(strength, out.get(name, 0))
        if strength:
            out[i.name] = strength
    return out


def search_words(names: Sequence[str]) -> tuple[str, ...]:
    """The plain words to search for the intents ``names``, without repeats: each
    intent's own ``search`` words first (its generic words lead its list), then, for a
    meta intent, the words of the intents it names taken in turns (each one's first two,
    then the next two, ...), so the most general words come first whatever a caller
    keeps."""
    words: dict[str, None] = {}
    for name in names:
        i = _BY_NAME[name]
        words.update(dict.fromkeys(i.search))
        lists = [_BY_NAME[m].search for m in i.meta]
        for at in range(0, max((len(x) for x in lists), default=0), 2):
            for x in lists:
                words.update(dict.fromkeys(x[at:at + 2]))
    return tuple(words)
