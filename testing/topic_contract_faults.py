"""Topic contract group: a publication failing at any step leaves everything as before
(Topic Memory RFC, "Storage, Head, and atomic activation": all CREATEs and UPDATEs of a
batch commit atomically; the old active Revision serves until the new one is complete;
a new Topic is invisible until its first Revision is whole). Backends declare the
kit's :class:`~powercontext.testing.FaultInjection` hook (``fault_points()``,
``inject_fault(point)``) to run it; a backend that also has ``topic_integrity()``
(returning a list of problems, e.g. an FTS5 integrity-check failure or vector rows that
differ from the active rows) is checked after every failed publication."""

from __future__ import annotations

from typing import Any

from powercontext.testing.base import run
from powercontext.testing.contract_faults import FaultInjection
from powercontext.testing.topic_base import TopicContractBase, TopicKit

__all__ = ["TopicFaultsContract"]

QUERIES = ("kiwi", "mango", "plum", "papaya")


class TopicFaultsContract(TopicContractBase):
    """All-or-nothing publications under injected faults."""

    @staticmethod
    async def _batch(kit: TopicKit, first: bool) -> tuple[Any, ...]:
        """The first publication of a deployment (fixes the shape), or a CREATE plus an
        UPDATE of the current head of an existing Topic."""
        if first:
            return (await kit.write("s", "Papaya", "papaya", "Papaya detail.\n\nMore."),)
        heads = await kit.backend.heads("s")
        return (await kit.write("s", "Mango", "mango", "Mango detail.\n\n- a\n- b"),
                await kit.write("s", "Plum", "plum", "Plum detail. Kiwi gone.",
                                base=heads[0], sources=("src_b",)))

    @staticmethod
    async def _attempt(kit: TopicKit, point: str, batch: tuple[Any, ...]) -> bool:
        """Publish ``batch`` with the fault at ``point``: whether it failed (then every
        answer is as before and, the fault cleared, the same batch publishes)."""
        before = await kit.observe(["s"], QUERIES)
        kit.backend.inject_fault(point)  # type: ignore[attr-defined]
        try:
            await kit.publish(*batch)
        except Exception:
            pass
        else:
            return False  # this batch does not reach the point (it published)
        finally:
            kit.backend.inject_fault(None)  # type: ignore[attr-defined]
        assert await kit.observe(["s"], QUERIES) == before, point
        integrity = getattr(kit.backend, "topic_integrity", None)
        if integrity is not None:
            assert await integrity() == [], point
        return True

    def test_a_publication_failing_at_any_step_leaves_everything_as_before(
            self, topic_backend_factory, shape, topic_embedding_model):
        """Every fault point, for a deployment's first publication (the shape stays
        unfixed, the new Topic invisible) and for a CREATE + UPDATE batch over an
        existing Topic (the old Revision keeps serving); each point is reached by one
        of them."""

        async def first_publications(points: tuple[str, ...]) -> set[str]:
            reached: set[str] = set()
            pending = list(points)
            while pending:
                async with self._kit(topic_backend_factory, shape,
                                     topic_embedding_model) as fresh:
                    while pending:
                        point = pending.pop(0)
                        if not await self._attempt(fresh, point,
                                                   await self._batch(fresh, True)):
                            break  # it published: the next point needs an empty database
                        reached.add(point)
                        assert (await fresh.backend.topic_capabilities()).shape is None
            return reached

        async def body() -> None:
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                points = self._require(kit.backend, FaultInjection).fault_points()
                assert points, "a FaultInjection backend names at least one fault point"
                await kit.create("s", "Kiwi", "kiwi", "Kiwi detail.")
                reached = set()
                for point in points:
                    batch = await self._batch(kit, False)
                    if await self._attempt(kit, point, batch):
                        reached.add(point)
                        revs = await kit.publish(*batch)
                        assert [r.ref for r in revs] == [w.ref for w in batch], point
            reached |= await first_publications(points)
            missing = [p for p in points if p not in reached]
            assert not missing, f"no publication reaches the fault points {missing}"

        run(body())
