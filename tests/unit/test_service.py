"""MemoryService orchestration on fakes of its ports (Memory RFC, "remember()")."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fakes import CountingEmbeddingModel, FakeCandidatePipeline, InMemoryBackend

from powercontext._writes import key_retry_delay
from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.core import canonical
from powercontext.core.errors import CapabilityNotSupportedError, RevisionConflictError
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService
from powercontext.testing import run

NOTE = canonical.make_source("src_note", "user_note", "always run make lint first")
OTHER = canonical.make_source("src_other", "file", "unrelated")


def service(pipeline=None, model=None):
    counter = itertools.count(1)
    return MemoryService(InMemoryBackend(profile=model.profile if model else None),
                         candidate_pipeline=pipeline, embedding_model=model,
                         entropy=lambda n: next(counter).to_bytes(n, "big"))


def test_extract_needs_a_pipeline_and_evidence_and_no_entries():
    async def body():
        svc = service()
        with pytest.raises(CapabilityNotSupportedError):
            await svc.remember(None, sources=(NOTE,), mode="extract")
        with pytest.raises(CapabilityNotSupportedError):
            await svc.remember(None, sources=(NOTE,))  # auto without entries = extract
        svc = service(FakeCandidatePipeline())
        with pytest.raises(ValueError, match="entries"):
            await svc.remember(None, sources=(NOTE,), mode="extract",
                               entries=(MemoryEntryInput("fact", "x"),))
        with pytest.raises(ValueError, match="sources"):
            await svc.remember(None, mode="extract")
        with pytest.raises(ValueError, match="entries"):
            await svc.remember(None)  # auto with no work at all
    run(body())


def test_nothing_worth_saving_creates_nothing_but_keeps_the_source():
    async def body():
        pipeline = FakeCandidatePipeline()
        svc = service(pipeline)
        assert await svc.remember(None, sources=(NOTE,)) is None
        assert [s.source_id for _, s in await svc.backend.journal()] == ["src_note"]
        assert pipeline.calls[0][0] == (NOTE,)
    run(body())


def test_candidates_pass_the_same_validation_and_see_only_active_entries():
    async def body():
        pipeline = FakeCandidatePipeline(
            (MemoryEntryInput("constraint", "always run make lint first", sources=(NOTE,)),),
            (MemoryEntryInput("fact", "invented", sources=(OTHER,)),),
            (),
        )
        svc = service(pipeline)
        r1 = await svc.remember(None, sources=(NOTE,), mode="extract")
        assert r1 is not None and r1.revision == 1
        (v,) = (await svc.entries(r1)).values()
        assert (v.kind, v.sources) == ("constraint", (NOTE.ref,))
        # a candidate citing evidence outside the operation is refused, nothing written
        with pytest.raises(ValueError, match="operation evidence"):
            await svc.remember(r1, sources=(NOTE,), mode="extract")
        assert await svc.head(r1.artifact_id) == r1
        r2 = await svc.forget(r1, (v,))
        assert await svc.remember(r2, sources=(NOTE,), mode="extract") == r2  # no change
        assert pipeline.calls[-1][1] == ()  # the inactive entry is not shown
        with pytest.raises(CapabilityNotSupportedError):
            await svc.remember(r2, sources=(NOTE,), mode="extract", providers=("model",))
    run(body())


def test_only_changed_texts_are_embedded():
    async def body():
        model = CountingEmbeddingModel(DeterministicEmbedding(dimension=16))
        svc = service(model=model)
        r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "one"),
                                               MemoryEntryInput("fact", "two")))
        assert sorted(model.texts) == ["one", "two"]
        model.texts.clear()
        r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "three"),))
        assert model.texts == ["three"]
        model.texts.clear()
        v = next(x for x in (await svc.entries(r2)).values() if x.text == "one")
        r3 = await svc.forget(r2, (v,))
        assert model.texts == []  # a deactivation embeds nothing
        await svc.reactivate(r3, (v,))
        assert model.texts == ["one"]  # the restored projection gets its vector back
    run(body())


def test_a_plan_citing_a_revision_outside_ijson_is_invalid_input_inside_the_commit():
    # a third party's plan (not ours, which refuses it while planning): the unit of
    # work checks the entry version before hashing it, and names the field
    import attrs

    from powercontext.core import planning
    from powercontext.core.errors import InvalidInputError
    from powercontext.core.models import Artifact, ArtifactRef

    backend = InMemoryBackend()
    up = Artifact(ArtifactRef("mem_art_up", 1), "memory", "0" * 64)
    counter = itertools.count(1)
    plan = planning.plan_remember(
        None, [MemoryEntryInput("fact", "x", artifacts=(up,))], artifacts=[up],
        new_id=lambda p: f"{p}{next(counter):04d}")
    huge = ArtifactRef("mem_art_up", 2**53)
    (v,) = plan.new_versions
    forged = attrs.evolve(plan, new_versions=(attrs.evolve(v, artifacts=(huge,)),))

    async def body():
        async with backend.begin() as uow:
            await uow.commit(forged)

    with pytest.raises(InvalidInputError) as info:
        run(body())
    assert info.value.field == "entry_version.artifacts.revision"
    assert run(backend.head(plan.artifact_id)) is None


class _Conflicting:
    """A backend whose first ``conflicts`` commits raise RevisionConflictError (as if a
    concurrent writer had stored the key or moved the head first); all else delegates."""

    def __init__(self, backend, conflicts):
        self._backend, self.conflicts = backend, conflicts

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def begin(self):
        outer, inner = self, self._backend.begin()

        class _Uow:
            async def __aenter__(self):
                self.uow = await inner.__aenter__()
                return self

            async def __aexit__(self, *exc):
                return await inner.__aexit__(*exc)

            async def commit(self, *args, **kwargs):
                if outer.conflicts:
                    outer.conflicts -= 1
                    raise RevisionConflictError("a concurrent writer landed first")
                return await self.uow.commit(*args, **kwargs)

        return _Uow()


def _keyed_service(conflicts):
    slept: list[float] = []

    async def sleep(seconds):  # records the requested delay; no time passes
        slept.append(seconds)

    counter = itertools.count(1)
    svc = MemoryService(_Conflicting(InMemoryBackend(), conflicts), sleep=sleep,
                        entropy=lambda n: next(counter).to_bytes(n, "big"))
    return svc, slept


def test_a_key_write_that_meets_conflicts_backs_off_through_the_injected_sleep():
    async def body():
        svc, slept = _keyed_service(conflicts=3)
        ref = await svc.remember(key="repo:demo", entries=(MemoryEntryInput("fact", "x"),))
        assert ref is not None and await svc.memory_key("repo:demo") == ref.artifact_id
        return slept

    slept = run(body())
    assert len(slept) == 3  # one wait before each retry, none before the first attempt
    for attempt, seconds in enumerate(slept, start=1):
        assert key_retry_delay(attempt, 1.0) <= seconds <= key_retry_delay(attempt, 2.0)


def test_a_key_write_that_keeps_conflicting_gives_up_after_the_attempts():
    async def body():
        svc, slept = _keyed_service(conflicts=10_000)
        with pytest.raises(RevisionConflictError, match="kept moving"):
            await svc.remember(key="repo:demo", entries=(MemoryEntryInput("fact", "x"),))
        assert await svc.memory_keys() == {}
        return slept

    slept = run(body())
    assert len(slept) == MemoryService.KEY_WRITE_ATTEMPTS - 1
    assert max(slept) <= key_retry_delay(MemoryService.KEY_WRITE_ATTEMPTS, 2.0)


@given(st.integers(1, 1000), st.integers(1, 1000), st.floats(1.0, 2.0))
def test_key_retry_delays_grow_with_the_attempt_and_stay_bounded(a, b, jitter):
    lo, hi = sorted((a, b))
    assert 0 < key_retry_delay(lo, jitter) <= key_retry_delay(hi, jitter) <= 0.2 * jitter
