"""The shared row decoders (adapters/storage/rows.py, adapters/memory_rows.py) give
the same values whether a driver returns text columns as ``str`` (APSW) or ``bytes``
(mysqlclient), and each decoder inverts its encoder."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from powercontext.adapters import memory_rows
from powercontext.adapters.storage import RevisionRow, rows
from powercontext.core import canonical
from powercontext.core.models import ArtifactRef, MemoryEntryVersion, RevisionLineage, SourceRef

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
texts = st.text(max_size=40)
hashes = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)


def _as_bytes(row, keep=()):
    return tuple(v if (i in keep or not isinstance(v, str)) else v.encode("utf-8")
                 for i, v in enumerate(row))


@given(ids, st.integers(1, 10**6), st.sampled_from(["memory", "topic"]), st.binary(),
       hashes, st.sampled_from(["identity", "zlib", "delta+zlib"]))
def test_a_revision_row_decodes_alike_from_str_and_bytes(aid, rev, family, content, chash,
                                                         encoding):
    row = RevisionRow(aid, rev, family, content, chash,
                      canonical.lineage_bytes(RevisionLineage()), encoding)
    # the insert parameters are in the column order the revision_range template reads
    stored = rows.revision_params(row)
    assert rows.revision_row(stored) == row
    assert rows.revision_row(_as_bytes(stored)) == row


#: Metadata keys and uris: any text without the characters make_source refuses there.
meta_keys = st.text(st.characters(exclude_categories=("Cs", "Cc", "Cf", "Zl", "Zp")),
                    max_size=40)


@given(st.integers(1, 10**9), ids, ids, texts, st.none() | meta_keys,
       st.lists(st.tuples(meta_keys, texts), max_size=3))
def test_a_source_row_decodes_alike_from_str_and_bytes(pos, sid, kind, content, uri,
                                                       metadata):
    source = canonical.make_source(sid, kind, content or "x", uri, tuple(metadata))
    stored = (pos, source.source_id, source.kind, source.content, source.content_hash,
              source.uri, rows.source_metadata(source))
    assert rows.source_row(stored) == (pos, source)
    assert rows.source_row(_as_bytes(stored)) == (pos, source)


@given(ids, ids, ids, st.integers(1, 99), st.none() | ids, texts, hashes,
       st.lists(st.tuples(ids, hashes), max_size=3, unique_by=lambda t: t[0]),
       st.lists(st.tuples(ids, st.integers(1, 99)), max_size=3, unique_by=lambda t: t)
       )
def test_an_entry_version_row_decodes_alike_from_str_and_bytes(aid, eid, vid, version, prev,
                                                               body, chash, srefs, arefs):
    v = MemoryEntryVersion(
        aid, eid, vid, version, prev, "fact", body,
        canonical.sort_source_refs(tuple(SourceRef(s, h) for s, h in srefs)),
        canonical.sort_artifact_refs(tuple(ArtifactRef(a, r) for a, r in arefs)),
        chash, 1)
    stored = memory_rows.entry_version_params(v)
    assert memory_rows.entry_version(stored) == v
    assert memory_rows.entry_version(_as_bytes(stored)) == v
