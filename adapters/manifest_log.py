"""The manifest log: where a Revision's manifest items are stored, and the reads that
need only some of them (Memory RFC, "Storage abstraction and physical model": an
adapter "may add columns or use equivalent tables" whose keys reference the same
authoritative Revision in the same transaction; docs/storage.md, "How a Revision is
stored").

Two insert-only tables (``sql/templates.py``), written in the transaction of the
Revision they belong to:

* ``memory_manifest_items``: every manifest item a Revision sets (an added, revised,
  deactivated or reactivated entry), at that Revision;
* ``memory_manifest_baselines``: the Revisions at which every item of the manifest is
  in the log. A Memory created with the log has its baseline at Revision 1; a Memory an
  earlier release wrote gets one, at its base, in the transaction of its first write
  by this release (every item of the base: once, in time proportional to the Memory).

From a Memory's first baseline on, the manifest of Revision ``r`` is, for every entry,
its row with the greatest revision ``<= r``; such a Revision's own row
(``content_encoding`` :data:`~powercontext.adapters.revision_codec.LOG`) holds only its
changes. No row ever holds a whole manifest again, so no write pays a checkpoint.

Reads: a whole Revision (:func:`decode`, or :func:`step` from a cached earlier one) is
checked against its content hash before anyone sees it, as every stored form is. A
search or an expand needs the items of a few entries of one Revision:
:class:`LazyManifest` reads exactly those rows, in the caller's read transaction; they
are the Revision's stored manifest items, the same rows a whole read hash-checks.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, cast

from powercontext.adapters import revision_codec
from powercontext.adapters.manifest_packs import ManifestPacks
from powercontext.adapters.revision_cache import MEMORY_FAMILY, ParsedRevision, RowReader
from powercontext.adapters.storage.rows import RevisionRow
from powercontext.core import canonical, manifest, manifest_chunks
from powercontext.core.errors import ArtifactNotFoundError, IntegrityError
from powercontext.core.models import (
    MANIFEST_FORMAT,
    ArtifactRef,
    MemoryContent,
    MemoryManifest,
    MemoryManifestEntry,
    MemoryRevision,
)

__all__ = ["ItemRow", "LazyManifest", "LogEngine", "ManifestLog", "decode", "decode_view",
           "latest", "read", "step"]

#: A row of ``memory_manifest_items``: (entry_id, revision, entry_version_id,
#: entry_content_hash, state).
ItemRow = tuple[str, int, str, str, str]


class LogEngine(Protocol):
    """What the log needs of a SQL engine: the shared templates run in the caller's
    transaction (:mod:`powercontext.sql.templates` names)."""

    def _template_rows(self, name: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...

    def _template_rows_in(self, name: str, values: Sequence[Any],
                          before: Sequence[Any]) -> list[tuple[Any, ...]]: ...

    def _template_many(self, name: str, rows: Sequence[Sequence[Any]]) -> None: ...


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


_STATES = {"active": "active", "inactive": "inactive"}  # one string object each


def _rows(raw: list[tuple[Any, ...]]) -> list[ItemRow]:
    """Engine rows as :data:`ItemRow` values (taken as they are when the engine gives
    these types: a column's values all have one type)."""
    if raw and all(type(x) is str for x in raw[0][::2]) and type(raw[0][1]) is int \
            and type(raw[0][3]) is str:
        states = _STATES
        return [(r[0], r[1], r[2], r[3], states.get(r[4], r[4])) for r in raw]
    return [(_text(r[0]), int(r[1]), _text(r[2]), _text(r[3]), sys.intern(_text(r[4])))
            for r in raw]


class ManifestLog:
    """The manifest log of one database, over an engine's shared templates. Every
    method runs in the caller's transaction."""

    def __init__(self, engine: LogEngine) -> None:
        self._engine = engine
        #: the head manifest's items in packs (:mod:`powercontext.adapters.manifest_packs`)
        self.packs = ManifestPacks(engine)
        #: artifact id -> its first baseline (a baseline is never removed, so a known one
        #: stays true; only answers read from committed rows are kept)
        self._first: dict[str, int] = {}

    def first_baselines(self, artifact_ids: Sequence[str]) -> dict[str, int]:
        """The first baseline of each of these Memories that has one (a baseline once
        committed is never removed, so the answers are kept: call this before a write
        transaction inserts a baseline, never after)."""
        out = {a: self._first[a] for a in artifact_ids if a in self._first}
        missing = [a for a in dict.fromkeys(artifact_ids) if a not in out]
        if missing:
            for a, r in self._engine._template_rows_in("manifest_baselines_first", missing, ()):
                out[_text(a)] = int(r)
            self._first.update((a, out[a]) for a in missing if a in out)
        return out

    def covers(self, artifact_id: str, revision: int) -> bool:
        """Whether Revision ``revision`` of the Memory is in the log (at or after its
        first baseline)."""
        first = self.first_baselines([artifact_id]).get(artifact_id)
        return first is not None and first <= revision

    def baseline_upto(self, artifact_id: str, revision: int) -> int | None:
        """The newest baseline at or before ``revision``."""
        rows = self._engine._template_rows("manifest_baselines_upto", [artifact_id, revision])
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    def insert(self, artifact_id: str, revision: int,
               items: Iterable[MemoryManifestEntry]) -> None:
        """The items Revision ``revision`` sets."""
        self._engine._template_many("manifest_item_insert", [
            (artifact_id, e.entry_id, revision, e.entry_version_id, e.entry_content_hash,
             e.state) for e in items])

    def insert_baseline(self, artifact_id: str, revision: int,
                        items: Iterable[MemoryManifestEntry]) -> None:
        """Every item of Revision ``revision``, and the baseline row naming it."""
        self.insert(artifact_id, revision, items)
        self._engine._template_many("manifest_baseline_insert", [(artifact_id, revision)])

    def range(self, artifact_id: str, low: int, upto: int) -> list[ItemRow]:
        """Rows with ``low <= revision <= upto``, by (entry_id, revision)."""
        return _rows(self._engine._template_rows(
            "manifest_items_range", [artifact_id, low, upto]))

    def changed(self, artifact_id: str, after: int, upto: int) -> list[ItemRow]:
        """Rows with ``after < revision <= upto``, by (revision, entry_id)."""
        return _rows(self._engine._template_rows(
            "manifest_items_changed", [artifact_id, after, upto]))

    def items_of(self, artifact_id: str, upto: int, entry_ids: Sequence[str]) -> list[ItemRow]:
        """Every row of these entries with ``revision <= upto`` (any order)."""
        if not entry_ids:
            return []
        return _rows(self._engine._template_rows_in(
            "manifest_items_of", entry_ids, [artifact_id, upto]))


def _entry(r: ItemRow) -> MemoryManifestEntry:
    return MemoryManifestEntry(r[0], r[2], r[3], cast(Any, r[4]))


def latest(rows: Iterable[ItemRow]) -> dict[str, MemoryManifestEntry]:
    """The newest row of each entry (any row order), by entry_id."""
    best: dict[str, ItemRow] = {}
    for r in rows:
        old = best.get(r[0])
        if old is None or old[1] < r[1]:
            best[r[0]] = r
    return {k: _entry(r) for k, r in best.items()}


def _sorted_latest(rows: list[ItemRow]) -> list[tuple[str, str, str, str]]:
    """The newest row of each entry as (entry_id, entry_version_id, entry_content_hash,
    state), in entry order, from rows by (entry_id, revision) (sorted here when the
    engine's order is not the code point order)."""
    out = [(r[0], r[2], r[3], r[4]) for i, r in enumerate(rows)
           if i + 1 == len(rows) or rows[i + 1][0] != r[0]]
    if any(a[0] >= b[0] for a, b in itertools.pairwise(out)):
        return _sorted_latest(sorted(rows, key=lambda r: (r[0], r[1])))
    return out


def _changes_of(row: RevisionRow) -> Any:
    if row.family != MEMORY_FAMILY:
        raise ArtifactNotFoundError(f"Artifact {row.artifact_id!r} is not a Memory")
    if row.encoding != revision_codec.LOG:
        raise IntegrityError(f"Revision {row.revision} of {row.artifact_id!r} is not in the "
                             "manifest log")
    return revision_codec.decode_changes(row.content)


def _checked(row: RevisionRow, view: manifest.ManifestView, changes: Any) -> ParsedRevision:
    content = MemoryContent(view.manifest, changes)
    if manifest.content_digest(content, view) != row.content_hash:
        raise IntegrityError(f"Revision {row.revision} of {row.artifact_id!r}: stored content "
                             "does not match its content hash")
    revision = MemoryRevision(ArtifactRef(row.artifact_id, row.revision), content,
                              row.content_hash, canonical.parse_lineage(row.lineage))
    return ParsedRevision(revision, view)


def decode(row: RevisionRow, rows: list[ItemRow]) -> ParsedRevision:
    """Revision ``row`` (a :data:`~powercontext.adapters.revision_codec.LOG` row) from
    the log rows from its newest baseline to it, by (entry_id, revision): the newest
    item of each entry, its changes, and the content hash checked over the canonical
    bytes. IntegrityError / ArtifactNotFoundError."""
    changes = _changes_of(row)
    return _checked(row, decode_view(rows), changes)


def decode_view(rows: list[ItemRow]) -> manifest.ManifestView:
    """The manifest view of the log rows from a baseline to a Revision, by (entry_id,
    revision): the newest item of each entry (unchecked: the caller checks a hash)."""
    entries = manifest_chunks.from_strings(_sorted_latest(rows))
    return manifest.view(MemoryManifest(entries=entries, format=MANIFEST_FORMAT))


def step(row: RevisionRow, base: ParsedRevision, rows: list[ItemRow]) -> ParsedRevision:
    """Revision ``row`` from an earlier validated Revision ``base`` of the same Memory
    and the log rows after it up to ``row``: spliced, then checked as :func:`decode`.
    The splice is not kept on ``base``."""
    changes = _changes_of(row)
    view = manifest.splice(base.view, latest(rows), memoize=False)
    return _checked(row, view, changes)


def read(log: ManifestLog, read_rows: RowReader, artifact_id: str, revision: int,
         base: ParsedRevision | None) -> ParsedRevision | None:
    """Revision ``revision`` of the Memory read from the log (:func:`step` from ``base``,
    an earlier validated Revision, when given; else :func:`decode` from the newest
    baseline), or None when it is not in the log (before the first baseline, or that
    baseline itself when an earlier release wrote it: its own row holds it).
    ArtifactNotFoundError when the Revision is not stored."""
    if not log.covers(artifact_id, revision):
        return None
    rows = read_rows(artifact_id, revision - 1, revision)
    if not rows or rows[-1].revision != revision:
        raise ArtifactNotFoundError(f"no Revision {revision} of Artifact {artifact_id!r}")
    row = rows[-1]
    if row.encoding != revision_codec.LOG:
        return None
    if base is not None and base.revision.ref.revision < revision:
        return step(row, base, log.changed(artifact_id, base.revision.ref.revision, revision))
    low = log.baseline_upto(artifact_id, revision)
    if low is None:  # pragma: no cover - covered means a baseline at or before
        return None
    packed = log.packs.head(artifact_id)
    if packed is not None and low <= packed <= revision:
        try:
            return from_packs(row, log, packed)
        except IntegrityError:
            pass  # packs that do not check: the log is authoritative
    return decode(row, log.range(artifact_id, low, revision))


def from_packs(row: RevisionRow, log: ManifestLog, packed: int) -> ParsedRevision:
    """Revision ``row`` from the Memory's manifest packs (which hold Revision
    ``packed``, at or before it) and the log rows after them, checked as
    :func:`decode`. IntegrityError when they do not check."""
    changes = _changes_of(row)
    entries = log.packs.read(row.artifact_id)
    view = manifest.view(MemoryManifest(entries=entries, format=MANIFEST_FORMAT))
    if packed < row.revision:
        view = manifest.splice(view, latest(log.changed(row.artifact_id, packed, row.revision)),
                               memoize=False)
    return _checked(row, view, changes)


class LazyManifest:
    """The manifest items of one Revision of one Memory, read from the manifest log as
    they are asked for (each entry once), inside the caller's read transaction. The
    lookup a search or an expand needs (``get``), never the whole manifest."""

    def __init__(self, log: ManifestLog, artifact_id: str, revision: int) -> None:
        self._log = log
        self._artifact_id = artifact_id
        self._revision = revision
        self._known: dict[str, MemoryManifestEntry | None] = {}

    def prefetch(self, entry_ids: Iterable[str]) -> None:
        """Read the items of these entries (the ones not read yet) in one statement."""
        wanted = [e for e in dict.fromkeys(entry_ids)
                  if isinstance(e, str) and e not in self._known]
        if not wanted:
            return
        found = latest(self._log.items_of(self._artifact_id, self._revision, wanted))
        for e in wanted:
            self._known[e] = found.get(e)

    def get(self, entry_id: str, default: Any = None) -> Any:
        """The item of ``entry_id`` at this Revision, or ``default``."""
        if entry_id not in self._known:
            self.prefetch([entry_id])
        found = self._known.get(entry_id)
        return default if found is None else found
