"""Contract-topic memory candidates: ``pyproject.toml`` (build backend, dependency
manager, Python requirement, pytest configuration), ``Makefile`` targets, ``tox.ini``
environments, ``package.json`` scripts, ``.pre-commit-config.yaml`` and ``scripts/``
entry points become a handful of topic entries (``Build and dependencies:``,
``Python requirement:``/``Node requirement:``, ``Test command:``, ``Verification
commands:``), not one per file (Memory RFC, "Candidate generation and model-free
fallback", "Source changes and incremental evidence")."""

from __future__ import annotations

import configparser
import re
from collections.abc import Iterable, Mapping, Sequence

import attrs

from powercontext.core import repo_docs
from powercontext.core.extraction.parsers import (
    parse_makefile,
    parse_package_json,
    parse_pyproject,
    parse_tox,
)
from powercontext.core.extraction.results import ExtractionResult
from powercontext.core.extraction.sources import (
    CONTRACT_FILES,
    RULE_FILES,
    changed_uris,
    evidence_uris,
    file_uri,
    root_files,
    source_path,
    unique_sources,
)
from powercontext.core.models import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["TOPIC_LABELS", "contract_candidates", "topic_label"]

TOPIC_LABELS = ("Build and dependencies", "Python requirement", "Node requirement",
                "Test command", "Verification commands")
"""The topic prefixes of the contract entries; an entry's label names its topic."""


def topic_label(text: str) -> str | None:
    """The topic label a contract entry's text starts with, or None."""
    head, sep, _ = text.partition(":")
    return head if sep and head in TOPIC_LABELS else None


def _code(s: str) -> str:
    return f"`{s}`"


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


_BACKENDS = {
    "setuptools.build_meta": "setuptools", "setuptools.build_meta:__legacy__": "setuptools",
    "hatchling.build": "Hatchling", "poetry.core.masonry.api": "Poetry (poetry-core)",
    "flit_core.buildapi": "Flit", "pdm.backend": "PDM (pdm-backend)", "maturin": "maturin",
    "scikit_build_core.build": "scikit-build-core", "mesonpy": "meson-python",
    "uv_build": "uv_build", "sipbuild.api": "sip",
}
_PY_MANAGERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("uv", re.compile(r"\buv (?:sync|run|pip|lock|add|venv)\b|\[tool\.uv\]|\buv\.lock\b")),
    ("Poetry", re.compile(r"\bpoetry (?:install|run|add|lock)\b|\[tool\.poetry\]")),
    ("PDM", re.compile(r"\bpdm (?:install|run|sync|add)\b|\[tool\.pdm\]")),
    ("Hatch", re.compile(r"\bhatch (?:run|env|shell)\b|\[tool\.hatch\.envs")),
    ("Pipenv", re.compile(r"\bpipenv (?:install|run|sync)\b")),
    ("Flit", re.compile(r"\bflit install\b")),
    ("pip", re.compile(r"\bpip3? install\b|-m pip install\b|\$\{?PIP\}?\"? install\b")),
)
_NODE_MANAGERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pnpm", re.compile(r"\bpnpm (?:install|i|run|test|add|exec)\b|\bpnpm-lock\.yaml\b")),
    ("yarn", re.compile(r"\byarn (?:install|run|test|add)\b|\byarn\.lock\b")),
    ("bun", re.compile(r"\bbun (?:install|run|test)\b|\bbun\.lockb\b")),
    ("npm", re.compile(r"\bnpm (?:ci|install|run|test|i)\b|\bpackage-lock\.json\b")),
)
_TOOLS = ("pytest", "tox", "nox", "ruff", "mypy", "pyright", "black", "isort", "flake8",
          "pylint", "coverage", "sphinx-build", "mkdocs", "pre-commit", "eslint", "prettier",
          "jest", "vitest", "mocha", "playwright", "tsc", "biome", "cargo", "go")
_VERIFY_TARGETS = ("lint", "types", "typecheck", "type-check", "mypy", "format-check",
                   "fmt-check", "style", "check", "verify", "ci", "coverage", "docs-test",
                   "test-docs", "e2e", "integration", "test-all", "pre-commit", "audit")
