"""TopicMemoryService over a small recording stub of the TopicMemoryBackend port (a
fake is fine for the service's own rules; the real engines run in tests/e2e and the
contract kit): requests are checked before any I/O, the query is embedded only in a
hybrid shape, model failures are typed, ``get`` refuses every malformed ref, and
``publish`` builds exactly the projection core builds, outside the backend."""

from __future__ import annotations

import asyncio
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import analyzer as analyzers
from powercontext.core.errors import (
    CapabilityNotSupportedError,
    InvalidInputError,
    RetrievalShapeError,
)
from powercontext.core.models import EmbeddingProfile, EmbeddingResult, SourceRef
from powercontext.core.topic import content as topic_content
from powercontext.core.topic import projection as topic_projection
from powercontext.core.topic.models import (
    CHANNELS_FTS,
    CHANNELS_HYBRID,
    RetrievalShape,
    TopicCapabilities,
    TopicMemoryContent,
    TopicPublication,
    TopicRef,
    TopicRevision,
    TopicSearchRequest,
    TopicSearchResult,
)
from powercontext.topic_service import TopicMemoryService, parse_topic_ref

PROFILE = EmbeddingProfile("stub-3", "stub", 3)
SOURCE = SourceRef("src_one", "a" * 64)
CONTENT = TopicMemoryContent("Release process", "How we cut releases.",
                             "Tag the commit.\n\nThen run make release and publish the wheel.")


def _caps(kind: str | None, pending: str = "fts") -> TopicCapabilities:
    if kind is None:
        channels = CHANNELS_HYBRID if pending == "hybrid" else CHANNELS_FTS
        return TopicCapabilities(None, pending, channels,  # type: ignore[arg-type]
                                 PROFILE if pending == "hybrid" else None)
    shape = RetrievalShape(kind, "chunks-v1", "v1",  # type: ignore[arg-type]
                           PROFILE if kind == "hybrid" else None,
                           "f" * 64 if kind == "hybrid" else None)
    return TopicCapabilities(shape, kind, shape.channels,  # type: ignore[arg-type]
                             PROFILE if kind == "hybrid" else None)


class StubBackend:
    """Records every port call; answers with fixed values."""

    def __init__(self, caps: TopicCapabilities) -> None:
        self.caps = caps
        self.calls: list[tuple[str, Any]] = []

    async def topic_capabilities(self) -> TopicCapabilities:
        self.calls.append(("topic_capabilities", None))
        return self.caps

    async def analyzer(self) -> analyzers.Analyzer:
        self.calls.append(("analyzer", None))
        return analyzers.get("v1")

    async def put_sources(self, sources: Any) -> tuple[int, ...]:
        self.calls.append(("put_sources", tuple(sources)))
        return tuple(range(1, len(sources) + 1))

    async def search(self, request: TopicSearchRequest, query_vector: Any = None
                     ) -> TopicSearchResult:
        self.calls.append(("search", (request, query_vector)))
        return TopicSearchResult((), self.caps.channels)

    async def get(self, scope_id: str, ref: TopicRef) -> TopicRevision:
        self.calls.append(("get", (scope_id, ref)))
        return TopicRevision(scope_id, ref, CONTENT, "0" * 64, (SOURCE,), None,
                             "2026-12-01T13:00:00.000000Z")

    async def publish(self, publication: TopicPublication) -> tuple[TopicRevision, ...]:
        self.calls.append(("publish", publication))
        return tuple(TopicRevision(w.scope_id, w.ref, w.content, "0" * 64, w.sources, w.base,
                                   "2026-12-01T13:00:00.000000Z")
                     for w in publication.writes)

    async def close(self) -> None:
        self.calls.append(("close", None))


class StubModel:
    """A 3-dimensional model: each text -> a unit vector; ``fail`` raises instead."""

    def __init__(self, fail: bool = False, profile: EmbeddingProfile = PROFILE) -> None:
        self.fail = fail
        self._profile = profile
        self.texts: list[tuple[str, ...]] = []

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        self.texts.append(texts)
        if self.fail:
            raise ConnectionError("the embedding server is down")
        return EmbeddingResult(tuple((1.0, 0.0, 0.0) for _ in texts))


def run(aw: Any) -> Any:
    return asyncio.run(aw)


def names(backend: StubBackend) -> list[str]:
    return [c[0] for c in backend.calls]


# ------------------------------------------------------------------ search


