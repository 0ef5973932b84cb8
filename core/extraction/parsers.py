"""Parsers of the operating-contract files a repository bootstrap reads: ``pyproject.toml``,
``setup.cfg``, ``Makefile``, ``justfile``, ``tox.ini``, ``noxfile.py``, ``package.json``,
``Cargo.toml`` and ``go.mod`` (Memory RFC, "Candidate generation and model-free
fallback"). Pure functions of the file text: nothing is run (a ``noxfile.py`` is read
with :mod:`ast`, never executed)."""

from __future__ import annotations

import ast
import configparser
import json
import re
import tomllib
from collections.abc import Mapping
from typing import Any

import attrs

from powercontext.core import repo_docs

__all__ = ["MakeTarget", "parse_cargo", "parse_gomod", "parse_justfile", "parse_makefile",
           "parse_noxfile", "parse_package_json", "parse_pyproject", "parse_setup_cfg",
           "parse_tox", "project_names"]


def parse_pyproject(text: str) -> dict[str, Any]:
    """The parts of a ``pyproject.toml`` the contract topics use: ``name``,
    ``build_backend``, ``requires_python``, ``tool`` (the [tool] table keys),
    ``pytest`` (True when [tool.pytest.ini_options] exists), ``pytest_addopts``, ``tox``
    (the :func:`parse_tox` shape of ``[tool.tox]`` or its ``legacy_tox_ini``, else None).
    Raises ValueError (tomllib.TOMLDecodeError) on invalid TOML."""
    data = tomllib.loads(text)
    tox = repo_docs.pyproject_tox(data)
    if isinstance(tox, str):
        try:
            tox = parse_tox(tox)
        except (ValueError, configparser.Error):
            tox = None
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    build = data.get("build-system", {}) if isinstance(data.get("build-system"), dict) else {}
    pytest_cfg = tool.get("pytest", {}).get("ini_options") if isinstance(
        tool.get("pytest"), dict) else None
    requires_python = project.get("requires-python")
    if requires_python is None:
        requires_python = (poetry.get("dependencies") or {}).get("python")
    return {
        "name": project.get("name") or poetry.get("name"),
        "build_backend": build.get("build-backend"),
        "requires_python": requires_python if isinstance(requires_python, str) else None,
        "tool": tuple(sorted(tool)),
        "hatch_envs": isinstance(tool.get("hatch"), dict) and "envs" in tool["hatch"],
        "pytest": isinstance(pytest_cfg, dict),
        "pytest_addopts": (pytest_cfg or {}).get("addopts") if isinstance(pytest_cfg, dict)
        else None,
        "tox": tox if tox and (tox["env_list"] or tox["commands"]) else None,
    }


@attrs.frozen
class MakeTarget:
    """A Makefile target or justfile recipe: its prerequisites, recipe lines and ``##
    help`` comment; ``calls`` are a justfile's dependencies with arguments (``watch
    'ltest --all'`` for ``(watch 'ltest --all')``)."""

    name: str
    prerequisites: tuple[str, ...]
    recipe: tuple[str, ...]
    comment: str = ""
    calls: tuple[str, ...] = ()


_MAKE_RULE = re.compile(
    r"^([A-Za-z0-9_][A-Za-z0-9_.\-/ ]*?)\s*:(?![=:])\s*([^#;]*?)\s*(?:##?\s*(.*))?$")


def parse_makefile(text: str) -> dict[str, MakeTarget]:
    """Explicit targets of a Makefile in file order (no pattern rules, no special
    ``.TARGETS``, no variable targets), with prerequisites and recipe lines."""
    targets: dict[str, MakeTarget] = {}
    current: list[str] = []
    lines = text.replace("\\\n", " ").splitlines()
    for line in lines:
        if line.startswith("\t"):
            for name in current:
                t = targets[name]
                targets[name] = attrs.evolve(t, recipe=(*t.recipe, line.strip()))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _MAKE_RULE.match(line)
        if not m or "=" in m.group(1):
            current = []
            continue
        names = [n for n in m.group(1).split() if not n.startswith(".") and "%" not in n]
        prereqs = tuple(p for p in m.group(2).split("|")[0].split() if "$" not in p)
        current = []
        for n in names:
            if n not in targets:
                targets[n] = MakeTarget(n, prereqs, (), (m.group(3) or "").strip())
            current.append(n)
    return targets


def parse_tox(text: str) -> dict[str, Any]:
    """``env_list`` (tuple) and ``commands`` (env name -> tuple of command lines; ``""``
    is [testenv]) of a tox.ini. Raises ValueError (configparser.Error) when unreadable."""
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    cp.read_string(text)
    raw = ""
    if cp.has_section("tox"):
        raw = cp.get("tox", "env_list", fallback="") or cp.get("tox", "envlist", fallback="")
    envs = tuple(e.strip() for e in re.split(r"[,\n](?![^{]*\})", raw) if e.strip())
    commands: dict[str, tuple[str, ...]] = {}
    for section in cp.sections():
        if section == "testenv" or section.startswith("testenv:"):
            name = section.partition(":")[2]
            cmd = cp.get(section, "commands", fallback="")
            commands[name] = tuple(c.strip() for c in cmd.splitlines() if c.strip())
    return {"env_list": envs, "commands": commands}


