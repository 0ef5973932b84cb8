"""The features of one sentence of a contract document: what it names (commands,
repository paths, tools, conventions, identifiers), what it is about (agent topics),
what it asks (constraint, preference, imperative, description) and whether it refers
back to something it does not name. Pure functions of the text, used by
:func:`powercontext.core.extraction.rule_kinds.judge`."""

from __future__ import annotations

import re

__all__ = [
    "CONSTRAINT",
    "LINK",
    "PROGRAMS",
    "TOOLS",
    "TOPICS",
    "URL",
    "VERBS",
    "WEAK_TOPICS",
    "artifacts",
    "code_spans",
    "is_dependent",
    "leading_command",
    "modality",
    "outside_links",
    "plain_text",
    "strip_opening",
    "topics",
]

# --------------------------------------------------------------------------- text

LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)|!?\[([^\]]+)\]\[[^\]]*\]")
URL = re.compile(r"<?https?://[^\s>)]+>?")


_EMPHASIS = re.compile(r"(?<!\w)[*_]{1,2}(?=\S)|(?<=\S)[*_]{1,2}(?!\w)")
_CODE_SPLIT = re.compile(r"(`[^`]*`)")


def plain_text(text: str) -> str:
    """``text`` without Markdown link targets, images, URLs and emphasis (code spans
    kept): the text features are read from."""
    if "[" in text:
        text = LINK.sub(lambda m: m.group(1) if m.group(1) is not None else (
            m.group(3) or ""), text)
    if "://" in text:
        text = URL.sub(" ", text)
    if "*" in text or "_" in text:
        text = "".join(p if p.startswith("`") else _EMPHASIS.sub("", p)
                       for p in _CODE_SPLIT.split(text))
    return " ".join(text.split())


def outside_links(text: str) -> str:
    return " ".join(URL.sub(" ", LINK.sub(" ", text)).split())


# --------------------------------------------------------------------------- artifacts

PROGRAMS = (
    "make", "npm", "pnpm", "yarn", "npx", "bun", "bunx", "deno", "node", "uv", "uvx", "pip",
    "pip3", "pipx", "poetry", "pdm", "hatch", "tox", "nox", "pytest", "python", "python3",
    "ruff", "mypy", "pyright", "black", "isort", "flake8", "pylint", "pre-commit", "cargo",
    "rustup", "rustc", "go", "gofmt", "golangci-lint", "just", "git", "gh", "docker",
    "tsc", "eslint", "prettier", "biome", "jest", "vitest", "mocha", "playwright",
    "sphinx-build", "mkdocs", "bundle", "rake", "gradle", "./gradlew", "mvn", "dotnet",
    "cmake", "ctest", "bazel", "composer", "phpunit", "mix", "swift", "zig", "coverage",
    "mdbook", "clippy", "rustfmt", "shellcheck", "lerna", "nx", "turbo", "changeset",
    "commitlint", "semantic-release", "maturin", "meson", "ninja", "conda", "mamba",
)
"""Programs whose invocation (in code or after "run") is a command."""
TOOLS = (*PROGRAMS, "clippy", "rustfmt", "gofmt", "vet", "staticcheck", "karma", "dtslint",
         "rollup", "webpack", "vite", "esbuild", "babel", "sphinx", "towncrier", "bandit",
         "pyupgrade", "codespell", "yamllint", "markdownlint", "stylelint", "hypothesis",
         "inline-snapshot", "syrupy", "vcrpy", "pytester", "storybook", "cypress")
"""Development tools whose name alone is a strong hint (\"Format your code with black\")."""
_PROG = "|".join(re.escape(p) for p in sorted(set(PROGRAMS), key=len, reverse=True))
_COMMAND_CODE = re.compile(rf"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:{_PROG}|\./\S+|scripts?/\S+|"
                           r"bin/\S+)(?:\s|$)")
