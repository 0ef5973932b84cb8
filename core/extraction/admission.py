"""The mechanical memory admission rules: what may not become a memory entry (Memory
RFC, "Memory admission rules").

Refused, with a reason: secrets (the pure rules of :mod:`powercontext.core.secrets`),
file inventories, source-code dumps and function signatures, and raw command output
(tracebacks, test runner banners, log lines, shell transcripts). Everything else the
spec asks of an entry (that it changes a future judgment, is reusable, is one semantic
topic) is left to the caller or the model and is not checked here.

Not to be confused with search admission (which search candidates a channel admits
before fusion), a different rule in another module.
"""

from __future__ import annotations

import re

from powercontext.core.secrets import find_secret

__all__ = ["check_memory_admission"]

_PATH_TOKEN = re.compile(
    r"^[`'\"(]?(?:[\w.\-]+/)+[\w.\-]*[`'\"),;:]?$|^[`'\"(]?[\w\-]+\.(?:py|pyi|js|jsx|ts|tsx"
    r"|go|rs|java|kt|c|h|cc|cpp|hpp|rb|php|cs|swift|md|rst|txt|toml|yaml|yml|json|cfg|ini"
    r"|lock|sql|sh|html|css)[`'\"),;:]?$"
)
_CODE_LINE = re.compile(
    r"^\s*(?:(?:async\s+)?def\s+\w+\s*\(|class\s+\w+[\s(:]|import\s+[\w.]+|from\s+[\w.]+\s+import\s"
    r"|(?:export\s+)?(?:async\s+)?function\s+\w+\s*\(|(?:const|let|var)\s+\w+\s*=|#include\s*<"
    r"|(?:public|private|protected|static)\s+[\w<>\[\]]+\s+\w+\s*\(|fn\s+\w+\s*\(|func\s+\w+\s*\("
    r"|return\b.*;\s*$|[}\])];?\s*$|@\w+(?:\(.*\))?\s*$)"
)
_OUTPUT_LINE = re.compile(
    r"^\s*(?:\$ \S|>>> |Traceback \(most recent call last\)|File \".*\", line \d+"
    r"|=+ .*(?:passed|failed|error|warnings?|test session starts).* =+|PASSED|FAILED|ERROR\b"
    r"|npm (?:ERR!|WARN)|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\S*\s+(?:[A-Z]+|\[)|\[\s*\d+%\]"
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)[: ]\s*\S|warning: |error(?:\[\w+\])?: "
    r"|collected \d+ items|Ran \d+ tests? in|\d+ (?:passed|failed)(?:,| in))"
)


def _inventory_reason(text: str) -> str | None:
    tokens = text.split()
    paths = [t for t in tokens if _PATH_TOKEN.match(t)]
    lines = [ln.strip(" -*\t") for ln in text.splitlines() if ln.strip()]
    path_lines = [ln for ln in lines if ln and all(_PATH_TOKEN.match(t) for t in ln.split())]
    if len(lines) >= 4 and len(path_lines) / len(lines) >= 0.75:
        return f"file inventory: {len(path_lines)} of {len(lines)} lines are only paths"
    if len(paths) >= 8 and len(paths) / max(len(tokens), 1) >= 0.5:
        return f"file inventory: {len(paths)} of {len(tokens)} words are paths"
    return None


def _dump_reason(text: str) -> str | None:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    code = [ln for ln in lines if _CODE_LINE.match(ln)]
    if "```" in text and len(lines) >= 6:
        return "source dump: a fenced code block"
    if code and len(lines) <= 2 and re.match(r"^\s*(?:async\s+)?(?:def|class|function|fn|func)\s",
                                             code[0]):
        return "function signature or code, not a durable fact"
    if len(code) >= 3 or (len(lines) >= 4 and len(code) / len(lines) >= 0.4):
        return f"source dump: {len(code)} of {len(lines)} lines are code"
    return None


def _output_reason(text: str) -> str | None:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    out = [ln for ln in lines if _OUTPUT_LINE.match(ln)]
    if any(ln.lstrip().startswith("Traceback (most recent call last)") for ln in lines):
        return "raw command output: a traceback"
    if len(out) >= 3 or (len(lines) >= 3 and len(out) / len(lines) >= 0.5):
        return f"raw command output: {len(out)} of {len(lines)} lines are tool or log output"
    return None


def check_memory_admission(kind: str, text: str) -> str | None:
    """Why ``text`` must not become a memory entry of ``kind``, or None when no
    mechanical rule refuses it (Memory RFC, "Memory admission rules"). Checked: secrets
    (every kind), file inventories, source dumps/function signatures and raw command
    output. Not checked (left to the caller): whether the entry changes a future
    judgment, is reusable, or is one semantic topic. Never raises on text."""
    secret = find_secret(text)
    if secret is not None:
        return f"contains a secret ({secret})"
    for check in (_inventory_reason, _dump_reason, _output_reason):
        reason = check(text)
        if reason is not None:
            return reason
    return None
