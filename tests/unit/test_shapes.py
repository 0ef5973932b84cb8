"""One JSON shape per domain value (issue 10, part D): :mod:`powercontext.core.shapes`
pins the JSON of every value the CLI, the repo commands, the hooks and the MCP tools
print, and no surface writes one by hand any more."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core.errors import InvalidCitationError
from powercontext.core.extraction import Refusal
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    HandoffCitation,
    MemoryChange,
    MemoryEntryVersion,
    MemoryHit,
    MemoryRevisionChanges,
    MemorySearchResult,
    RebuildReport,
    RehashReport,
    RevisionLineage,
    Source,
    SourceRef,
)
from powercontext.core.prepared import ContextItem, MemoryEntryRef, PreparedContext
from powercontext.core.shapes import SHAPED_TYPES, citation_from_json, to_json
from powercontext.core.topic.shapes import TOPIC_SHAPED_TYPES

ROOT = Path(__file__).resolve().parents[2]
H = "ab" * 32

REF = ArtifactRef("mem_art_1", 3)
REF_JSON = {"artifact_id": "mem_art_1", "revision": 3}
VERSION = MemoryEntryVersion(
    "mem_art_1", "mem_ent_1", "mem_ver_2", 2, "mem_ver_1", "fact", "Run make test",
    (SourceRef("src_1", H),), (ArtifactRef("mem_art_0", 1),), H, 3)
VERSION_JSON = {
    "memory_artifact_id": "mem_art_1", "entry_id": "mem_ent_1", "entry_version_id": "mem_ver_2",
    "version": 2, "previous_version_id": "mem_ver_1", "kind": "fact", "text": "Run make test",
    "source_refs": [{"source_id": "src_1", "content_hash": H}],
    "artifact_refs": [{"artifact_id": "mem_art_0", "revision": 1}],
    "entry_content_hash": H, "created_in_revision": 3,
}
CHANGE = MemoryChange("revise", "mem_ent_1", "mem_ver_1", "mem_ver_2", "clearer")
CHANGE_JSON = {"op": "revise", "entry_id": "mem_ent_1", "from_entry_version_id": "mem_ver_1",
               "to_entry_version_id": "mem_ver_2", "reason": "clearer"}
HIT = MemoryHit(REF, "mem_ent_1", "mem_ver_2", "Run make test", 0.5, ("fts", "vector"), "fact")
HIT_JSON = {"memory_ref": REF_JSON, "entry_id": "mem_ent_1", "entry_version_id": "mem_ver_2",
            "kind": "fact", "text": "Run make test", "score": 0.5,
            "matched_by": ["fts", "vector"]}
CITATION = HandoffCitation(REF, "mem_ent_1", "mem_ver_2")
CITATION_JSON = {"memory_ref": REF_JSON, "entry_id": "mem_ent_1",
                 "entry_version_id": "mem_ver_2"}


@pytest.mark.parametrize(("value", "shape"), [
    (REF, REF_JSON),
    (SourceRef("src_1", H), {"source_id": "src_1", "content_hash": H}),
    (VERSION, VERSION_JSON),
    (CHANGE, CHANGE_JSON),
    (MemoryChange("add", "mem_ent_9", None, "mem_ver_9"),
     {"op": "add", "entry_id": "mem_ent_9", "from_entry_version_id": None,
      "to_entry_version_id": "mem_ver_9", "reason": None}),
    (MemoryRevisionChanges(REF, (CHANGE,)), {"memory_ref": REF_JSON, "changes": [CHANGE_JSON]}),
    (HIT, HIT_JSON),
    (MemorySearchResult((HIT,), "hybrid", "no model"),
     {"mode": "hybrid", "fallback_reason": "no model", "hits": [HIT_JSON]}),
    (CITATION, CITATION_JSON),
    (RevisionLineage((SourceRef("src_1", H),), (REF,)),
     {"sources": [{"source_id": "src_1", "content_hash": H}], "artifacts": [REF_JSON]}),
    (RevisionLineage(), {"sources": [], "artifacts": []}),
    (Source("src_1", "file", "all: test", H, "file:///r/Makefile", (("path", "Makefile"),)),
     {"source_id": "src_1", "kind": "file", "uri": "file:///r/Makefile", "content_hash": H,
      "metadata": {"path": "Makefile"}, "content": "all: test"}),
    (EmbeddingProfile("p1", "m", 384),
     {"profile_id": "p1", "model": "m", "dimension": 384, "distance": "l2",
      "normalization": "unit"}),
    (RebuildReport(2, 5, 4, ["mem_art_2"], [("mem_art_3", "bad hash")], 1,
                   [("mem_art_2", "mem_ent_7", "no model")], "v1-porter"),
     {"memories": 2, "entries": 5, "vectors": 4, "kept": 1, "incomplete": ["mem_art_2"],
      "missing": [{"artifact_id": "mem_art_2", "entry_id": "mem_ent_7", "reason": "no model"}],
      "corrupt": [{"artifact_id": "mem_art_3", "error": "bad hash"}], "analyzer": "v1-porter"}),
    (RehashReport(3, 1, [("mem_art_3", 2, "neither formula")], False),
     {"rewritten": 3, "already_current": False,
      "corrupt": [{"artifact_id": "mem_art_3", "revision": 2, "error": "neither formula"}]}),
    (Refusal("fact", "too short", "admission: fewer than 3 words", "rules"),
     {"kind": "fact", "text": "too short", "reason": "admission: fewer than 3 words",
      "provider": "rules"}),
    (None, None),
    ((REF, REF), [REF_JSON, REF_JSON]),
])
def test_each_domain_value_has_its_pinned_json_shape(value, shape):
    out = to_json(value)
    assert out == shape
    assert json.loads(json.dumps(out)) == shape  # plain JSON, lists not tuples


def test_every_shaped_type_is_pinned_above():
    pinned = {type(v) for v in (REF, VERSION, CHANGE, HIT, CITATION)} | {
        SourceRef, MemoryRevisionChanges, MemorySearchResult, Source, EmbeddingProfile,
        RebuildReport, RehashReport, Refusal, RevisionLineage}
    # the Topic values and prepared context are pinned in test_topic_shapes_golden.py
    pinned |= {*TOPIC_SHAPED_TYPES, MemoryEntryRef, ContextItem, PreparedContext}
    assert set(SHAPED_TYPES) == pinned


_ids = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=20)


@given(_ids, st.integers(1, 2**53 - 1), _ids, _ids)
def test_a_citation_reads_back_from_its_own_shape(artifact_id, revision, entry_id, version_id):
    cite = HandoffCitation(ArtifactRef(artifact_id, revision), entry_id, version_id)
    assert citation_from_json(json.loads(json.dumps(to_json(cite)))) == cite


@given(_ids, st.integers(1, 2**53 - 1), _ids, _ids)
def test_a_prepared_memory_ref_reads_as_the_same_citation(artifact_id, revision, entry_id,
                                                          version_id):
    ref = MemoryEntryRef(artifact_id, revision, entry_id, version_id)
    cite = HandoffCitation(ArtifactRef(artifact_id, revision), entry_id, version_id)
    assert citation_from_json(json.loads(json.dumps(to_json(ref)))) == cite


@pytest.mark.parametrize("data", [
    {"family": "memory", "artifact_id": "a", "revision": True, "entry_id": "e",
     "entry_version_id": "v"},
    {"family": "memory", "artifact_id": "a", "revision": 1, "entry_id": "e"},
    {"family": "memory", "artifact_id": "a", "revision": 1, "entry_id": "e",
     "entry_version_id": 3},
])
def test_a_malformed_prepared_memory_ref_is_an_invalid_citation(data):
    with pytest.raises(InvalidCitationError):
        citation_from_json(data)


@pytest.mark.parametrize("revision", [1.0, True, "1", None])
def test_a_citation_revision_is_never_coerced(revision):
    data = dict(CITATION_JSON, memory_ref={"artifact_id": "mem_art_1", "revision": revision})
    with pytest.raises(InvalidCitationError, match="revision must be a JSON integer"):
        citation_from_json(data)


@pytest.mark.parametrize("data", [[], "x", {}, {"memory_ref": {"artifact_id": "a"}},
                                  dict(CITATION_JSON, entry_id=7)])
def test_a_malformed_citation_is_an_invalid_citation(data):
    with pytest.raises(InvalidCitationError):
        citation_from_json(data)


# --------------------------------------------------------------------------- no hand shaping

SURFACES = ["entrypoints/cli", "entrypoints/mcp"]


def _hand_shapes(text: str) -> list[int]:
    """Lines of dict literals in ``text`` that write a shaped value by hand: an
    ArtifactRef (exactly ``artifact_id`` + ``revision``) or anything keyed by
    ``entry_version_id``."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if keys == {"artifact_id", "revision"} or "entry_version_id" in keys:
                found.append(node.lineno)
    return found