BAD_SEARCHES = [
    ("scope_id", "", "release", 10),
    ("scope_id", "s" * 257, "release", 10),
    ("scope_id", 7, "release", 10),
    ("query", "repo:a", "x" * 8193, 10),
    ("query", "repo:a", " ".join(f"term{i}" for i in range(65)), 10),
    ("query", "repo:a", "release \udcff", 10),
    ("query", "repo:a", None, 10),
    ("limit", "repo:a", "release", 0),
    ("limit", "repo:a", "release", 21),
    ("limit", "repo:a", "release", True),
    ("limit", "repo:a", "release", "10"),
]


@pytest.mark.parametrize(("field", "scope", "query", "limit"), BAD_SEARCHES)
def test_search_refuses_bad_input_naming_the_field_before_any_io(field, scope, query, limit):
    backend = StubBackend(_caps("hybrid"))
    model = StubModel()
    svc = TopicMemoryService(backend, model)
    with pytest.raises(InvalidInputError) as exc:
        run(svc.search(scope, query, limit))
    assert exc.value.field == field
    assert backend.calls == [] and model.texts == []


@given(limit=st.one_of(st.integers(max_value=0), st.integers(min_value=21), st.booleans(),
                       st.text(max_size=3), st.floats(allow_nan=False)))
def test_any_limit_outside_1_to_20_is_refused_without_io(limit):
    backend = StubBackend(_caps("fts"))
    with pytest.raises(InvalidInputError) as exc:
        run(TopicMemoryService(backend).search("repo:a", "release", limit))
    assert exc.value.field == "limit" and backend.calls == []


@given(limit=st.integers(min_value=1, max_value=20))
def test_every_limit_in_1_to_20_reaches_the_backend_unchanged(limit):
    backend = StubBackend(_caps("fts"))
    run(TopicMemoryService(backend).search("repo:a", "release", limit))
    (request, vector), = [c[1] for c in backend.calls if c[0] == "search"]
    assert request == TopicSearchRequest("repo:a", "release", limit) and vector is None


def test_fts_shape_never_calls_the_model():
    backend = StubBackend(_caps("fts"))
    model = StubModel(fail=True)
    out = run(TopicMemoryService(backend, model).search("repo:a", "release notes"))
    assert out.channels == CHANNELS_FTS
    assert model.texts == []
    assert backend.calls[-1] == ("search", (TopicSearchRequest("repo:a", "release notes"), None))


def test_hybrid_shape_embeds_the_query_once_and_passes_the_vector():
    backend = StubBackend(_caps("hybrid"))
    model = StubModel()
    run(TopicMemoryService(backend, model).search("repo:a", "release notes", 5))
    assert model.texts == [("release notes",)]
    assert backend.calls[-1] == ("search", (TopicSearchRequest("repo:a", "release notes", 5),
                                            (1.0, 0.0, 0.0)))


@pytest.mark.parametrize("query", ["the of a", "   ", "!!! ???", "\"the\" OR (of)*"])
def test_a_query_without_terms_is_bad_input_and_is_not_embedded(query):
    backend = StubBackend(_caps("hybrid"))
    model = StubModel()
    with pytest.raises(InvalidInputError, match="no searchable terms") as exc:
        run(TopicMemoryService(backend, model).search("repo:a", query))
    assert exc.value.field == "query"
    assert model.texts == [] and "search" not in names(backend)
    assert "topic_capabilities" in names(backend)  # the shape is checked first


def test_hybrid_model_failure_is_a_typed_error_naming_the_cause():
    # a model from outside the package: its exception is named by type only (its text may
    # quote what it was asked to embed; core.errors.describe_error)
    backend = StubBackend(_caps("hybrid"))
    with pytest.raises(CapabilityNotSupportedError, match="model failed: ConnectionError") as e:
        run(TopicMemoryService(backend, StubModel(fail=True)).search("repo:a", "release"))
    assert "server is down" not in str(e.value)
    assert "search" not in names(backend)


def test_hybrid_without_a_model_is_a_shape_error_naming_the_fix():
    backend = StubBackend(_caps("hybrid"))
    with pytest.raises(RetrievalShapeError, match="--embedding"):
        run(TopicMemoryService(backend).search("repo:a", "release"))
    assert "search" not in names(backend)