_VERIFY_SCRIPTS = ("lint", "typecheck", "type-check", "types", "check", "format:check",
                   "fmt:check", "verify", "ci", "e2e", "test:e2e", "coverage")
_VERIFY_SCRIPT_FILES = ("check", "lint", "format", "typecheck", "coverage", "ci")


def _tools(lines: Iterable[str]) -> tuple[str, ...]:
    found: list[str] = []
    text = " ".join(lines)
    for tool in _TOOLS:
        pattern = rf"(?:^|[\s/;&|(}}]){re.escape(tool)}(?:\s|$|;|\))"
        if tool == "go":
            pattern = r"(?:^|[\s/;&|(])go (?:test|vet)\b"
        elif tool == "cargo":
            pattern = r"(?:^|[\s/;&|(])cargo (?:test|clippy|check|fmt)\b"
        if re.search(pattern, text) and tool not in found:
            found.append(tool)
    return tuple(found)


def _mentions(sources: Iterable[Source], needle: str) -> list[Source]:
    pattern = re.compile(rf"(?<![\w-]){re.escape(needle)}(?![\w-])")
    return [s for s in sources if pattern.search(s.content)]


@attrs.frozen
class _Topic:
    label: str
    kind: str
    body: str
    sources: tuple[Source, ...]

    @property
    def text(self) -> str:
        return f"{self.label}: {self.body}"


