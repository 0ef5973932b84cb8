"""The Topic stateful test: a TopicMemoryBackend against a trusted plain-Python model.

:class:`TopicStateMachine` publishes CREATE and UPDATE batches (some made to fail: a
stale base, a Source that is not stored, an UPDATE from another Scope), gets every
known Revision (after every step), and searches, comparing with its model: the heads, every Revision
(content, lineage, ``published_at``), and for a one-word search the set of Topics whose
active texts contain the word (no hit is a non-active Revision). Bind it to a backend
with :func:`topic_state_machine_test`::

    TestMyTopicStateMachine = topic_state_machine_test(lambda: MyTopicBackend(...))
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs
from hypothesis import settings as _settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from powercontext.core.errors import (
    ArtifactNotFoundError,
    InvalidInputError,
    RevisionConflictError,
)
from powercontext.core.models import EmbeddingProfile, SourceRef
from powercontext.core.topic.models import TopicRef, TopicRevision, TopicWrite
from powercontext.ports.topic import TopicMemoryBackend
from powercontext.testing.topic_base import TopicKit
from powercontext.testing.topic_strategies import TOPIC_VOCABULARY, topic_contents

__all__ = ["TopicStateMachine", "topic_state_machine_test"]

T = TypeVar("T")
SCOPES = ("scope-a", "scope-b")
SOURCES = ("src_1", "src_2", "src_3")
#: Topics the machine keeps at most (so one search at limit 20 sees all of a Scope's).
MAX_TOPICS = 12


class TopicStateMachine(RuleBasedStateMachine):
    """Subclass and set ``backend_factory`` (``(profile) -> TopicMemoryBackend``, a
    fresh empty database per call) and ``embedding_model`` (None: FTS-only)."""

    backend_factory: Callable[[EmbeddingProfile | None], TopicMemoryBackend]
    embedding_model: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        model = type(self).embedding_model
        backend = type(self).backend_factory(model.profile if model is not None else None)
        self.kit = TopicKit(backend, model)
        # artifact_id -> its Revisions in order (index 0 = revision 1)
        self.topics: dict[str, list[TopicRevision]] = {}
        self.analyzer = self._run(backend.analyzer())

    def teardown(self) -> None:
        self.loop.run_until_complete(self.kit.backend.close())
        self.loop.close()

    def _run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def _head(self, aid: str) -> TopicRevision:
        return self.topics[aid][-1]

    def _scope(self, aid: str) -> str:
        return self.topics[aid][0].scope_id

    @rule(data=st.data(), creates=st.integers(0, 2), updates=st.integers(0, 2),
          failure=st.sampled_from([None, None, None, "stale", "source", "scope"]))
    def publish(self, data: st.DataObject, creates: int, updates: int,
                failure: str | None) -> None:
        creates = min(creates, MAX_TOPICS - len(self.topics))
        known = sorted(self.topics)
        targets = data.draw(st.lists(st.sampled_from(known), max_size=updates, unique=True)
                            ) if known else []
        if creates + len(targets) == 0:
            return
        writes: list[TopicWrite] = []
        for _ in range(creates):
            title, summary, detail = data.draw(topic_contents())
            writes.append(self._run(self.kit.write(
                data.draw(st.sampled_from(SCOPES)), title, summary, detail,
                sources=data.draw(st.lists(st.sampled_from(SOURCES), min_size=1, max_size=2,
                                           unique=True)))))
        for aid in targets:
            title, summary, detail = data.draw(topic_contents())
            writes.append(self._run(self.kit.write(
                self._scope(aid), title, summary, detail, base=self._head(aid).ref,
                sources=(data.draw(st.sampled_from(SOURCES)),))))
        expected: type[Exception] | None = None
        if failure == "stale" and targets and len(self.topics[targets[0]]) > 1:
            i = creates
            writes[i] = attrs.evolve(writes[i], base=TopicRef(targets[0], 1),
                                     ref=TopicRef(targets[0], 2))
            expected = RevisionConflictError
        elif failure == "source":
            writes[-1] = attrs.evolve(writes[-1], sources=(SourceRef("src_missing", "0" * 64),))
            expected = InvalidInputError
        elif failure == "scope" and targets:
            i = creates
            other = next(s for s in SCOPES if s != writes[i].scope_id)
            writes[i] = attrs.evolve(writes[i], scope_id=other)
            expected = InvalidInputError
        if expected is not None:
            heads = {s: self._run(self.kit.backend.heads(s)) for s in SCOPES}
            try:
                self._run(self.kit.publish(*writes))
            except expected:
                pass
            else:
                raise AssertionError(f"a {failure} batch must raise {expected.__name__}")
            assert {s: self._run(self.kit.backend.heads(s)) for s in SCOPES} == heads
            return
        revs = self._run(self.kit.publish(*writes))
        assert [r.ref for r in revs] == [w.ref for w in writes]
        assert len({r.published_at for r in revs}) == 1
        for w, r in zip(writes, revs, strict=True):
            assert (r.scope_id, r.content, r.based_on) == (w.scope_id, w.content, w.base)
            if w.op == "create":
                assert r.ref.revision == 1 and w.ref.artifact_id not in self.topics
                self.topics[w.ref.artifact_id] = [r]
            else:
                assert r.ref.revision == len(self.topics[w.ref.artifact_id]) + 1
                self.topics[w.ref.artifact_id].append(r)

    @precondition(lambda self: bool(self.topics))
    @rule(data=st.data())
    def get_known(self, data: st.DataObject) -> None:
        aid = data.draw(st.sampled_from(sorted(self.topics)))
        rev = data.draw(st.sampled_from(self.topics[aid]))
        assert self._run(self.kit.backend.get(rev.scope_id, rev.ref)) == rev
        other = next(s for s in SCOPES if s != rev.scope_id)
        try:
            self._run(self.kit.backend.get(other, rev.ref))
        except ArtifactNotFoundError:
            pass
        else:
            raise AssertionError("another Scope's Topic must not be found")
        try:
            self._run(self.kit.backend.get(rev.scope_id,
                                           TopicRef(aid, len(self.topics[aid]) + 1)))
        except ArtifactNotFoundError:
            pass
        else:
            raise AssertionError("a Revision beyond the head must not be found")

    @rule(scope=st.sampled_from(SCOPES),
          words=st.lists(st.sampled_from(TOPIC_VOCABULARY), min_size=1, max_size=2))
    def search(self, scope: str, words: list[str]) -> None:
        """A one- or two-term query admits every Topic holding either term (the
        admission floor for at most two terms is one match)."""
        word = " ".join(words)
        result = self._run(self.kit.search(scope, word, 20))
        terms = set(self.analyzer.query_terms(word))
        heads = {aid: revs[-1] for aid, revs in self.topics.items()
                 if revs[0].scope_id == scope}
        want = set()
        for aid, head in heads.items():
            c = head.content
            if terms & set(self.analyzer.analyze(f"{c.title}\n{c.summary}\n{c.detail}")):
                want.add(aid)
        got = {h.ref.artifact_id for h in result.hits}
        assert len(got) == len(result.hits)
        if self.kit.model is None:
            assert got == want, (word, got, want)
        else:
            assert want <= got <= set(heads), (word, got, want)
        for h in result.hits:
            head = heads[h.ref.artifact_id]
            assert h.ref == head.ref, "a hit is never a non-active Revision"
            assert (h.title, h.summary) == (head.content.title, head.content.summary)
            assert set(h.matched_by) <= set(result.channels)

    @invariant()
    def every_known_revision_reads_back(self) -> None:
        for revs in self.topics.values():
            for rev in revs:
                assert self._run(self.kit.backend.get(rev.scope_id, rev.ref)) == rev

    @invariant()
    def heads_match_the_model(self) -> None:
        for scope in SCOPES:
            want = sorted((revs[-1].ref for revs in self.topics.values()
                           if revs[0].scope_id == scope),
                          key=lambda r: r.artifact_id.encode())
            assert list(self._run(self.kit.backend.heads(scope))) == want


def topic_state_machine_test(
    factory: Callable[[EmbeddingProfile | None], TopicMemoryBackend],
    *,
    embedding_model: Any = None,
    max_examples: int | None = None,
    stateful_step_count: int = 20,
) -> Any:
    """A unittest TestCase class running :class:`TopicStateMachine` on ``factory``
    (``(profile) -> TopicMemoryBackend``, a fresh empty database per call); with
    ``embedding_model`` the deployment is hybrid."""
    machine = type("BoundTopicStateMachine", (TopicStateMachine,), {
        "backend_factory": staticmethod(factory), "embedding_model": embedding_model})
    overrides: dict[str, Any] = {"stateful_step_count": stateful_step_count, "deadline": None}
    if max_examples is not None:
        overrides["max_examples"] = max_examples
    test_case: Any = getattr(machine, "TestCase")  # noqa: B009 (made by hypothesis)
    test_case.settings = _settings(_settings(), **overrides)
    return test_case
