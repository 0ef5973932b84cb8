"""Canonical JSON, hashes, ids and normalization (Memory RFC, "Normalization, hashing,
and the search analyzer"; "MemoryEntryInput"; "MemoryChange")."""

from __future__ import annotations

import hashlib
import re
import unicodedata

import attrs
import pytest
import rfc8785

from powercontext.core.canonical import (
    ENTRY_CONTENT_PREFIX,
    MAX_ID_LENGTH,
    artifact_content_hash,
    artifact_refs_bytes,
    canonical_dumps,
    check_id,
    content_bytes,
    embedding_content_hash,
    entry_content_bytes,
    entry_content_hash,
    lineage_bytes,
    make_id,
    make_source,
    manifest_entry_bytes,
    normalize_reason,
    normalize_text,
    parse_artifact_refs,
    parse_content,
    parse_lineage,
    parse_source_refs,
    sort_artifact_refs,
    sort_source_refs,
    source_refs_bytes,
    unstructure,
    version_hash_ok,
)
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
    SourceRef,
)

HEX64 = re.compile(r"[0-9a-f]{64}")
H1 = "1" * 64
H2 = "2" * 64


def _content() -> MemoryContent:
    return MemoryContent(
        manifest=MemoryManifest(
            entries=(
                MemoryManifestEntry("e1", "v1", H1, "active"),
                MemoryManifestEntry("e2", "v2", H2, "inactive"),
            )
        ),
        changes=(
            MemoryChange("add", "e1", None, "v1", "Grund: café ✓"),
            MemoryChange("deactivate", "e2", "v2", None, None),
        ),
    )


# --- canonical bytes ---------------------------------------------------------------


def test_content_bytes_equals_rfc8785_of_unstructured_content() -> None:
    content = _content()
    assert content_bytes(content) == rfc8785.dumps(unstructure(content))


def test_content_bytes_exact_golden_string() -> None:
    content = MemoryContent(
        manifest=MemoryManifest(entries=(MemoryManifestEntry("e1", "v1", H1, "active"),)),
        changes=(MemoryChange("add", "e1", None, "v1", 'é"\n'),),
    )
    assert content_bytes(content) == (
        b'{"changes":[{"entry_id":"e1","from_entry_version_id":null,"op":"add",'
        b'"reason":"\xc3\xa9\\"\\n","to_entry_version_id":"v1"}],'
        b'"manifest":{"entries":[{"entry_content_hash":"' + H1.encode() + b'",'
        b'"entry_id":"e1","entry_version_id":"v1","state":"active"}],"format":"flat-v1"},'
        b'"schema":"powercontext.memory.v1"}'
    )


def test_content_bytes_of_empty_manifest_and_changes() -> None:
    content = MemoryContent(manifest=MemoryManifest(entries=()), changes=())
    assert content_bytes(content) == rfc8785.dumps(unstructure(content))
    assert content_bytes(content) == (
        b'{"changes":[],"manifest":{"entries":[],"format":"flat-v1"},'
        b'"schema":"powercontext.memory.v1"}'
    )


def test_content_bytes_reuses_precomputed_entry_bytes() -> None:
    content = _content()
    cached = b",".join(manifest_entry_bytes(e) for e in content.manifest.entries)
    assert content_bytes(content, cached) == content_bytes(content)


def test_parse_content_round_trips() -> None:
    content = _content()
    assert parse_content(content_bytes(content)) == content
    assert parse_content(content_bytes(content).decode()) == content


def test_canonical_dumps_is_independent_of_key_order() -> None:
    a = {"b": 1, "a": [1, {"z": "x", "y": None}], "é": "ü"}
    b = {"é": "ü", "a": [1, {"y": None, "z": "x"}], "b": 1}
    assert canonical_dumps(a) == canonical_dumps(b)
    assert canonical_dumps(a) == '{"a":[1,{"y":null,"z":"x"}],"b":1,"é":"ü"}'.encode()


def test_canonical_dumps_of_model_equals_dumps_of_unstructured() -> None:
    profile = EmbeddingProfile("p1", "all-minilm-l6-v2", 384)
    assert canonical_dumps(profile) == (
        b'{"dimension":384,"distance":"l2","model":"all-minilm-l6-v2",'
        b'"normalization":"unit","profile_id":"p1"}'
    )


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**53, -(2**53)])
def test_canonical_dumps_refuses_nan_infinity_and_big_integers(value: object) -> None:
    with pytest.raises(ValueError):
        canonical_dumps({"x": value})


def test_canonical_dumps_accepts_largest_safe_integer() -> None:
    assert canonical_dumps([2**53 - 1, -(2**53 - 1)]) == b"[9007199254740991,-9007199254740991]"


# --- hashes -----------------------------------------------------------------------


