"""The default :class:`~powercontext.ports.SecretScanner`: the pure rules of
:mod:`powercontext.core.secrets` plus the detectors of ``detect-secrets`` (Yelp's
maintained secret scanner).

``detect-secrets`` runs offline here: only each plugin's ``analyze_string`` is called,
line by line, never its ``verify`` (which would send the secret to the service that
issued it) and never its global settings. Its high-entropy string plugins and the
public-IP plugin are left out: they flag git SHAs, content hashes and UUIDs, which
manifests and hook payloads are full of. A detector's value that is a placeholder
(:func:`~powercontext.core.secrets.is_placeholder`) or that its own heuristics reject
(templates, sequences, UUIDs, indirect references) is not a finding.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import re
from collections.abc import Mapping
from typing import Any, final

from powercontext.core.secrets import (
    REDACTION,
    SecretFinding,
    find_secrets,
    is_placeholder,
    metadata_value_finding,
    redact,
)

__all__ = ["DetectSecretsScanner", "default_scanner", "redact_all", "redact_fields",
           "refuse_secret"]

#: A line longer than this is scanned in pieces (the detectors' regexes stay linear).
_MAX_LINE = 4000

#: (module, detector class, hints). Each hint is a regex that matches inside every match
#: of every one of the detector's regexes (read off each denylist pattern of
#: detect-secrets 1.5, see the comments; ``(?i:...)`` where the detector's regex is
#: case-insensitive). A piece of text in which one of the hints is not found cannot yield
#: a value from that detector, so the detector is not called on that piece: the findings
#: are exactly those of calling every detector on every piece
#: (tests/unit/test_secret_scan_equivalence.py). No hints: the detector is always called.
_PLUGINS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("artifactory", "ArtifactoryDetector", (r"AKC|AP",)),  # ...AKC[a-zA-Z0-9]{10,}; ...AP[\dA-F]
    ("aws", "AWSKeyDetector", (r"A3T|ABIA|ACCA|AKIA|ASIA|(?i:aws)",)),  # ids; (?i)aws.{0,20}?
    ("azure_storage_key", "AzureStorageKeyDetector", (r"AccountKey=",)),
    ("basic_auth", "BasicAuthDetector", (r"://",)),
    # (?i) (cloudant|cl|clou)(_|-|)(api|)(key|pwd|pw|password|pass|token); ...cloudant\.com
    ("cloudant", "CloudantDetector",
     (r"(?i:(?:cloudant|clou|cl)[_-]?(?:api)?(?:key|pw|pass|token)|cloudant\.com)",)),
    ("discord", "DiscordBotTokenDetector", (r"\.",)),  # [MNO]...\.[...]{6}\.[...]{27}
    ("github_token", "GitHubTokenDetector", (r"gh[pousr]_",)),  # (ghp|gho|ghu|ghs|ghr)_
    ("gitlab_token", "GitLabTokenDetector",
     (r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-|GR1348941",)),
    # (?i) ...(key|pwd|password|pass|token)(quote)... then a value of exactly 44
    # [a-zA-Z0-9_\-] (under IGNORECASE, as the detector's regex is: KELVIN SIGN is a k)
    ("ibm_cloud_iam", "IbmCloudIamDetector",
     (r"(?i:key|pwd|pass|token)", r"(?i:(?<![a-z0-9_\-])[a-z0-9_\-]{44})")),
    ("ibm_cos_hmac", "IbmCosHmacDetector", (r"(?i:secret[-_]?(?:access)?[-_]?key)",)),
    ("jwt", "JwtTokenDetector", (r"eyJ",)),
    # The five regexes analyze_string uses (keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
    # each hold DENYLIST\w* (DENYLIST: *_?key, *_?pass, password, passwd, pwd, secret,
    # contraseña, contrasena) and a QUOTE ['"`]; and each holds one of: DENYLIST\w* then
    # CLOSING []'"]{0,2}, \s* and ":", "=" or "!" (COLON_, EQUAL_SIGNS_, ARROW_FUNCTION_),
    # [!=]{2,3} (PRECEDED_BY_EQUAL_COMPARISON_SIGNS_), or a quote then ";" (QUOTES_AND_
    # SEMICOLON ends with the closing quote, a backreference to the opening one, and ";":
    # prose with a semicolon and an apostrophe no longer calls the detector). The first
    # hint takes each word from its start, atomically up to its last DENYLIST: the same
    # lines as DENYLIST\w*..., which retried every DENYLIST of a long word to its end
    # (a line of "keykey...": 8 KB 0.5 s, 16 KB 1.4 s, quadratic; now linear).
    ("keyword", "KeywordDetector",
     (r"(?i:(?<!\w)(?>\w*(?:key|pass|pwd|secret|contrase))\w*+[]'\"]{0,2}\s*[:=!]"
      r"|[!=][!=]|['\"`];)",
      r"(?i:key|pass|pwd|secret|contrase)", r"['\"`]")),
    ("mailchimp", "MailchimpDetector", (r"-us",)),
    ("npm", "NpmDetector", (r":_authToken=",)),
    ("openai", "OpenAIDetector", (r"T3BlbkFJ",)),
    ("private_key", "PrivateKeyDetector", (r"BEGIN|PuTTY-User-Key-File-\d",)),  # \d: File-2
    ("pypi_token", "PypiTokenDetector", (r"pypi-AgE",)),
    ("sendgrid", "SendGridDetector", (r"SG\.",)),
    ("slack", "SlackDetector", (r"(?i:xox|hooks\.slack\.com)",)),
    # (?i) (softlayer|sl)(_|-|)(api|)(_|-|)(key|pwd|password|pass|token); api.softlayer.com
    ("softlayer", "SoftlayerDetector",
     (r"(?i:sl[_-]?(?:api)?[_-]?(?:key|pwd|pass|token)|softlayer)",)),
    ("square_oauth", "SquareOAuthDetector", (r"sq0csp-",)),
    ("stripe", "StripeDetector", (r"[rs]k_live_",)),
    ("telegram_token", "TelegramBotTokenDetector", (r"\d:",)),  # \d{8,10}:[0-9A-Za-z_-]{35}
    ("twilio", "TwilioKeyDetector", (r"AC|SK",)),
)


def _ascii_lowered(hint: re.Pattern[str]) -> re.Pattern[str] | None:
    """The hint without IGNORECASE, to search the lowercased copy of an ASCII text, when
    the whole hint is one ``(?i:...)`` group whose parsed content is case-free on ASCII
    (:func:`_case_free`): then an ASCII character matches it exactly when its lowercase
    matches the group without the flag, and ``.lower()`` keeps every offset. Such
    alternations cannot start from a literal, so the engine tries every position: the
    keyword detector's hint 0.56 -> 0.26 ms on an 8 KB text. None for any other hint,
    or when the standard library's regex parser is not there to check it."""
    p = hint.pattern
    if hint.flags & re.IGNORECASE or not p.startswith("(?i:"):
        return None
    try:
        # the stdlib's own regex parser (Python 3.11+; typeshed does not describe it)
        sre_c = importlib.import_module("re._constants")
        sre_parse = importlib.import_module("re._parser")

        parsed = list(sre_parse.parse(p))
        if not (len(parsed) == 1 and parsed[0][0] is sre_c.SUBPATTERN):
            return None
        _group, add, delete, inner = parsed[0][1]
        if add != sre_c.SRE_FLAG_IGNORECASE or delete or not _case_free(list(inner), sre_c):
            return None
        lowered = re.compile("(?:" + p[4:])
        if _shape(sre_parse.parse(lowered.pattern)) != _shape(inner):
            return None  # the group did not span the whole hint
    except (ImportError, AttributeError, TypeError, ValueError, re.error):
        return None
    return lowered


