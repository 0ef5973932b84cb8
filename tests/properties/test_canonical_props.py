"""Properties of canonical JSON, hashes, ids and normalization (Memory RFC,
"Normalization, hashing, and the search analyzer")."""

from __future__ import annotations

import json
import re
import unicodedata

import attrs
import pytest
import rfc8785
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from powercontext.core.canonical import (
    MAX_REASON_CODE_POINTS,
    MAX_TEXT_BYTES,
    artifact_content_hash,
    canonical_dumps,
    check_id,
    content_bytes,
    entry_content_hash,
    lineage_bytes,
    make_id,
    manifest_entry_bytes,
    normalize_reason,
    normalize_text,
    parse_content,
    parse_lineage,
    sort_artifact_refs,
    sort_source_refs,
    unstructure,
)
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import (
    ArtifactRef,
    MemoryChange,
    MemoryContent,
    MemoryManifest,
    MemoryManifestEntry,
    RevisionLineage,
    SourceRef,
)

SETTINGS = settings(deadline=None)  # example counts come from the Hypothesis profile
HEX64 = re.compile(r"[0-9a-f]{64}")

ids = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=128
)
short_ids = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=12
)
hashes = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
unicode_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=80)
states = st.sampled_from(["active", "inactive"])
ops = st.sampled_from(["add", "revise", "deactivate", "reactivate"])

manifest_entries = st.builds(MemoryManifestEntry, ids, ids, hashes, states)
changes = st.builds(
    MemoryChange, ops, ids, st.none() | ids, st.none() | ids, st.none() | unicode_text
)
contents = st.builds(
    MemoryContent,
    manifest=st.builds(MemoryManifest, st.lists(manifest_entries, max_size=8).map(tuple)),
    changes=st.lists(changes, max_size=8).map(tuple),
)
source_refs = st.builds(SourceRef, short_ids, hashes)
artifact_refs = st.builds(ArtifactRef, short_ids, st.integers(min_value=1, max_value=2**53 - 1))
lineages = st.builds(
    RevisionLineage,
    st.lists(source_refs, max_size=5).map(sort_source_refs),
    st.lists(artifact_refs, max_size=5).map(sort_artifact_refs),
)
json_values = st.recursive(
    # RFC 8785 (the rfc8785 package) accepts integers of magnitude below 2**53 only.
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | unicode_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(unicode_text, inner, max_size=4),
    max_leaves=20,
)


@SETTINGS
@given(contents)
def test_content_bytes_equals_rfc8785_of_unstructured_content(content: MemoryContent) -> None:
    assert content_bytes(content) == rfc8785.dumps(unstructure(content))


@SETTINGS
@given(contents)
def test_content_bytes_with_cached_entry_bytes_is_identical(content: MemoryContent) -> None:
    cached = b",".join(manifest_entry_bytes(e) for e in content.manifest.entries)
    assert content_bytes(content, cached) == content_bytes(content)


@SETTINGS
@given(contents)
def test_parse_content_round_trips(content: MemoryContent) -> None:
    data = content_bytes(content)
    assert parse_content(data) == content
    assert content_bytes(parse_content(data)) == data


@SETTINGS
@given(contents, contents)
def test_artifact_hash_is_lowercase_hex_and_differs_for_different_content(
    a: MemoryContent, b: MemoryContent
) -> None:
    ha, hb = artifact_content_hash(content_bytes(a)), artifact_content_hash(content_bytes(b))
    assert HEX64.fullmatch(ha) and HEX64.fullmatch(hb)
    assert (ha == hb) == (a == b)


@SETTINGS
@given(lineages)
def test_lineage_round_trips(lineage: RevisionLineage) -> None:
    data = lineage_bytes(lineage)
    assert data == rfc8785.dumps(unstructure(lineage))
    assert parse_lineage(data) == lineage


@SETTINGS
@given(st.dictionaries(unicode_text, json_values, max_size=6), st.randoms())
def test_canonical_dumps_is_stable_under_key_order(value: dict, rnd) -> None:
    items = list(value.items())
    rnd.shuffle(items)
    shuffled = dict(items)
    assert canonical_dumps(shuffled) == canonical_dumps(value)
    assert json.loads(canonical_dumps(value)) == json.loads(json.dumps(value))


