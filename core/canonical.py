"""Canonical JSON (RFC 8785 through ``rfc8785``), normalization, hashes and ids
(Memory RFC, "Normalization, hashing, and the search analyzer").

The canonical bytes of a MemoryContent are built from the canonical bytes of its
manifest entries: RFC 8785 serializes an array element by element, so the bytes of an
unchanged entry are reused as they are. ``content_bytes`` proves equal to
``rfc8785.dumps(unstructure(content))`` (a property test holds it).
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import attrs
import cattrs
import rfc8785

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    MemoryChange,
    MemoryContent,
    MemoryEntryVersion,
    MemoryManifest,
    MemoryManifestEntry,
    RevisionLineage,
    Source,
    SourceRef,
)

__all__ = [
    "ENTRY_CONTENT_PREFIX",
    "MAX_ID_LENGTH",
    "MAX_REASON_CODE_POINTS",
    "MAX_TEXT_BYTES",
    "artifact_content_hash",
    "artifact_refs_bytes",
    "canonical_dumps",
    "change_bytes",
    "check_id",
    "content_bytes",
    "embedding_content_hash",
    "entry_content_bytes",
    "entry_content_hash",
    "lineage_bytes",
    "make_id",
    "manifest_entry_bytes",
    "normalize_reason",
    "normalize_text",
    "parse_artifact_refs",
    "parse_content",
    "parse_lineage",
    "parse_source_refs",
    "sha256_hex",
    "sort_artifact_refs",
    "sort_source_refs",
    "source_content_hash",
    "source_refs_bytes",
    "unstructure",
]

ENTRY_CONTENT_PREFIX = b"powercontext:entry-content:v1\x00"
ARTIFACT_CONTENT_PREFIX = b"powercontext:artifact-content:v1\x00"
SOURCE_CONTENT_PREFIX = b"powercontext:source-content:v1\x00"
EMBEDDING_CONTENT_PREFIX = b"powercontext:embedding-content:v1\x00"
MAX_TEXT_BYTES = 8192
MAX_REASON_CODE_POINTS = 512
MAX_ID_LENGTH = 128
_ID_RE = re.compile(r"[\x21-\x7e]{1,128}")
_HASH_RE = re.compile(r"[0-9a-f]{64}")
_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    # Tuples become JSON arrays; attrs classes become objects with their field names.
    return conv


_converter = _make_converter()


def unstructure(value: Any) -> Any:
    """Plain JSON-ready data of a model (the one private cattrs converter)."""
    return _converter.unstructure(value)


def structure(data: Any, cls: type[Any]) -> Any:
    return _converter.structure(data, cls)


def canonical_dumps(value: Any) -> bytes:
    """RFC 8785 bytes of plain data or of a model. Raises ``rfc8785`` errors (ValueError)
    on NaN, infinity or integers of magnitude 2**53 or more."""
    if attrs.has(type(value)):
        value = unstructure(value)
    return rfc8785.dumps(value)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- normalization ---------------------------------------------------------------


def _check_str(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(field, f"must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(field, "contains a lone surrogate (not valid Unicode)") from None
    return value


def normalize_text(value: object, field: str = "text") -> str:
    """NFC, trimmed, 1..8192 UTF-8 bytes (Memory RFC, "MemoryEntryInput"). ValueError otherwise."""
    text = unicodedata.normalize("NFC", _check_str(field, value)).strip()
    if not text:
        raise InvalidInputError(field, "is empty after NFC normalization and trimming")
    size = len(text.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InvalidInputError(field, f"is {size} UTF-8 bytes; the limit is {MAX_TEXT_BYTES}")
    return text


def normalize_reason(value: object, field: str = "reason") -> str | None:
    """NFC and trimmed, at most 512 code points; None and blank stay None."""
    if value is None:
        return None
    reason = unicodedata.normalize("NFC", _check_str(field, value)).strip()
    if not reason:
        return None
    if len(reason) > MAX_REASON_CODE_POINTS:
        raise InvalidInputError(
            field, f"is {len(reason)} code points; the limit is {MAX_REASON_CODE_POINTS}"
        )
    return reason


def normalize_kind(value: object, field: str = "kind") -> str:
    """A non-empty kind string (unknown kinds are kept), NFC and trimmed, at most 64 chars."""
    kind = unicodedata.normalize("NFC", _check_str(field, value)).strip()
    if not kind:
        raise InvalidInputError(field, "must be a non-empty string")
    if len(kind) > 64 or not kind.isascii():
        raise InvalidInputError(field, "must be at most 64 ASCII characters")
    return kind


def check_id(value: object, field: str) -> str:
    """An ASCII id (printable, no spaces) of 1..128 characters; ValueError naming the field."""
    text = _check_str(field, value)
    if not text.isascii():
        raise InvalidInputError(field, "must be ASCII")
    if not _ID_RE.fullmatch(text):
        raise InvalidInputError(
            field, f"must be 1..{MAX_ID_LENGTH} printable ASCII characters without spaces"
        )
    return text


def check_hash(value: object, field: str) -> str:
    text = _check_str(field, value)
    if not _HASH_RE.fullmatch(text):
        raise InvalidInputError(field, "must be 64 lowercase hexadecimal characters")
    return text


def make_id(prefix: str, time_ms: int, entropy: bytes) -> str:
    """``prefix`` + 26 lowercase Crockford base32 characters: 48 bits of milliseconds then
    80 bits of entropy, so ids sort by time. ``entropy`` must be 10 bytes."""
    if len(entropy) != 10:
        raise ValueError("entropy must be exactly 10 bytes")
    if not 0 <= time_ms < 2**48:
        raise ValueError("time_ms must fit in 48 bits")
    number = (time_ms << 80) | int.from_bytes(entropy, "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[number & 31])
        number >>= 5
    return check_id(prefix + "".join(reversed(chars)), "id")


# --- references -----------------------------------------------------------------


def sort_source_refs(refs: Iterable[SourceRef]) -> tuple[SourceRef, ...]:
    """Sorted by canonical key (UTF-8 source_id, then hash) and deduplicated."""
    return tuple(sorted(set(refs), key=lambda r: (r.source_id.encode(), r.content_hash)))


def sort_artifact_refs(refs: Iterable[ArtifactRef]) -> tuple[ArtifactRef, ...]:
    return tuple(sorted(set(refs), key=lambda r: (r.artifact_id.encode(), r.revision)))


def source_refs_bytes(refs: tuple[SourceRef, ...]) -> bytes:
    return rfc8785.dumps([{"content_hash": r.content_hash, "source_id": r.source_id} for r in refs])


def artifact_refs_bytes(refs: tuple[ArtifactRef, ...]) -> bytes:
    return rfc8785.dumps([{"artifact_id": r.artifact_id, "revision": r.revision} for r in refs])


def _loads(text: str | bytes) -> Any:
    import json

    return json.loads(text)


def parse_source_refs(text: str | bytes) -> tuple[SourceRef, ...]:
    return tuple(SourceRef(d["source_id"], d["content_hash"]) for d in _loads(text))


def parse_artifact_refs(text: str | bytes) -> tuple[ArtifactRef, ...]:
    return tuple(ArtifactRef(d["artifact_id"], int(d["revision"])) for d in _loads(text))


# --- hashes -----------------------------------------------------------------------


def source_content_hash(
    kind: str, content: str, uri: str | None, metadata: tuple[tuple[str, str], ...]
) -> str:
    """SHA-256 of the Source's canonical bytes: kind, content, uri, metadata."""
    body = rfc8785.dumps(
        {"content": content, "kind": kind, "metadata": [list(p) for p in metadata], "uri": uri}
    )
    return sha256_hex(SOURCE_CONTENT_PREFIX + body)