def _contract_topics(files: Mapping[str, Source], notes: list[str]) -> list[_Topic]:
    py = mk = tox = pkg = None
    if "pyproject.toml" in files:
        try:
            py = parse_pyproject(files["pyproject.toml"].content)
        except ValueError as exc:
            notes.append(f"pyproject.toml is not valid TOML: {exc}")
    if "Makefile" in files:
        mk = parse_makefile(files["Makefile"].content)
    if "tox.ini" in files:
        try:
            tox = parse_tox(files["tox.ini"].content)
        except (ValueError, configparser.Error) as exc:
            notes.append(f"tox.ini is unreadable: {exc}")
    if "package.json" in files:
        try:
            pkg = parse_package_json(files["package.json"].content)
        except ValueError as exc:
            notes.append(f"package.json is not valid JSON: {exc}")
    tox_src = files.get("tox.ini")
    if tox is None and py is not None and py["tox"] is not None:
        tox, tox_src = py["tox"], files["pyproject.toml"]  # [tool.tox] / legacy_tox_ini
    hooks = (repo_docs.parse_precommit(files[".pre-commit-config.yaml"].content)
             if ".pre-commit-config.yaml" in files else ())
    entry_scripts = {p: s for p, s in files.items() if repo_docs.is_script_path(p)}
    docs = [files[n] for n in (*RULE_FILES, "README.md") if n in files]
    name = (py or {}).get("name") or (pkg or {}).get("name") or "The project"
    # what the developer set-up says, not a user's `pip install NAME` line
    dev_text = {s.source_id: repo_docs.strip_user_installs(s.content, name) for s in docs}
    topics: list[_Topic] = []

    # Build and dependencies.
    if py is not None:
        backend = py["build_backend"]
        parts: list[str] = []
        ev: list[Source] = [files["pyproject.toml"]]
        if backend:
            label = _BACKENDS.get(backend, backend)
            parts.append(f"{name} builds with {label} (build-backend {backend})")
        scanned = [files[n] for n in ("pyproject.toml", "Makefile", "tox.ini") if n in files]
        for manager, pattern in _PY_MANAGERS:
            hits = [s for s in (*scanned, *entry_scripts.values()) if pattern.search(s.content)]
            hits += [s for s in docs if pattern.search(dev_text[s.source_id])]
            if manager == "Hatch" and py["hatch_envs"]:
                hits = [files["pyproject.toml"], *hits]
            if hits:
                where = _join(sorted({source_path(s) or s.source_id for s in hits}))
                parts.append(f"dependencies are managed with {manager} (see {where})")
                ev.extend(hits)
                break
        if parts:
            topics.append(_Topic("Build and dependencies", "fact", "; ".join(parts) + ".",
                                 unique_sources(ev)))
        if py["requires_python"]:
            topics.append(_Topic("Python requirement", "constraint",
                                 f"{name} requires Python {py['requires_python']} "
                                 "(requires-python in pyproject.toml).",
                                 (files["pyproject.toml"],)))
    elif pkg is not None:
        manager = pkg["package_manager"]
        ev = [files["package.json"]]
        if manager is None:
            for candidate, pattern in _NODE_MANAGERS:
                hits = [files["package.json"]] if pattern.search(
                    files["package.json"].content) else []
                hits += [s for s in docs if pattern.search(dev_text[s.source_id])]
                if hits:
                    manager = candidate
                    ev.extend(hits)
                    break
        body = f"{name} is a Node.js package managed with {manager or 'npm'}"
        if "build" in pkg["scripts"]:
            build = _code(pkg["scripts"]["build"])
            body += f"; build with {_code(_run(manager, 'build'))} ({build})"
        topics.append(_Topic("Build and dependencies", "fact", body + ".", unique_sources(ev)))
    if pkg is not None and pkg["node"]:
        topics.append(_Topic("Node requirement", "constraint",
                             f"{name} requires Node.js {pkg['node']} (engines.node in "
                             "package.json).", (files["package.json"],)))

    # Test command.
    test_cmd: str | None = None
    test_ev: list[Source] = []
    detail = ""
    if mk is not None and ("test" in mk or "tests" in mk):
        target = mk["test"] if "test" in mk else mk["tests"]
        test_cmd = f"make {target.name}"
        tools = _tools(target.recipe) or _tools(
            r for p in target.prerequisites if p in mk for r in mk[p].recipe)
        detail = f" ({_join(list(tools))})" if tools else ""
        test_ev.append(files["Makefile"])
    elif pkg is not None and "test" in pkg["scripts"]:
        pm = (pkg["package_manager"] or "npm")
        test_cmd = _run(pm, "test")
        detail = f" ({_code(pkg['scripts']['test'])})"
        test_ev.append(files["package.json"])
    elif "scripts/test" in entry_scripts or "scripts/tests" in entry_scripts:
        script = entry_scripts.get("scripts/test") or entry_scripts["scripts/tests"]
        test_cmd = source_path(script) or "scripts/test"
        tools = _tools(repo_docs.script_lines(script.content))
        detail = f" ({_join(list(tools))})" if tools else ""
        test_ev.append(script)
    elif tox is not None and tox_src is not None and (tox["env_list"] or tox["commands"]):
        test_cmd = "tox"
        detail = f" (environments {', '.join(tox['env_list'])})" if tox["env_list"] else ""
        test_ev.append(tox_src)
    elif py is not None and py["pytest"]:
        test_cmd = "pytest"
        test_ev.append(files["pyproject.toml"])
    if test_cmd is not None:
        body = f"run {_code(test_cmd)}{detail} for routine code changes"
        if py is not None and py["pytest"] and test_cmd != "pytest":
            body += "; pytest is configured in pyproject.toml ([tool.pytest.ini_options]"
            addopts = py["pytest_addopts"]
            body += f", addopts {_code(str(addopts))})" if addopts else ")"
            test_ev.append(files["pyproject.toml"])
        test_ev.extend(_mentions(docs, test_cmd))
        topics.append(_Topic("Test command", "preference", body + ".", unique_sources(test_ev)))

    # Verification commands.
    verify: list[str] = []
    verify_ev: list[Source] = []
    if mk is not None:
        for target in mk.values():
            if target.name not in _VERIFY_TARGETS:
                continue
            tools = _tools(target.recipe)
            deps = [p for p in target.prerequisites
                    if p in _VERIFY_TARGETS or p in ("test", "tests")]
            inner = list(tools) + ([] if tools else deps)
            verify.append(_code(f"make {target.name}") + (f" ({_join(inner)})" if inner else ""))
        if verify:
            verify_ev.append(files["Makefile"])
    if pkg is not None:
        pm = pkg["package_manager"] or "npm"
        scripts = [s for s in pkg["scripts"] if s in _VERIFY_SCRIPTS]
        for s in scripts:
            verify.append(f"{_code(_run(pm, s))} ({_code(pkg['scripts'][s])})")
        if scripts:
            verify_ev.append(files["package.json"])
    for path, script in entry_scripts.items():
        if path.rpartition("/")[2] not in _VERIFY_SCRIPT_FILES:
            continue
        tools = _tools(repo_docs.script_lines(script.content))
        verify.append(_code(path) + (f" ({_join(list(tools))})" if tools else ""))
        verify_ev.append(script)
    if hooks:
        verify.append(f"{_code('pre-commit run --all-files')} ({repo_docs.hook_summary(hooks)})")
        verify_ev.append(files[".pre-commit-config.yaml"])
    if tox is not None and tox_src is not None:
        envs = list(tox["env_list"]) or [e for e in tox["commands"] if e]
        if envs:
            verify.append(f"tox environments {', '.join(envs)}")
            verify_ev.append(tox_src)
    if verify:
        for cmd in re.findall(r"`([^`]+)`", " ".join(verify)):
            verify_ev.extend(_mentions(docs, cmd))
        topics.append(_Topic("Verification commands", "preference",
                             "; ".join(verify) + ".", unique_sources(verify_ev)))
    return topics


