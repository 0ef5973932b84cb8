"""The contract topics of a repository: a handful of entries derived mechanically from its
build and tool configuration (``Build and dependencies:``, ``Python requirement:``,
``Node requirement:``, ``Rust requirement:``, ``Go requirement:``, ``Test command:``,
``Verification commands:``), each citing the files it was read from (Memory RFC,
"Candidate generation and model-free fallback": the deterministic adapter for known
material). Nothing is run: files are parsed (:mod:`.parsers`).

The test command is the one the project's runner names (Makefile, package.json,
justfile, ``scripts/test``, tox, nox, pytest configuration, else the toolchain's own
``cargo test``/``go test ./...``); when a contributor guide names a quicker targeted
run (``uv run pytest path/to/test.py::test_name``), it is stored beside it.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from powercontext.core import doc_blocks, repo_docs
from powercontext.core.extraction.parsers import (
    MakeTarget,
    parse_cargo,
    parse_gomod,
    parse_justfile,
    parse_makefile,
    parse_noxfile,
    parse_package_json,
    parse_pyproject,
    parse_setup_cfg,
    parse_tox,
)
from powercontext.core.extraction.sentence_features import leading_command
from powercontext.core.extraction.sources import (
    README_FILES,
    RULE_FILES,
    source_path,
    unique_sources,
)
from powercontext.core.models import Source

__all__ = ["Topic", "contract_topics", "quick_test_command"]

JUSTFILES = ("justfile", "Justfile", ".justfile")


@attrs.frozen
class Topic:
    """One contract topic: its label, entry kind, body and the Sources it cites."""

    label: str
    kind: str
    body: str
    sources: tuple[Source, ...]

    @property
    def text(self) -> str:
        return f"{self.label}: {self.body}"


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
          "pylint", "coverage", "sphinx-build", "mkdocs", "mdbook", "pre-commit", "eslint",
          "prettier", "jest", "vitest", "mocha", "playwright", "tsc", "biome", "shellcheck",
          "golangci-lint", "gofmt", "cargo", "go")
_VERIFY_TARGETS = ("lint", "types", "typecheck", "type-check", "mypy", "format", "fmt",
                   "format-check", "fmt-check", "style", "check", "verify", "ci", "clippy",
                   "coverage", "docs-test", "test-docs", "e2e", "integration", "test-all",
                   "pre-commit", "audit")
_VERIFY_SCRIPTS = ("lint", "typecheck", "type-check", "types", "check", "format", "fmt",
                   "format:check", "fmt:check", "verify", "ci", "e2e", "test:e2e", "coverage")
_VERIFY_SCRIPT_FILES = ("check", "lint", "format", "typecheck", "coverage", "ci")
_TEST_SESSIONS = ("tests", "test")
#: Tools that run a test suite: a recipe other than ``test`` that runs one is another
#: suite (``acceptance: go test -tags acceptance ./acceptance``), kept with the checks.
_TEST_RUNS = frozenset(("go test", "cargo test", "cargo nextest", "pytest", "tox", "nox",
                        "jest", "vitest", "mocha", "rspec", "phpunit", "ctest"))


def _tools(lines: Iterable[str]) -> tuple[str, ...]:
    """The development tools ``lines`` run, in :data:`_TOOLS` order (``cargo`` and
    ``go`` with their subcommand: ``cargo clippy``, ``go test``)."""
    found: list[str] = []
    text = " ".join(lines)
    for tool in _TOOLS:
        if tool in ("go", "cargo"):
            sub = (r"go (test|vet|build|generate)\b" if tool == "go" else
                   r"cargo (?:\+\S+ )?(l?(?:test|clippy|check|fmt|build|nextest|doc|update|"
                   r"udeps|outdated|deny|audit)\w*)\b")
            for m in re.finditer(rf"(?:^|[\s/;&|(]){sub}", text):
                name = f"{tool} {m.group(1)}"
                if name not in found:
                    found.append(name)
            continue
        pattern = rf"(?:^|[\s/;&|(}}]){re.escape(tool)}(?:\s|$|;|\))"
        if re.search(pattern, text) and tool not in found:
            found.append(tool)
    return tuple(found)


def _mentions(sources: Iterable[Source], needle: str) -> list[Source]:
    pattern = re.compile(rf"(?<![\w-]){re.escape(needle)}(?![\w-])")
    return [s for s in sources if pattern.search(s.content)]


def _run(manager: str | None, script: str) -> str:
    manager = manager or "npm"
    if script == "test":
        return f"{manager} test"
    return f"{manager} run {script}"


def _recipe_detail(target: MakeTarget, recipes: Mapping[str, MakeTarget]) -> str:
    """`` (tools)`` for a Makefile target or justfile recipe: the tools its lines run,
    else those of its prerequisites, else its one dependency call (``(`watch 'x'`)``)."""
    tools = _tools(target.recipe) or _tools(
        r for p in target.prerequisites if p in recipes for r in recipes[p].recipe
        if "{{" not in r)
    if tools:
        return f" ({_join(list(tools))})"
    if target.calls:
        return f" ({'; '.join(_code(c) for c in target.calls)})"
    return ""


@attrs.frozen
class _Parsed:
    py: dict[str, Any] | None
    cfg: dict[str, Any] | None
    mk: dict[str, MakeTarget] | None
    just: tuple[str, dict[str, MakeTarget]] | None
    tox: dict[str, Any] | None
    tox_src: Source | None
    nox: dict[str, Any] | None
    pkg: dict[str, Any] | None
    cargo: dict[str, Any] | None
    gomod: dict[str, Any] | None


def _parse(files: Mapping[str, Source], notes: list[str]) -> _Parsed:
    def read(name: str, parser: Any, what: str) -> Any:
        if name not in files:
            return None
        try:
            return parser(files[name].content)
        except (ValueError, SyntaxError, configparser.Error) as exc:
            notes.append(f"{name} is {what}: {exc}")
            return None

    py = read("pyproject.toml", parse_pyproject, "not valid TOML")
    cfg = read("setup.cfg", parse_setup_cfg, "unreadable")
    tox = read("tox.ini", parse_tox, "unreadable")
    tox_src = files.get("tox.ini")
    if tox is None and py is not None and py["tox"] is not None:
        tox, tox_src = py["tox"], files["pyproject.toml"]  # [tool.tox] / legacy_tox_ini
    if tox is None and cfg is not None and cfg["tox"] is not None:
        tox, tox_src = cfg["tox"], files["setup.cfg"]
    just_name = next((n for n in JUSTFILES if n in files), None)
    return _Parsed(
        py, cfg, parse_makefile(files["Makefile"].content) if "Makefile" in files else None,
        (just_name, parse_justfile(files[just_name].content)) if just_name else None,
        tox, tox_src, read("noxfile.py", parse_noxfile, "not valid Python"),
        read("package.json", parse_package_json, "not valid JSON"),
        read("Cargo.toml", parse_cargo, "not valid TOML"),
        read("go.mod", parse_gomod, "unreadable"))


def contract_topics(files: Mapping[str, Source], notes: list[str]) -> list[Topic]:
    """The contract topics of the contract files ``files`` (path -> Source); a file
    that does not parse adds a note to ``notes`` and gives nothing."""
    p = _parse(files, notes)
    hooks = (repo_docs.parse_precommit(files[".pre-commit-config.yaml"].content)
             if ".pre-commit-config.yaml" in files else ())
    entry_scripts = {path: s for path, s in files.items() if repo_docs.is_script_path(path)}
    docs = [files[n] for n in (*RULE_FILES, *README_FILES) if n in files]
    name = ((p.py or {}).get("name") or (p.cfg or {}).get("name") or (p.pkg or {}).get("name")
            or (p.cargo or {}).get("name") or (p.gomod or {}).get("module") or "The project")
    # what the developer set-up says, not a user's `pip install NAME` line
    dev_text = {s.source_id: repo_docs.strip_user_installs(s.content, name) for s in docs}
    topics = _build_topics(p, files, docs, dev_text, entry_scripts, name)
    test = _test_topic(p, files, docs, entry_scripts)
    if test is not None:
        topics.append(test)
    verify = _verify_topic(p, files, docs, entry_scripts, hooks)
    if verify is not None:
        topics.append(verify)
    return topics


def _build_topics(p: _Parsed, files: Mapping[str, Source], docs: Sequence[Source],
                  dev_text: Mapping[str, str], entry_scripts: Mapping[str, Source],
                  name: str) -> list[Topic]:
    topics: list[Topic] = []
    if p.py is not None or p.cfg is not None:
        backend = (p.py or {}).get("build_backend")
        parts: list[str] = []
        ev: list[Source] = [files[n] for n in ("pyproject.toml", "setup.cfg") if n in files]
        if backend:
            parts.append(f"{name} builds with {_BACKENDS.get(backend, backend)} "
                         f"(build-backend {backend})")
        elif p.cfg is not None:
            parts.append(f"{name} builds with setuptools (setup.cfg)")
        scanned = [files[n] for n in ("pyproject.toml", "Makefile", "tox.ini", "noxfile.py")
                   if n in files]
        for manager, pattern in _PY_MANAGERS:
            hits = [s for s in (*scanned, *entry_scripts.values()) if pattern.search(s.content)]
            hits += [s for s in docs if pattern.search(dev_text[s.source_id])]
            if manager == "Hatch" and (p.py or {}).get("hatch_envs"):
                hits = [files["pyproject.toml"], *hits]
            if hits:
                where = _join(sorted({source_path(s) or s.source_id for s in hits}))
                parts.append(f"dependencies are managed with {manager} (see {where})")
                ev.extend(hits)
                break
        if parts:
            topics.append(Topic("Build and dependencies", "fact", "; ".join(parts) + ".",
                                unique_sources(ev)))
        if (p.py or {}).get("requires_python"):
            topics.append(Topic("Python requirement", "constraint",
                                f"{name} requires Python {p.py['requires_python']} "  # type: ignore[index]
                                "(requires-python in pyproject.toml).",
                                (files["pyproject.toml"],)))
        elif (p.cfg or {}).get("python_requires"):
            topics.append(Topic("Python requirement", "constraint",
                                f"{name} requires Python {p.cfg['python_requires']} "  # type: ignore[index]
                                "(python_requires in setup.cfg).", (files["setup.cfg"],)))
    elif p.pkg is not None:
        manager = p.pkg["package_manager"]
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
        if "build" in p.pkg["scripts"]:
            build = _code(p.pkg["scripts"]["build"])
            body += f"; build with {_code(_run(manager, 'build'))} ({build})"
        topics.append(Topic("Build and dependencies", "fact", body + ".", unique_sources(ev)))
    elif p.cargo is not None:
        body = f"{name} is a Rust crate built with Cargo"
        if p.cargo["edition"]:
            body += f" (edition {p.cargo['edition']})"
        if len(p.cargo["members"]) > 1 or p.cargo["members"][:1] not in ((), (".",)):
            body += f"; workspace members {', '.join(p.cargo['members'])}"
        topics.append(Topic("Build and dependencies", "fact", body + ".",
                            (files["Cargo.toml"],)))
    elif p.gomod is not None and p.gomod["module"]:
        topics.append(Topic("Build and dependencies", "fact",
                            f"{p.gomod['module']} is a Go module; dependencies are managed "
                            f"with Go modules ({p.gomod['requires']} requirements in go.mod).",
                            (files["go.mod"],)))
    if p.pkg is not None and p.pkg["node"]:
        topics.append(Topic("Node requirement", "constraint",
                            f"{name} requires Node.js {p.pkg['node']} (engines.node in "
                            "package.json).", (files["package.json"],)))
    if p.cargo is not None and p.cargo["rust_version"]:
        topics.append(Topic("Rust requirement", "constraint",
                            f"{p.cargo['name'] or name} requires Rust {p.cargo['rust_version']} "
                            "or newer (rust-version in Cargo.toml, the MSRV).",
                            (files["Cargo.toml"],)))
    if p.gomod is not None and p.gomod["go"]:
        tail = f"; toolchain {p.gomod['toolchain']}" if p.gomod["toolchain"] else ""
        topics.append(Topic("Go requirement", "constraint",
                            f"{p.gomod['module'] or name} requires Go {p.gomod['go']} (go "
                            f"directive in go.mod{tail}).", (files["go.mod"],)))
    return topics


def _test_topic(p: _Parsed, files: Mapping[str, Source], docs: Sequence[Source],
                entry_scripts: Mapping[str, Source]) -> Topic | None:
    test_cmd: str | None = None
    ev: list[Source] = []
    detail = ""
    recipe: tuple[str, ...] = ()
    just = p.just[1] if p.just else {}
    if p.mk is not None and ("test" in p.mk or "tests" in p.mk):
        target = p.mk["test"] if "test" in p.mk else p.mk["tests"]
        test_cmd, detail, recipe = f"make {target.name}", _recipe_detail(target, p.mk), \
            target.recipe
        ev.append(files["Makefile"])
    elif p.pkg is not None and "test" in p.pkg["scripts"]:
        test_cmd = _run(p.pkg["package_manager"] or "npm", "test")
        detail = f" ({_code(p.pkg['scripts']['test'])})"
        recipe = (p.pkg["scripts"]["test"],)
        ev.append(files["package.json"])
    elif p.just and ("test" in just or "tests" in just):
        target = just["test"] if "test" in just else just["tests"]
        test_cmd, detail, recipe = f"just {target.name}", _recipe_detail(target, just), \
            target.recipe
        ev.append(files[p.just[0]])
    elif "scripts/test" in entry_scripts or "scripts/tests" in entry_scripts:
        script = entry_scripts.get("scripts/test") or entry_scripts["scripts/tests"]
        test_cmd = source_path(script) or "scripts/test"
        tools = _tools(repo_docs.script_lines(script.content))
        detail = f" ({_join(list(tools))})" if tools else ""
        ev.append(script)
    elif p.tox is not None and p.tox_src is not None and (p.tox["env_list"]
                                                          or p.tox["commands"]):
        test_cmd = "tox"
        detail = f" (environments {', '.join(p.tox['env_list'])})" if p.tox["env_list"] else ""
        ev.append(p.tox_src)
    elif p.nox is not None and p.nox["sessions"]:
        named = [s for s in _TEST_SESSIONS if s in p.nox["sessions"]]
        test_cmd = f"nox -s {named[0]}" if named else "nox"
        runs = p.nox["sessions"][named[0]] if named else ()
        detail = f" ({_join([_code(c) for c in runs])})" if runs else (
            f" (sessions {', '.join(p.nox['sessions'])})" if not named else "")
        ev.append(files["noxfile.py"])
    elif (p.py or {}).get("pytest") or (p.cfg or {}).get("pytest"):
        test_cmd = "pytest"
        ev.append(files["pyproject.toml"] if (p.py or {}).get("pytest") else files["setup.cfg"])
    elif p.cargo is not None:
        test_cmd = "cargo test"
        ev.append(files["Cargo.toml"])
    elif p.gomod is not None:
        test_cmd = "go test ./..."
        ev.append(files["go.mod"])
    if test_cmd is None:
        return None
    body = f"run {_code(test_cmd)}{detail} for routine code changes"
    configured = "pyproject.toml" if (p.py or {}).get("pytest") else (
        "setup.cfg" if (p.cfg or {}).get("pytest") else None)
    if configured and test_cmd != "pytest":
        table = "[tool.pytest.ini_options]" if configured == "pyproject.toml" else "[tool:pytest]"
        addopts = (p.py if configured == "pyproject.toml" else p.cfg or {}).get(  # type: ignore[union-attr]
            "pytest_addopts")
        body += f"; pytest is configured in {configured} ({table}"
        body += f", addopts {_code(str(addopts))})" if addopts else ")"
        ev.append(files[configured])
    quick = quick_test_command(docs, exclude=(test_cmd, *recipe))
    if quick is not None:
        body += f"; for a quick loop run {_code(quick[0])} ({source_path(quick[1])})"
        ev.append(quick[1])
    ev.extend(_mentions(docs, test_cmd))
    return Topic("Test command", "preference", body + ".", unique_sources(ev))


_RUNNER = re.compile(
    r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:(?:uv run|poetry run|pdm run|hatch run|pipenv run|"
    r"python3? -m)\s+)?(?:pytest|py\.test)\b|^go test\b|^cargo (?:l|nextest )?test\b|"
    r"^(?:npx|pnpm(?: exec)?|yarn|bunx?)\s+(?:vitest|jest|mocha)\b|"
    r"^(?:npm|pnpm|yarn) (?:run )?test -- |^(?:npm|pnpm|yarn) (?:--filter|-F|--workspace|-w)"
    r"\s+\S+ (?:run )?test\b|^(?:bundle exec )?rspec\b|^tox -e \S+ -- |"
    r"^(?:python3? )?(?:\./)?(?:runtests|run_tests)\.py\b|^(?:python3? )?(?:\./)?manage\.py "
    r"test\b|^python3? -m (?:django test|unittest)\b")
_SELECTS = re.compile(r"/|::|\s-k\s|\.py\b|\.rs\b|\.ts\b|\.js\b|\s-p\s|--test\b|\s-run\b|"
                      r"--filter|\s-F\s|\s\w+\.\w+(?:\.\w+)+")


def quick_test_command(docs: Sequence[Source], *, exclude: Iterable[str] = ()
                       ) -> tuple[str, Source] | None:
    """The quick, targeted test run a contributor guide names (a direct runner call
    such as ``uv run pytest path/to/test.py::test_name`` or ``pytest
    testing/test_config.py``, in a code span or a shell block), with the document that
    names it: a command that selects tests (a path, ``::``, ``-k``) first, a direct
    runner before ``tox -e ... --``; None when the guides name none. Commands in
    ``exclude`` (the main test command and its recipe) are skipped."""
    skip = {" ".join(e.split()) for e in exclude}
    found: list[tuple[int, int, str, Source]] = []
    for order, s in enumerate(docs):
        path = source_path(s) or ""
        blocks = doc_blocks.read_document(path, s.content)
        for b in blocks:
            lead = leading_command(b.text)
            for cmd in (*re.findall(r"`([^`]+)`", b.text), *b.code, *([lead] if lead else [])):
                cmd = " ".join(cmd.split())
                if not _RUNNER.match(cmd) or cmd in skip:
                    continue
                rank = (0 if _SELECTS.search(cmd) else 1) + (2 if cmd.startswith("tox") else 0)
                found.append((rank, order, cmd, s))
    if not found:
        return None
    rank, _, cmd, src = min(found, key=lambda f: (f[0], f[1]))
    return cmd, src


def _verify_topic(p: _Parsed, files: Mapping[str, Source], docs: Sequence[Source],
                  entry_scripts: Mapping[str, Source], hooks: Sequence[str]) -> Topic | None:
    verify: list[str] = []
    ev: list[Source] = []
    for runner, recipes, src in (("make", p.mk, "Makefile"),
                                 ("just", p.just[1] if p.just else None,
                                  p.just[0] if p.just else "")):
        if recipes is None:
            continue
        before = len(verify)
        for target in recipes.values():
            tools = _tools(target.recipe)
            if target.name not in _VERIFY_TARGETS and not (
                    target.name not in _TEST_SESSIONS and set(tools) & _TEST_RUNS):
                continue  # kept: a check by name, or another suite the tests run under
            if runner == "make":
                deps = [d for d in target.prerequisites
                        if d in _VERIFY_TARGETS or d in ("test", "tests")]
                inner = list(tools) + ([] if tools else deps)
                verify.append(_code(f"make {target.name}")
                              + (f" ({_join(inner)})" if inner else ""))
                continue
            called = [c.split()[0] for c in target.calls]
            deps = [d for d in target.prerequisites if d not in called and not d.startswith("_")]
            shown = _join(list(tools)) if tools else "; ".join(_code(c) for c in target.calls)
            parts = "; ".join(x for x in (", ".join(deps), shown) if x)
            verify.append(_code(f"just {target.name}") + (f" ({parts})" if parts else ""))
        if len(verify) > before:
            ev.append(files[src])
    if p.pkg is not None:
        pm = p.pkg["package_manager"] or "npm"
        scripts = [s for s in p.pkg["scripts"] if s in _VERIFY_SCRIPTS]
        for s in scripts:
            verify.append(f"{_code(_run(pm, s))} ({_code(p.pkg['scripts'][s])})")
        if scripts:
            ev.append(files["package.json"])
    for path, script in entry_scripts.items():
        if path.rpartition("/")[2] not in _VERIFY_SCRIPT_FILES:
            continue
        tools = _tools(repo_docs.script_lines(script.content))
        verify.append(_code(path) + (f" ({_join(list(tools))})" if tools else ""))
        ev.append(script)
    if hooks:
        verify.append(f"{_code('pre-commit run --all-files')} ({repo_docs.hook_summary(hooks)})")
        ev.append(files[".pre-commit-config.yaml"])
    if p.tox is not None and p.tox_src is not None:
        envs = list(p.tox["env_list"]) or [e for e in p.tox["commands"] if e]
        if envs:
            verify.append(f"tox environments {', '.join(envs)}")
            ev.append(p.tox_src)
    if p.nox is not None:
        others = [s for s in p.nox["sessions"] if s not in _TEST_SESSIONS]
        if others:
            verify.append("nox sessions " + ", ".join(
                f"{s} ({_join(list(_tools(p.nox['sessions'][s])))})"
                if _tools(p.nox["sessions"][s]) else s for s in others))
            ev.append(files["noxfile.py"])
    if not verify:
        return None
    for cmd in re.findall(r"`([^`]+)`", " ".join(verify)):
        ev.extend(_mentions(docs, cmd))
    return Topic("Verification commands", "preference", "; ".join(verify) + ".",
                 unique_sources(ev))