@SETTINGS
@given(st.lists(source_refs, max_size=8), st.randoms())
def test_sort_source_refs_is_sorted_unique_and_order_independent(refs, rnd) -> None:
    out = sort_source_refs(refs)
    assert set(out) == set(refs)
    assert len(out) == len(set(refs))
    keys = [(r.source_id.encode(), r.content_hash) for r in out]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    rnd.shuffle(refs)
    assert sort_source_refs(refs + refs) == out


@SETTINGS
@given(st.lists(artifact_refs, max_size=8), st.randoms())
def test_sort_artifact_refs_is_sorted_unique_and_order_independent(refs, rnd) -> None:
    out = sort_artifact_refs(refs)
    assert set(out) == set(refs) and len(out) == len(set(refs))
    keys = [(r.artifact_id.encode(), r.revision) for r in out]
    assert keys == sorted(keys)
    rnd.shuffle(refs)
    assert sort_artifact_refs(refs + refs) == out


@SETTINGS
@given(
    st.sampled_from(["fact", "decision"]),
    unicode_text,
    st.lists(source_refs, max_size=3),
    st.lists(artifact_refs, max_size=3),
    unicode_text,
)
def test_entry_hash_changes_when_text_changes(kind, text, src, art, other) -> None:
    assume(text != other)
    s, a = sort_source_refs(src), sort_artifact_refs(art)
    h = entry_content_hash(kind, text, s, a)
    assert HEX64.fullmatch(h)
    assert h != entry_content_hash(kind, other, s, a)


@SETTINGS
@given(
    st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20),
    st.integers(0, 2**48 - 1),
    st.integers(0, 2**48 - 1),
    st.binary(min_size=10, max_size=10),
    st.binary(min_size=10, max_size=10),
)
def test_make_id_sorts_by_time(prefix, t1, t2, e1, e2) -> None:
    a, b = make_id(prefix, t1, e1), make_id(prefix, t2, e2)
    for ident in (a, b):
        assert ident.startswith(prefix) and len(ident) == len(prefix) + 26
        assert check_id(ident, "id") == ident
    if t1 < t2:
        assert a < b
    elif t1 == t2:
        assert (a < b) == (e1 < e2) and (a == b) == (e1 == e2)


@SETTINGS
@given(st.binary(max_size=20).filter(lambda b: len(b) != 10))
def test_make_id_rejects_entropy_not_10_bytes(entropy: bytes) -> None:
    with pytest.raises(ValueError):
        make_id("x_", 0, entropy)


@SETTINGS
@given(st.text(max_size=140))
def test_check_id_accepts_exactly_printable_ascii_up_to_128(value: str) -> None:
    ok = 1 <= len(value) <= 128 and all(0x21 <= ord(c) <= 0x7E for c in value)
    if ok:
        assert check_id(value, "entry_id") == value
    else:
        with pytest.raises(InvalidInputError) as info:
            check_id(value, "entry_id")
        assert info.value.field == "entry_id"


@SETTINGS
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=200))
def test_normalize_text_output_is_nfc_trimmed_and_idempotent(value: str) -> None:
    try:
        out = normalize_text(value)
    except InvalidInputError as err:
        assert err.field == "text"
        assert not unicodedata.normalize("NFC", value).strip()
        return
    assert unicodedata.is_normalized("NFC", out)
    assert out == out.strip() and out
    assert normalize_text(out) == out
    assert len(out.encode("utf-8")) <= MAX_TEXT_BYTES


@SETTINGS
@given(
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=1, max_size=3),
    st.integers(min_value=2000, max_value=3000),
)
def test_normalize_text_limit_counts_utf8_bytes(unit: str, repeat: int) -> None:
    value = unicodedata.normalize("NFC", "x" + unit * repeat + "x")
    assume(unicodedata.normalize("NFC", value).strip() == value)
    size = len(value.encode("utf-8"))
    if size <= MAX_TEXT_BYTES:
        assert normalize_text(value) == value
    else:
        with pytest.raises(InvalidInputError):
            normalize_text(value)


#: Bidirectional classes of the explicit embedding, override and isolate controls and the
#: marks (LRM, RLM, ALM): a reason holds none of them.
_BIDI_CONTROLS = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


