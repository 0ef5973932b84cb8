"""Peak RSS of single reads on a large one-Memory SQLite dataset (issue 14: peak RSS at
100k entries <= 400 MB), without the whole ``--profile full`` run.

``python -m bench.perf.rss --db /tmp/rss-100k.db [--entries 100000] [--batch 500]``

The dataset (LoCoMo turns as in :mod:`bench.perf`, the deterministic embedder, batches of
``--batch``, then 10 one-entry Revisions so that ``changes(head, since=head-10)`` reads
deltas as the bench's write phase does) is built once into ``--db`` when the file is
missing. Then each operation runs in a fresh interpreter that opens the database, reads
the head Revision (``revision(head)``: every later call of the bench finds it cached) and
prints the process's peak RSS before and after the operation: ``changes_head`` =
``changes(head)``, ``changes_10`` = ``changes(head, since=head-10)``, ``search`` = one fts
search. Figures in MB (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from bench.perf.common import DEFAULT_DATA, DIM, _maxrss_mb, load_corpus, log, make_entries

OPS = ("changes_head", "changes_10", "search")


def _service(db: Path):  # type: ignore[no-untyped-def]
    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
    from powercontext.adapters.sqlite import SQLiteMemoryBackend
    from powercontext.service import MemoryService

    model = DeterministicEmbedding(DIM)
    return MemoryService(SQLiteMemoryBackend(str(db), profile=model.profile),
                         embedding_model=model)


async def build(db: Path, entries: int, batch: int, data: Path) -> None:
    from powercontext.core.models import MemoryEntryInput

    turns, _ = load_corpus(data)
    texts = make_entries(turns, entries + 10)
    svc = _service(db)
    ref = None
    t0 = time.perf_counter()
    for j in range(0, entries, batch):
        ref = await svc.remember(
            ref, entries=[MemoryEntryInput("turn", t) for t in texts[j:j + batch]],
            mode="append")
        if (j // batch) % 20 == 0:
            log(f"  {j + batch}/{entries} entries, {time.perf_counter() - t0:.0f} s")
    for t in texts[entries:]:
        ref = await svc.remember(ref, entries=[MemoryEntryInput("turn", t)], mode="append")
    assert ref is not None
    db.with_suffix(".head.json").write_text(
        json.dumps([ref.artifact_id, ref.revision]), encoding="utf-8")
    await svc.close()
    log(f"built {entries} entries in {time.perf_counter() - t0:.0f} s: head {ref.revision}")


async def one(db: Path, op: str) -> dict[str, float]:
    from powercontext.core.models import ArtifactRef

    artifact_id, revision = json.loads(db.with_suffix(".head.json").read_text("utf-8"))
    head = ArtifactRef(artifact_id, revision)
    svc = _service(db)
    await svc.revision(head)
    before = _maxrss_mb()
    t0 = time.perf_counter()
    if op == "changes_head":
        await svc.changes(head)
    elif op == "changes_10":
        await svc.changes(head, max(0, head.revision - 10))
    else:
        await svc.search("what did they talk about painting", [head], limit=10, mode="fts")
    ms = (time.perf_counter() - t0) * 1000.0
    after = _maxrss_mb()
    await svc.close()
    return {"before_mb": before, "after_mb": after, "ms": ms}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perf.rss", description=__doc__.split("\n")[0])
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--entries", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--op", choices=OPS, help=argparse.SUPPRESS)  # the child's one call
    args = p.parse_args(argv)
    if args.op is not None:
        print(json.dumps(asyncio.run(one(args.db, args.op))))
        return 0
    if not args.db.exists():
        asyncio.run(build(args.db, args.entries, args.batch, args.data))
    for op in OPS:
        out = subprocess.run(
            [sys.executable, "-m", "bench.perf.rss", "--db", str(args.db), "--op", op],
            check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{op:13} peak RSS {r['before_mb']:.0f} MB after revision(head), "
              f"{r['after_mb']:.0f} MB after the call ({r['ms']:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
