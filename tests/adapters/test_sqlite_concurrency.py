"""Two OS processes commit from the same base (Memory RFC, "Concurrency and
transactions"): exactly one wins, the other gets RevisionConflictError, and a reread
plus retry loses nothing. Processes start with multiprocessing's ``spawn``."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import MemorySearchRequest

from .conftest import PROFILE, add, id_factory, run

pytestmark = pytest.mark.subprocess

# Run in a spawned interpreter through ``exec`` (a builtin pickles by reference, so the
# child needs no importable test module).
WORKER = r'''
import asyncio, hashlib, json, math, itertools
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical, planning
from powercontext.core.errors import RevisionConflictError
from powercontext.core.models import ArtifactRef, EmbeddingProfile, MemoryEntryInput

def embed(text, dim):
    raw = hashlib.sha256(text.encode()).digest()
    vals = [((b - 127.5) / 127.5) for b in raw[:dim]]
    n = math.sqrt(sum(v * v for v in vals))
    return tuple(v / n for v in vals)

async def main():
    counter = itertools.count(1)
    salt = hashlib.sha256(name.encode()).digest()[:4]
    def new_id(prefix):
        n = next(counter)
        return canonical.make_id(prefix, 1_800_000_000_000 + n, salt + n.to_bytes(6, "big"))
    profile = EmbeddingProfile(*profile_args)
    b = SQLiteMemoryBackend(path, profile=profile)
    log = []
    ref = ArtifactRef(artifact_id, 1)
    for attempt in range(5):
        rev = await b.load_revision(ref)
        base = planning.MemoryBase(ref, rev.content, await b.load_entry_versions(ref))
        plan = planning.plan_remember(base, [MemoryEntryInput("fact", text)], new_id=new_id)
        vecs = {r.entry_version_id: embed(r.text, profile.dimension) for r in plan.upserts}
        if attempt == 0:
            barrier.wait(timeout=60)
        try:
            async with b.begin() as uow:
                got = await uow.commit(plan, vecs)
            log.append(["committed", got.revision])
            break
        except RevisionConflictError as exc:
            log.append(["conflict", str(exc)[:80]])
            ref = await b.head(artifact_id)
    await b.close()
    with open(out, "w") as f:
        json.dump(log, f)

asyncio.run(main())
'''


def test_two_processes_from_one_base_one_wins_and_retry_loses_nothing(db_path: Path,
                                                                      tmp_path: Path) -> None:
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    ref = run(add(b, None, ["the shared base entry"], id_factory("base")))
    b.close_sync()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs, outs = [], []
    for name, text in (("a", "process a remembers alpha"), ("b", "process b remembers beta")):
        out = tmp_path / f"{name}.json"
        outs.append(out)
        env = {"path": str(db_path), "artifact_id": ref.artifact_id, "text": text,
               "name": name, "out": str(out), "barrier": barrier,
               "profile_args": (PROFILE.profile_id, PROFILE.model, PROFILE.dimension,
                                PROFILE.distance, PROFILE.normalization)}
        p = ctx.Process(target=exec, args=(WORKER, env))
        p.start()
        procs.append(p)
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    logs = [json.loads(o.read_text()) for o in outs]
    firsts = sorted(log[0][0] for log in logs)
    assert firsts == ["committed", "conflict"], logs
    winner = next(log for log in logs if log[0][0] == "committed")
    loser = next(log for log in logs if log[0][0] == "conflict")
    assert winner == [["committed", 2]]
    assert loser[-1] == ["committed", 3] and len(loser) == 2
    b = SQLiteMemoryBackend(str(db_path), profile=PROFILE)
    head = run(b.head(ref.artifact_id))
    assert head is not None and head.revision == 3
    texts = sorted(v.text for v in run(b.load_entry_versions(head)).values())
    assert texts == ["process a remembers alpha", "process b remembers beta",
                     "the shared base entry"]
    res = run(b.search(MemorySearchRequest("alpha beta", (head,), 5, "fts")))
    assert sorted(h.text for h in res.hits) == ["process a remembers alpha",
                                                "process b remembers beta"]
    b.close_sync()