@SETTINGS
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=600))
def test_normalize_reason_is_none_or_nfc_trimmed_within_512(value: str) -> None:
    norm = unicodedata.normalize("NFC", value).strip()
    one_line = not any(unicodedata.category(c) in ("Cc", "Zl", "Zp")
                       or unicodedata.bidirectional(c) in _BIDI_CONTROLS
                       or c in "\u061c\u200e\u200f" for c in norm)
    if len(norm) > MAX_REASON_CODE_POINTS or not one_line:
        with pytest.raises(InvalidInputError) as info:
            normalize_reason(value)
        assert info.value.field == "reason"
        return
    out = normalize_reason(value)
    assert out == (norm or None)
    if out is not None:
        assert normalize_reason(out) == out


@SETTINGS
@given(unicode_text, st.integers(0, 20), unicode_text)
def test_lone_surrogate_anywhere_is_rejected(before: str, pos: int, after: str) -> None:
    value = "x" + before + chr(0xD800 + pos) + after
    for fn, field in ((normalize_text, "text"), (normalize_reason, "reason")):
        with pytest.raises(InvalidInputError) as info:
            fn(value)
        assert info.value.field == field


_entry_fields = st.sampled_from(["entry_id", "entry_version_id", "entry_content_hash", "state"])
_change_fields = st.sampled_from(
    ["op", "entry_id", "from_entry_version_id", "to_entry_version_id", "reason"]
)


@SETTINGS
@given(contents, st.data())
def test_artifact_hash_changes_when_any_single_field_changes(
    content: MemoryContent, data: st.DataObject
) -> None:
    before = artifact_content_hash(content_bytes(content))
    entries, chgs = list(content.manifest.entries), list(content.changes)
    target = data.draw(st.sampled_from(["entry", "change", "schema", "format"]))
    if target == "entry" and entries:
        i = data.draw(st.integers(0, len(entries) - 1))
        field = data.draw(_entry_fields)
        new = data.draw({"entry_content_hash": hashes, "state": states}.get(field, ids))
        assume(getattr(entries[i], field) != new)
        entries[i] = attrs.evolve(entries[i], **{field: new})
    elif target == "change" and chgs:
        i = data.draw(st.integers(0, len(chgs) - 1))
        field = data.draw(_change_fields)
        strategy = {"op": ops, "entry_id": ids, "reason": st.none() | unicode_text}
        new = data.draw(strategy.get(field, st.none() | ids))
        assume(getattr(chgs[i], field) != new)
        chgs[i] = attrs.evolve(chgs[i], **{field: new})
    elif target == "schema":
        content = attrs.evolve(content, schema="powercontext.memory.v2")
    elif target == "format":
        content = attrs.evolve(content, manifest=attrs.evolve(content.manifest, format="tree-v1"))
    else:
        return
    if target in ("entry", "change"):
        content = attrs.evolve(
            content,
            manifest=attrs.evolve(content.manifest, entries=tuple(entries)),
            changes=tuple(chgs),
        )
    after = artifact_content_hash(content_bytes(content))
    assert HEX64.fullmatch(after)
    assert after != before


# --- RFC 8785 member order (UTF-16 code units) ---------------------------------------

#: keys mixing ASCII, the BMP private-use block above U+E000 and astral characters
_keys = st.text(
    alphabet=st.sampled_from(["a", "\u00e9", "\ud7ff", "\ue000", "\uffee", "\U0001f600",
                              "\U00010000", "\U0010fffd"]),
    min_size=1, max_size=3,
) | st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=4)


def _reference_order(keys):
    return sorted(keys, key=lambda k: k.encode("utf-16-be"))


@given(st.dictionaries(_keys, st.integers(0, 9), max_size=8))
@SETTINGS
def test_canonical_member_order_is_utf16_code_unit_order(d: dict) -> None:
    decoded = json.loads(canonical_dumps(d), object_pairs_hook=lambda pairs: pairs)
    assert [k for k, _ in decoded] == _reference_order(d)


