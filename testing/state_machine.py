"""The stateful test: MemoryService against a trusted in-memory model."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from hypothesis import settings as _settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from powercontext.core.errors import CapabilityNotSupportedError, RevisionConflictError
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.ports import MemoryBackend
from powercontext.testing.base import Ids
from powercontext.testing.strategies import VOCABULARY

__all__ = ["MemoryStateMachine", "state_machine_test"]

T = TypeVar("T")


class MemoryStateMachine(RuleBasedStateMachine):
    """Drives MemoryService through random remember / revise / forget / reactivate /
    organize / search / stale-base operations and checks every Revision, manifest and
    search result against a trusted model. Subclass and set ``backend_factory``
    (``() -> MemoryBackend``, a fresh empty database per call)."""

    backend_factory: Callable[[], MemoryBackend]

    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        from powercontext import MemoryService

        self.loop = asyncio.new_event_loop()
        self.svc = MemoryService(type(self).backend_factory(), entropy=Ids())
        # model: artifact_id -> list of revisions; a revision maps entry_id ->
        # (entry_version_id, state, kind, text, version)
        self.model: dict[str, list[dict[str, tuple[str, str, str, str, int]]]] = {}
        self.hashes: dict[tuple[str, int], str] = {}

    def teardown(self) -> None:
        self.loop.run_until_complete(self.svc.close())
        self.loop.close()

    def _run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    @staticmethod
    def _text(words: list[str]) -> str:
        return " ".join(words)

    def _head(self, artifact_id: str) -> ArtifactRef:
        return ArtifactRef(artifact_id, len(self.model[artifact_id]))

    def _record(self, ref: ArtifactRef) -> None:
        rev = self._run(self.svc.revision(ref))
        versions = self._run(self.svc.entries(ref))
        state = {
            e.entry_id: (
                e.entry_version_id,
                str(e.state),
                versions[e.entry_id].kind,
                versions[e.entry_id].text,
                versions[e.entry_id].version,
            )
            for e in rev.content.manifest.entries
        }
        self.model.setdefault(ref.artifact_id, []).append(state)
        assert len(self.model[ref.artifact_id]) == ref.revision
        self.hashes[(ref.artifact_id, ref.revision)] = rev.content_hash

    def _expect(
        self,
        artifact_id: str,
        after: ArtifactRef | None,
        expected: dict[str, tuple[str | None, str, str, str, int]],
    ) -> None:
        """Check the new Revision against the expected entries (version id None = new)."""
        prev = self.model[artifact_id][-1]
        changed = any(
            e not in prev or prev[e][1:] != v[1:] or (v[0] is not None and prev[e][0] != v[0])
            for e, v in expected.items()
        )
        if not changed:
            assert after == self._head(artifact_id)
            return
        assert after == ArtifactRef(artifact_id, len(self.model[artifact_id]) + 1)
        self._record(after)
        got = self.model[artifact_id][-1]
        assert set(got) == set(expected)
        for entry_id, (vid, state, kind, text, version) in expected.items():
            g = got[entry_id]
            assert g[1:] == (state, kind, text, version), (entry_id, g, expected[entry_id])
            if vid is not None:
                assert g[0] == vid
            elif entry_id in prev:
                assert g[0] != prev[entry_id][0]

    @rule(target=memories, words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3))
    def create(self, words: list[str]) -> str:
        ref = self._run(
            self.svc.remember(
                None, entries=(MemoryEntryInput("fact", self._text(words)),), mode="append"
            )
        )
        assert ref is not None and ref.revision == 1
        self._record(ref)
        return ref.artifact_id

    @rule(
        memory=memories,
        words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3),
        kind=st.sampled_from(["fact", "decision"]),
    )
    def add(self, memory: str, words: list[str], kind: str) -> None:
        head = self._head(memory)
        text = self._text(words)
        after = self._run(self.svc.remember(head, entries=(MemoryEntryInput(kind, text),)))
        prev = self.model[memory][-1]
        expected: dict[str, Any] = dict(prev)
        duplicate = any(v[1] == "active" and v[2:4] == (kind, text) for v in prev.values())
        if duplicate:
            assert after == head
            return
        assert after is not None and after.revision == head.revision + 1
        self._record(after)
        new = set(self.model[memory][-1]) - set(prev)
        assert len(new) == 1
        (entry_id,) = new
        assert self.model[memory][-1][entry_id][1:] == ("active", kind, text, 1)
        for e, v in expected.items():
            assert self.model[memory][-1][e] == v

    @rule(
        memory=memories,
        data=st.data(),
        words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3),
    )
    def revise(self, memory: str, data: st.DataObject, words: list[str]) -> None:
        prev = self.model[memory][-1]
        active = sorted(e for e, v in prev.items() if v[1] == "active")
        if not active:
            return
        entry_id = data.draw(st.sampled_from(active))
        head = self._head(memory)
        current = self._run(self.svc.entries(head, [entry_id]))[entry_id]
        text = self._text(words)
        after = self._run(
            self.svc.remember(head, entries=(MemoryEntryInput(current.kind, text, entry=current),))
        )
        expected: dict[str, Any] = dict(prev)
        if text != current.text:
            expected[entry_id] = (None, "active", current.kind, text, current.version + 1)
            self._expect(memory, after, expected)
            v2 = self._run(self.svc.entries(after, [entry_id]))[entry_id]  # type: ignore[arg-type]
            assert v2.previous_version_id == current.entry_version_id
        else:
            assert after == head

    @rule(memory=memories, data=st.data(), forget=st.booleans())
    def toggle(self, memory: str, data: st.DataObject, forget: bool) -> None:
        prev = self.model[memory][-1]
        chosen = data.draw(
            st.lists(st.sampled_from(sorted(prev)), min_size=1, max_size=3, unique=True)
        )
        head = self._head(memory)
        versions = self._run(self.svc.entries(head, chosen))
        fn = self.svc.forget if forget else self.svc.reactivate
        after = self._run(fn(head, [versions[e] for e in chosen], reason="test"))
        expected: dict[str, Any] = dict(prev)
        for e in chosen:
            vid, _, kind, text, version = prev[e]
            expected[e] = (vid, "inactive" if forget else "active", kind, text, version)
        self._expect(memory, after, expected)

    @rule(memory=memories)
    def organize(self, memory: str) -> None:
        prev = self.model[memory][-1]
        head = self._head(memory)
        after = self._run(self.svc.organize(head))
        expected: dict[str, Any] = dict(prev)
        keep: dict[tuple[str, str], str] = {}
        for e in sorted((e for e, v in prev.items() if v[1] == "active"), key=str.encode):
            key = prev[e][2:4]
            if key in keep:
                expected[e] = (prev[e][0], "inactive", *prev[e][2:])
            else:
                keep[key] = e
        self._expect(memory, after, expected)

    @precondition(lambda self: any(len(r) > 1 for r in self.model.values()))
    @rule(data=st.data())
    def stale_base_conflicts(self, data: st.DataObject) -> None:
        memory = data.draw(st.sampled_from(sorted(a for a, r in self.model.items() if len(r) > 1)))
        stale = ArtifactRef(memory, data.draw(st.integers(1, len(self.model[memory]) - 1)))
        try:
            self._run(self.svc.remember(stale, entries=(MemoryEntryInput("fact", "stale"),)))
        except RevisionConflictError:
            pass
        else:
            raise AssertionError("a stale base must raise RevisionConflictError")
        try:
            self._run(self.svc.search("alpha", (stale,), mode="fts"))
        except CapabilityNotSupportedError:
            pass
        else:
            raise AssertionError("a non-head search must raise CapabilityNotSupportedError")

    @rule(memory=memories, word=st.sampled_from(VOCABULARY))
    def search(self, memory: str, word: str) -> None:
        head = self._head(memory)
        result = self._run(self.svc.search(word, (head,), limit=64, mode="fts"))
        state = self.model[memory][-1]
        want = {e for e, v in state.items() if v[1] == "active" and word in v[3].split()}
        got = {h.entry_id for h in result.hits}
        assert got == want, (word, got, want)
        for h in result.hits:
            assert h.memory_ref == head and h.entry_version_id == state[h.entry_id][0]
            assert h.text == state[h.entry_id][3]

    @invariant()
    def heads_and_history_hold(self) -> None:
        for artifact_id, revisions in self.model.items():
            head = self._run(self.svc.head(artifact_id))
            assert head.revision == len(revisions)
            # no operation rewrites an old Revision: a random old one keeps its hash
            probe = 1 + (len(revisions) * 7919) % len(revisions)
            rev = self._run(self.svc.revision(ArtifactRef(artifact_id, probe)))
            assert rev.content_hash == self.hashes[(artifact_id, probe)]


def state_machine_test(
    factory: Callable[[], MemoryBackend],
    *,
    max_examples: int | None = None,
    stateful_step_count: int = 25,
) -> Any:
    """A unittest TestCase class running :class:`MemoryStateMachine` on ``factory``."""
    machine = type(
        "BoundMemoryStateMachine", (MemoryStateMachine,), {"backend_factory": staticmethod(factory)}
    )
    overrides: dict[str, Any] = {"stateful_step_count": stateful_step_count, "deadline": None}
    if max_examples is not None:
        overrides["max_examples"] = max_examples
    test_case: Any = getattr(machine, "TestCase")  # noqa: B009 (made by hypothesis)
    test_case.settings = _settings(_settings(), **overrides)
    return test_case

