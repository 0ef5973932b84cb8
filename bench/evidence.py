"""``python -m bench evidence``: server time of the dashboard's Evidence page
(``/ui/sources/{id}``, issue 17) and of the reverse-evidence read behind it
(``SourceCitations.citing_entry_versions``) on a Memory of 10k entries on SQLite (a
benchmark, never a timed test).

Entry versions hold their SourceRefs as canonical JSON text with no index by Source id,
so the read is a keyset-paged ``LIKE`` scan of ``memory_entry_versions``
(adapters/source_citations.py): its cost grows with the number of stored entry versions, which
this prints. The Memory is :func:`bench.dashboard.build_memory`'s (Revisions of
``--batch`` entries, each batch citing one Source). Measured after one warm-up,
``--runs`` times: the Evidence page of a Source cited by one batch, of the Source the
review rounds cite, and of a Source nobody cites.

``--json PATH`` also writes the figures. Exit status 0 (figures, not a verdict), 2 for
bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.dashboard import _Timed, build_memory
from bench.peer.protocol import percentile

__all__ = ["main", "measure"]

#: the bench server's bearer token, made per run (never a literal secret)
_TOKEN = secrets.token_urlsafe(16)


def measure(db: Path, runs: int) -> list[dict[str, Any]]:
    """``[{"page", "url", "status", "cited_by", "p50_ms", "p95_ms", "read_p50_ms"}]``:
    the app's time per Evidence page request and the bare read's time."""
    from starlette.testclient import TestClient

    from powercontext.adapters.sqlite import SQLiteMemoryBackend
    from powercontext.entrypoints.http.app import create_app
    from powercontext.entrypoints.http.deps import Services
    from powercontext.service import MemoryService

    svc = MemoryService(SQLiteMemoryBackend(str(db)))
    shared = _TOKEN
    timed = _Timed(create_app(Services(memory=svc, topic=None), api_token=shared))
    sources = [("a batch's Source", "src_bench_000000"),
               ("the review Source", "src_bench_rev1"), ("an unknown id (404)", "src_nobody")]
    out = []
    try:
        with TestClient(timed, headers={"Authorization": f"Bearer {_TOKEN}",
                                        "Accept": "application/json"}) as client:
            for name, sid in sources:
                url = f"/ui/sources/{sid}"
                client.get(url)
                samples, reads, status, cited = [], [], 0, 0
                for _ in range(runs):
                    r = client.get(url)
                    status = r.status_code
                    samples.append(timed.last_ms)
                    if status == 200:
                        cited = len(r.json()["entry_versions"])
                    t0 = time.perf_counter()
                    client.portal.call(svc.backend.citing_entry_versions, sid)
                    reads.append((time.perf_counter() - t0) * 1000.0)
                out.append({"page": name, "url": url, "status": status, "cited_by": cited,
                            "p50_ms": round(percentile(samples, 50), 2),
                            "p95_ms": round(percentile(samples, 95), 2),
                            "read_p50_ms": round(percentile(reads, 50), 2)})
    finally:
        asyncio.run(svc.close())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench evidence", description=__doc__)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--db", type=Path, default=None, help="SQLite file to create")
    parser.add_argument("--json", type=Path, default=None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and 2
    if args.entries < 1 or args.batch < 1 or args.runs < 1:
        print("--entries, --batch and --runs must be >= 1", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "evidence.db"
        info = asyncio.run(build_memory(db, args.entries, args.batch))
        rows = measure(db, args.runs)
    print(f"Memory {info['artifact_id']}: {info['entries']} entries, "
          f"{info['revision']} Revisions")
    for r in rows:
        print(f"  {r['page']:<20} {r['status']} cited by {r['cited_by']:>5}  page p50 "
              f"{r['p50_ms']:7.2f} ms  p95 {r['p95_ms']:7.2f} ms  read p50 "
              f"{r['read_p50_ms']:7.2f} ms")
    if args.json is not None:
        args.json.write_text(json.dumps({"memory": info, "pages": rows}, indent=2) + "\n")
    return 0
