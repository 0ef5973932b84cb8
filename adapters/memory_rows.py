"""The Memory family's row shapes, decoded once for every engine (the shared shapes,
Revisions and Sources, are in :mod:`powercontext.adapters.storage.rows`): entry
versions, vector rows, the vector projection's hash pairs and business keys. A
driver's text columns may be ``str`` or ``bytes``; these decoders accept both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from powercontext.adapters.revision_cache import MEMORY_FAMILY
from powercontext.adapters.storage.rows import opt_text, text
from powercontext.core import canonical
from powercontext.core.models import EmbeddingVector, MemoryEntryVersion

__all__ = [
    "MEMORY_FAMILY",
    "VectorRow",
    "entry_version",
    "entry_version_params",
    "key_pair",
    "vector_hashes",
]


@attrs.frozen
class VectorRow:
    """A vector projection to write beside a head row."""

    embedding_content_hash: str
    vector: EmbeddingVector


def entry_version(row: Sequence[Any]) -> MemoryEntryVersion:
    """``(memory_artifact_id, entry_id, entry_version_id, version, previous_version_id,
    kind, text, sources, artifacts, entry_content_hash, created_in_revision)``, the
    column order of the ``versions_by_id`` template, as a MemoryEntryVersion (the
    references are canonical JSON)."""
    aid, eid, vid, version, prev, kind, body, srefs, arefs, chash, created = row
    return MemoryEntryVersion(
        text(aid), text(eid), text(vid), int(version), opt_text(prev), text(kind),
        text(body), canonical.parse_source_refs(text(srefs)),
        canonical.parse_artifact_refs(text(arefs)), text(chash), int(created))


def entry_version_params(v: MemoryEntryVersion) -> tuple[Any, ...]:
    """The parameters of the ``version_insert`` template for ``v``."""
    return (v.memory_artifact_id, v.entry_id, v.entry_version_id, v.version,
            v.previous_version_id, v.kind, v.text,
            canonical.source_refs_bytes(v.sources).decode("utf-8"),
            canonical.artifact_refs_bytes(v.artifacts).decode("utf-8"),
            v.entry_content_hash, v.created_in_revision)


def vector_hashes(row: Sequence[Any]) -> tuple[str, str | None]:
    """``(entry_content_hash, embedding_content_hash or None)`` of a head row."""
    h, emb = row
    return text(h), opt_text(emb)


def key_pair(row: Sequence[Any]) -> tuple[str, str]:
    """``(key, artifact_id)`` of a ``memory_keys`` row."""
    k, a = row
    return text(k), text(a)