def test_entry_content_hash_is_sha256_of_prefix_and_canonical_bytes() -> None:
    src = (SourceRef("s1", H1),)
    art = (ArtifactRef("a1", 3),)
    body = entry_content_bytes("fact", "Uses uv", src, art)
    assert body == (
        b'{"artifact_refs":[{"artifact_id":"a1","revision":3}],"kind":"fact",'
        b'"source_refs":[{"content_hash":"' + H1.encode() + b'","source_id":"s1"}],'
        b'"text":"Uses uv"}'
    )
    digest = entry_content_hash("fact", "Uses uv", src, art)
    assert digest == hashlib.sha256(b"powercontext:entry-content:v1\x00" + body).hexdigest()
    assert ENTRY_CONTENT_PREFIX == b"powercontext:entry-content:v1\x00"
    assert HEX64.fullmatch(digest)


def test_entry_content_hash_changes_with_each_field() -> None:
    base = ("fact", "t", (SourceRef("s1", H1),), (ArtifactRef("a1", 1),))
    variants = [
        ("preference", *base[1:]),
        (base[0], "t2", *base[2:]),
        (*base[:2], (SourceRef("s2", H1),), base[3]),
        (*base[:2], (SourceRef("s1", H2),), base[3]),
        (*base[:2], (), base[3]),
        (*base[:3], (ArtifactRef("a2", 1),)),
        (*base[:3], (ArtifactRef("a1", 2),)),
        (*base[:3], ()),
    ]
    hashes = {entry_content_hash(*base)} | {entry_content_hash(*v) for v in variants}
    assert len(hashes) == len(variants) + 1


def test_entry_content_hash_excludes_identity_version_and_revision_fields() -> None:
    def version(**kw: object) -> MemoryEntryVersion:
        fields = dict(
            memory_artifact_id="m1",
            entry_id="e1",
            entry_version_id="v1",
            version=1,
            previous_version_id=None,
            kind="fact",
            text="x",
            sources=(),
            artifacts=(),
            entry_content_hash=entry_content_hash("fact", "x", (), ()),
            created_in_revision=1,
        )
        fields.update(kw)
        return MemoryEntryVersion(**fields)  # type: ignore[arg-type]

    base = version()
    others = [
        version(memory_artifact_id="m2"),
        version(entry_id="e2"),
        version(entry_version_id="v9"),
        version(version=7),
        version(previous_version_id="v0"),
        version(created_in_revision=42),
    ]
    assert version_hash_ok(base)
    assert all(version_hash_ok(o) for o in others)
    assert not version_hash_ok(version(text="y"))
    assert not version_hash_ok(version(kind="decision"))


def test_artifact_content_hash_changes_with_content() -> None:
    a = artifact_content_hash(content_bytes(_content()))
    changed = MemoryContent(manifest=_content().manifest, changes=_content().changes[:1])
    b = artifact_content_hash(content_bytes(changed))
    assert HEX64.fullmatch(a) and HEX64.fullmatch(b)
    assert a != b
    # the spec's formula: SHA-256 over the canonical MemoryContent alone, no prefix
    assert a == hashlib.sha256(content_bytes(_content())).hexdigest()


def test_embedding_content_hash_changes_with_profile_and_entry_hash() -> None:
    p = EmbeddingProfile("p1", "m", 384)
    hashes = {
        embedding_content_hash(p, H1),
        embedding_content_hash(p, H2),
        embedding_content_hash(EmbeddingProfile("p1", "m", 768), H1),
        embedding_content_hash(EmbeddingProfile("p1", "m2", 384), H1),
    }
    assert len(hashes) == 4
    assert all(HEX64.fullmatch(h) for h in hashes)


# --- references and lineage ---------------------------------------------------------


def test_sort_source_refs_sorts_by_utf8_id_then_hash_and_dedupes() -> None:
    refs = [SourceRef("b", H1), SourceRef("a", H2), SourceRef("a", H1), SourceRef("b", H1)]
    assert sort_source_refs(refs) == (SourceRef("a", H1), SourceRef("a", H2), SourceRef("b", H1))
    assert sort_source_refs([]) == ()


def test_sort_artifact_refs_sorts_revision_numerically_and_dedupes() -> None:
    refs = [ArtifactRef("m", 10), ArtifactRef("m", 9), ArtifactRef("a", 2), ArtifactRef("m", 9)]
    assert sort_artifact_refs(refs) == (
        ArtifactRef("a", 2),
        ArtifactRef("m", 9),
        ArtifactRef("m", 10),
    )


def test_ref_lists_round_trip() -> None:
    src = sort_source_refs([SourceRef("s2", H2), SourceRef("s1", H1)])
    art = sort_artifact_refs([ArtifactRef("a", 2), ArtifactRef("b", 1)])
    assert source_refs_bytes(src) == (
        b'[{"content_hash":"' + H1.encode() + b'","source_id":"s1"},'
        b'{"content_hash":"' + H2.encode() + b'","source_id":"s2"}]'
    )
    assert parse_source_refs(source_refs_bytes(src)) == src
    assert parse_artifact_refs(artifact_refs_bytes(art)) == art


