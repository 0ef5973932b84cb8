"""How Revision content is stored: full canonical bytes, or a compressed delta against
the previous Revision with a full checkpoint every :data:`CHECKPOINT_EVERY` Revisions.

The bytes that are hashed and returned never change: a stored delta is decoded by
splicing its manifest items into the previous Revision's manifest, and the result is
checked against the stored content hash before anyone sees it. Storing every flat-v1
manifest in full would cost O(revisions x entries) bytes (about 100 MB for 10k entries
written in 100-entry batches); deltas cost O(changes) plus the checkpoints.

Encodings (the ``content_encoding`` column):

* ``identity``: the canonical RFC 8785 bytes;
* ``zlib``: those bytes, zlib-compressed;
* ``delta+zlib``: zlib-compressed JSON ``{"items": [[entry_id, entry_version_id,
  entry_content_hash, state], ...], "changes": [[op, entry_id, from, to, reason], ...]}``
  against Revision ``revision - 1``;
* ``manifest-log`` (:data:`LOG`, what a backend with the manifest log writes, see
  :mod:`powercontext.adapters.manifest_log`): zlib-compressed JSON ``{"changes": [...]}``
  as above; the manifest items this Revision sets are rows of the manifest log, so no
  Revision row ever holds a whole manifest (no checkpoints).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping, Sequence

from powercontext.core.errors import IntegrityError
from powercontext.core.models import (
    MemoryChange,
    MemoryContent,
    MemoryManifestEntry,
)

__all__ = [
    "CHECKPOINT_EVERY",
    "DELTA",
    "FULL",
    "FULL_ZLIB",
    "LOG",
    "decode_changes",
    "decode_delta",
    "decode_full",
    "encode",
    "encode_changes",
    "is_full",
]

FULL = "identity"
FULL_ZLIB = "zlib"
DELTA = "delta+zlib"
LOG = "manifest-log"
CHECKPOINT_EVERY = 32


def is_full(encoding: str) -> bool:
    return encoding in (FULL, FULL_ZLIB)


def encode(
    revision: int,
    content: MemoryContent,
    content_bytes: Callable[[], bytes],
    items: Mapping[str, MemoryManifestEntry],
) -> tuple[str, bytes]:
    """``(encoding, stored bytes)`` for a Revision whose changed manifest items are
    ``items`` (a backend without the manifest log): a full compressed copy of
    ``content_bytes()`` at Revision 1 and every CHECKPOINT_EVERY-th, else a delta."""
    if revision == 1 or revision % CHECKPOINT_EVERY == 0:
        return FULL_ZLIB, zlib.compress(content_bytes(), 6)
    body = {
        "items": [
            [e.entry_id, e.entry_version_id, e.entry_content_hash, e.state]
            for e in items.values()
        ],
        "changes": _changes(content.changes),
    }
    return DELTA, zlib.compress(json.dumps(body, ensure_ascii=False).encode("utf-8"), 6)


def _changes(changes: Sequence[MemoryChange]) -> list[list[str | None]]:
    return [[c.op, c.entry_id, c.from_entry_version_id, c.to_entry_version_id, c.reason]
            for c in changes]


def encode_changes(changes: Sequence[MemoryChange]) -> bytes:
    """The stored bytes of a :data:`LOG` Revision: its changes."""
    body = {"changes": _changes(changes)}
    return zlib.compress(json.dumps(body, ensure_ascii=False).encode("utf-8"), 6)


def decode_changes(stored: bytes) -> tuple[MemoryChange, ...]:
    """The changes of a :data:`LOG` Revision row. IntegrityError when corrupt."""
    try:
        body = json.loads(zlib.decompress(stored))
        return tuple(MemoryChange(c[0], c[1], c[2], c[3], c[4]) for c in body["changes"])
    except (ValueError, KeyError, IndexError, TypeError, zlib.error) as exc:
        raise IntegrityError(f"a stored Revision's changes are corrupt: {exc}") from exc


def decode_full(encoding: str, stored: bytes) -> bytes:
    """The canonical bytes of a full row."""
    if encoding == FULL:
        return bytes(stored)
    if encoding == FULL_ZLIB:
        return zlib.decompress(stored)
    raise IntegrityError(f"unknown or non-full revision encoding {encoding!r}")


def decode_delta(
    stored: bytes,
) -> tuple[dict[str, MemoryManifestEntry], tuple[MemoryChange, ...]]:
    """The manifest items and changes of a delta row."""
    try:
        body = json.loads(zlib.decompress(stored))
        items = {
            e[0]: MemoryManifestEntry(e[0], e[1], e[2], e[3]) for e in body["items"]
        }
        changes = tuple(MemoryChange(c[0], c[1], c[2], c[3], c[4]) for c in body["changes"])
    except (ValueError, KeyError, IndexError, TypeError, zlib.error) as exc:
        raise IntegrityError(f"a stored revision delta is corrupt: {exc}") from exc
    return items, changes
