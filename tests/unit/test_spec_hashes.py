"""Golden hashes computed by hand from the spec's formulas (Memory RFC, "Normalization,
hashing, and the search analyzer"; "Vector integrity and offline rebuilds").

Each expected value is ``hashlib`` over canonical JSON written out here by hand (RFC 8785:
members sorted, no whitespace, UTF-8, no escaping of non-ASCII), never through our own
helpers, so a Revision hashed by anyone following the spec verifies here.
"""

from __future__ import annotations

import hashlib
import itertools

import pytest

from powercontext.core import canonical, planning
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import (
    Artifact,
    ArtifactRef,
    EmbeddingProfile,
    MemoryChange,
    MemoryContent,
    MemoryEntryInput,
    MemoryManifest,
    MemoryManifestEntry,
    RevisionLineage,
    Source,
    SourceRef,
)

SRC_HASH = "a" * 64

#: kind, text and references of one entry, as RFC 8785 writes them
ENTRY_JSON = (
    '{"artifact_refs":[{"artifact_id":"mem_art_up","revision":3}],'
    '"kind":"fact",'
    '"source_refs":[{"content_hash":"' + SRC_HASH + '","source_id":"src_a"}],'
    '"text":"Run make test — café"}'
).encode("utf-8")
ENTRY_HASH = hashlib.sha256(b"powercontext:entry-content:v1\x00" + ENTRY_JSON).hexdigest()


def _content() -> MemoryContent:
    return MemoryContent(
        manifest=MemoryManifest(
            entries=(MemoryManifestEntry("mem_ent_1", "mem_ver_1", ENTRY_HASH, "active"),)
        ),
        changes=(MemoryChange("add", "mem_ent_1", None, "mem_ver_1", "première"),),
    )


CONTENT_JSON = (
    '{"changes":[{"entry_id":"mem_ent_1","from_entry_version_id":null,"op":"add",'
    '"reason":"première","to_entry_version_id":"mem_ver_1"}],'
    '"manifest":{"entries":[{"entry_content_hash":"' + ENTRY_HASH + '",'
    '"entry_id":"mem_ent_1","entry_version_id":"mem_ver_1","state":"active"}],'
    '"format":"flat-v1"},'
    '"schema":"powercontext.memory.v1"}'
).encode("utf-8")

PROFILE = EmbeddingProfile("det-8", "deterministic", 8)
PROFILE_JSON = (
    b'{"dimension":8,"distance":"l2","model":"deterministic",'
    b'"normalization":"unit","profile_id":"det-8"}'
)


def test_entry_content_hash_is_the_spec_formula() -> None:
    sources = (SourceRef("src_a", SRC_HASH),)
    artifacts = (ArtifactRef("mem_art_up", 3),)
    text = "Run make test — café"
    assert canonical.entry_content_bytes("fact", text, sources, artifacts) == ENTRY_JSON
    assert canonical.entry_content_hash("fact", text, sources, artifacts) == ENTRY_HASH


def test_artifact_content_hash_is_sha256_of_the_canonical_memory_content_alone() -> None:
    body = canonical.content_bytes(_content())
    assert body == CONTENT_JSON
    assert canonical.artifact_content_hash(body) == hashlib.sha256(CONTENT_JSON).hexdigest()
    assert canonical.artifact_content_hash(body) == (
        hashlib.sha256(canonical.canonical_dumps(_content())).hexdigest()
    )


def test_embedding_content_hash_is_profile_bytes_then_entry_hash() -> None:
    assert canonical.profile_bytes(PROFILE) == PROFILE_JSON
    want = hashlib.sha256(PROFILE_JSON + ENTRY_HASH.encode("ascii")).hexdigest()
    assert canonical.embedding_content_hash(PROFILE, ENTRY_HASH) == want


def test_the_legacy_artifact_hash_is_the_old_prefixed_formula() -> None:
    # kept only to verify databases written before the fix (memory rebuild --rehash)
    assert canonical.legacy_artifact_content_hash(CONTENT_JSON) == hashlib.sha256(
        b"powercontext:artifact-content:v1\x00" + CONTENT_JSON
    ).hexdigest()
    assert canonical.legacy_artifact_content_hash(CONTENT_JSON) != (
        canonical.artifact_content_hash(CONTENT_JSON)
    )


# --- RFC 8785 member order: UTF-16 code units ----------------------------------------

#: U+E000 is one UTF-16 unit 0xE000; U+1F600 is the pair 0xD83D 0xDE00, which sorts first
#: (code-point order would put U+E000 first).
PRIVATE, EMOJI = "\ue000", "\U0001f600"