def _shape(x: Any) -> Any:
    """A parsed regex (``re._parser`` SubPatterns, lists, tuples) as nested tuples."""
    if hasattr(x, "data"):
        x = x.data
    if isinstance(x, (list, tuple)):
        return tuple(_shape(v) for v in x)
    return x


def _case_free(items: list[Any], c: Any) -> bool:
    """Whether parsed regex ``items`` match an ASCII character case-insensitively exactly
    when they match its lowercase case-sensitively: literals are ASCII and not A-Z,
    class ranges miss A-Z, no inline flags or back-references; anything else (an
    escape, a non-ASCII literal such as the long s or KELVIN SIGN) is refused."""
    def literal_ok(v: int) -> bool:
        return v < 0x80 and not 0x41 <= v <= 0x5A

    for op, av in items:
        if op in (c.LITERAL, c.NOT_LITERAL):
            ok = literal_ok(av)
        elif op is c.IN:
            ok = all(iop is c.NEGATE or iop is c.CATEGORY
                     or (iop is c.LITERAL and literal_ok(iav))
                     or (iop is c.RANGE and iav[1] < 0x80 and (iav[1] < 0x41 or iav[0] > 0x5A))
                     for iop, iav in av)
        elif op is c.BRANCH:
            ok = all(_case_free(list(b), c) for b in av[1])
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            ok = _case_free(list(av[2]), c)
        elif op is c.SUBPATTERN:
            ok = not av[1] and not av[2] and _case_free(list(av[3]), c)
        elif op in (c.ASSERT, c.ASSERT_NOT):
            ok = _case_free(list(av[1]), c)
        elif op is c.ATOMIC_GROUP:
            ok = _case_free(list(av), c)
        else:
            ok = op in (c.AT, c.ANY)
        if not ok:
            return False
    return True