_COMMAND_TEXT = re.compile(
    r"\b(?:run|running|use|using|with|via|execute|invoke|type|call|calling)\s+"
    r"(?:(?:the )?command\s+)?(?:make|just|npm run|pnpm(?: run)?|yarn(?: run)?|bun run|"
    r"uv run|poetry run|pdm run|hatch run|cargo|go (?:test|vet|build|run|generate|mod)|"
    r"tox -e|nox -s|pre-commit run)"
    r"\s+[a-z][\w:\-./]*")
_FILE_EXT = (r"py|pyi|js|jsx|mjs|cjs|ts|tsx|go|rs|java|kt|c|h|cc|cpp|hpp|rb|php|cs|swift|md|"
             r"rst|txt|toml|yaml|yml|json|cfg|ini|lock|sql|sh|html|css|svg|snap|mod|sum|just")
_PATH = re.compile(rf"(?<![\w@/.:\-])(?:\.{{0,2}}/)?(?:[\w.\-]+/)+[\w.\-*]*|(?<![\w/.\-])[\w\-]+"
                   rf"\.(?:{_FILE_EXT})\b")
_KNOWN_FILES = re.compile(r"\b(?:Makefile|justfile|Justfile|CHANGELOG|CHANGES|AUTHORS|"
                          r"CONTRIBUTORS|NEWS|HISTORY|LICENSE|README|AGENTS\.md|CLAUDE\.md|"
                          r"Dockerfile|Cargo\.toml|go\.mod|package\.json|pyproject\.toml|"
                          r"setup\.cfg|tox\.ini|noxfile\.py|lockfile)\b")
_CONVENTIONS = re.compile(
    r"\bPEP[- ]?\d+|conventional commits?|semantic versioning|\bsemver\b|keep a changelog|"
    r"type (?:hints?|annotations?)|\bdocstrings?\b|docstring (?:format|style)|snake_case|"
    r"camelCase|PascalCase|kebab-case|SCREAMING_SNAKE|imperative (?:mood|sentence)|"
    r"signed-off-by|\bDCO\b|co-authored-by|(?:google|numpy|sphinx|airbnb|standard|node)[- ]"
    r"style|style guide|\bchangelog (?:entry|fragment)|\bnews fragment|\bf-strings?\b|"
    r"(?:absolute|relative) imports?|\bline length\b|\d+ characters|\bspaces? for indent|"
    r"\btabs\b|\bUTF-8\b|\blicense headers?\b|\bcopyright headers?\b", re.IGNORECASE)
_AMBIGUOUS_TOOLS = frozenset({"make", "just", "go", "node", "python", "python3", "git", "gh",
                              "mix", "swift", "bundle", "coverage", "changeset", "vet", "babel",
                              "turbo", "nx", "rake", "black", "biome"})
_TOOL_SET = frozenset(t.lower() for t in TOOLS) - _AMBIGUOUS_TOOLS
_WORD = re.compile(r"(?<![\w/.\-])[A-Za-z][\w\-]*(?![\w/])")
_TOOL_CONTEXT = re.compile(r"(?<![\w\-/.])(?:black(?= formatter| \(|\W*$|,| and| to| for| "
                           r"with| via| through| is)|coverage(?= report| run|\.py))(?![\w\-/])",
                           re.IGNORECASE)


def _tool_words(plain: str) -> list[str]:
    """The development tools ``plain`` names (a word among :data:`TOOLS`; ``black`` and
    ``coverage`` only where they name the tool)."""
    out = [w for w in _WORD.findall(plain) if w.lower() in _TOOL_SET]
    if "black" in plain.lower() or "coverage" in plain.lower():
        out += [m.group(0) for m in _TOOL_CONTEXT.finditer(plain)]
    return out


def code_spans(text: str) -> list[str]:
    return [s.strip() for s in re.findall(r"`([^`]+)`", text) if s.strip()]


_LEADING_COMMAND = re.compile(
    rf"^(?:{_PROG})(?: (?!-(?:\s|$)|\u2014)[^\s:`]+)*(?=\s*(?::\s|\s-\s|\s\u2014\s|$))")