def test_lineage_round_trips_and_is_canonical() -> None:
    lineage = RevisionLineage(sources=(SourceRef("s1", H1),), artifacts=(ArtifactRef("a", 4),))
    data = lineage_bytes(lineage)
    assert data == rfc8785.dumps(unstructure(lineage))
    assert parse_lineage(data) == lineage
    assert parse_lineage(lineage_bytes(RevisionLineage())) == RevisionLineage()


# --- ids ----------------------------------------------------------------------------


def test_make_id_is_prefix_plus_26_crockford_chars() -> None:
    ident = make_id("mem_", 1_700_000_000_000, bytes(range(10)))
    assert ident.startswith("mem_")
    assert re.fullmatch(r"mem_[0-9a-hjkmnp-tv-z]{26}", ident)
    assert ident.isascii() and len(ident) <= MAX_ID_LENGTH


def test_make_id_golden_values() -> None:
    assert make_id("", 0, bytes(10)) == "0" * 26
    assert make_id("", 2**48 - 1, b"\xff" * 10) == "7" + "z" * 25
    assert make_id("x", 1, bytes(10)) == "x" + "0" * 9 + "1" + "0" * 16


def test_make_id_sorts_by_time_then_entropy() -> None:
    low, high = b"\x00" * 10, b"\xff" * 10
    assert make_id("e_", 1000, high) < make_id("e_", 1001, low)
    assert make_id("e_", 5, low) < make_id("e_", 5, high)
    assert make_id("e_", 2**40, low) > make_id("e_", 2**39, high)


@pytest.mark.parametrize("entropy", [b"", bytes(9), bytes(11)])
def test_make_id_rejects_wrong_entropy_length(entropy: bytes) -> None:
    with pytest.raises(ValueError, match="entropy"):
        make_id("e_", 1, entropy)


@pytest.mark.parametrize("time_ms", [-1, 2**48])
def test_make_id_rejects_time_outside_48_bits(time_ms: int) -> None:
    with pytest.raises(ValueError, match="time_ms"):
        make_id("e_", time_ms, bytes(10))


def test_make_id_rejects_prefix_that_makes_id_too_long_or_non_ascii() -> None:
    make_id("p" * 102, 1, bytes(10))  # 102 + 26 = 128 is fine
    with pytest.raises(InvalidInputError):
        make_id("p" * 103, 1, bytes(10))
    with pytest.raises(InvalidInputError):
        make_id("é_", 1, bytes(10))


@pytest.mark.parametrize("value", ["a", "mem_01HX", "x" * 128, "!~", "a:b/c.d-e_f"])
def test_check_id_accepts_printable_ascii(value: str) -> None:
    assert check_id(value, "entry_id") == value