def test_hybrid_with_another_profile_is_a_shape_error():
    backend = StubBackend(_caps("hybrid"))
    other = StubModel(profile=EmbeddingProfile("other-3", "other", 3))
    with pytest.raises(RetrievalShapeError, match="other-3"):
        run(TopicMemoryService(backend, other).search("repo:a", "release"))


def test_scope_and_query_reach_the_backend_in_nfc():
    backend = StubBackend(_caps("fts"))
    scope = unicodedata.normalize("NFD", "repo:/tmp/café")
    run(TopicMemoryService(backend).search(scope, "résumé"))
    request, _ = backend.calls[-1][1]
    assert request.scope_id == unicodedata.normalize("NFC", scope)


# ------------------------------------------------------------------ get


REF = TopicRef("topic_art_01jz0000000000000000000000", 3)
GOOD_REFS = [
    REF,
    {"family": "topic-memory", "artifact_id": REF.artifact_id, "revision": 3},
    f"{REF.artifact_id}@3",
]


@pytest.mark.parametrize("ref", GOOD_REFS, ids=["TopicRef", "json", "text"])
def test_get_reads_that_exact_ref_in_every_form(ref):
    backend = StubBackend(_caps("fts"))
    rev = run(TopicMemoryService(backend).get("repo:a", ref))
    assert backend.calls == [("get", ("repo:a", REF))]
    assert rev.ref == REF


BAD_REFS = [
    ({"family": "memory", "artifact_id": REF.artifact_id, "revision": 1}, "artifact.family"),
    (TopicRef(REF.artifact_id, 1, "memory"), "artifact.family"),
    ({"family": "topic-memory", "artifact_id": REF.artifact_id, "revision": 0},
     "artifact.revision"),
    ({"family": "topic-memory", "artifact_id": REF.artifact_id, "revision": -2},
     "artifact.revision"),
    ({"family": "topic-memory", "artifact_id": REF.artifact_id, "revision": True},
     "artifact.revision"),
    ({"family": "topic-memory", "artifact_id": REF.artifact_id, "revision": "3"},
     "artifact.revision"),
    ({"family": "topic-memory", "artifact_id": REF.artifact_id}, "artifact"),
    (REF.artifact_id, "artifact.revision"),
    (f"{REF.artifact_id}@0", "artifact.revision"),
    (f"{REF.artifact_id}@-1", "artifact.revision"),
    (f"{REF.artifact_id}@x", "artifact.revision"),
    # the text form is exact: a leading zero is not the ref a search printed
    (f"{REF.artifact_id}@01", "artifact.revision"),
    (f"{REF.artifact_id}@00", "artifact.revision"),
    (TopicRef(REF.artifact_id, 0), "artifact.revision"),
    (3, "artifact"),
]


@pytest.mark.parametrize(("ref", "field"), BAD_REFS)
def test_get_refuses_a_malformed_ref_before_any_io(ref, field):
    backend = StubBackend(_caps("fts"))
    with pytest.raises(InvalidInputError) as exc:
        run(TopicMemoryService(backend).get("repo:a", ref))
    assert exc.value.field.startswith(field) and backend.calls == []


def test_family_memory_names_the_memory_commands():
    with pytest.raises(InvalidInputError, match="Memory"):
        parse_topic_ref({"family": "memory", "artifact_id": "mem_art_x", "revision": 1})


@given(revision=st.one_of(st.integers(max_value=0), st.booleans()))
def test_no_revision_below_1_or_bool_is_ever_read(revision):
    backend = StubBackend(_caps("fts"))
    ref = {"family": "topic-memory", "artifact_id": REF.artifact_id, "revision": revision}
    with pytest.raises(InvalidInputError):
        run(TopicMemoryService(backend).get("repo:a", ref))
    assert backend.calls == []


def test_get_refuses_a_bad_scope_before_any_io():
    backend = StubBackend(_caps("fts"))
    for scope in ("", "s" * 257, "bad\x00scope"):
        with pytest.raises(InvalidInputError) as exc:
            run(TopicMemoryService(backend).get(scope, REF))
        assert exc.value.field == "scope_id"
    assert backend.calls == []


# ------------------------------------------------------------------ publish


def _svc(backend: StubBackend, model: StubModel | None = None) -> TopicMemoryService:
    return TopicMemoryService(backend, model, clock=lambda: 1_700_000_000_000,
                              entropy=lambda n: b"\x01" * n)