def make_source(
    source_id: str,
    kind: str,
    content: str,
    uri: str | None = None,
    metadata: dict[str, str] | tuple[tuple[str, str], ...] = (),
) -> Source:
    """A Source with its content hash computed; metadata sorted by key. ValueError on bad ids."""
    check_id(source_id, "source_id")
    kind = normalize_kind(kind, "source.kind")
    content = unicodedata.normalize("NFC", _check_str("source.content", content))
    if uri is not None:
        _check_str("source.uri", uri)
    pairs = tuple(sorted((dict(metadata) if not isinstance(metadata, dict) else metadata).items()))
    for k, v in pairs:
        _check_str("source.metadata", k)
        _check_str("source.metadata", v)
    return Source(
        source_id, kind, content, source_content_hash(kind, content, uri, pairs), uri, pairs
    )


def entry_content_bytes(
    kind: str, text: str, sources: tuple[SourceRef, ...], artifacts: tuple[ArtifactRef, ...]
) -> bytes:
    """Canonical bytes of an entry's content: kind, text and references only."""
    return rfc8785.dumps(
        {
            "artifact_refs": [
                {"artifact_id": r.artifact_id, "revision": r.revision} for r in artifacts
            ],
            "kind": kind,
            "source_refs": [
                {"content_hash": r.content_hash, "source_id": r.source_id} for r in sources
            ],
            "text": text,
        }
    )


def entry_content_hash(
    kind: str, text: str, sources: tuple[SourceRef, ...], artifacts: tuple[ArtifactRef, ...]
) -> str:
    """SHA-256("powercontext:entry-content:v1\\0" + canonical content bytes), 64 hex."""
    return sha256_hex(ENTRY_CONTENT_PREFIX + entry_content_bytes(kind, text, sources, artifacts))


