"""Pure readers of a repository's contract documents (Memory RFC, "Source changes and
incremental evidence": bootstrap reads the bounded Sources of the operating contract):
sentences, plain imperative rules (for user notes), tox settings inside
``pyproject.toml``, ``.pre-commit-config.yaml`` hooks, and the ``scripts/`` entry points
the documents name. Markdown and reStructuredText are read into blocks by
:mod:`powercontext.core.doc_blocks`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "HOOK_ROLES",
    "SCRIPT_NAMES",
    "hook_summary",
    "is_imperative_rule",
    "is_script_path",
    "parse_precommit",
    "pyproject_tox",
    "script_lines",
    "script_mentions",
    "sentences",
    "strip_user_installs",
]

SCRIPT_NAMES = ("test", "tests", "check", "lint", "format", "typecheck", "coverage", "ci",
                "install", "bootstrap", "setup", "build", "docs")
"""The ``scripts/<name>`` entry points bootstrap reads when a document names them."""

_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "Mr.", "Dr.", "No.")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_])")


def sentences(text: str) -> list[str]:
    """``text`` split into sentences at ``.``/``!``/``?`` followed by a capital, a digit
    or inline code; abbreviations (e.g., i.e., etc.) do not end a sentence."""
    out: list[str] = []
    for piece in _SENTENCE_END.split(text):
        if out and out[-1].endswith(_ABBREVIATIONS):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]


_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:run|use|keep|write|add|format|lint|follow|document|update|commit"
    r"|sign|rebase|squash|test|check|ensure|make sure|put|place|name|pin|mark|target"
    r"|prefix|install|regenerate|bump|include|annotate|tag|separate|limit|stick to|wrap"
    r"|split|build|type-check|typecheck|execute|invoke|call|leave|remove|delete|open a pull"
    r"|base|branch off|set up|configure|regenerate|record)\b[^:]*\S",
    re.IGNORECASE)


def is_imperative_rule(sentence: str) -> bool:
    """True for a plain imperative instruction of a development contract ("Run `pnpm
    test` before every commit.", "Use tabs for Makefile recipes."): it starts with one
    of the contract verbs, has at least four words and is not a lead-in ending in ``:``.
    Workflow chatter ("Fork the repository", "See the docs") does not count."""
    s = re.sub(r"^[*_`]+|[*_]+$", "", sentence.strip())
    if s.endswith(":") or len(s.split()) < 4:
        return False
    return _IMPERATIVE.match(s) is not None


def pyproject_tox(data: dict[str, Any]) -> str | dict[str, Any] | None:
    """The tox settings of a parsed ``pyproject.toml``: the ``legacy_tox_ini`` string
    (tox.ini syntax), or the native ``[tool.tox]`` table as ``{"env_list": (...),
    "commands": {env: (command, ...)}}`` (``""`` is the base ``env_run_base``), or None."""
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    tox = tool.get("tox") if isinstance(tool, dict) else None
    if not isinstance(tox, dict):
        return None
    legacy = tox.get("legacy_tox_ini")
    if isinstance(legacy, str):
        return legacy
    envs = tox.get("env_list") or tox.get("envlist") or ()
    env_list = tuple(str(e) for e in envs) if isinstance(envs, list) else ()
    commands: dict[str, tuple[str, ...]] = {}

    def cmds(table: Any) -> tuple[str, ...]:
        raw = table.get("commands") if isinstance(table, dict) else None
        if not isinstance(raw, list):
            return ()
        return tuple(" ".join(str(a) for a in c) if isinstance(c, list) else str(c) for c in raw)

    if isinstance(tox.get("env_run_base"), dict):
        commands[""] = cmds(tox["env_run_base"])
    env = tox.get("env")
    for name, table in (env.items() if isinstance(env, dict) else ()):
        commands[str(name)] = cmds(table)
    return {"env_list": env_list, "commands": commands}


_HOOK_ID = re.compile(r"^\s*-?\s*id:\s*['\"]?([A-Za-z0-9_.\-]+)")


def parse_precommit(text: str) -> tuple[str, ...]:
    """The hook ids of a ``.pre-commit-config.yaml`` in file order, without duplicates
    (a line reader for ``- id: NAME``; no YAML library)."""
    ids: list[str] = []
    for line in text.splitlines():
        m = _HOOK_ID.match(line)
        if m and m.group(1) not in ids:
            ids.append(m.group(1))
    return tuple(ids)


_SCRIPT = re.compile(r"(?<![\w/.\-])(?:\./)?scripts/([A-Za-z0-9_\-]+)(?:\.sh)?(?![\w/.\-])")


def script_mentions(text: str) -> tuple[str, ...]:
    """The ``scripts/<name>`` paths ``text`` names (``scripts/test``, ``./scripts/lint``)
    whose name is one of :data:`SCRIPT_NAMES`, in order of first mention."""
    out: list[str] = []
    for m in _SCRIPT.finditer(text):
        name = m.group(1)
        path = m.group(0).removeprefix("./")
        if name in SCRIPT_NAMES and path not in out:
            out.append(path)
    return tuple(out)


def strip_user_installs(text: str, name: str | None) -> str:
    """``text`` without the lines that install the project itself for a user (``pip
    install NAME``, ``uv add NAME``, ``pnpm add NAME``, ...): such a line says how to use
    the package, not how its dependencies are managed."""
    if not name:
        return text
    pkg = "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]", name))
    user = re.compile(
        r"(?i)\b(?:pip3?|python3? -m pip|uv pip|pipx) install\s+(?:-U\s+|--upgrade\s+)?"
        rf"[\"']?{pkg}(?:\[[\w,\-]*\])?(?:[=<>~!]=?[\w.*]+)?[\"']?(?=[\s`]|$)"
        rf"|\b(?:uv|poetry|pdm|pnpm|yarn|bun) add\s+{pkg}\b|\bnpm (?:install|i)\s+{pkg}\b")
    return "\n".join(line for line in text.splitlines() if not user.search(line))


def is_script_path(path: str) -> bool:
    """True for a ``scripts/<name>`` entry point path bootstrap reads."""
    return script_mentions(path) == (path,)


def script_lines(content: str) -> list[str]:
    """The command lines of a shell script (no blank lines, no comments, no shebang)."""
    return [ln for ln in content.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


HOOK_ROLES = (
    ("format", ("black", "isort", "ruff-format", "prettier", "autopep8", "yapf", "gofmt",
                "rustfmt", "clang-format", "biome-format")),
    ("lint", ("ruff", "ruff-check", "flake8", "pylint", "eslint", "biome", "biome-lint",
              "shellcheck", "markdownlint", "yamllint", "pyupgrade", "bandit")),
    ("types", ("mypy", "pyright", "tsc")),
)


def hook_summary(hooks: Sequence[str]) -> str:
    """``format: black, isort; lint: flake8; other hooks: ...`` for pre-commit hook ids."""
    parts: list[str] = []
    named: set[str] = set()
    for role, ids in HOOK_ROLES:
        these = [h for h in hooks if h in ids]
        if these:
            parts.append(f"{role}: {', '.join(these)}")
            named.update(these)
    rest = [h for h in hooks if h not in named][:8]
    if rest:
        parts.append(f"{'other ' if parts else ''}hooks: {', '.join(rest)}")
    return "; ".join(parts)
