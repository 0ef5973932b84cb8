"""Topic contract group: publication (Topic Memory RFC, "Storage, Head, and atomic
activation"): CREATE and UPDATE chains, one transaction per batch, conflicts, lineage
to stored Sources only, a Topic stays in its Scope, the Supervisor guard (part 4) and
malformed guards refused."""

from __future__ import annotations

import re
import unicodedata
from typing import Any, cast

import attrs
import pytest

from powercontext.core.errors import (
    IntegrityError,
    InvalidInputError,
    RevisionConflictError,
)
from powercontext.core.models import SourceRef
from powercontext.core.topic.chunks import MAX_CHUNKS, chunk_detail
from powercontext.core.topic.content import MAX_DETAIL_CHARS, content_hash, make_content
from powercontext.core.topic.models import PublicationGuards, TopicRef
from powercontext.testing.base import run
from powercontext.testing.topic_base import TopicContractBase, new_topic_id
from powercontext.testing.topic_strategies import ADVERSARIAL_DETAILS

__all__ = ["TopicPublishContract"]

PUBLISHED_AT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
QUERIES = ("kiwi", "mango", "papaya", "plum")


class TopicPublishContract(TopicContractBase):
    """publish(): CREATE, UPDATE chains, batch atomicity, conflicts, Sources, Scopes,
    guards, bad writes."""

    def test_create_publishes_revision_one_with_its_lineage_and_time(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                caps = await kit.backend.topic_capabilities()
                assert caps.shape is None and caps.pending_kind == shape
                w = await kit.write("repo:/a", "Kiwi notes", "How we grow kiwi.",
                                    "Kiwi vines need a trellis.", sources=("src_b", "src_a"))
                (rev,) = await kit.publish(w)
                assert rev.ref == w.ref and rev.ref.revision == 1
                assert rev.ref.family == "topic-memory"
                assert rev.scope_id == "repo:/a" and rev.based_on is None
                assert rev.content == make_content("Kiwi notes", "How we grow kiwi.",
                                                   "Kiwi vines need a trellis.")
                assert rev.content_hash == content_hash(rev.content)
                assert rev.sources == (kit.sources["src_a"], kit.sources["src_b"])
                assert PUBLISHED_AT.fullmatch(rev.published_at), rev.published_at
                assert await kit.backend.get("repo:/a", rev.ref) == rev
                assert await kit.backend.heads("repo:/a") == (rev.ref,)
                assert await kit.backend.heads("repo:/other") == ()
                # lineage is sorted and unique: an unsorted or repeated list is refused
                # or stored sorted, never stored as given
                w2 = await kit.write("repo:/a", "Plum", "plum", "Plum.",
                                     sources=("src_a", "src_b"))
                a, b = kit.sources["src_a"], kit.sources["src_b"]
                try:
                    (r2,) = await kit.publish(attrs.evolve(w2, sources=(b, a, b)))
                except InvalidInputError:
                    assert await kit.backend.heads("repo:/a") == (rev.ref,)
                else:
                    assert r2.sources == (a, b)
                    assert (await kit.backend.get("repo:/a", r2.ref)).sources == (a, b)
                shape_row = (await kit.backend.topic_capabilities()).shape
                assert shape_row is not None and shape_row.kind == shape

        run(body())

    def test_updates_chain_revisions_and_switch_the_active_projection(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                r1 = await kit.create("s", "Kiwi notes", "kiwi summary", "Kiwi detail.")
                r2 = await kit.update("s", r1.ref, "Mango notes", "mango summary",
                                      "Mango detail.", sources=("src_c",))
                r3 = await kit.update("s", r2.ref, "Papaya notes", "papaya summary",
                                      "Papaya detail.")
                assert [r.ref.revision for r in (r1, r2, r3)] == [1, 2, 3]
                assert {r.ref.artifact_id for r in (r1, r2, r3)} == {r1.ref.artifact_id}
                assert (r2.based_on, r3.based_on) == (r1.ref, r2.ref)
                assert r2.sources == (kit.sources["src_c"],)
                assert r1.published_at <= r2.published_at <= r3.published_at
                for r in (r1, r2, r3):  # historical Revisions keep their own values
                    assert await kit.backend.get("s", r.ref) == r
                assert await kit.backend.heads("s") == (r3.ref,)
                for word in ("kiwi", "mango"):
                    assert (await kit.search("s", word)).hits == ()
                hits = (await kit.search("s", "papaya")).hits
                assert [h.ref for h in hits] == [r3.ref]
                assert (hits[0].title, hits[0].summary) == ("Papaya notes", "papaya summary")

        run(body())

    def test_a_batch_publishes_together_or_not_at_all(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                x = await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                before = await kit.observe(["s"], QUERIES)
                good_create = await kit.write("s", "Mango", "mango", "Mango.")
                good_update = await kit.write("s", "Plum", "plum", "Plum.", base=x.ref)
                unknown = await kit.write("s", "Papaya", "papaya", "Papaya.")
                missing = SourceRef("src_never_stored", "0" * 64)
                unknown = attrs.evolve(unknown, sources=(missing,))
                with pytest.raises(InvalidInputError):
                    await kit.publish(good_create, good_update, unknown)
                stale = await kit.write("s", "Papaya", "papaya", "Papaya.",
                                        base=TopicRef(x.ref.artifact_id, 2))
                with pytest.raises(RevisionConflictError):
                    await kit.publish(good_create, stale)
                assert await kit.observe(["s"], QUERIES) == before
                revs = await kit.publish(good_create, good_update)
                assert [r.ref for r in revs] == [good_create.ref, good_update.ref]
                assert len({r.published_at for r in revs}) == 1  # one clock read
                assert set(await kit.backend.heads("s")) == {good_create.ref, good_update.ref}

        run(body())

    def test_stale_bases_and_existing_ids_conflict(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                r1 = await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                first = await kit.write("s", "Mango", "mango", "Mango.", base=r1.ref)
                second = await kit.write("s", "Plum", "plum", "Plum.", base=r1.ref)
                await kit.publish(first)
                with pytest.raises(RevisionConflictError):
                    await kit.publish(second)
                again = await kit.write("s", "Kiwi", "kiwi", "Kiwi again.",
                                        artifact_id=r1.ref.artifact_id)
                with pytest.raises(RevisionConflictError):
                    await kit.publish(again)
                assert await kit.backend.heads("s") == (first.ref,)
                assert [h.ref for h in (await kit.search("s", "plum")).hits] == []

        run(body())

    def test_lineage_names_only_stored_sources(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                w = await kit.write("s", "Kiwi", "kiwi", "Kiwi.")
                stored = kit.sources["src_a"]
                for bad in ((SourceRef("src_unknown", stored.content_hash),),
                            (SourceRef(stored.source_id, "f" * 64),), ()):
                    with pytest.raises(InvalidInputError):
                        await kit.publish(attrs.evolve(w, sources=bad))
                assert await kit.backend.heads("s") == ()
                assert (await kit.backend.topic_capabilities()).shape is None

        run(body())

    def test_an_update_in_another_scope_is_refused(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                r1 = await kit.create("scope-a", "Kiwi", "kiwi", "Kiwi.")
                before = await kit.observe(["scope-a", "scope-b"], QUERIES)
                cross = await kit.write("scope-b", "Mango", "mango", "Mango.", base=r1.ref)
                with pytest.raises(InvalidInputError):
                    await kit.publish(cross)
                assert await kit.observe(["scope-a", "scope-b"], QUERIES) == before

        run(body())

    def test_the_supervisor_guard_and_malformed_guards_are_refused_before_writing(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                w = await kit.write("s", "Kiwi", "kiwi", "Kiwi.")
                # every slot takes its values only (the Supervisor slot a SupervisorTerm)
                for slot in ("supervisor", "cursor", "pending", "budget"):
                    guards = PublicationGuards(**{slot: object()})
                    with pytest.raises(InvalidInputError, match="guards"):
                        await kit.publish(w, guards=guards)
                assert await kit.backend.heads("s") == ()
                assert (await kit.backend.topic_capabilities()).shape is None
                await kit.publish(w)
                assert await kit.backend.heads("s") == (w.ref,)

        run(body())

    def test_malformed_writes_are_bad_input_and_write_nothing(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                r1 = await kit.create("s", "Kiwi", "kiwi", "Kiwi.")
                before = await kit.observe(["s"], QUERIES)
                create = await kit.write("s", "Mango", "mango", "Mango.")
                update = await kit.write("s", "Plum", "plum", "Plum.", base=r1.ref)
                nfd = unicodedata.normalize("NFD", "Café notes")
                bad = {
                    "create at revision 2": attrs.evolve(
                        create, ref=TopicRef(create.ref.artifact_id, 2)),
                    "create with a base": attrs.evolve(create, base=r1.ref),
                    "update without a base": attrs.evolve(update, base=None),
                    "update skipping a revision": attrs.evolve(
                        update, ref=TopicRef(r1.ref.artifact_id, 3)),
                    "update of another id": attrs.evolve(
                        update, ref=TopicRef(new_topic_id(), 2)),
                    "memory family": attrs.evolve(
                        create, ref=TopicRef(create.ref.artifact_id, 1, "memory")),
                    "bad id": attrs.evolve(create, ref=TopicRef("mem_art_x", 1)),
                    "unknown op": attrs.evolve(create, op=cast(Any, "delete")),
                    "empty scope": attrs.evolve(create, scope_id=""),
                    "long scope": attrs.evolve(create, scope_id="x" * 257),
                    "NFD content": attrs.evolve(
                        create, content=attrs.evolve(create.content, title=nfd)),
                    "empty summary": attrs.evolve(
                        create, content=attrs.evolve(create.content, summary=" ")),
                    "detail over the limit": attrs.evolve(
                        create, content=attrs.evolve(
                            create.content, detail="x" * (MAX_DETAIL_CHARS + 1))),
                }
                for name, w in bad.items():
                    with pytest.raises((InvalidInputError, IntegrityError)):
                        await kit.publish(w)
                    assert await kit.observe(["s"], QUERIES) == before, name
                with pytest.raises(InvalidInputError):
                    await kit.publish(create, attrs.evolve(create, content=update.content,
                                                           projection=update.projection))
                assert await kit.observe(["s"], QUERIES) == before

        run(body())

    def test_adversarial_details_are_published_whole_and_searchable(
            self, topic_backend_factory, topic_embedding_model):
        async def body():
            async with self._kit(topic_backend_factory, "fts", topic_embedding_model) as kit:
                for name, detail in ADVERSARIAL_DETAILS.items():
                    chunks = chunk_detail(make_content("t", "s", detail).detail)
                    assert 1 <= len(chunks) <= MAX_CHUNKS, name
                    rev = await kit.create("s", f"Adversarial {name}", "kiwi summary", detail)
                    got = await kit.backend.get("s", rev.ref)
                    assert got.content.detail == make_content("t", "s", detail).detail, name
                hits = (await kit.search("s", "adversarial kiwi", 20)).hits
                assert len(hits) == len(ADVERSARIAL_DETAILS)

        run(body())