def version_hash_ok(v: MemoryEntryVersion) -> bool:
    return entry_content_hash(v.kind, v.text, v.sources, v.artifacts) == v.entry_content_hash


@functools.lru_cache(maxsize=262_144)
def manifest_entry_bytes(e: MemoryManifestEntry) -> bytes:
    """RFC 8785 bytes of one manifest item (memoized: items are immutable values)."""
    return rfc8785.dumps(
        {
            "entry_content_hash": e.entry_content_hash,
            "entry_id": e.entry_id,
            "entry_version_id": e.entry_version_id,
            "state": e.state,
        }
    )


def change_bytes(c: MemoryChange) -> bytes:
    return rfc8785.dumps(
        {
            "entry_id": c.entry_id,
            "from_entry_version_id": c.from_entry_version_id,
            "op": c.op,
            "reason": c.reason,
            "to_entry_version_id": c.to_entry_version_id,
        }
    )


def content_bytes(content: MemoryContent, joined_items: bytes | None = None) -> bytes:
    """RFC 8785 bytes of a MemoryContent. ``joined_items`` may pass the manifest items'
    canonical bytes already joined by commas (see :mod:`powercontext.core.manifest`)."""
    if joined_items is None:
        from powercontext.core.manifest import view

        joined_items = view(content.manifest).joined
    return b"".join(
        (
            b'{"changes":[',
            b",".join(change_bytes(c) for c in content.changes),
            b'],"manifest":{"entries":[',
            joined_items,
            b'],"format":',
            rfc8785.dumps(content.manifest.format),
            b'},"schema":',
            rfc8785.dumps(content.schema),
            b"}",
        )
    )


_content_hashes: OrderedDict[int, tuple[bytes, str]] = OrderedDict()
_content_hashes_lock = threading.Lock()


def artifact_content_hash(canonical_content: bytes) -> str:
    """SHA-256("powercontext:artifact-content:v1\\0" + canonical MemoryContent bytes).

    Memoized by the identity of the bytes object (bytes are immutable; the memo holds
    them, so an id is never reused while cached): the planner and the unit of work hash
    the same megabytes of a large manifest once."""
    key = id(canonical_content)
    with _content_hashes_lock:
        hit = _content_hashes.get(key)
        if hit is not None and hit[0] is canonical_content:
            return hit[1]
    h = hashlib.sha256(ARTIFACT_CONTENT_PREFIX)
    h.update(canonical_content)
    digest = h.hexdigest()
    if type(canonical_content) is bytes:
        with _content_hashes_lock:
            _content_hashes[key] = (canonical_content, digest)
            while len(_content_hashes) > 8:
                _content_hashes.popitem(last=False)
    return digest


def lineage_bytes(lineage: RevisionLineage) -> bytes:
    return rfc8785.dumps(
        {
            "artifacts": [
                {"artifact_id": r.artifact_id, "revision": r.revision} for r in lineage.artifacts
            ],
            "sources": [
                {"content_hash": r.content_hash, "source_id": r.source_id} for r in lineage.sources
            ],
        }
    )


def parse_lineage(text: str | bytes) -> RevisionLineage:
    data = _loads(text)
    return RevisionLineage(
        sources=tuple(SourceRef(d["source_id"], d["content_hash"]) for d in data["sources"]),
        artifacts=tuple(
            ArtifactRef(d["artifact_id"], int(d["revision"])) for d in data["artifacts"]
        ),
    )


def parse_content(text: str | bytes) -> MemoryContent:
    """MemoryContent from its canonical JSON (no validation beyond shape)."""
    data = _loads(text)
    manifest = data["manifest"]
    return MemoryContent(
        manifest=MemoryManifest(
            entries=tuple(
                MemoryManifestEntry(
                    e["entry_id"], e["entry_version_id"], e["entry_content_hash"], e["state"]
                )
                for e in manifest["entries"]
            ),
            format=manifest["format"],
        ),
        changes=tuple(
            MemoryChange(
                c["op"],
                c["entry_id"],
                c["from_entry_version_id"],
                c["to_entry_version_id"],
                c["reason"],
            )
            for c in data["changes"]
        ),
        schema=data["schema"],
    )


def profile_bytes(profile: EmbeddingProfile) -> bytes:
    return canonical_dumps(profile)


def embedding_content_hash(profile: EmbeddingProfile, entry_hash: str) -> str:
    """SHA-256 over the profile's canonical bytes + the entry content hash (Memory RFC,
    "Vector integrity and offline rebuilds")."""
    return sha256_hex(EMBEDDING_CONTENT_PREFIX + profile_bytes(profile) + entry_hash.encode())
