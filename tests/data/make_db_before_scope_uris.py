"""Write the database of ``db_before_scope_uris.sql`` with the code of commit 5df0e0a
(run it with that release installed: ``python make_db_before_scope_uris.py old.db``,
then dump with APSW's shell ``.dump``): a Memory citing a Source, a Scope with three
conversation turns (uris) and a file, one Topic published from the file with the
Cursor at the head, and a second Scope stopped at a terminal budget row."""
import asyncio
import sys

from powercontext import MemoryEntryInput, make_source, open_service, open_topic_service
from powercontext.core.models import SourceRef
from powercontext.core.topic.models import PublicationGuards
from powercontext.core.topic.processing import (
    BINDING,
    CODE_COMPLEXITY,
    BudgetRelease,
    CursorAdvance,
    PendingUpdate,
)

DB = sys.argv[1]
SCOPE = "repo:/old/project"


async def main() -> None:
    async with open_service(DB, embedding="none") as svc:
        note = make_source("src_note_1", "user_note", "Use uv, not pip.")
        rev = await svc.remember(None, sources=(note,), entries=(
            MemoryEntryInput("preference", "Use uv, not pip.", sources=(note,)),),
            mode="append")
        print("memory", rev)
    async with open_topic_service(DB, embedding="none") as svc:
        turns = [make_source(f"src_turn_{i}", "conversation", text,
                             f"claude-code://session/s1/turn/t{i}")
                 for i, text in enumerate(["User:\nship it", "Assistant:\ndeploying",
                                           "User:\nthanks"], start=1)]
        f = make_source("src_file_1", "file", "# Release\nTag main, then make release.",
                        "file:///old/project/RELEASE.md")
        assert await svc.add_sources(SCOPE, [*turns, f]) == (1, 2, 3, 4)
        await svc.flush(SCOPE)
        grant = await svc.backend.begin_attempt(SCOPE, 0)
        (pub,) = await svc.publish(SCOPE, creates=[(
            {"title": "Release process", "summary": "How releases are cut.",
             "detail": "Tag main, then make release uploads the wheel."},
            [SourceRef(f.source_id, f.content_hash)])], guards=PublicationGuards(
            cursor=CursorAdvance(BINDING, SCOPE, 0, 4), pending=PendingUpdate(1),
            budget=BudgetRelease(grant.attempt_id, 0)))
        print("topic", pub.ref)
        blocked = "repo:/old/blocked"
        await svc.add_sources(blocked, [make_source("src_big", "note", "big",
                                                    "file:///old/big.txt")])
        g = await svc.backend.begin_attempt(blocked, 0)
        await svc.backend.record_failure(g, CODE_COMPLEXITY)
        print(await svc.status())


asyncio.run(main())