def parse_package_json(text: str) -> dict[str, Any]:
    """``name``, ``scripts`` (name -> command), ``node`` (engines.node) and
    ``package_manager`` (``packageManager`` without version) of a package.json.
    Raises ValueError on invalid JSON."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("package.json is not a JSON object")
    scripts: dict[str, Any] = data["scripts"] if isinstance(data.get("scripts"), dict) else {}
    engines: dict[str, Any] = data["engines"] if isinstance(data.get("engines"), dict) else {}
    pm = data.get("packageManager")
    return {
        "name": data.get("name") if isinstance(data.get("name"), str) else None,
        "scripts": {str(k): str(v) for k, v in scripts.items()},
        "node": engines.get("node") if isinstance(engines.get("node"), str) else None,
        "package_manager": pm.split("@")[0] if isinstance(pm, str) and pm else None,
    }



def _header_colon(line: str) -> int:
    """The index of the ``:`` ending a justfile recipe header (outside quotes, backticks
    and parentheses, not ``:=``), or -1."""
    quote = ""
    depth = 0
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == ":" and depth == 0:
            return -1 if line[i + 1:i + 2] == "=" else i
    return -1


def parse_justfile(text: str) -> dict[str, MakeTarget]:
    """The recipes of a ``justfile`` in file order: name, dependencies (names, and
    ``calls`` with their arguments), body lines (a shebang body's lines too) and the
    ``#`` comment just above. Attributes, settings, aliases, assignments, imports and
    modules are skipped; private ``_name`` recipes are kept."""
    recipes: dict[str, MakeTarget] = {}
    current: str | None = None
    comment = ""
    for raw in text.splitlines():
        if raw[:1] in (" ", "\t") and raw.strip():
            if current is not None:
                r = recipes[current]
                recipes[current] = attrs.evolve(r, recipe=(*r.recipe, raw.strip()))
            continue
        line = raw.strip()
        if not line:
            current = None
            continue
        if line.startswith("#"):
            comment = "" if line.startswith("#!") else line.lstrip("#").strip()
            current = None
            continue
        if line.startswith("[") or re.match(r"^(?:alias|set|export|import|mod|unexport)\b", line):
            current = None
            continue
        colon = _header_colon(line)
        m = re.match(r"^@?([A-Za-z_][\w\-]*)", line)
        if colon < 0 or m is None or ":=" in line[:colon]:
            current, comment = None, ""
            continue
        deps_text = line[colon + 1:].split("#", 1)[0]
        calls = tuple(" ".join(c.split()) for c in re.findall(r"\(([^()]*)\)", deps_text))
        names = [c.split()[0] for c in calls if c.split()]
        names += re.sub(r"\([^()]*\)", " ", deps_text).replace("&&", " ").split()
        current = m.group(1)
        if current not in recipes:
            recipes[current] = MakeTarget(current, tuple(names), (), comment, calls)
        comment = ""
    return recipes


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_cargo(text: str) -> dict[str, Any]:
    """``name``, ``rust_version`` (``rust-version``, also from ``[workspace.package]``),
    ``edition``, ``members`` (workspace members) and ``clippy`` (True when
    ``[lints.clippy]`` or ``[workspace.lints.clippy]`` is configured) of a
    ``Cargo.toml``. Raises ValueError on invalid TOML."""
    data = tomllib.loads(text)
    package = _table(data.get("package"))
    workspace = _table(data.get("workspace"))
    shared = _table(workspace.get("package"))
    lints = _table(data.get("lints"))
    ws_lints = _table(workspace.get("lints"))

    def field(name: str) -> str | None:
        value = package.get(name)
        if isinstance(value, dict) and value.get("workspace"):
            value = shared.get(name)
        value = value if value is not None else shared.get(name)
        return str(value) if isinstance(value, (str, int)) else None

    members = workspace.get("members")
    return {
        "name": package.get("name") if isinstance(package.get("name"), str) else None,
        "rust_version": field("rust-version"),
        "edition": field("edition"),
        "members": tuple(str(m) for m in members) if isinstance(members, list) else (),
        "clippy": "clippy" in lints or "clippy" in ws_lints,
    }


def parse_gomod(text: str) -> dict[str, Any]:
    """``module``, ``go`` (the go directive's version), ``toolchain`` and ``requires``
    (the number of required modules) of a ``go.mod``."""
    module = go = toolchain = None
    requires = 0
    block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if block:
            if line == ")":
                block = False
            elif line:
                requires += 1
            continue
        m = re.match(r"^(module|go|toolchain)\s+(\S+)$", line)
        if m:
            value = m.group(2).strip('"')
            if m.group(1) == "module":
                module = value
            elif m.group(1) == "go":
                go = value
            else:
                toolchain = value
        elif line.startswith("require ("):
            block = True
        elif line.startswith("require "):
            requires += 1
    return {"module": module, "go": go, "toolchain": toolchain, "requires": requires}


def parse_setup_cfg(text: str) -> dict[str, Any]:
    """``name``, ``python_requires``, ``pytest`` (a ``[tool:pytest]`` section),
    ``pytest_addopts``, ``tox`` (the :func:`parse_tox` shape of ``[tox:tox]`` and its
    ``[testenv...]`` sections, else None) and ``linters`` (tool sections configured:
    flake8, mypy, isort, pycodestyle, pydocstyle, coverage) of a ``setup.cfg``. Raises
    ValueError (configparser.Error) when unreadable."""
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    cp.read_string(text)
    tox = None
    if cp.has_section("tox:tox"):
        envs = cp.get("tox:tox", "envlist", fallback="") or cp.get("tox:tox", "env_list",
                                                                   fallback="")
        commands = {
            sec.partition(":")[2]: tuple(c.strip() for c in cp.get(sec, "commands",
                                                                   fallback="").splitlines()
                                         if c.strip())
            for sec in cp.sections() if sec == "testenv" or sec.startswith("testenv:")}
        tox = {"env_list": tuple(e.strip() for e in re.split(r"[,\n](?![^{]*\})", envs)
                                 if e.strip()),
               "commands": commands}
    linters = tuple(n for n in ("flake8", "mypy", "isort", "pycodestyle", "pydocstyle",
                                "coverage:run")
                    if cp.has_section(n) or cp.has_section(f"tool:{n}"))
    return {
        "name": cp.get("metadata", "name", fallback=None),
        "python_requires": cp.get("options", "python_requires", fallback=None),
        "pytest": cp.has_section("tool:pytest"),
        "pytest_addopts": cp.get("tool:pytest", "addopts", fallback=None)
        if cp.has_section("tool:pytest") else None,
        "tox": tox if tox and (tox["env_list"] or tox["commands"]) else None,
        "linters": tuple(n.partition(":")[0] for n in linters),
    }


def _literal_strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for e in node.elts for s in _literal_strings(e)]
    return []


def parse_noxfile(text: str) -> dict[str, Any]:
    """The sessions of a ``noxfile.py`` read with :mod:`ast` (never executed):
    ``sessions`` maps each ``@nox.session`` function (or its ``name=``) to the commands
    its ``session.run(...)`` calls spell with literal strings; ``default`` is
    ``nox.options.sessions`` when it is a literal list. Raises ValueError (SyntaxError)
    when the file does not parse."""
    tree = ast.parse(text)
    sessions: dict[str, tuple[str, ...]] = {}
    default: tuple[str, ...] = ()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                ast.unparse(t) == "nox.options.sessions" for t in node.targets):
            default = tuple(_literal_strings(node.value))
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        name = None
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if ast.unparse(target) not in ("nox.session", "session", "nox_uv.session"):
                continue
            name = node.name
            if isinstance(dec, ast.Call):
                for kw in dec.keywords:
                    if kw.arg == "name" and _literal_strings(kw.value):
                        name = _literal_strings(kw.value)[0]
        if name is None:
            continue
        commands: list[str] = []
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and call.func.attr in ("run", "run_always") and call.args:
                words = [w for a in call.args for w in _literal_strings(a)]
                if words:
                    commands.append(" ".join(words))
        sessions[name] = tuple(commands)
    return {"sessions": sessions, "default": default}


def project_names(files: Mapping[str, str]) -> frozenset[str]:
    """The project's own names, lowercased, from the contract files among ``files``
    (path -> text): the ``pyproject.toml``, ``setup.cfg``, ``package.json`` and
    ``Cargo.toml`` name and the last element of the ``go.mod`` module path. A file that
    does not parse gives no name."""
    names: set[str] = set()
    readers: tuple[tuple[str, Any, str], ...] = (
        ("pyproject.toml", parse_pyproject, "name"), ("setup.cfg", parse_setup_cfg, "name"),
        ("package.json", parse_package_json, "name"), ("Cargo.toml", parse_cargo, "name"),
        ("go.mod", parse_gomod, "module"))
    for path, reader, key in readers:
        if path not in files:
            continue
        try:
            value = reader(files[path]).get(key)
        except (ValueError, configparser.Error, SyntaxError):
            continue
        if isinstance(value, str) and value:
            last = re.sub(r"/v\d+$", "", value).rpartition("/")[2].lower()
            names.update({value.lower(), last, last.replace("-", "_"), last.replace("_", "-")})
    return frozenset(n for n in names if n)