#: Metadata keys: every character but controls, format characters and separators
#: (what ``make_source`` refuses in a key, ``check_identifier``).
_meta_keys = st.text(
    alphabet=st.sampled_from(["a", "\u00e9", "\ud7ff", "\ue000", "\uffee", "\U0001f600",
                              "\U00010000", "\U0010fffd"]),
    min_size=1, max_size=3,
) | st.text(alphabet=st.characters(exclude_categories=("Cs", "Cc", "Cf", "Zl", "Zp")),
            max_size=4)


@given(st.dictionaries(_meta_keys, _keys, max_size=8))
@SETTINGS
def test_source_metadata_order_is_utf16_code_unit_order(meta: dict) -> None:
    from powercontext.core.canonical import make_source

    s = make_source("src_p", "file", "content", metadata=meta)
    assert [k for k, _ in s.metadata] == _reference_order(meta)
    # the metadata pairs are in the order RFC 8785 gives the same mapping as an object
    as_object = json.loads(canonical_dumps(dict(s.metadata)), object_pairs_hook=list)
    assert [tuple(p) for p in as_object] == list(s.metadata)


any_text = st.text(max_size=12)  # every code point: controls, quotes, lone surrogates


@given(st.builds(MemoryManifestEntry, any_text, any_text, any_text, any_text))
def test_manifest_entry_bytes_are_rfc8785_for_any_strings(entry: MemoryManifestEntry) -> None:
    """The direct writer of manifest items gives exactly rfc8785's bytes, and refuses
    exactly what rfc8785 refuses (a lone surrogate), with InvalidInputError."""
    try:
        want = rfc8785.dumps(unstructure(entry))
    except rfc8785.CanonicalizationError:
        with pytest.raises(InvalidInputError):
            manifest_entry_bytes(entry)
    else:
        assert manifest_entry_bytes(entry) == want


_ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=["Cs"]), max_size=40)


@given(kind=_ANY_TEXT, content=_ANY_TEXT, uri=st.none() | _ANY_TEXT,
       metadata=st.lists(st.tuples(_ANY_TEXT, _ANY_TEXT), max_size=6))
def test_source_content_hash_is_the_hash_of_the_rfc8785_bytes(kind, content, uri,
                                                             metadata) -> None:
    """The Source hash's fast writer (the C JSON encoder) gives RFC 8785's bytes for
    every text: controls, quotes, backslashes, U+007F, U+2028, astral characters."""
    import hashlib

    from powercontext.core.canonical import SOURCE_CONTENT_PREFIX, source_content_hash

    pairs = tuple(metadata)
    body = rfc8785.dumps({"content": content, "kind": kind,
                          "metadata": [list(p) for p in pairs], "uri": uri})
    expected = hashlib.sha256(SOURCE_CONTENT_PREFIX + body).hexdigest()
    assert source_content_hash(kind, content, uri, pairs) == expected


def test_source_content_hash_refuses_a_lone_surrogate_as_before() -> None:
    from powercontext.core.canonical import source_content_hash

    with pytest.raises(InvalidInputError, match="source"):
        source_content_hash("note", "a\ud800b", None, ())


@given(kind=any_text, text=st.text(max_size=60),
       sources=st.lists(st.builds(SourceRef, any_text, any_text), max_size=3),
       artifacts=st.lists(st.builds(ArtifactRef, any_text, st.integers(-(2**54), 2**54)),
                          max_size=3))
def test_entry_content_bytes_are_rfc8785_for_any_values(
    kind: str, text: str, sources: list[SourceRef], artifacts: list[ArtifactRef]
) -> None:
    """The direct writer of an entry's content gives exactly rfc8785's bytes of the
    content object, and refuses exactly what rfc8785 refuses (a lone surrogate, an
    integer past 2**53 - 1), with InvalidInputError."""
    from powercontext.core.canonical import entry_content_bytes

    value = {
        "artifact_refs": [{"artifact_id": a.artifact_id, "revision": a.revision}
                          for a in artifacts],
        "kind": kind,
        "source_refs": [{"content_hash": s.content_hash, "source_id": s.source_id}
                        for s in sources],
        "text": text,
    }
    try:
        want = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        with pytest.raises(InvalidInputError):
            entry_content_bytes(kind, text, tuple(sources), tuple(artifacts))
    else:
        assert entry_content_bytes(kind, text, tuple(sources), tuple(artifacts)) == want
