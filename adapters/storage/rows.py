"""The row shapes every family shares, decoded once for every engine: Artifact
Revision rows, Sources and their journal positions, Artifact heads, the stored
embedding profile. A driver hands back ``str`` or ``bytes`` for text columns (APSW
gives ``str``, mysqlclient ``bytes`` or ``str``); these decoders accept both, so the
SQLite and OceanBase adapters read the same values."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from powercontext.core import canonical
from powercontext.core.errors import BackendError
from powercontext.core.models import EmbeddingProfile, Source

__all__ = [
    "RevisionRow",
    "embedding_profile",
    "head",
    "opt_text",
    "revision_params",
    "revision_row",
    "source_metadata",
    "source_row",
    "text",
    "utc_text",
]


@attrs.frozen
class RevisionRow:
    """One ``artifact_revisions`` row, as stored. ``content`` is in ``encoding`` (see
    :mod:`powercontext.adapters.revision_codec`; ``identity`` = the canonical RFC 8785
    bytes of the Artifact's content); ``lineage`` the canonical bytes of the
    RevisionLineage. An adapter stores ``encoding`` and ``content`` as given and returns
    them unchanged; one that cannot store the encoding leaves
    ``supports_revision_encodings`` False and is only ever given ``identity`` rows."""

    artifact_id: str
    revision: int
    family: str
    content: bytes
    content_hash: str
    lineage: bytes
    encoding: str = "identity"


def text(value: Any) -> str:
    """A text column as ``str`` (UTF-8 ``bytes`` decoded)."""
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def opt_text(value: Any) -> str | None:
    """A nullable text column: None stays None."""
    return None if value is None else text(value)


def _blob(value: Any) -> bytes:
    return bytes(value) if isinstance(value, bytes | bytearray | memoryview) else text(
        value).encode("utf-8")


def revision_row(row: Sequence[Any]) -> RevisionRow:
    """``(artifact_id, revision, family, content_encoding, content, content_hash,
    lineage)``, the column order of the ``revision_range`` template, as a RevisionRow
    (content passed through in its stored encoding)."""
    aid, rev, family, encoding, content, chash, lineage = row
    return RevisionRow(text(aid), int(rev), text(family), _blob(content), text(chash),
                       text(lineage).encode("utf-8"), text(encoding))


def revision_params(row: RevisionRow) -> tuple[Any, ...]:
    """The parameters of the ``revision_insert`` template for ``row``."""
    return (row.artifact_id, row.revision, row.family, row.encoding, row.content,
            row.content_hash, row.lineage.decode("utf-8"))


def head(row: Sequence[Any]) -> tuple[str, int]:
    """``(artifact_id, revision)`` of an ``artifact_heads`` row."""
    aid, rev = row
    return text(aid), int(rev)


def source_row(row: Sequence[Any]) -> tuple[int, Source]:
    """``(position, source_id, kind, content, content_hash, uri, metadata)``, the
    column order of the ``sources_by_id`` and ``journal`` templates, as the journal
    position and the Source (``metadata`` is a canonical JSON array of pairs)."""
    pos, sid, kind, content, chash, uri, metadata = row
    pairs = tuple((str(k), str(v)) for k, v in json.loads(text(metadata)))
    return int(pos), Source(text(sid), text(kind), text(content), text(chash),
                            opt_text(uri), pairs)


def source_metadata(source: Source) -> str:
    """The stored form of ``source.metadata``: canonical JSON of its pairs."""
    return canonical.canonical_dumps([list(p) for p in source.metadata]).decode("utf-8")


def embedding_profile(stored: str) -> EmbeddingProfile:
    """The EmbeddingProfile a metadata value holds (its canonical JSON)."""
    d = json.loads(stored)
    return EmbeddingProfile(
        d["profile_id"], d["model"], int(d["dimension"]), d["distance"], d["normalization"]
    )


_SQLITE_UTC = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z?$")


def utc_text(value: Any) -> str:
    """A database-UTC time as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (6 fractional digits): a
    naive or UTC :class:`datetime.datetime` (mysqlclient's ``UTC_TIMESTAMP(6)``), or text
    such as SQLite's ``strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`` (3 digits) or
    ``YYYY-MM-DD HH:MM:SS[.ffffff]``. BackendError for anything else."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, bytes | bytearray):
        value = value.decode("ascii", "replace")
    m = _SQLITE_UTC.match(value) if isinstance(value, str) else None
    if m is None:
        raise BackendError(f"the database clock returned {value!r}, not a UTC time")
    return f"{m.group(1)}T{m.group(2)}.{(m.group(3) or '').ljust(6, '0')}Z"
