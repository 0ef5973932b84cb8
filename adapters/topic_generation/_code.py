"""How the ``deterministic`` Topic provider recognises code and configuration
(:mod:`._text`): a file's name and fence language, its leading comment sentences, and
what it holds when no comment says so (sections, targets, definitions). Pure."""

from __future__ import annotations

import posixpath
import re
from typing import Final
from urllib.parse import unquote, urlsplit

from powercontext.adapters.topic_generation._words import cut_words, sentences

__all__ = ["comment_sentences", "file_name", "language", "structure"]

_SECTION = re.compile(r"^\s*\[[^\]\n]{1,80}\]\s*$")
_ASSIGN = re.compile(r"^\s*[\w.\-\"']+\s*[=:]\s*\S")
_TARGET = re.compile(r"^([A-Za-z0-9_.%/$()\-][^:=\s]*(?:\s+[^:=\s]+)*)\s*::?(?!=)")
_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class|func|fn|function)\s+([A-Za-z_]\w*)")
_COMMENT = re.compile(r"^\s*(?:#(?!!)|//|--|;)\s?(.*)$")
_CODE_NAMES: Final = {
    "makefile": "make", "gnumakefile": "make", "dockerfile": "dockerfile",
    "justfile": "just", "containerfile": "dockerfile", "procfile": "text",
    "vagrantfile": "ruby", "gemfile": "ruby", "rakefile": "ruby", "jenkinsfile": "groovy",
}
_CODE_EXTENSIONS: Final = {
    "mk": "make", "ini": "ini", "cfg": "ini", "toml": "toml", "yaml": "yaml",
    "yml": "yaml", "json": "json", "jsonc": "json", "py": "python", "pyi": "python",
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "ts": "typescript",
    "tsx": "tsx", "jsx": "jsx", "go": "go", "rs": "rust", "sh": "sh", "bash": "bash",
    "zsh": "zsh", "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "hpp": "cpp",
    "java": "java", "kt": "kotlin", "rb": "ruby", "php": "php", "sql": "sql",
    "xml": "xml", "html": "html", "css": "css", "lock": "text", "env": "sh",
    "properties": "properties", "gradle": "groovy", "cs": "csharp", "swift": "swift",
    "lua": "lua", "pl": "perl", "r": "r", "scala": "scala", "tf": "hcl", "hcl": "hcl",
    "nix": "nix", "vim": "vim", "ps1": "powershell", "bat": "bat", "cmake": "cmake",
}
_PROSE_EXTENSIONS: Final = frozenset({"md", "markdown", "mdx", "txt", "rst", "adoc", ""})


def file_name(uri: object) -> str:
    if not isinstance(uri, str) or not uri:
        return ""
    try:
        path = unquote(urlsplit(uri).path) if "://" in uri else uri
    except ValueError:
        return ""
    return posixpath.basename(path.rstrip("/"))


def language(name: str, content: str) -> str | None:
    """The fence language of a code or configuration Source, None for prose."""
    low = name.casefold()
    if low in _CODE_NAMES:
        return _CODE_NAMES[low]
    ext = low.rpartition(".")[2] if "." in low else ""
    if ext in _CODE_EXTENSIONS:
        return _CODE_EXTENSIONS[ext]
    if name and ext in _PROSE_EXTENSIONS - {""}:
        return None  # Markdown, reStructuredText, text: never a fence
    lines = [line for line in content.splitlines() if line.strip()]
    if not lines:
        return None
    if lines[0].startswith("#!"):
        return "sh"
    run = best = 0
    for line in lines:
        run = run + 1 if re.match(r"^#(?: |$)", line) else 0
        best = max(best, run)
    sections = sum(1 for line in lines if _SECTION.match(line))
    assigns = sum(1 for line in lines if _ASSIGN.match(line) and ": " not in line[:3])
    if sections and assigns >= 2 and sections + assigns >= len(lines) // 2:
        return "ini"
    if best >= 2 and any(not line.startswith("#") for line in lines):
        return "make" if any(_TARGET.match(line) and "\t" in content for line in lines) \
            else "text"
    return None


def comment_sentences(content: str) -> list[str]:
    """The sentences of the leading comment block of code (``#``, ``//``, ``--`` or
    ``;`` lines before the first line of code)."""
    block: list[str] = []
    for line in content.splitlines():
        if not line.strip():
            if block:
                break
            continue
        m = _COMMENT.match(line)
        if m is None:
            break
        text = m.group(1).strip()
        if not text or text.startswith(("#", "-", "=", "*")) or "  " in text:
            if block:
                break  # a table or a banner ends the prose of the comment
            continue
        block.append(text)
    return sentences(" ".join(block))


def structure(language: str, content: str) -> str:
    """What a code Source holds when it has no comment to say it: its sections (ini,
    toml), targets (make) or definitions, e.g. ``Sections: [tox], [testenv].``"""
    lines = content.splitlines()
    if language in ("ini", "toml"):
        found = [line.strip() for line in lines if _SECTION.match(line)]
        label = "Sections"
    elif language in ("make", "just"):
        found = [m.group(1).split()[0] for line in lines
                 if not line.startswith(("\t", " ", "#", ".")) and "=" not in line.split(":")[0]
                 and (m := _TARGET.match(line))]
        label = "Targets"
    else:
        found = [m.group(1) for line in lines if (m := _DEF.match(line))]
        label = "Defines"
    found = list(dict.fromkeys(found))
    if not found:
        return ""
    shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    return cut_words(f"{label}: {shown}.", 200)


