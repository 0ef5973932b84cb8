"""``changes()`` over a range of stored Revisions with the manifest kept as canonical
bytes only (Memory RFC, "changes()": it "reads only the compact MemoryChange values";
issue 14: decoding ten 100k-entry Revisions as full models peaked the process RSS).

:func:`walk_changes` replays the stored rows forward from a full row (or a cached
Revision) holding just two lists, the manifest items' canonical bytes and their UTF-8
entry ids, and checks every Revision as :class:`~powercontext.adapters.revision_cache.
RevisionCache` does: a full row's SHA-256 against its stored hash and its bytes against
the canonical form rebuilt from its parts (each item must be the canonical form of its
four fields); a delta's items spliced in by entry id and the result's SHA-256 against the
stored hash. It returns None (the caller then decodes full Revisions) when a row is not
in the shape it reads: a full row whose items it cannot split safely (an id holding a
quote, a backslash or ``},{``), or a chain without its full row.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import re
from collections.abc import Callable

from powercontext.adapters import revision_codec
from powercontext.adapters.revision_cache import MEMORY_FAMILY, ParsedRevision
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError, IntegrityError
from powercontext.core.models import ArtifactRef, MemoryChange, MemoryContent, MemoryManifest

__all__ = ["walk_changes"]

RowReader = Callable[[str, int, int], list[RevisionRow]]
Cached = Callable[[tuple[str, int]], ParsedRevision | None]

_HEAD = b'{"changes":'
_MANIFEST = b'],"manifest":{"entries":['
_FORMAT = b'],"format":'
#: A canonical manifest item whose four strings need no JSON escape.
_ITEM = re.compile(rb'\{"entry_content_hash":"[^"\\\x00-\x1f]*","entry_id":"([^"\\\x00-\x1f]*)",'
                   rb'"entry_version_id":"[^"\\\x00-\x1f]*","state":"[^"\\\x00-\x1f]*"\}')


def _frame(content: MemoryContent) -> tuple[bytes, bytes]:
    """The canonical bytes of ``content`` before and after its manifest items."""
    empty = canonical.content_bytes(content, b"")
    split = empty.rfind(_FORMAT)
    return empty[:split], empty[split:]


class _Unreadable(Exception):
    """A row this walk does not read: the caller falls back to full Revisions."""


def _full_state(row: RevisionRow) -> tuple[list[bytes], list[bytes], tuple[MemoryChange, ...],
                                            str, str]:
    """(item bytes, entry ids, changes, format, schema) of a full row, checked."""
    body = revision_codec.decode_full(row.encoding, row.content)
    if canonical.artifact_content_hash(body) != row.content_hash:
        raise IntegrityError(f"Revision {row.revision} of {row.artifact_id!r}: stored content "
                             "does not match its content hash")
    start = body.find(_MANIFEST)  # a '"' after ',' is never inside a JSON string
    end = body.rfind(_FORMAT)
    if not body.startswith(_HEAD) or start < 0 or end < start:
        raise _Unreadable
    try:
        raw_changes = json.loads(body[len(_HEAD):start + 1])
        frame = json.loads(b'{"manifest":{"entries":[]' + body[end + 1:])
        changes = tuple(MemoryChange(c["op"], c["entry_id"], c["from_entry_version_id"],
                                     c["to_entry_version_id"], c["reason"])
                        for c in raw_changes)
        fmt, schema = frame["manifest"]["format"], frame["schema"]
    except (ValueError, KeyError, TypeError) as exc:
        raise _Unreadable from exc
    # the items, matched in place one after the other (no copy of the megabytes between)
    items: list[bytes] = []
    keys: list[bytes] = []
    pos = start + len(_MANIFEST)
    while pos < end:
        m = _ITEM.match(body, pos, end)
        if m is None:
            raise _Unreadable
        items.append(m.group(0))
        keys.append(m.group(1))
        pos = m.end()
        if pos < end:
            if body[pos:pos + 1] != b",":
                raise _Unreadable
            pos += 1
            if pos == end:
                raise _Unreadable
    if any(a >= b for a, b in itertools.pairwise(keys)):
        raise IntegrityError(f"Revision {row.revision} of {row.artifact_id!r}: content is "
                             "not canonical")
    # the items are canonical and joined by commas: the rest must be the canonical frame
    head, tail = _frame(MemoryContent(MemoryManifest((), fmt), changes, schema))
    if body[:start + len(_MANIFEST)] != head or body[end:] != tail:
        raise IntegrityError(f"Revision {row.revision} of {row.artifact_id!r}: content is "
                             "not canonical")
    return items, keys, changes, fmt, schema


def walk_changes(artifact_id: str, after: int, upto: int, read_rows: RowReader,
                 cached: Cached) -> list[tuple[ArtifactRef, tuple[MemoryChange, ...]]] | None:
    """``(ref, changes)`` of the Revisions ``after < r <= upto`` of ``artifact_id``,
    ascending, every stored row on the way checked (the module docstring), or None when
    the rows are not in a shape this walk reads. ``cached`` gives a Revision the cache
    holds (its changes are taken as they are; the walk may start from it).
    ArtifactNotFoundError for a missing Revision or another family's row; IntegrityError
    for a row that fails its checks."""
    first = after + 1
    low = max(1, first - first % revision_codec.CHECKPOINT_EVERY)
    base: ParsedRevision | None = None
    for r in range(after, low - 1, -1):
        base = cached((artifact_id, r))
        if base is not None:
            low = r + 1
            break
    rows = read_rows(artifact_id, low - 1, upto)
    if any(row.encoding == revision_codec.LOG for row in rows):
        return None  # the manifest log's Revisions: the caller reads them from the log
    if not rows or rows[-1].revision != upto or rows[0].revision != low:
        if rows and rows[0].revision != low:
            return None
        raise ArtifactNotFoundError(f"no Revision {upto} of Artifact {artifact_id!r}")
    items: list[bytes] = []
    keys: list[bytes] = []
    fmt = schema = ""
    if base is not None:
        items = list(base.view.item_bytes)
        keys = [e.entry_id.encode("utf-8") for e in base.view.entries]
        fmt, schema = base.view.manifest.format, base.revision.content.schema
    elif not revision_codec.is_full(rows[0].encoding):
        return None  # no checkpoint where one belongs: the full decoder walks from 1
    out: list[tuple[ArtifactRef, tuple[MemoryChange, ...]]] = []
    try:
        for row in rows:
            if row.family != MEMORY_FAMILY:
                raise ArtifactNotFoundError(f"Artifact {row.artifact_id!r} is not a Memory")
            if revision_codec.is_full(row.encoding):
                items, keys, changes, fmt, schema = _full_state(row)
            else:
                changed, changes = revision_codec.decode_delta(row.content)
                for entry_id, item in changed.items():
                    key = entry_id.encode("utf-8")
                    i = bisect.bisect_left(keys, key)
                    if i < len(keys) and keys[i] == key:
                        items[i] = canonical.manifest_entry_bytes(item)
                    else:
                        keys.insert(i, key)
                        items.insert(i, canonical.manifest_entry_bytes(item))
                head, tail = _frame(MemoryContent(MemoryManifest((), fmt), changes, schema))
                digest = hashlib.sha256(head)
                digest.update(b",".join(items))
                digest.update(tail)
                # the spec's hash (canonical.artifact_content_hash) over the same bytes
                if digest.hexdigest() != row.content_hash:
                    raise IntegrityError(
                        f"Revision {row.revision} of {row.artifact_id!r}: stored content "
                        "does not match its content hash")
            if row.revision > after:
                hit = cached((artifact_id, row.revision))
                out.append((ArtifactRef(artifact_id, row.revision),
                            hit.revision.content.changes if hit is not None else changes))
    except _Unreadable:
        return None
    return out