"""A line that starts with a command written without code marks, up to its
description: ``npm run build: Build the project``, ``make lint - run the linters``."""


def leading_command(text: str) -> str | None:
    """The command a line starts with, written without code marks, or None."""
    m = _LEADING_COMMAND.match(plain_text(text))
    return m.group(0) if m and " " in m.group(0) else None


def artifacts(text: str) -> dict[str, tuple[str, ...]]:
    """What ``text`` names, by class: ``command``, ``path``, ``tool``, ``convention``,
    ``identifier`` (a one-word code span that is none of the others) and ``linked``
    (repository paths that links point to). URLs are not read; link texts are."""
    plain = plain_text(text)
    out: dict[str, list[str]] = {"command": [], "path": [], "tool": [], "convention": [],
                                 "identifier": []}
    for span in code_spans(plain):
        if _COMMAND_CODE.match(span):
            out["command"].append(span)
        elif _PATH.fullmatch(span.rstrip("/") + ("/" if span.endswith("/") else "")) or \
                (_PATH.search(span) and " " not in span) or _KNOWN_FILES.fullmatch(span):
            out["path"].append(span)
        elif re.fullmatch(r"[\w.:\-/\[\]@<>#]+", span) and not re.fullmatch(r"[\d.]+", span):
            out["identifier"].append(span)
    out["linked"] = []
    for m in LINK.finditer(text):
        target = (m.group(2) or "").split("#", 1)[0]
        if target and "://" not in target and not target.startswith(("mailto:", "#")) \
                and re.fullmatch(r"[\w.\-/]+", target):
            out["linked"].append(target)
    bare = re.sub(r"`[^`]+`", " ", plain)
    out["command"] += [m.group(0) for m in _COMMAND_TEXT.finditer(bare)]
    lead = _LEADING_COMMAND.match(plain)
    if lead and " " in lead.group(0):
        out["command"].append(lead.group(0))
    for m in _PATH.finditer(bare):
        path = m.group(0).rstrip(".,;:)")
        pathlike = (path.endswith("/") and len(path) > 2) or path.count("/") >= 2 or bool(
            re.search(rf"\.(?:{_FILE_EXT})$", path)) or path.startswith(("./", "../"))
        if pathlike and not path.startswith(("e.g", "i.e")):
            out["path"].append(path)
    out["path"] += _KNOWN_FILES.findall(bare)
    out["tool"] += _tool_words(plain)
    out["convention"] += [m.group(0) for m in _CONVENTIONS.finditer(plain)]
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items() if v}


# --------------------------------------------------------------------------- topics

