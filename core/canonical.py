"""Canonical JSON (RFC 8785 through ``rfc8785``), canonical bytes and hashes (Memory RFC,
"Normalization, hashing, and the search analyzer"). The checks and normalization of input
values (text, reason, kind, ids, hashes) live in :mod:`powercontext.core.normalize`; their
names are kept here, where callers have always found them.

The canonical bytes of a MemoryContent are built from the canonical bytes of its
manifest entries: RFC 8785 serializes an array element by element, so the bytes of an
unchanged entry are reused as they are (:mod:`powercontext.core.manifest` keeps them per
manifest and passes them in). ``content_bytes`` proves equal to
``rfc8785.dumps(unstructure(content))`` (a property test holds it).

Pure: nothing here is memoized across calls. A caller that needs a value twice carries
it (a plan carries its canonical bytes and hash, a manifest view its items' bytes).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import unicodedata
from collections.abc import Iterable
from typing import Any, cast

import attrs
import cattrs
import rfc8785

from powercontext.core.characters import check_identifier
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
from powercontext.core.normalize import (
    MAX_ID_LENGTH,
    MAX_JSON_INT,
    MAX_REASON_CODE_POINTS,
    MAX_TEXT_BYTES,
    check_hash,
    check_id,
    check_json_int,
    check_str,
    make_id,
    normalize_kind,
    normalize_reason,
    normalize_text,
)

__all__ = [
    "ENTRY_CONTENT_PREFIX",
    "HASH_FORMAT",
    "JSON_ESCAPED",
    "LEGACY_HASH_FORMAT",
    "MAX_ID_LENGTH",
    "MAX_JSON_INT",
    "MAX_REASON_CODE_POINTS",
    "MAX_TEXT_BYTES",
    "artifact_content_hash",
    "artifact_refs_bytes",
    "canonical_dumps",
    "change_bytes",
    "check_hash",
    "check_id",
    "check_json_int",
    "check_str",
    "content_bytes",
    "content_bytes_equal",
    "content_frame",
    "embedding_content_hash",
    "entry_content_bytes",
    "entry_content_hash",
    "legacy_artifact_content_hash",
    "lineage_bytes",
    "make_id",
    "manifest_entry_bytes",
    "manifest_items_bytes",
    "normalize_kind",
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
    "utf16_key",
]

#: The one prefix the spec writes (Memory RFC, "Normalization, hashing, and the search
#: analyzer"): entry_content_hash = SHA-256(ENTRY_CONTENT_PREFIX + canonical bytes).
ENTRY_CONTENT_PREFIX = b"powercontext:entry-content:v1\x00"
#: The Source store's own domain prefix. Source hashes are the integration's (the Memory
#: RFC does not define them), and every stored entry version cites them, so it stays.
SOURCE_CONTENT_PREFIX = b"powercontext:source-content:v1\x00"
#: Hash formats of the stored Artifact content hash (the database records which one its
#: Revisions use, metadata key ``hash_format``). ``HASH_FORMAT`` is the spec's formula;
#: ``LEGACY_HASH_FORMAT`` names databases written before it, whose Artifact content hash
#: was SHA-256(LEGACY_ARTIFACT_CONTENT_PREFIX + bytes) (see ``legacy_artifact_content_hash``).
HASH_FORMAT = "spec-v1"
LEGACY_HASH_FORMAT = "prefixed-v0"
LEGACY_ARTIFACT_CONTENT_PREFIX = b"powercontext:artifact-content:v1\x00"


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


def canonical_dumps(value: Any, field: str = "value") -> bytes:
    """RFC 8785 bytes of plain data or of a model (object keys in UTF-16 code-unit order,
    as the ``rfc8785`` library sorts them). A value RFC 8785 / I-JSON cannot carry (NaN,
    infinity, an integer of magnitude 2**53 or more, a lone surrogate, a non-JSON type)
    raises :class:`InvalidInputError` naming ``field``."""
    if attrs.has(type(value)):
        value = unstructure(value)
    return _jcs(value, field)


def _jcs(value: Any, field: str) -> bytes:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise InvalidInputError(field, f"cannot be written as RFC 8785 JSON: {exc}") from None


def utf16_key(key: str) -> bytes:
    """Sort key of RFC 8785 object member names: their UTF-16 code units (RFC 8785,
    section 3.2.3), which differs from code-point order once a name holds a character
    above U+FFFF next to one in U+E000..U+FFFF."""
    return key.encode("utf-16-be", "surrogatepass")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- references -----------------------------------------------------------------


def sort_source_refs(refs: Iterable[SourceRef]) -> tuple[SourceRef, ...]:
    """Sorted by canonical key (UTF-8 source_id, then hash) and deduplicated."""
    return tuple(sorted(set(refs), key=lambda r: (r.source_id.encode(), r.content_hash)))


def sort_artifact_refs(refs: Iterable[ArtifactRef]) -> tuple[ArtifactRef, ...]:
    return tuple(sorted(set(refs), key=lambda r: (r.artifact_id.encode(), r.revision)))


def source_refs_bytes(refs: tuple[SourceRef, ...]) -> bytes:
    return _jcs([{"content_hash": r.content_hash, "source_id": r.source_id} for r in refs],
                "source_refs")


def artifact_refs_bytes(refs: tuple[ArtifactRef, ...]) -> bytes:
    return _jcs([{"artifact_id": r.artifact_id, "revision": r.revision} for r in refs],
                "artifact_refs")


def parse_source_refs(text: str | bytes) -> tuple[SourceRef, ...]:
    return tuple(SourceRef(d["source_id"], d["content_hash"]) for d in json.loads(text))


def parse_artifact_refs(text: str | bytes) -> tuple[ArtifactRef, ...]:
    return tuple(ArtifactRef(d["artifact_id"], int(d["revision"])) for d in json.loads(text))


# --- hashes -----------------------------------------------------------------------


def source_content_hash(
    kind: str, content: str, uri: str | None, metadata: tuple[tuple[str, str], ...]
) -> str:
    """SHA-256 of the Source's canonical bytes: kind, content, uri, metadata (the
    ``[key, value]`` pairs in the order given; ``make_source`` sorts them by the UTF-16
    code units of the key, the order RFC 8785 gives object members). A value RFC 8785
    cannot carry raises InvalidInputError naming ``source``."""
    value = {"content": content, "kind": kind, "metadata": [list(p) for p in metadata],
             "uri": uri}
    body = _strings_json(value) or _jcs(value, "source")
    return sha256_hex(SOURCE_CONTENT_PREFIX + body)


def _strings_json(value: dict[str, Any]) -> bytes | None:
    r"""RFC 8785 bytes of a Source body by the C JSON encoder, or None (then rfc8785).
    Exact for ASCII member names given sorted and values that are str, None or lists of
    [str, str]: JSON escapes a string as RFC 8785 does (\b \t \n \f \r, other controls
    as lower-case \u00xx, quote, backslash); a lone surrogate returns None."""
    for v in value.values():
        if not (v is None or type(v) is str or (type(v) is list and all(
                type(p) is list and len(p) == 2 and type(p[0]) is str and type(p[1]) is str
                for p in v))):
            return None
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return None


def make_source(
    source_id: str,
    kind: str,
    content: str,
    uri: str | None = None,
    metadata: dict[str, str] | tuple[tuple[str, str], ...] = (),
) -> Source:
    """A Source with its content hash computed; metadata sorted by the UTF-16 code units of
    its keys (RFC 8785 member order). InvalidInputError naming the field on bad ids or
    kind, a uri or metadata key :func:`check_identifier` refuses, a bad metadata value."""
    check_id(source_id, "source_id")
    kind = normalize_kind(kind, "source.kind")
    content = unicodedata.normalize("NFC", check_str("source.content", content))
    if uri is not None:
        check_identifier(uri, "source.uri")  # a uri names the Source in one piece of a line
    try:
        items = list((metadata if isinstance(metadata, dict) else dict(metadata)).items())
    except (TypeError, ValueError):
        raise InvalidInputError("source.metadata", "must be a mapping of strings") from None
    for k, v in items:
        check_identifier(k, "source.metadata")  # a key is shown as part of a line
        check_str(f"source.metadata[{k!r}]", v)
    pairs = tuple(sorted(items, key=lambda p: utf16_key(p[0])))
    return Source(
        source_id, kind, content, source_content_hash(kind, content, uri, pairs), uri, pairs
    )


def entry_content_bytes(
    kind: str, text: str, sources: tuple[SourceRef, ...], artifacts: tuple[ArtifactRef, ...]
) -> bytes:
    """Canonical bytes of an entry's content: kind, text and references only.
    InvalidInputError (field ``entry``) for a value RFC 8785 cannot carry, e.g. an
    Artifact revision of 2**53 or more. Plain strings and safe integers are written
    directly (``rfc8785.dumps``'s bytes: a property test holds it), the rest by it."""
    fast = _entry_content_direct(kind, text, sources, artifacts)
    if fast is not None:
        return fast
    return _jcs(
        {
            "artifact_refs": [
                {"artifact_id": r.artifact_id, "revision": r.revision} for r in artifacts
            ],
            "kind": kind,
            "source_refs": [
                {"content_hash": r.content_hash, "source_id": r.source_id} for r in sources
            ],
            "text": text,
        },
        "entry",
    )


_STR = json.encoder.encode_basestring  # RFC 8785's string escapes (3.2.2.2) exactly


def _entry_content_direct(
    kind: str, text: str, sources: tuple[SourceRef, ...], artifacts: tuple[ArtifactRef, ...]
) -> bytes | None:
    """:func:`entry_content_bytes` written directly; None for a value not a plain
    ``str`` or ``int`` in RFC 8785's safe range, or not UTF-8."""
    if type(kind) is not str or type(text) is not str:
        return None
    refs = []
    for a in artifacts:
        i, r = a.artifact_id, a.revision
        if type(i) is not str or type(r) is not int or not -(2**53) < r < 2**53:
            return None
        refs.append(f'{{"artifact_id":{_STR(i)},"revision":{r}}}')
    cited = []
    for c in sources:
        h, i = c.content_hash, c.source_id
        if type(h) is not str or type(i) is not str:
            return None
        cited.append(f'{{"content_hash":{_STR(h)},"source_id":{_STR(i)}}}')
    out = (f'{{"artifact_refs":[{",".join(refs)}],"kind":{_STR(kind)},'
           f'"source_refs":[{",".join(cited)}],"text":{_STR(text)}}}')
    try:
        return out.encode("utf-8")
    except UnicodeEncodeError:
        return None


def entry_content_hash(
    kind: str, text: str, sources: tuple[SourceRef, ...], artifacts: tuple[ArtifactRef, ...]
) -> str:
    """SHA-256("powercontext:entry-content:v1\\0" + canonical content bytes), 64 hex."""
    return sha256_hex(ENTRY_CONTENT_PREFIX + entry_content_bytes(kind, text, sources, artifacts))


def version_hash_ok(v: MemoryEntryVersion) -> bool:
    return entry_content_hash(v.kind, v.text, v.sources, v.artifacts) == v.entry_content_hash


#: Characters RFC 8785 writes escaped inside a string (section 3.2.2.2); every other
#: character is written as itself, in UTF-8.
JSON_ESCAPED = re.compile(r'[\x00-\x1f"\\]')


def manifest_entry_bytes(e: MemoryManifestEntry) -> bytes:
    """RFC 8785 bytes of one manifest item: the object of its four members in UTF-16
    key order. Ids, hashes and states need no escaping, so the bytes are written
    directly (the same bytes ``rfc8785.dumps`` gives, a property test holds it); a
    member that needs escaping, or is not a string, goes through ``rfc8785``.
    InvalidInputError (field ``manifest.entries``) for a value RFC 8785 cannot carry."""
    h, i, v, st = e.entry_content_hash, e.entry_id, e.entry_version_id, e.state
    if (type(h) is str and type(i) is str and type(v) is str and type(st) is str
            and JSON_ESCAPED.search(h + i + v + st) is None):
        try:
            return (f'{{"entry_content_hash":"{h}","entry_id":"{i}",'
                    f'"entry_version_id":"{v}","state":"{st}"}}').encode()
        except UnicodeEncodeError:
            pass  # a lone surrogate: rfc8785 names the error
    return _jcs(
        {
            "entry_content_hash": e.entry_content_hash,
            "entry_id": e.entry_id,
            "entry_version_id": e.entry_version_id,
            "state": e.state,
        },
        "manifest.entries",
    )


def change_bytes(c: MemoryChange) -> bytes:
    return _jcs(
        {
            "entry_id": c.entry_id,
            "from_entry_version_id": c.from_entry_version_id,
            "op": c.op,
            "reason": c.reason,
            "to_entry_version_id": c.to_entry_version_id,
        },
        "changes",
    )


def manifest_items_bytes(manifest: MemoryManifest) -> bytes:
    """The canonical bytes of the manifest's items joined by commas: the inside of its
    JSON ``entries`` array (:func:`manifest_entry_bytes` of each item)."""
    return b",".join([manifest_entry_bytes(e) for e in manifest.entries])


def content_bytes(content: MemoryContent, joined_items: bytes | None = None) -> bytes:
    """RFC 8785 bytes of a MemoryContent (Memory RFC, "Normalization, hashing, and the
    search analyzer"). ``joined_items`` may pass the manifest items' canonical bytes
    already joined by commas (a :class:`powercontext.core.manifest.ManifestView` keeps
    them); otherwise they are computed (:func:`manifest_items_bytes`). InvalidInputError
    for a value RFC 8785 cannot carry."""
    if joined_items is None:
        # a chunked manifest (powercontext.core.manifest_chunks) keeps its items' bytes
        pieces = getattr(content.manifest.entries, "pieces", None)
        joined_items = (b",".join(pieces()) if pieces is not None
                        else manifest_items_bytes(content.manifest))
    head, tail = content_frame(content)
    return b"".join((head, joined_items, tail))


def content_bytes_equal(content: MemoryContent, joined_items: bytes, candidate: bytes) -> bool:
    """Whether ``candidate`` is exactly :func:`content_bytes` ``(content, joined_items)``,
    compared in place (no copy of the megabytes of a large manifest)."""
    if not isinstance(candidate, bytes):
        candidate = bytes(candidate)
    head, tail = content_frame(content)
    return (
        len(candidate) == len(head) + len(joined_items) + len(tail)
        and candidate.startswith(head)
        and candidate.endswith(tail)
        and candidate.startswith(joined_items, len(head))
    )


def content_frame(content: MemoryContent) -> tuple[bytes, bytes]:
    """The canonical bytes of ``content`` before and after its manifest items."""
    head = b"".join(
        (
            b'{"changes":[',
            b",".join(change_bytes(c) for c in content.changes),
            b'],"manifest":{"entries":[',
        )
    )
    tail = b"".join(
        (
            b'],"format":',
            _jcs(content.manifest.format, "manifest.format"),
            b'},"schema":',
            _jcs(content.schema, "schema"),
            b"}",
        )
    )
    return head, tail


def artifact_content_hash(canonical_content: bytes) -> str:
    """The Artifact content hash: lowercase hex SHA-256 of the complete canonical
    MemoryContent bytes, with no prefix (Memory RFC, "Normalization, hashing, and the
    search analyzer": "Artifact content_hash is computed over the complete canonical
    MemoryContent"), so anyone holding the spec recomputes it. Not memoized: a plan
    carries whether its hash matches its bytes
    (:attr:`powercontext.core.plan.MemoryPlan.content_hash_matches`)."""
    return hashlib.sha256(canonical_content).hexdigest()


def legacy_artifact_content_hash(canonical_content: bytes) -> str:
    """The Artifact content hash as databases of hash format ``prefixed-v0`` stored it:
    SHA-256(b"powercontext:artifact-content:v1\\0" + bytes). Used only to verify such a
    database before it is rewritten to the spec's formula (``memory rebuild --rehash``)."""
    return sha256_hex(LEGACY_ARTIFACT_CONTENT_PREFIX + canonical_content)


def lineage_bytes(lineage: RevisionLineage) -> bytes:
    return _jcs(
        {
            "artifacts": [
                {"artifact_id": r.artifact_id, "revision": r.revision} for r in lineage.artifacts
            ],
            "sources": [
                {"content_hash": r.content_hash, "source_id": r.source_id} for r in lineage.sources
            ],
        },
        "lineage",
    )


def parse_lineage(text: str | bytes) -> RevisionLineage:
    data = json.loads(text)
    return RevisionLineage(
        sources=tuple(SourceRef(d["source_id"], d["content_hash"]) for d in data["sources"]),
        artifacts=tuple(
            ArtifactRef(d["artifact_id"], int(d["revision"])) for d in data["artifacts"]
        ),
    )


def parse_content(text: str | bytes) -> MemoryContent:
    """MemoryContent from its canonical JSON (no validation beyond shape)."""
    data = json.loads(text)
    manifest = data["manifest"]
    return MemoryContent(
        manifest=MemoryManifest(
            entries=tuple(
                MemoryManifestEntry(  # one "active" string, not one per item (memory)
                    e["entry_id"], e["entry_version_id"], e["entry_content_hash"],
                    cast(Any, sys.intern(e["state"])),
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
    """RFC 8785 bytes of the embedding profile (its five fields as one object)."""
    return canonical_dumps(profile, "embedding_profile")


def embedding_content_hash(profile: EmbeddingProfile, entry_hash: str) -> str:
    """Lowercase hex SHA-256 of the profile's canonical bytes immediately followed by the
    entry content hash (its 64 ASCII hex characters), with no prefix (Memory RFC, "Vector
    integrity and offline rebuilds": "computed over embedding profile canonical bytes +
    entry_content_hash")."""
    return sha256_hex(profile_bytes(profile) + entry_hash.encode("ascii"))