def _run(manager: str | None, script: str) -> str:
    manager = manager or "npm"
    if script == "test":
        return f"{manager} test"
    return f"{manager} run {script}"


def _generated_from_evidence(entry: MemoryEntryVersion, label: str,
                             evidence: Mapping[str, Source]) -> bool:
    """True when ``entry`` still holds exactly the text this provider derives from its
    cited Sources: it was not corrected by hand, so replacing it loses nothing."""
    cited = [evidence[r.source_id] for r in entry.sources if r.source_id in evidence]
    files = root_files(cited)
    if not any(n in files for n in CONTRACT_FILES):
        return False
    return any(t.label == label and t.text == entry.text for t in _contract_topics(files, []))


def contract_candidates(
    sources: Sequence[Source],
    current: Sequence[MemoryEntryVersion] = (),
    evidence: Mapping[str, Source] | None = None,
) -> ExtractionResult:
    """Topic entries from the contract files among ``sources`` (root-level file Sources
    named in :data:`CONTRACT_FILES`, with agent instruction files and README.md as
    supporting mentions). ``current`` are the active entries; ``evidence`` maps their
    source ids to the stored Sources. A topic whose text equals an active entry is not
    proposed. It revises the one active entry with the same topic label only when the
    link is certain: that entry's evidence is a file among the candidate's Sources (same
    ``file:`` uri) or a path a Git change in ``sources`` names, and its text is still
    what this provider derives from its cited Sources (a hand-corrected entry is never
    overwritten). Otherwise it is a new entry."""
    files = root_files(sources)
    notes: list[str] = []
    if not any(n in files for n in CONTRACT_FILES):
        return ExtractionResult()
    topics = _contract_topics(files, notes)
    evidence = evidence or {}
    texts = {e.text for e in current}
    changed = changed_uris(sources)
    git_sources = [s for s in sources if s.kind == "git_change"]
    out: list[MemoryEntryInput] = []
    for topic in topics:
        if topic.text in texts:
            continue
        same_label = [e for e in current if topic_label(e.text) == topic.label]
        cand_uris = {u for u in (file_uri(s) for s in topic.sources) if u}
        linked = [e for e in same_label if evidence_uris(e, evidence) & (cand_uris | changed)
                  and _generated_from_evidence(e, topic.label, evidence)]
        if len(linked) == 1 and len(same_label) == 1:
            touching = [g for g in git_sources
                        if evidence_uris(linked[0], evidence) & changed_uris([g])]
            out.append(MemoryEntryInput(topic.kind, topic.text, entry=linked[0],
                                        sources=unique_sources((*topic.sources, *touching))))
        else:
            out.append(MemoryEntryInput(topic.kind, topic.text, sources=topic.sources))
    return ExtractionResult(tuple(out), (), tuple(notes))

