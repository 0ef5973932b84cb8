"""``python -m bench dashboard``: server time of the dashboard's Memory pages on a Memory
of 10k entries on SQLite (issue 17: "render a Memory of 10k entries with pagination in
under 300 ms server time"; a benchmark, never a timed test).

It builds the Memory through the real library (SQLite + sqlite-vec, the deterministic
embedder so hybrid search runs): ``--entries`` entries in Revisions of ``--batch``, each
batch citing one Source, then revises and forgets a few so version chains and inactive
entries exist. Then, in process through Starlette's TestClient (the whole ASGI stack:
auth, routing, templates; no socket), it requests each page ``--runs`` times after one
warm-up and prints the p50/p95 of the server time (the app's own time per request,
measured around the ASGI call) against the 300 ms target:

- the Memory page (``/ui/memories/{id}``) on its first, a middle and its last page,
- the same with a search (``?q=...``, hybrid), filtered by kind (``?kind=decision``),
  and with an entry selected beside the list (``?entry=...``, its version chain),
- an entry page (``/ui/memories/{id}/entries/{entry}``) of an entry with a version chain,
- the Revision timeline (``/ui/memories/{id}/revisions``), first and last page,
- the diff of the first and the head Revision (``/diff?from=1&to=head``), first page.

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.peer.protocol import percentile

__all__ = ["TARGET_MS", "build_memory", "main", "measure"]

#: the bench server's bearer token, made per run (never a literal secret)
_TOKEN = secrets.token_urlsafe(16)

TARGET_MS = 300.0
_WORDS = ("release", "deploy", "schema", "migration", "cache", "index", "token", "budget",
          "latency", "review", "rollback", "fixture", "parser", "wheel", "lease", "cursor")
_KINDS = ("fact", "decision", "preference", "constraint", "working_note")


def _text(i: int) -> str:
    w = _WORDS
    return (f"Entry {i}: the {w[i % 16]} of the {w[(i // 16) % 16]} step follows the "
            f"{w[(i * 7) % 16]} rule; see note {i % 97} about {w[(i * 3) % 16]}.")


async def build_memory(path: Path, entries: int, batch: int, *, revise: int = 5,
                       forget: int = 20, model: Any = None,
                       progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """A Memory of ``entries`` entries at ``path`` (a new SQLite file), written in
    Revisions of ``batch`` entries, each citing one Source; then ``revise`` entries get
    two more versions each and ``forget`` entries are forgotten. ``model``: an
    EmbeddingModel (None: no vector projection). Returns ``{"artifact_id",
    "revision", "entry_id" (one with a version chain), "key", "entries", "active"}``."""
    from powercontext.adapters.sqlite import SQLiteMemoryBackend
    from powercontext.core import canonical
    from powercontext.core.models import MemoryEntryInput
    from powercontext.service import MemoryService

    backend = SQLiteMemoryBackend(str(path), profile=None if model is None else model.profile)
    svc = MemoryService(backend, embedding_model=model)
    try:
        head = None
        key = "bench:dashboard"
        for start in range(0, entries, batch):
            src = canonical.make_source(f"src_bench_{start:06d}", "user_note",
                                        f"Batch {start}: notes about {_WORDS[start % 16]}.")
            inputs = [MemoryEntryInput(_KINDS[i % 5], _text(i), sources=(src,))
                      for i in range(start, min(start + batch, entries))]
            if head is None:
                head = await svc.remember(entries=inputs, sources=[src], mode="append", key=key)
            else:
                head = await svc.remember(head, entries=inputs, sources=[src], mode="append")
            if progress is not None:
                progress(min(start + batch, entries))
        assert head is not None
        manifest = (await svc.revision(head)).content.manifest.entries
        chained = [e.entry_id for e in manifest[:revise]]
        for round_ in (1, 2):
            current = await svc.entries(head, chained)
            src = canonical.make_source(f"src_bench_rev{round_}", "user_note",
                                        f"Review round {round_} corrected some entries.")
            head = await svc.remember(head, sources=[src], mode="append", entries=[
                MemoryEntryInput(v.kind, f"{v.text} (revised {round_})", entry=v,
                                 sources=(src,), reason=f"review round {round_}")
                for v in current.values()])
            assert head is not None
        if forget:
            gone = [e.entry_id for e in manifest[revise:revise + forget]]
            head = await svc.forget(head, gone, reason="superseded")
        return {"artifact_id": head.artifact_id, "revision": head.revision,
                "entry_id": chained[0] if chained else manifest[0].entry_id, "key": key,
                "entries": entries, "active": entries - len(manifest[revise:revise + forget])}
    finally:
        await svc.close()


class _Timed:
    """ASGI wrapper recording the app's own time per request (ms)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last_ms = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        t0 = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.last_ms = (time.perf_counter() - t0) * 1000.0