def test_no_surface_writes_a_domain_value_json_by_hand():
    files = sorted(p for d in SURFACES for p in (ROOT / d).glob("*.py"))
    assert len(files) > 5
    found = [f"{p.relative_to(ROOT)}:{line}" for p in files
             for line in _hand_shapes(p.read_text("utf-8"))]
    assert found == []


def test_the_hand_shape_check_sees_hand_written_shapes():
    text = ('x = {"artifact_id": a, "revision": 1}\n'
            'y = {"memory_ref": r, "entry_id": e, "entry_version_id": v}\n'
            'z = {"artifact_id": a, "revision": 1, "error": "e"}\n')
    assert _hand_shapes(text) == [1, 2]


_texts = st.text(max_size=30)
_refs = st.builds(ArtifactRef, _ids, st.integers(1, 2**53 - 1))
_source_refs = st.builds(SourceRef, _ids, st.just(H))


@given(st.builds(MemoryEntryVersion, _ids, _ids, _ids, st.integers(1, 10**6),
                 st.none() | _ids, _ids, _texts, st.lists(_source_refs, max_size=3).map(tuple),
                 st.lists(_refs, max_size=3).map(tuple), st.just(H), st.integers(1, 10**6)))
def test_an_entry_version_shape_keeps_every_field(v):
    out = json.loads(json.dumps(to_json(v)))
    assert set(out) == set(VERSION_JSON)
    assert out["source_refs"] == [{"source_id": s.source_id, "content_hash": s.content_hash}
                                  for s in v.sources]
    assert out["artifact_refs"] == [to_json(a) for a in v.artifacts]
    assert (out["entry_version_id"], out["text"], out["version"]) == (
        v.entry_version_id, v.text, v.version)