def test_publish_builds_core_writes_with_ids_from_the_given_clock_and_entropy():
    backend = StubBackend(_caps(None))
    svc = _svc(backend)
    revs = run(svc.publish("repo:a", creates=[(CONTENT, [SOURCE])],
                            updates=[(REF, CONTENT, [SOURCE])]))
    publication = next(c[1] for c in backend.calls if c[0] == "publish")
    create, update = publication.writes
    assert create.op == "create" and create.base is None
    assert create.ref == TopicRef(topic_content.make_topic_id(1_700_000_000_000, b"\x01" * 10),
                                  1)
    assert update.op == "update" and update.base == REF
    assert update.ref == TopicRef(REF.artifact_id, 4)
    expected = topic_projection.build_projection(CONTENT, analyzers.get("v1"))
    assert create.projection == expected == update.projection
    assert publication.guards.empty
    assert [r.ref for r in revs] == [create.ref, update.ref]


def test_publish_in_a_hybrid_deployment_embeds_every_text_before_the_backend():
    backend = StubBackend(_caps("hybrid"))
    model = StubModel()
    run(_svc(backend, model).publish("repo:a", creates=[(CONTENT, [SOURCE])]))
    assert model.texts == [topic_projection.embedding_texts(CONTENT)]
    (write,) = next(c[1] for c in backend.calls if c[0] == "publish").writes
    n = len(topic_projection.embedding_texts(CONTENT))
    expected = topic_projection.build_projection(
        CONTENT, analyzers.get("v1"), [(1.0, 0.0, 0.0)] * n, PROFILE)
    assert write.projection == expected


def test_publish_with_a_failing_model_writes_nothing():
    backend = StubBackend(_caps("hybrid"))
    with pytest.raises(CapabilityNotSupportedError, match="embedding"):
        run(_svc(backend, StubModel(fail=True)).publish("repo:a",
                                                         creates=[(CONTENT, [SOURCE])]))
    assert "publish" not in names(backend)


def test_publish_refuses_bad_content_and_lineage_before_any_io():
    backend = StubBackend(_caps(None))
    svc = _svc(backend)
    cases = [
        ({"creates": [({"title": "", "summary": "s", "detail": "d"}, [SOURCE])]},
         "creates[0]."),
        ({"creates": [(CONTENT, [])]}, "creates[0].sources"),
        ({"creates": [(CONTENT, ["src_one"])]}, "creates[0].sources[0]"),
        ({"updates": [({"family": "memory", "artifact_id": "x", "revision": 1}, CONTENT,
                       [SOURCE])]}, "updates[0].base"),
        ({}, "creates"),
    ]
    for kwargs, field in cases:
        with pytest.raises(InvalidInputError) as exc:
            run(svc.publish("repo:a", **kwargs))
        assert exc.value.field.startswith(field), (kwargs, exc.value.field)
    assert backend.calls == []


def test_the_service_offers_users_no_create_update_or_delete():
    public = {n for n in dir(TopicMemoryService) if not n.startswith("_")}
    # part 2 adds the processing surface (Sources in, flush, status, process), and the
    # operator's decisions at a terminal frontier (blocked, unblock, operator_decisions:
    # they move a Cursor or an allowance, never a Topic); still no create, update,
    # delete or retire of a Topic. ``publish`` and ``query_vector`` are the processing
    # port the Topic processor drives (ports.topic_publisher.TopicPublisher), not a
    # user operation: no CLI command, HTTP route or MCP tool reaches them
    assert public == {"add_sources", "blocked", "capabilities", "close", "flush", "get",
                      "operator_decisions", "process", "search", "status", "unblock",
                      "publish", "query_vector"}


def test_the_service_implements_the_processing_port():
    from powercontext.ports.topic_publisher import TopicPublisher

    assert isinstance(TopicMemoryService(StubBackend(_caps("fts"))), TopicPublisher)


@given(time_ms=st.integers(min_value=0, max_value=2**48 - 1),
       entropy=st.binary(min_size=10, max_size=10),
       revision=st.integers(min_value=1, max_value=2**53 - 1))
def test_every_ref_form_parses_to_the_same_exact_ref(time_ms, entropy, revision):
    ref = TopicRef(topic_content.make_topic_id(time_ms, entropy), revision)
    as_json = {"family": "topic-memory", "artifact_id": ref.artifact_id, "revision": revision}
    assert parse_topic_ref(ref) == parse_topic_ref(as_json) == ref
    assert parse_topic_ref(f"{ref.artifact_id}@{revision}") == ref