TOPICS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE) for name, pattern in (
        ("test", r"\btests?\b|\btesting\b|\bsnapshots?\b|\bfixtures?\b|\bcoverage\b|"
                 r"\bcode paths\b|\bassert(?:ions?)?\b|\bxfail\b|\bflaky\b"),
        ("lint", r"\blint(?:s|er|ers|ing)?\b|static analysis|\bwarnings\b"),
        ("format", r"\bformat(?:s|ting|ter|ted)?\b|\bindent(?:ation|ed)?\b|\bwhitespace\b|"
                   r"\bline length\b|\btrailing\b"),
        ("types", r"\btype[- ]?check(?:s|er|ing)?\b|\btype[- ]safe(?:ty)?\b|\btyping\b|"
                  r"\btype (?:hints?|annotations?|errors?)\b|\btypes?\b"),
        ("build", r"\bbuild(?:s|ing)?\b|\bcompil(?:e|es|ing|ation)\b|\bbundl(?:e|es|ing)\b|"
                  r"\bbinary\b|\bartifacts?\b"),
        ("deps", r"\bdependenc(?:y|ies)\b|\block ?files?\b|\bpin(?:s|ned)?\b|\binstall"
                 r"(?:s|ed|ing)?\b|\bvirtual ?env(?:ironment)?s?\b|\bvenv\b|\btoolchain\b|"
                 r"\bprerequisites?\b|\bpackages?\b|\bworkspace\b"),
        ("commit", r"\bcommit(?:s|ted|ting)?\b|\bsquash(?:ed)?\b|\brebas(?:e|ing)\b|"
                   r"\bsign[- ]off\b|\bco-?authors?\b|\bbranch(?:es)?\b|\bforce[- ]push|"
                   r"\bpush(?:ed|ing)?\b|\buncommitted\b|\bunstaged\b|\btitles?\b|"
                   r"\b(?:small|focused|atomic|self-contained|one (?:topic|change|concern))\b"
                   r"[^.;]{0,30}\b(?:pull requests?|PRs?|changes?)\b|\b(?:pull requests?|PRs?)"
                   r"\b[^.;]{0,30}\b(?:small|focused|atomic|one (?:topic|change|concern))\b"),
        ("workflow", r"\bpull requests?\b|\bPRs?\b"),
        ("style", r"\bcode style\b|\bstyle\b|\bconventions?\b|\bidiomatic\b|\bnaming\b|"
                  r"\bnamed?\b|\brenam(?:e|ing)\b|\breadab(?:le|ility)\b|\bconsistent\b|"
                  r"\bsyntax\b|\bimports?\b|\bexports?\b|\bdestructur\w*|\bsemicolons?\b|"
                  r"\bquotes?\b"),
        ("docs", r"\bdocstrings?\b|\bdocumentation\b|\bdocs\b|\bREADME\b|\bchangelog\b|"
                 r"\bcomments?\b|\bexamples?\b|\bmanual pages?\b|\bman ?pages?\b"),
        ("compat", r"\bbackwards?[- ]compatib\w*|\bbreaking\b|\bnon-breaking\b|"
                   r"\bdeprecat\w*|\bpublic API\b|\bAPIs?\b|\bmigrations?\b|\bbehaviou?r\b|"
                   r"\bdefaults?\b|\bparameters?\b"),
        ("generated", r"\bgenerat(?:e|ed|es|ing)\b|\bby hand\b|\bauto-?generated\b|"
                      r"\bregenerat\w*"),
        ("versions", r"\b(?:python|node(?:\.js)?|rust|go|java|ruby|php)\s+v?\d+(?:\.\d+)*\+?|"
                     r"\bMSRV\b|minimum supported|\bstable rust\b"),
        ("ci", r"\bCI\b|\bcontinuous integration\b|\bpre-commit\b|\bhooks?\b|\bchecks?\b"),
        ("placement", r"\b(?:put|place|goes?|go|belongs?|lives?|live|move|keep|add)\b"
                      r"[^.;]{0,40}\b(?:in|into|under|inside|alongside|next to)\b|"
                      r"\bdirector(?:y|ies)\b|\bfolders?\b|\bmodules?\b|\bfiles?\b"),
    )
}
"""Agent topics (build, test, lint, format, types, dependencies, commits, style and
naming, docs, compatibility, generated files, toolchain versions, CI, file
placement)."""
WEAK_TOPICS = frozenset({"docs", "placement", "compat", "ci", "workflow"})
"""Topics too general to make an instruction specific on their own ("Improve the
documentation", "Check the files")."""


def topics(text: str, *, plain: bool = False) -> tuple[str, ...]:
    """The agent topics ``text`` is about (see :data:`TOPICS`); ``plain``: ``text`` is
    already :func:`plain_text`."""
    flat = text if plain else plain_text(text)
    return tuple(name for name, rx in TOPICS.items() if rx.search(flat))


# --------------------------------------------------------------------------- modality

_NOT_NEEDED = re.compile(r"\b(?:do not|don't|does not|doesn't|need not|needn't|not) "
                         r"(?:need|required|necessary)\b|\bno need\b|\bunnecessary\b|"
                         r"\boptional\b", re.IGNORECASE)