@given(st.builds(MemoryHit, _refs, _ids, _ids, _texts,
                 st.floats(0, 1, allow_nan=False), st.sampled_from(
                     [("fts",), ("vector",), ("fts", "vector")]), _ids))
def test_a_hit_shape_is_plain_json_with_its_anchor(h):
    out = json.loads(json.dumps(to_json(h)))
    assert set(out) == set(HIT_JSON)
    assert citation_from_json(out) == HandoffCitation(h.memory_ref, h.entry_id,
                                                      h.entry_version_id)
    assert out["matched_by"] == list(h.matched_by) and out["score"] == h.score


TOPIC_SURFACES = ["entrypoints/cli", "entrypoints/mcp", "entrypoints/http"]
TOPIC_SHAPERS = ["app/topic_shapes.py", "app/context_prepare.py"]


def _hand_refs(text: str) -> list[int]:
    """Lines of dict literals in ``text`` that write a ref by hand: any object keyed by
    both ``artifact_id`` and ``revision`` (a Topic ref, a prepared item's ref)."""
    return [node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Dict)
            and {"artifact_id", "revision"} <= {k.value for k in node.keys
                                                if isinstance(k, ast.Constant)}]


def test_no_surface_writes_a_topic_or_prepared_ref_by_hand():
    """Topic values and prepared items are shaped by the converter, so a ref has one name
    and one form everywhere (the CLI, HTTP and MCP; the Topic shapes and prepared
    context used to build theirs as dicts)."""
    files = sorted({*(p for d in TOPIC_SURFACES for p in (ROOT / d).glob("*.py")),
                    *(ROOT / f for f in TOPIC_SHAPERS)})
    assert len(files) > 10
    found = [f"{p.relative_to(ROOT)}:{line}" for p in files
             for line in _hand_refs(p.read_text("utf-8"))]
    assert found == []