@pytest.mark.parametrize(
    "value",
    ["", "x" * 129, "a b", " a", "a\t", "a\n", "é", "中", "a\x00", "a\x7f", "\ud800", "a\udfff"],
)
def test_check_id_rejects_bad_ids_naming_field(value: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        check_id(value, "entry_version_id")
    assert info.value.field == "entry_version_id"
    assert str(info.value).startswith("entry_version_id: ")
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", [None, 1, b"abc"])
def test_check_id_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        check_id(value, "source_id")
    assert info.value.field == "source_id"


# --- normalization ------------------------------------------------------------------


def test_normalize_text_applies_nfc_and_trims() -> None:
    nfd = unicodedata.normalize("NFD", "  Café  \n")
    assert normalize_text(nfd) == "Café"
    assert normalize_text("\u3000x\u00a0") == "x"
    assert normalize_text("a  b") == "a  b"


def test_normalize_text_limit_is_8192_utf8_bytes() -> None:
    assert normalize_text("a" * 8192) == "a" * 8192
    assert normalize_text(" " + "a" * 8192 + " ") == "a" * 8192
    with pytest.raises(InvalidInputError, match="8193") as info:
        normalize_text("a" * 8193)
    assert info.value.field == "text"


def test_normalize_text_counts_multibyte_characters_in_bytes() -> None:
    assert normalize_text("é" * 4096) == "é" * 4096  # 8192 bytes
    with pytest.raises(InvalidInputError):
        normalize_text("é" * 4096 + "a")  # 8193 bytes, 4097 code points
    assert normalize_text("😀" * 2048) == "😀" * 2048
    with pytest.raises(InvalidInputError):
        normalize_text("😀" * 2049)
    assert normalize_text("中" * 2730 + "ab") == "中" * 2730 + "ab"  # 8192
    with pytest.raises(InvalidInputError):
        normalize_text("中" * 2731)  # 8193


def test_normalize_text_measures_after_nfc() -> None:
    # 'e' + COMBINING ACUTE (3 bytes) becomes 'é' (2 bytes) under NFC.
    nfd = "e\u0301" * 3000  # 9000 bytes NFD, 6000 bytes NFC
    assert normalize_text(nfd) == "é" * 3000


@pytest.mark.parametrize("value", ["", " ", "\t\n \u3000\u00a0"])
def test_normalize_text_rejects_empty_after_trim(value: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        normalize_text(value, "entries[0].text")
    assert info.value.field == "entries[0].text"


@pytest.mark.parametrize("value", ["a\ud800b", "\udfff", "x\ud83d"])
def test_normalize_text_rejects_lone_surrogates(value: str) -> None:
    with pytest.raises(InvalidInputError, match="surrogate") as info:
        normalize_text(value)
    assert info.value.field == "text"


@pytest.mark.parametrize("value", [None, 5, b"bytes"])
def test_normalize_text_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidInputError):
        normalize_text(value)


def test_normalize_reason_limit_is_512_code_points() -> None:
    assert normalize_reason("é" * 512) == "é" * 512
    assert normalize_reason("😀" * 512) == "😀" * 512
    with pytest.raises(InvalidInputError, match="513") as info:
        normalize_reason("x" * 513)
    assert info.value.field == "reason"


def test_normalize_reason_counts_after_nfc_and_trim() -> None:
    assert normalize_reason("  " + "e\u0301" * 512 + "  ") == "é" * 512


def test_normalize_reason_blank_and_none_become_none() -> None:
    assert normalize_reason(None) is None
    assert normalize_reason("") is None
    assert normalize_reason("  \n") is None
    assert normalize_reason(" dedupe ") == "dedupe"


def test_normalize_reason_rejects_lone_surrogate_naming_reason() -> None:
    with pytest.raises(InvalidInputError) as info:
        normalize_reason("bad \ud800")
    assert info.value.field == "reason"


# --- sources ------------------------------------------------------------------------


def test_make_source_hash_commits_to_every_field() -> None:
    base = make_source("s1", "file", "body", "file:///a", {"k": "v"})
    assert HEX64.fullmatch(base.content_hash)
    others = [
        make_source("s1", "user_note", "body", "file:///a", {"k": "v"}),
        make_source("s1", "file", "body2", "file:///a", {"k": "v"}),
        make_source("s1", "file", "body", "file:///b", {"k": "v"}),
        make_source("s1", "file", "body", None, {"k": "v"}),
        make_source("s1", "file", "body", "file:///a", {"k": "w"}),
        make_source("s1", "file", "body", "file:///a", {}),
    ]
    assert len({base.content_hash} | {o.content_hash for o in others}) == 7
    # The id is identity, not content.
    assert make_source("s2", "file", "body", "file:///a", {"k": "v"}).content_hash == (
        base.content_hash
    )


def test_make_source_sorts_metadata_and_applies_nfc_to_content() -> None:
    a = make_source("s1", "file", unicodedata.normalize("NFD", "Café"), None, {"b": "2", "a": "1"})
    b = make_source("s1", "file", "Café", None, (("a", "1"), ("b", "2")))
    assert a == b
    assert a.metadata == (("a", "1"), ("b", "2"))


def test_make_source_rejects_lone_surrogate_in_uri_as_invalid_input() -> None:
    with pytest.raises(InvalidInputError) as info:
        make_source("s1", "file", "x", "file:///\ud800")
    assert info.value.field == "source.uri"


@pytest.mark.parametrize(
    ("where", "field", "value"),
    [
        ("entry", "entry_id", "e0"),
        ("entry", "entry_version_id", "v9"),
        ("entry", "entry_content_hash", "3" * 64),
        ("entry", "state", "inactive"),
        ("change", "op", "revise"),
        ("change", "entry_id", "e9"),
        ("change", "from_entry_version_id", "v0"),
        ("change", "to_entry_version_id", "v8"),
        ("change", "reason", "Grund: cafe ✓"),
        ("change", "reason", None),
    ],
)
def test_artifact_content_hash_changes_with_each_manifest_and_change_field(
    where: str, field: str, value: object
) -> None:
    content = _content()
    before = artifact_content_hash(content_bytes(content))
    if where == "entry":
        first = attrs.evolve(content.manifest.entries[0], **{field: value})
        manifest = attrs.evolve(content.manifest, entries=(first, *content.manifest.entries[1:]))
        content = attrs.evolve(content, manifest=manifest)
    else:
        changes = (attrs.evolve(content.changes[0], **{field: value}), *content.changes[1:])
        content = attrs.evolve(content, changes=changes)
    after = artifact_content_hash(content_bytes(content))
    assert HEX64.fullmatch(after)
    assert after != before
