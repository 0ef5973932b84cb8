"""Pure secret rules: find, name and redact secrets in text, and check Sources before
they are stored (Memory RFC, "Memory admission rules": never save secrets; Sources are
append-only, so a secret must be refused or redacted *before* the first write).

A rule names each finding with a slug (``github-token``) and a description ("GitHub
token"), a 1-based line number and, when the rule knows it, the span of the secret
itself. Nothing here echoes a secret: errors and reports carry only the rule and line.

The rules here are the token formats with a fixed shape, credentials in URLs
(``scheme://user:pass@host``), ``Authorization`` headers, and password/secret/token
assignments (``password=<value>``, ``PASSWORD: "<value>"``, ``export API_KEY=...``) whose value
is not a placeholder or a reference (``${DB_PASSWORD}``, ``<your key>``,
``os.environ[...]``, a type name, the variable of the same name:
:mod:`powercontext.core.secret_assignments`); and the credentials
known by their context (:mod:`powercontext.core.secret_context`: a password in prose,
on a command line, in a ``.netrc`` line, a base64 ``user:pass`` value, a high-entropy
token next to a credential word), kept where no rule above found the same span. A
scanner adapter (:class:`powercontext.ports.SecretScanner`) adds a maintained
detector's rules on top. docs/security.md says what is detected and what is not.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable, Sequence

import attrs

from powercontext.core.errors import SecretDetectedError
from powercontext.core.models import Source
from powercontext.core.secret_assignments import (
    ASSIGNMENT,
    WordUses,
    assignment_value,
    assignments,
    is_placeholder,
)
from powercontext.core.secret_context import context_findings

__all__ = [
    "REDACTION",
    "SecretFinding",
    "check_sources",
    "check_text",
    "find_secret",
    "find_secrets",
    "is_placeholder",
    "line_of",
    "metadata_value_finding",
    "redact",
    "source_findings",
    "stored_text_secret",
]

REDACTION = "[REDACTED:{rule}]"
"""What replaces a secret in a redacted text (``[REDACTED:github-token]``)."""


@attrs.frozen
class SecretFinding:
    """One secret in a text: ``rule`` (slug), ``description``, ``line`` (1-based) and the
    character span ``start``..``end`` of the secret value, or None when only the line is
    known (then redaction replaces the whole line)."""

    rule: str
    description: str
    line: int
    start: int | None = None
    end: int | None = None


Scan = Callable[[str], Sequence[SecretFinding]]

# (slug, description, pattern, group holding the secret value; 0 = the whole match)
_TOKEN_RULES: tuple[tuple[str, str, re.Pattern[str], int], ...] = (
    ("pem-private-key", "PEM private key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)"), 0),
    ("aws-access-key-id", "AWS access key id",
     re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b"), 0),
    ("aws-secret-access-key", "AWS secret access key", re.compile(
        r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*['\"]?([A-Za-z0-9/+=]{40})\b"), 1),
    ("github-token", "GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"), 0),
    ("github-fine-grained-token", "GitHub fine-grained token",
     re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), 0),
    ("gitlab-token", "GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), 0),
    ("openai-api-key", "OpenAI/Anthropic API key",
     re.compile(r"\bsk-(?:[A-Za-z]+-)?[A-Za-z0-9_\-]{20,}"), 0),
    ("slack-token", "Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), 0),
    ("google-api-key", "Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), 0),
    ("stripe-key", "Stripe key", re.compile(r"\b(?:sk|rk)_live_[0-9A-Za-z]{16,}\b"), 0),
    ("npm-token", "npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0),
    ("pypi-token", "PyPI token", re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"), 0),
    ("huggingface-token", "Hugging Face token", re.compile(r"\bhf_[A-Za-z]{34}\b"), 0),
    ("jwt", "JSON Web Token", re.compile(
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), 0),
)
#: Per token rule, literals one of which every match of its pattern contains
#: (case-sensitive, as the patterns are): a text holding none is not searched.
_TOKEN_LITERALS: dict[str, tuple[str, ...]] = {
    "pem-private-key": ("-----BEGIN ",),
    "aws-access-key-id": ("AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "github-fine-grained-token": ("github_pat_",),
    "gitlab-token": ("glpat-",),
    "openai-api-key": ("sk-",),
    "slack-token": ("xox",),
    "google-api-key": ("AIza",),
    "stripe-key": ("_live_",),
    "npm-token": ("npm_",),
    "pypi-token": ("pypi-AgEIcHlwaS5vcmc",),
    "huggingface-token": ("hf_",),
    "jwt": ("eyJ",),
}
_URL_CREDENTIALS = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"`<>]+:([^\s@/'\"`<>]+)@[^\s/@'\"`<>]")
_AUTH_HEADER = re.compile(
    r"(?i)\b(?:authorization|proxy-authorization)[\"']?\s*[:=]\s*[\"']?"
    r"(?:bearer|basic|token|digest)\s+([A-Za-z0-9._~+/=\-]{8,})")
#: Something every match of every rule above contains (an ``=`` or ``:`` for the URL,
#: header and assignment rules, else a token rule's literal prefix), matched
#: case-insensitively: a text without any cannot hold a finding, so it is not scanned.
_ANY_RULE = re.compile(
    r"[=:]|-----BEGIN|AKIA|ASIA|ABIA|ACCA|AIDA|AROA|aws|gh[pousr]_|github_pat_|glpat-|sk-"
    r"|xox|AIza|_live_|npm_|pypi-|hf_|eyJ", re.IGNORECASE)
#: What every match of a context rule (:mod:`powercontext.core.secret_context`) holds
#: besides an ``=`` or ``:``: a credential word, ``aws``, ``auth``/``basic`` (base64
#: pairs), a MySQL client or ``sshpass``.
_CONTEXT_CUE = re.compile(r"pass|pwd|secret|token|key|credential|aws|auth|basic|mysql"
                          r"|mariadb", re.IGNORECASE)
def line_of(text: str, offset: int) -> int:
    """The 1-based line number of character ``offset`` in ``text``."""
    return text.count("\n", 0, offset) + 1


#: Texts longer than this many characters are checked without the memo (an entry's text
#: is at most 8192 UTF-8 bytes).
MEMO_MAX_CHARS = 8192
#: How many clean texts the memo keeps (least recently used goes first).
MEMO_TEXTS = 64


def stored_text_secret(text: str) -> str | None:
    """:func:`find_secret` for a text a write is about to store: the planner checks each
    entry's text and the verifier checks it again (~0.7 ms for 8 KB), after the
    service's scanner has passed it. A ``str`` of at most :data:`MEMO_MAX_CHARS`
    characters in which the rules find nothing is remembered (the last
    :data:`MEMO_TEXTS`); a text with a finding is never kept, and every other caller
    (the scanner adapter, admission checks) scans without the memo, so a text some
    scanner refuses is not kept by theirs."""
    if type(text) is str and len(text) <= MEMO_MAX_CHARS:
        try:
            _memo_clean(text)
            return None
        except _Found as found:
            return found.findings[0].description
    return find_secret(text)


class _Found(Exception):
    """The findings of a text the memo must not keep (lru_cache caches no exception)."""

    def __init__(self, findings: tuple[SecretFinding, ...]) -> None:
        super().__init__()
        self.findings = findings


@functools.lru_cache(maxsize=MEMO_TEXTS)
def _memo_clean(text: str) -> tuple[SecretFinding, ...]:
    found = find_secrets(text)
    if found:
        raise _Found(found)
    return found


def find_secrets(text: str) -> tuple[SecretFinding, ...]:
    """Every secret the pure rules find in ``text``, in text order (module docstring
    lists the rules). Never raises on any string. Linear in ``len(text)`` plus
    O(log n) per finding (line numbers and overlaps are looked up, not recounted)."""
    token_rules = _ANY_RULE.search(text) is not None
    if not token_rules and _CONTEXT_CUE.search(text) is None:
        return ()
    found: list[SecretFinding] = []
    newlines: list[int] | None = None

    def line(offset: int) -> int:  # line_of(text, offset), from one index of the text
        nonlocal newlines
        if newlines is None:
            newlines = [m.start() for m in re.finditer("\n", text)]
        return bisect.bisect_left(newlines, offset) + 1

    for rule, description, pattern, group in _TOKEN_RULES if token_rules else ():
        literals = _TOKEN_LITERALS.get(rule)
        if literals is not None and not any(lit in text for lit in literals):
            continue
        for m in pattern.finditer(text):
            found.append(SecretFinding(rule, description, line(m.start(group)),
                                       m.start(group), m.end(group)))
    for m in _URL_CREDENTIALS.finditer(text):
        if not is_placeholder(m.group(1)):
            found.append(SecretFinding("url-credentials", "credentials in a URL",
                                       line(m.start(1)), m.start(1), m.end(1)))
    for m in _AUTH_HEADER.finditer(text):
        if not is_placeholder(m.group(1)):
            found.append(SecretFinding("authorization-header", "Authorization header",
                                       line(m.start(1)), m.start(1), m.end(1)))
    # The spans found so far, merged: an assignment whose value starts inside one is
    # already covered. Assignment matches never overlap one another (finditer) and each
    # value lies inside its match, so a later value never starts inside an earlier one.
    covered: list[tuple[int, int]] = []
    for s, e in sorted((f.start, f.end) for f in found
                       if f.start is not None and f.end is not None and f.start < f.end):
        if covered and s <= covered[-1][1]:
            covered[-1] = (covered[-1][0], max(covered[-1][1], e))
        else:
            covered.append((s, e))
    covered_starts = [s for s, _ in covered]
    uses = WordUses(text)
    for m in assignments(text) if token_rules else ():
        hit = assignment_value(m, uses)
        if hit is None:
            continue
        _, start, end = hit
        k = bisect.bisect_right(covered_starts, start) - 1
        if k >= 0 and covered[k][0] <= start < covered[k][1]:
            continue
        key = m.group("key").lstrip("-")
        found.append(SecretFinding("credential-assignment", f"credential assignment ({key})",
                                   line(start), start, end))
    found += [SecretFinding(rule, description, line(start), start, end)
              for rule, description, start, end in _context_hits(text, found)]
    return tuple(sorted(found, key=lambda f: (f.line, f.start or 0)))


#: Which of two context findings of one span is kept: the most specific rule first.
_CONTEXT_ORDER = ("command-line-password", "netrc-password", "basic-auth-pair",
                  "credential-phrase", "credential-near-token")


def _context_hits(text: str, found: Sequence[SecretFinding]
                  ) -> list[tuple[str, str, int, int]]:
    """The findings of :mod:`powercontext.core.secret_context` that overlap neither a
    finding of the rules above (those name the secret more exactly) nor an earlier kept
    one, in start order (a span overlaps when some span starting before its end ends
    after its start: one prefix maximum of the ends, a bisection per finding)."""
    hits = sorted(context_findings(text, is_placeholder),
                  key=lambda h: (h[2], _CONTEXT_ORDER.index(h[0]), -h[3]))
    if not hits:
        return []
    spans = sorted((f.start, f.end) for f in found if f.start is not None and f.end is not None)
    starts = [s for s, _ in spans]
    reach: list[int] = []  # reach[i]: the furthest end of spans[:i + 1]
    for _, e in spans:
        reach.append(max(e, reach[-1]) if reach else e)
    kept: list[tuple[str, str, int, int]] = []
    kept_end = -1
    for hit in hits:
        _, _, start, end = hit
        k = bisect.bisect_left(starts, end)
        if start < kept_end or (k > 0 and reach[k - 1] > start):
            continue
        kept.append(hit)
        kept_end = end
    return kept


def find_secret(text: str) -> str | None:
    """The description of the first secret the pure rules find in ``text``, else None."""
    found = find_secrets(text)
    return found[0].description if found else None


def redact(text: str, findings: Iterable[SecretFinding]) -> str:
    """``text`` with each finding's span replaced by ``[REDACTED:<rule>]``. Findings
    without a span replace their whole line, but only when no finding has a span (the
    caller rescans and redacts again; see :func:`redact_all` in the scanner adapter)."""
    findings = list(findings)
    spans = sorted((f.start, f.end, f.rule) for f in findings
                   if f.start is not None and f.end is not None)
    if spans:
        out: list[str] = []
        pos = 0
        for start, end, rule in spans:
            if start < pos:
                continue
            out.append(text[pos:start])
            out.append(REDACTION.format(rule=rule))
            pos = max(end, start)
        out.append(text[pos:])
        return "".join(out)
    lines = {f.line: f.rule for f in findings}
    if not lines:
        return text
    parts = text.split("\n")
    for n, rule in lines.items():
        if 1 <= n <= len(parts):
            parts[n - 1] = REDACTION.format(rule=rule)
    return "\n".join(parts)


def metadata_value_finding(key: str, value: str) -> SecretFinding | None:
    """A finding when ``value`` is a credential because of its secret-named ``key``
    (metadata ``password: hunter2``; the value alone looks like any word), else None."""
    m = ASSIGNMENT.fullmatch(f'{key}="{value}"') if "\n" not in value and '"' not in value \
        else None
    if m is None or assignment_value(m) is None:
        return None
    return SecretFinding("credential-assignment", f"credential assignment ({key})", 1,
                         len(key) + 2, len(key) + 2 + len(value))


def source_findings(source: Source, scan: Scan = find_secrets
                    ) -> tuple[tuple[str, SecretFinding], ...]:
    """(field, finding) for every secret in a Source: its ``content``, ``uri``, ``kind``,
    ``source_id`` and each ``metadata`` key and value (a value under a secret-named key,
    ``password: hunter2``, counts as a credential assignment). Fields are named
    ``content``, ``uri``, ``metadata.<key>``, ..."""
    out: list[tuple[str, SecretFinding]] = []
    fields: set[str] = set()
    for field, text in (("content", source.content), ("uri", source.uri or ""),
                        ("kind", source.kind), ("source_id", source.source_id)):
        out.extend((field, f) for f in scan(text))
    for key, value in source.metadata:
        field = f"metadata.{key}"
        in_value = scan(value)
        out.extend((field, f) for f in in_value)
        if in_value:
            fields.add(field)
        out.extend(("metadata key", f) for f in scan(key))
        if field not in fields:
            f = metadata_value_finding(key, value)
            if f is not None:
                out.append((field, attrs.evolve(f, start=None, end=None)))
                fields.add(field)
    return tuple(out)


def check_text(field: str, text: str, scan: Scan = find_secrets) -> None:
    """Raise :class:`SecretDetectedError` naming ``field``, the rule and the line when
    ``scan`` finds a secret in ``text``; the secret itself is never echoed."""
    found = scan(text)
    if found:
        f = found[0]
        raise SecretDetectedError(field, f.rule, f.description, f.line)


def check_sources(sources: Sequence[Source], scan: Scan = find_secrets,
                  field: str = "sources") -> None:
    """Refuse Sources holding a secret before anything is stored: raise
    :class:`SecretDetectedError` for the first one (field ``sources[i].content``, the
    rule and the line). Non-Source values are left to the store's own type check."""
    for i, s in enumerate(sources):
        if not isinstance(s, Source):
            continue
        found = source_findings(s, scan)
        if found:
            where, f = found[0]
            raise SecretDetectedError(f"{field}[{i}].{where}", f.rule, f.description, f.line)