CONSTRAINT = re.compile(
    r"(?<!can )(?<!could )(?<!will )(?<!would )(?<!may )(?<!might )\b(?:never|always)\b|"
    r"\b(?:must|shall|required|forbidden|not allowed|mandatory|only use|"
    r"is prohibited|under no circumstances|needs? to|have to|has to|needs an?|"
    r"you(?:'ll| will)? need)\b|"
    r"(?:^|[,;:\u2014(]|\s-\s|\b(?:and|but|or|please|so|then)\b)\s*(?:do not|don't)\b",
    re.IGNORECASE)
_CONSTRAINT_START = re.compile(r"^(?:do not|don't|ensure|make sure|be sure to|never|always)\b",
                               re.IGNORECASE)
_PREFERENCE = re.compile(
    r"\b(?:prefer|prefers|preferred|should|shouldn't|avoid|recommended|recommend|try to|"
    r"ideally|favou?r|favou?ring|better to|encouraged?)\b", re.IGNORECASE)
VERBS = frozenset((
    "add", "adopt", "align", "always", "annotate", "apply", "ask", "attempt", "avoid",
    "base", "be", "begin", "build", "bump", "call", "catch", "change", "check", "choose",
    "clean", "clear", "clone", "commit", "compile", "configure", "confirm", "consider",
    "copy", "create", "declare", "define", "delete", "describe", "destructure", "disable",
    "do", "document", "don't", "download", "edit", "enable", "ensure", "escape", "execute",
    "explain", "export", "extend", "extract", "favor", "favour", "fetch", "fill", "fix",
    "follow", "fork", "format", "generate", "get", "give", "go", "handle", "import",
    "include", "indent", "inline", "inspect", "install", "invoke", "keep", "label", "leave",
    "let", "limit", "link", "lint", "list", "look", "make", "mark", "memoize", "merge",
    "migrate", "mock", "move", "name", "never", "note", "open", "pass", "pin", "place",
    "post", "prefer", "prefix", "provide", "publish", "pull", "push", "put", "raise",
    "read", "rebase", "record", "refactor", "regenerate", "register", "release", "remember",
    "remove", "rename", "reorder", "replace", "report", "request", "require", "reset",
    "resolve", "restart", "return", "reuse", "review", "rewrite", "run", "sanitize", "save",
    "search", "see", "select", "separate", "set", "setup", "share", "sign", "skip", "sort",
    "specify", "split", "squash", "start", "stick", "stop", "submit", "switch", "tag",
    "take", "target", "test", "throw", "try", "type-check", "typecheck", "uncheck",
    "update", "upgrade", "use", "validate", "verify", "wait", "watch", "wrap", "write",
))
"""Verbs that start an instruction."""
_LEAD_CLAUSE = re.compile(r"^(?:if|when|whenever|before|after|once|unless|while|for|in|on|"
                          r"to|as|where|until|since)\b[^,;:]{0,140},\s*", re.IGNORECASE)


_PARENS = re.compile(r"\s*\([^()]*\)")
_OPENER = re.compile(r"^(?:please|also|then|finally|first|next|now|additionally|afterwards|"
                     r"otherwise|optionally|simply|just)\b,?\s*", re.IGNORECASE)
_PLEASE = re.compile(r"^(?:please|also|then)\s+", re.IGNORECASE)


def strip_opening(text: str, *, plain: bool = False) -> str:
    """The sentence from its main clause on: without parentheses, an opening adverb
    ("Please", "Then", "Finally") and up to two leading subordinate clauses ("If you
    touch the parser, ..."). ``plain``: ``text`` is already :func:`plain_text`."""
    s = _PARENS.sub("", text if plain else plain_text(text)).strip(" ([*_")
    s = _OPENER.sub("", s)
    for _ in range(2):
        s = _LEAD_CLAUSE.sub("", s, count=1)
    return _PLEASE.sub("", s)


_NOUN_SUBJECT = re.compile(r"^\S+ \S+ (?:are|is|was|were|should|must|will|can|may|have|has|"
                           r"live|lives|go|goes|follow|follows|need|needs|run|runs)\b",
                           re.IGNORECASE)
