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

__all__ = ["DetectSecretsScanner", "default_scanner", "redact_all", "redact_fields"]

_PLUGINS = (
    ("artifactory", "ArtifactoryDetector"), ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"), ("basic_auth", "BasicAuthDetector"),
    ("cloudant", "CloudantDetector"), ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"), ("gitlab_token", "GitLabTokenDetector"),
    ("ibm_cloud_iam", "IbmCloudIamDetector"), ("ibm_cos_hmac", "IbmCosHmacDetector"),
    ("jwt", "JwtTokenDetector"), ("keyword", "KeywordDetector"),
    ("mailchimp", "MailchimpDetector"), ("npm", "NpmDetector"), ("openai", "OpenAIDetector"),
    ("private_key", "PrivateKeyDetector"), ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"), ("slack", "SlackDetector"),
    ("softlayer", "SoftlayerDetector"), ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"), ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
)
#: A line longer than this is scanned in pieces (the detectors' regexes stay linear).
_MAX_LINE = 4000


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

    def _load(self) -> list[Any]:
        if self._plugins is None:
            from detect_secrets.filters import heuristic

            plugins = []
            for module, name in _PLUGINS:
                cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
                plugins.append(cls())
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
        core = find_secrets(text)
        flagged = {f.line for f in core}
        plugins = self._load()
        found = list(core)
        offset = 0
        for n, line in enumerate(text.split("\n"), 1):
            if n not in flagged and line.strip():
                found.extend(self._scan_line(plugins, line, n, offset))
            offset += len(line) + 1
        return tuple(sorted(found, key=lambda f: (f.line, f.start or 0)))

    def _scan_line(self, plugins: list[Any], line: str, n: int, offset: int
                   ) -> list[SecretFinding]:
        out: list[SecretFinding] = []
        pieces = [line[i:i + _MAX_LINE] for i in range(0, len(line), _MAX_LINE)] or [line]
        for piece in pieces:
            for plugin in plugins:
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