def _slug(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


@final
class DetectSecretsScanner:
    """Core rules + detect-secrets plugins. ``scan(text)`` returns every finding in text
    order; a detector's finding on a line the core rules already flagged is dropped (the
    core finding has the exact span). Plugins are imported on the first scan."""

    def __init__(self) -> None:
        self._plugins: list[Any] | None = None
        self._filters: tuple[Any, ...] = ()
        self._hints: tuple[tuple[re.Pattern[str], ...], ...] = ()
        #: each detector's first hint for the lowercased copy of an ASCII text, or None
        self._lowered: tuple[re.Pattern[str] | None, ...] = ()
        self._any_hint: re.Pattern[str] | None = None

    def _load(self) -> list[Any]:
        if self._plugins is None:
            from detect_secrets.filters import heuristic

            plugins = []
            hints = []
            for module, name, hint in _PLUGINS:
                cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
                plugins.append(cls())
                hints.append(tuple(re.compile(h) for h in hint))
            self._hints = tuple(hints)
            self._lowered = tuple(_ascii_lowered(h[0]) if h else None for h in hints)
            # a text holding no detector's first hint needs no detector at all
            self._any_hint = (re.compile("|".join(f"(?:{h[0].pattern})" for h in hints))
                              if all(hints) else None)
            self._filters = (heuristic.is_sequential_string, heuristic.is_potential_uuid,
                             heuristic.is_templated_secret, heuristic.is_prefixed_with_dollar_sign,
                             heuristic.is_not_alphanumeric_string)
            self._indirect = heuristic.is_indirect_reference
            self._plugins = plugins
        return self._plugins

    def _rejected(self, value: str, line: str) -> bool:
        return (is_placeholder(value) or any(f(value) for f in self._filters)
                or self._indirect(line))

    def scan(self, text: str) -> tuple[SecretFinding, ...]:
        """Every finding in ``text`` (core rules, then each detector on each piece of
        at most ``_MAX_LINE`` characters of each line the core rules did not flag), in
        text order. A detector is called only on pieces holding all of its hints."""
        core = find_secrets(text)
        plugins = self._load()
        if self._any_hint is not None and self._any_hint.search(text) is None:
            return core
        flagged = {f.line for f in core}
        found = list(core)
        lines = text.split("\n")
        starts = [0] * len(lines)
        for i in range(1, len(lines)):
            starts[i] = starts[i - 1] + len(lines[i - 1]) + 1
        # line index -> indexes of the detectors whose first hint the line holds
        todo: dict[int, list[int]] = {}
        lowered = text.lower() if text.isascii() else None
        for k, hints in enumerate(self._hints):
            if not hints:
                for i in range(len(lines)):
                    todo.setdefault(i, []).append(k)
                continue
            first, haystack = hints[0], text
            if lowered is not None and self._lowered[k] is not None:
                first, haystack = self._lowered[k], lowered  # type: ignore[assignment]
            pos = 0
            while (m := first.search(haystack, pos)) is not None:  # hints hold no newline
                i = bisect.bisect_right(starts, m.start()) - 1
                todo.setdefault(i, []).append(k)
                pos = starts[i] + len(lines[i]) + 1
        for i in sorted(todo):
            line = lines[i]
            if i + 1 in flagged or not line.strip():
                continue
            ks = [k for k in sorted(todo[i])
                  if all(h.search(line) is not None for h in self._hints[k][1:])]
            if ks:
                found.extend(self._scan_line([(plugins[k], self._hints[k]) for k in ks],
                                             line, i + 1, starts[i]))
        return tuple(sorted(found, key=lambda f: (f.line, f.start or 0)))

    def _scan_line(self, plugins: list[tuple[Any, tuple[re.Pattern[str], ...]]], line: str,
                   n: int, offset: int) -> list[SecretFinding]:
        out: list[SecretFinding] = []
        pieces = [line[i:i + _MAX_LINE] for i in range(0, len(line), _MAX_LINE)] or [line]
        for piece in pieces:
            for plugin, hints in plugins:
                if len(pieces) > 1 and not all(h.search(piece) is not None for h in hints):
                    continue  # no match of this detector can lie in this piece
                for value in plugin.analyze_string(piece):
                    if not value or self._rejected(value, piece):
                        continue
                    idx = line.find(value) if len(value) >= 6 else -1
                    start = offset + idx if idx >= 0 else None
                    out.append(SecretFinding(_slug(plugin.secret_type), plugin.secret_type, n,
                                             start, None if start is None else start + len(value)))
                    break
        return out


@functools.cache
def default_scanner() -> DetectSecretsScanner:
    """The process-wide default scanner (plugins are loaded once, on first use)."""
    return DetectSecretsScanner()


def refuse_secret(field: str, text: str, scanner: Any = None) -> None:
    """SecretDetectedError naming ``field``, the rule and the line (never the secret)
    when ``scanner`` (default :func:`default_scanner`) finds a secret in ``text``: for a
    value a write stores and shows like content (a business key, a Topic's title)."""
    from powercontext.core.secrets import check_text

    check_text(field, text, (scanner or default_scanner()).scan)


def redact_all(text: str, scanner: Any = None, *, rounds: int = 4) -> str:
    """``text`` with every secret ``scanner`` (default :func:`default_scanner`) finds
    replaced by ``[REDACTED:<rule>]``, rescanning after each round; a line still flagged
    after ``rounds`` is replaced whole. The result scans clean."""
    scanner = scanner or default_scanner()
    for _ in range(rounds):
        found = scanner.scan(text)
        if not found:
            return text
        text = redact(text, found)
    found = scanner.scan(text)
    if found:
        text = redact(text, [SecretFinding(f.rule, f.description, f.line) for f in found])
    return text


def redact_fields(content: str, uri: str | None, metadata: Mapping[str, str],
                  scanner: Any = None) -> tuple[str, str | None, dict[str, str]]:
    """The fields of a Source to be built (content, uri, metadata) with every secret
    redacted (:func:`redact_all`); a metadata value under a secret-named key
    (``password: hunter2``) is replaced whole. Build the Source from the result, so its
    id and hash cover only redacted text (Memory RFC, "Memory admission rules")."""
    meta: dict[str, str] = {}
    for key, value in metadata.items():
        if metadata_value_finding(key, value) is not None:
            meta[key] = REDACTION.format(rule="credential-assignment")
        else:
            meta[key] = redact_all(value, scanner)
    return (redact_all(content, scanner), None if uri is None else redact_all(uri, scanner), meta)