def test_canonical_object_members_sort_by_utf16_code_units() -> None:
    got = canonical.canonical_dumps({PRIVATE: 1, EMOJI: 2, "a": 3})
    assert got == ('{"a":3,"' + EMOJI + '":2,"' + PRIVATE + '":1}').encode("utf-8")


def test_source_metadata_is_ordered_as_rfc8785_orders_object_members() -> None:
    s = canonical.make_source("src_m", "file", "x", metadata={PRIVATE: "p", EMOJI: "e"})
    assert [k for k, _ in s.metadata] == [EMOJI, PRIVATE]
    body = (
        '{"content":"x","kind":"file","metadata":[["' + EMOJI + '","e"],["' + PRIVATE
        + '","p"]],"uri":null}'
    ).encode("utf-8")
    prefix = b"powercontext:source-content:v1\x00"  # the Source store's own prefix
    assert s.content_hash == hashlib.sha256(prefix + body).hexdigest()
    # the same metadata given in either order is one Source
    again = canonical.make_source("src_m", "file", "x", metadata=((PRIVATE, "p"), (EMOJI, "e")))
    assert again == s


# --- values the canonical form cannot carry are InvalidInputError naming the field ----


def _ids():
    counter = itertools.count()
    return lambda prefix: f"{prefix}{next(counter):04d}"


def _upstream(revision: object) -> Artifact:
    return Artifact(ArtifactRef("mem_art_up", revision), "memory", "0" * 64)  # type: ignore[arg-type]


@pytest.mark.parametrize("revision", [2**53, 2**64, 0, -1, True, 1.5])
def test_operation_evidence_revision_outside_ijson_names_the_field(revision: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        planning.plan_remember(None, [MemoryEntryInput("fact", "x")],
                               artifacts=[_upstream(revision)], new_id=_ids())
    assert info.value.field == "artifacts[0].revision"


def test_entry_evidence_revision_of_2_pow_53_names_the_field() -> None:
    up = _upstream(2**53)
    with pytest.raises(InvalidInputError) as info:
        planning.plan_remember(None, [MemoryEntryInput("fact", "x", artifacts=(up,))],
                               new_id=_ids())
    assert info.value.field == "entries[0].artifacts[0].revision"


def test_largest_ijson_revision_is_accepted() -> None:
    up = _upstream(2**53 - 1)
    plan = planning.plan_remember(None, [MemoryEntryInput("fact", "x", artifacts=(up,))],
                                  artifacts=[up], new_id=_ids())
    assert plan.new_versions[0].artifacts == (up.ref,)


def test_hashing_a_reference_outside_ijson_is_invalid_input_not_a_library_error() -> None:
    with pytest.raises(InvalidInputError) as info:
        canonical.entry_content_hash("fact", "x", (), (ArtifactRef("a", 2**53),))
    assert info.value.field == "entry"
    with pytest.raises(InvalidInputError) as info:
        canonical.lineage_bytes(RevisionLineage((), (ArtifactRef("a", -(2**60)),)))
    assert info.value.field == "lineage"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 2**53, -(2**53)])
def test_canonical_dumps_refuses_what_ijson_forbids_with_the_field(value: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        canonical.canonical_dumps({"x": [value]}, "thing")
    assert info.value.field == "thing"


@pytest.mark.parametrize("metadata, field", [
    ({"k": float("nan")}, "source.metadata['k']"),
    ({"k": 2**53}, "source.metadata['k']"),
    ({1: "v"}, "source.metadata"),
    ({"k": "\ud800"}, "source.metadata['k']"),
    ([("k",)], "source.metadata"),
])
def test_source_metadata_that_json_cannot_carry_names_the_field(metadata, field) -> None:
    with pytest.raises(InvalidInputError) as info:
        canonical.make_source("src_x", "file", "x", metadata=metadata)
    assert info.value.field == field


def test_a_hand_built_source_with_nan_metadata_is_invalid_input() -> None:
    src = Source("src_x", "file", "x", "0" * 64, None, (("k", float("nan")),))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError) as info:
        planning.plan_remember(None, [MemoryEntryInput("fact", "x")], sources=[src],
                               new_id=_ids())
    assert info.value.field == "source"


def test_a_reason_with_a_lone_surrogate_names_the_field() -> None:
    with pytest.raises(InvalidInputError) as info:
        planning.plan_remember(None, [MemoryEntryInput("fact", "x", reason="bad \udc00")],
                               new_id=_ids())
    assert info.value.field == "entries[0].reason"


def test_an_embedding_profile_outside_ijson_names_the_profile() -> None:
    with pytest.raises(InvalidInputError) as info:
        canonical.embedding_content_hash(EmbeddingProfile("p", "m", 2**53), ENTRY_HASH)
    assert info.value.field == "embedding_profile"