def measure(db: Path, info: dict[str, Any], runs: int, *, model: Any = None,
            per_page: int = 50) -> list[dict[str, Any]]:
    """``[{"page", "url", "status", "first_ms", "p50_ms", "p95_ms", "max_ms",
    "bytes"}]`` for each page of the module docstring: ``first_ms`` is the first
    request (the warm-up: cold Revision cache for the Revisions it reads first), then
    ``runs`` timed requests."""
    from starlette.testclient import TestClient

    from powercontext.adapters.sqlite import SQLiteMemoryBackend
    from powercontext.entrypoints.http.app import create_app
    from powercontext.entrypoints.http.deps import Services
    from powercontext.service import MemoryService

    svc = MemoryService(SQLiteMemoryBackend(
        str(db), profile=None if model is None else model.profile), embedding_model=model)
    shared = _TOKEN
    timed = _Timed(create_app(Services(memory=svc, topic=None), api_token=shared))
    base = f"/ui/memories/{info['artifact_id']}"
    head = info["revision"]
    last = max(1, -(-info["active"] // per_page))
    pages: list[tuple[str, str]] = [
        ("memory page 1", f"{base}?page=1"),
        ("memory page middle", f"{base}?page={max(1, last // 2)}"),
        ("memory page last", f"{base}?page={last}"),
        ("memory search (hybrid)" if model is not None else "memory search (fts)",
         f"{base}?q=release+rollback&mode={'hybrid' if model is not None else 'fts'}"),
        ("memory page, kind filter", f"{base}?kind=decision"),
        ("memory page, entry selected", f"{base}?entry={info['entry_id']}"),
        ("entry page", f"{base}/entries/{info['entry_id']}"),
        ("revisions page 1", f"{base}/revisions"),
        ("revisions page last", f"{base}/revisions?page={max(1, -(-head // 20))}"),
        ("diff 1..head", f"{base}/diff?from=1&to={head}"),
    ]
    out = []
    try:
        with TestClient(timed, headers={"Authorization": f"Bearer {_TOKEN}"}) as client:
            for name, url in pages:
                client.get(url)  # warm-up: the Revision cache, the templates
                first = timed.last_ms
                samples, status, size = [], 0, 0
                for _ in range(runs):
                    r = client.get(url)
                    status, size = r.status_code, len(r.content)
                    samples.append(timed.last_ms)
                out.append({"page": name, "url": url, "status": status, "bytes": size,
                            "first_ms": round(first, 2),
                            "p50_ms": round(percentile(samples, 50), 2),
                            "p95_ms": round(percentile(samples, 95), 2),
                            "max_ms": round(max(samples), 2)})
    finally:
        asyncio.run(svc.close())
    return out


def _report(rows: Sequence[dict[str, Any]], info: dict[str, Any]) -> str:
    lines = [f"Memory {info['artifact_id']}: {info['entries']} entries "
             f"({info['active']} active), {info['revision']} Revisions; "
             f"target {TARGET_MS:.0f} ms server time",
             f"{'page':28} {'status':>6} {'first ms':>9} {'p50 ms':>9} {'p95 ms':>9} "
             f"{'max ms':>9} {'KB':>7}  target (p95)"]
    for r in rows:
        verdict = "ok" if r["p95_ms"] <= TARGET_MS and r["status"] == 200 else "OVER"
        lines.append(f"{r['page']:28} {r['status']:>6} {r['first_ms']:>9.1f} "
                     f"{r['p50_ms']:>9.1f} {r['p95_ms']:>9.1f} "
                     f"{r['max_ms']:>9.1f} {r['bytes'] / 1024:>7.1f}  {verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench dashboard", description=__doc__
                                     and __doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100, help="entries per Revision")
    parser.add_argument("--runs", type=int, default=20, help="timed requests per page")
    parser.add_argument("--no-vector", action="store_true",
                        help="no embedding model (search runs fts only)")
    parser.add_argument("--db", type=Path, default=None,
                        help="reuse (or create) this SQLite file instead of a temporary one")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.entries < 30 or args.batch < 1 or args.runs < 1:
        print("--entries must be >= 30, --batch and --runs >= 1", file=sys.stderr)
        return 2
    model = None
    if not args.no_vector:
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        model = DeterministicEmbedding(384)
    with tempfile.TemporaryDirectory(prefix="pc-bench-dash-") as tmp:
        db = args.db or Path(tmp) / "dashboard.db"
        info_path = db.with_suffix(".json")
        if args.db is not None and db.exists() and info_path.exists():
            info = json.loads(info_path.read_text())
        else:
            t0 = time.perf_counter()
            print(f"building {args.entries} entries in Revisions of {args.batch} ...",
                  file=sys.stderr)
            info = asyncio.run(build_memory(db, args.entries, args.batch, model=model))
            print(f"built in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            if args.db is not None:
                info_path.write_text(json.dumps(info))
        rows = measure(db, info, args.runs, model=model)
    print(_report(rows, info))
    if args.json is not None:
        args.json.write_text(json.dumps({"memory": info, "target_ms": TARGET_MS,
                                         "pages": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