"""A clause like "Pull requests are ..." or "Test files live ...": a noun subject, not an
instruction, though its first word is a verb."""


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")


def modality(text: str) -> str:
    """``constraint``, ``preference``, ``imperative`` or ``description`` (see the module
    docstring) of a sentence, or the strongest of a few joined ones; "you do not need
    to" is not a prohibition and "does not" describes."""
    plain = plain_text(text).replace("’", "'")
    neutral = _NOT_NEEDED.sub(" ", plain)
    openings = [strip_opening(s, plain=True) for s in _SENTENCE_BREAK.split(neutral)]
    if CONSTRAINT.search(neutral) or any(_CONSTRAINT_START.match(o) for o in openings):
        return "constraint"
    if _PREFERENCE.search(neutral):
        return "preference"
    for opening in openings:
        for k, clause in enumerate(re.split(r"[:;]\s+", opening)):
            main = strip_opening(clause, plain=True)
            first = main.split(" ", 1)[0].strip("`*_\"'")
            if (k == 0 or first[:1].islower()) and first.lower() in VERBS \
                    and len(clause.split()) >= 2 and not _NOUN_SUBJECT.match(main):
                return "imperative"
    if re.match(r"^To [a-z]+\b[^:]*:\s*`", plain):
        return "imperative"  # "To run one test: `cargo test name`"
    return "description"


_BACKREF_START = re.compile(
    r"^\W*(?:this|that|these|those|it|its|they|them|such|otherwise|instead|of course|"
    r"for (?:example|instance)|e\.g\.|i\.e\.|as (?:mentioned|stated|described|noted|shown|"
    r"explained)|the above|the same|both|either|neither|in (?:this|that|which|such) case|"
    r"in other words|that's|thus|therefore|hence|however|but|or|and|so|also|"
    r"(?:requires|needs|means|implies)\b)\b", re.IGNORECASE)
_BACKREF_INSIDE = re.compile(
    r"\b(?:these|those)\s+(?:are|is|were|will|should|must|can|have|need)\b|"
    r"\b(?:these|those)\s+(?:\w+\s)?\w+s\b|"
    r"\b(?:either|both|said)\s+(?:\w+\s)?(?:files?|commands?|steps?|values?|"
    r"options?|settings?|ones?|rules?|guidelines?|items?|tools?|changes?|instructions?|"
    r"checks?|director(?:y|ies)|folders?|scripts?|packages?|lines?|labels?|fields?|"
    r"versions?|things?|cases?)\b|"
    r"^\W*(?:please\s+)?(?:modify|update|edit|run|change|use|check|delete|remove|fix|"
    r"install|follow|call|invoke|regenerate|write)\s+(?:it|them|these|those)\b|"
    r"\bmake sure (?:these|those|they|it)\b|\b(?:this|that) means\b|"
    r"\b(?:the|a)\s+(?:\w+\s){0,2}above\b|"
    r"\b\w+ above\b(?!\s*(?:the|all|\d))", re.IGNORECASE)


_SELF_REFERENCE = re.compile(
    r"^\W*this (?:is an? |repo\b|repository\b|project\b|codebase\b|code base\b|package\b|"
    r"crate\b|module\b|library\b|monorepo\b|workspace\b|file\b|document\b|guide\b)",
    re.IGNORECASE)


def is_dependent(sentence: str) -> bool:
    """True when ``sentence`` only makes sense after the one before it: it starts with
    a back reference ("This", "Of course", "For example", "Requires ...", a lowercase
    continuation) or refers to something it does not name ("these files", "either
    value", "Update it when ...", "the environments above"). "This repository ..." and
    "This is a ..." name the document's own subject: not dependent."""
    plain = plain_text(sentence)
    if _SELF_REFERENCE.match(plain):
        return False
    lower_start = bool(re.match(r"^\(?[a-z]", plain)) and not _LEADING_COMMAND.match(plain)
    return bool(_BACKREF_START.match(plain) or _BACKREF_INSIDE.search(plain)
                or lower_start or plain.lower().endswith(" instead."))


