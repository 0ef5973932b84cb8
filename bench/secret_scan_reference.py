"""The straightforward secret scan, as it was before the scanner was made fast: every
pure rule over the text with line numbers recounted per finding, a name's uses recounted
per assignment, overlaps checked against every earlier finding (the context rules of
:mod:`powercontext.core.secret_context` too), and every detect-secrets plugin called on
every piece of every line.

It is the oracle the optimised scan (:mod:`powercontext.core.secrets`,
:mod:`powercontext.adapters.secret_scanner`) must agree with finding for finding
(tests/unit/test_secret_scan_equivalence.py), and the "before" column of
``python -m bench scanner --reference``. Not for production use: it is quadratic in the
number of findings and assignments.
"""

from __future__ import annotations

from typing import Any

import attrs

from powercontext.adapters.secret_scanner import _MAX_LINE, _slug, default_scanner
from powercontext.core import secret_assignments as A
from powercontext.core import secrets as S
from powercontext.core.models import Source
from powercontext.core.secret_context import context_findings
from powercontext.core.secrets import SecretFinding

__all__ = ["reference_find_secrets", "reference_scan", "reference_source_findings"]


def reference_find_secrets(text: str) -> tuple[SecretFinding, ...]:
    """:func:`powercontext.core.secrets.find_secrets`, computed the straightforward way."""
    found: list[SecretFinding] = []
    for rule, description, pattern, group in S._TOKEN_RULES:
        for m in pattern.finditer(text):
            found.append(SecretFinding(rule, description, S.line_of(text, m.start(group)),
                                       m.start(group), m.end(group)))
    for m in S._URL_CREDENTIALS.finditer(text):
        if not S.is_placeholder(m.group(1)):
            found.append(SecretFinding("url-credentials", "credentials in a URL",
                                       S.line_of(text, m.start(1)), m.start(1), m.end(1)))
    for m in S._AUTH_HEADER.finditer(text):
        if not S.is_placeholder(m.group(1)):
            found.append(SecretFinding("authorization-header", "Authorization header",
                                       S.line_of(text, m.start(1)), m.start(1), m.end(1)))
    for m in A.ASSIGNMENT.finditer(text):
        hit = A.assignment_value(m)  # uses recounted with a regex per name
        if hit is None:
            continue
        _, start, end = hit
        if any(f.start is not None and f.start <= start < (f.end or 0) for f in found):
            continue
        key = m.group("key").lstrip("-")
        found.append(SecretFinding("credential-assignment", f"credential assignment ({key})",
                                   S.line_of(text, start), start, end))
    # the context rules' findings, each checked against every finding kept so far
    for rule, description, start, end in sorted(
            context_findings(text, S.is_placeholder),
            key=lambda h: (h[2], S._CONTEXT_ORDER.index(h[0]), -h[3])):
        if any(f.start is not None and f.end is not None and f.start < end and f.end > start
               for f in found):
            continue
        found.append(SecretFinding(rule, description, S.line_of(text, start), start, end))
    return tuple(sorted(found, key=lambda f: (f.line, f.start or 0)))


def reference_scan(text: str, scanner: Any = None) -> tuple[SecretFinding, ...]:
    """``DetectSecretsScanner.scan`` computed the straightforward way: every plugin of
    ``scanner`` (default: the default scanner's) on every piece of every line."""
    scanner = scanner or default_scanner()
    plugins = scanner._load()
    core = reference_find_secrets(text)
    flagged = {f.line for f in core}
    found = list(core)
    offset = 0
    for n, line in enumerate(text.split("\n"), 1):
        if n not in flagged and line.strip():
            pieces = [line[i:i + _MAX_LINE] for i in range(0, len(line), _MAX_LINE)] or [line]
            for piece in pieces:
                for plugin in plugins:
                    for value in plugin.analyze_string(piece):
                        if not value or scanner._rejected(value, piece):
                            continue
                        idx = line.find(value) if len(value) >= 6 else -1
                        start = offset + idx if idx >= 0 else None
                        found.append(SecretFinding(
                            _slug(plugin.secret_type), plugin.secret_type, n, start,
                            None if start is None else start + len(value)))
                        break
        offset += len(line) + 1
    return tuple(sorted(found, key=lambda f: (f.line, f.start or 0)))


def reference_source_findings(source: Source, scan: S.Scan = reference_scan
                              ) -> tuple[tuple[str, SecretFinding], ...]:
    """:func:`powercontext.core.secrets.source_findings`, the straightforward way."""
    out: list[tuple[str, SecretFinding]] = []
    for field, text in (("content", source.content), ("uri", source.uri or ""),
                        ("kind", source.kind), ("source_id", source.source_id)):
        out.extend((field, f) for f in scan(text))
    for key, value in source.metadata:
        out.extend((f"metadata.{key}", f) for f in scan(value))
        out.extend(("metadata key", f) for f in scan(key))
        if not any(field == f"metadata.{key}" for field, _ in out):
            f = S.metadata_value_finding(key, value)
            if f is not None:
                out.append((f"metadata.{key}", attrs.evolve(f, start=None, end=None)))
    return tuple(out)
