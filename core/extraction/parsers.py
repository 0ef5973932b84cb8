"""Parsers of the operating-contract files a repository bootstrap reads: ``pyproject.toml``,
``Makefile``, ``tox.ini`` and ``package.json`` (Memory RFC, "Candidate generation and
model-free fallback"). Pure functions of the file text."""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from typing import Any

import attrs

from powercontext.core import repo_docs

__all__ = ["MakeTarget", "parse_makefile", "parse_package_json", "parse_pyproject", "parse_tox"]


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
    """A Makefile target: its prerequisites, recipe lines and ``## help`` comment."""

    name: str
    prerequisites: tuple[str, ...]
    recipe: tuple[str, ...]
    comment: str = ""


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
    envs = tuple(e.strip() for e in re.split(r"[,\n]", raw) if e.strip())
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

