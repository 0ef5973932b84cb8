"""The upstream package as a peer, in the same run (issue 14, item 2).

``python -m bench peer [--quick] [--sizes 1000,10000] [--peer-python PATH] [--out DIR]``
(``make bench-peer`` creates ``.venv-peer``, installs ``powercontext==1.4.1`` from the
package index into it and runs this).

The specs' reference implementation is published as the ``powercontext`` distribution
(1.4.1): the same import name as this project, so it only ever runs in its own
interpreter (``.venv-peer/bin/python bench/peer/driver.py JOB.json``, JSON on stdout);
this process never imports it. Both sides run the same loop,
:mod:`bench.peer.protocol` (standard library only), each on fresh SQLite files:

* ours: :class:`bench.peer.ours.OurStore`, one Memory of ``MemoryService`` on
  ``SQLiteMemoryBackend``; by default without an embedding profile (full text only),
  like the peer without a configured embedding model;
* peer: ``bench/peer/driver.py``, one Scope's Atomic Memory (the peer's Memory: one
  Artifact per entry) through its public runtime API.

Data: the perf benchmark's LoCoMo entries and questions (:mod:`bench.perf.common`:
``make_entries``, ``fresh_entries``, ``pick_queries``). Figures per size (default 1k
and 10k entries): remember +1 and +100 p50/p95, fts search p50/p95 (limit 10) and hits
per query, database bytes (file + WAL after a checkpoint), load rate. LoCoMo dev fts
recall@5/10/25: each conversation's turns (``bench.locomo.entry_text``, with the
session date and image captions, as ``bench locomo`` writes them; identical texts
collapsed) in a store of its own, every question searched with limit 25 on both
sides, scored by ``bench.locomo.recalls`` on our side. Vector and hybrid search are not
compared: the peer embeds through a configured provider (API credentials), which this
machine does not have.

Every timed step has a time budget (``--cell-budget``); a cut step reports its ``n``.
Outputs in ``--out``: ``peer-<date>[-quick].json``, ``.md`` (the ratio table, also
printed) and ``.png`` (latency against size, bytes per entry, recall against k).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.peer import protocol
from bench.peer.report import markdown, plot, ratios

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "driver.py"
DEFAULT_PEER_PYTHON = ROOT / ".venv-peer" / "bin" / "python"
DEFAULT_OUT = ROOT / "bench" / "results"
PEER_VERSION = "1.4.1"
LOCOMO_LIMIT = 25
SEARCH_LIMIT = 10

__all__ = ["PEER_VERSION", "locomo_job", "main", "peer_job", "run", "run_peer", "score"]


def _load() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def run_peer(python: Path, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run the driver in the peer's interpreter on ``job``; its JSON result. Raises
    RuntimeError when it fails or times out (its stderr goes to ours as it runs)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(job, fh)
    try:
        proc = subprocess.run(  # stderr (the driver's progress) goes straight through
            [str(python), str(DRIVER), fh.name], stdout=subprocess.PIPE, text=True,
            timeout=timeout_s, env={**os.environ, "PYTHONPATH": ""},
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"peer driver timed out after {timeout_s:.0f} s") from exc
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        raise RuntimeError(f"peer driver exited {proc.returncode} (its stderr is above)")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def peer_job(args: argparse.Namespace, workdir: Path, texts: Sequence[str],
             fresh: Sequence[str], queries: Sequence[str], size: int) -> dict[str, Any]:
    """The ``perf`` job of one size both sides run (the peer reads it as JSON)."""
    return {
        "kind": "perf", "workdir": str(workdir), "sizes": [size],
        "texts": list(texts[:size]), "fresh": list(fresh), "queries": list(queries),
        "search_runs": args.search_runs, "write_runs": args.write_runs,
        "batch_runs": args.batch_runs, "limit": SEARCH_LIMIT,
        "cell_budget_s": args.cell_budget,
    }


def locomo_job(data: Path, quick: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    """(conversations for :func:`protocol.run_ranking`, per conversation a list of
    (category, evidence, dia_ids per text index)); texts as ``bench locomo`` writes
    them, normalized and collapsed (equal texts become one entry of all their dia_ids)."""
    from bench.locomo import entry_text, load
    from powercontext.core import canonical

    convs, keys = [], []
    for conv in load(data, quick=quick):
        dias: dict[str, set[str]] = {}
        for t in conv.turns:
            text = canonical.normalize_text(entry_text(t, session_date=True), "text")
            dias.setdefault(text, set()).add(t.dia_id)
        texts = list(dias)
        convs.append({"texts": texts, "questions": [q.question for q in conv.questions]})
        keys.append(([(q.category, q.evidence) for q in conv.questions],
                     [frozenset(dias[t]) for t in texts]))
    return convs, keys


def score(ranked: Sequence[Sequence[Sequence[int]]], keys: Sequence[Any]) -> dict[str, Any]:
    """bench.locomo's summary (overall, overall_1_4, by_category) of ranked indexes."""
    from bench.locomo import recalls, summarize

    rows = []
    for conv_ranked, (questions, dias) in zip(ranked, keys, strict=True):
        for (category, evidence), hits in zip(questions, conv_ranked, strict=True):
            rows.append((category, recalls(evidence, [dias[i] for i in hits])))
    return dict(summarize(rows))


async def _ours_perf(args: argparse.Namespace, work: Path, job: dict[str, Any]) -> list[Any]:
    from bench.peer.ours import OurStore

    async def open_store(n: int) -> protocol.Store:
        return OurStore(work / f"ours-perf-{n}.db", embed=args.ours_embed)

    return await protocol.run_perf(
        open_store, sizes=job["sizes"], texts=job["texts"], fresh=job["fresh"],
        queries=job["queries"], search_runs=job["search_runs"], write_runs=job["write_runs"],
        batch_runs=job["batch_runs"], limit=job["limit"], cell_budget_s=job["cell_budget_s"],
        label="ours",
    )


async def _ours_rank(args: argparse.Namespace, work: Path, convs: list[Any]) -> list[Any]:
    from bench.peer.ours import OurStore

    async def open_store(n: int) -> protocol.Store:
        return OurStore(work / f"ours-rank-{n}.db", keys=True, embed=args.ours_embed)

    return await protocol.run_ranking(open_store, convs, LOCOMO_LIMIT, "ours")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole run; the JSON report (``ratios`` included)."""
    from bench.perf.common import fresh_entries, load_corpus, make_entries, pick_queries

    started = time.perf_counter()
    report: dict[str, Any] = {
        "benchmark": "peer",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": {"python": platform.python_version(), "cpus": os.cpu_count(),
                 "loadavg_start": _load()},
        "settings": {
            "sizes": list(args.sizes), "queries": args.queries,
            "search_runs": args.search_runs, "write_runs": args.write_runs,
            "batch_runs": args.batch_runs, "search_limit": SEARCH_LIMIT,
            "locomo_limit": LOCOMO_LIMIT, "cell_budget_s": args.cell_budget,
            "ours_embedding": "deterministic-384" if args.ours_embed else "none (fts only)",
            "data": str(args.data), "locomo_data": str(args.locomo_data),
        },
        "peer": {"version": None, "status": "not run"},
        "perf": {"ours": [], "peer": []},
        "locomo": {},
        "notes": [],
    }
    notes: list[str] = report["notes"]
    turns, questions = load_corpus(args.data)
    texts = make_entries(turns, max(args.sizes))
    fresh = fresh_entries(turns, args.write_runs + 100 * args.batch_runs, "pw")
    queries = pick_queries(questions, args.queries)
    python = Path(args.peer_python).absolute()  # not resolve(): a venv's python is a link
    peer_ok = python.exists()
    if not peer_ok:
        reason = (f"peer not run: {python} does not exist (`make bench-peer` creates it "
                  f"and installs powercontext=={PEER_VERSION} from the package index)")
        notes.append(reason)
        report["peer"]["reason"] = reason
        protocol.log(reason)
    with tempfile.TemporaryDirectory(prefix="bench-peer-", dir=args.workdir) as tmp:
        work = Path(tmp)
        # size by size, ours then the peer, so both see about the same machine load
        for size in args.sizes:
            job = peer_job(args, work, texts, fresh, queries, size)
            report["perf"]["ours"] += asyncio.run(_ours_perf(args, work, job))
            if not peer_ok:
                continue
            try:
                got = run_peer(python, job, args.peer_timeout)
                report["perf"]["peer"] += got["rows"]
                report["peer"].update(version=got["version"], python=got["python"],
                                      status="ran")
            except RuntimeError as exc:
                peer_ok = False
                report["peer"]["reason"] = f"peer perf failed at {size} entries: {exc}"
                notes.append(report["peer"]["reason"])
        if args.locomo:
            convs, keys = locomo_job(args.locomo_data, args.quick)
            report["locomo"]["counts"] = {
                "conversations": len(convs),
                "entries": sum(len(c["texts"]) for c in convs),
                "questions": sum(len(c["questions"]) for c in convs),
            }
            report["locomo"]["ours"] = score(asyncio.run(_ours_rank(args, work, convs)), keys)
            if peer_ok:
                try:
                    got = run_peer(python, {"kind": "rank", "workdir": str(work),
                                            "conversations": convs, "limit": LOCOMO_LIMIT},
                                   args.peer_timeout)
                    report["locomo"]["peer"] = score(got["ranked"], keys)
                except RuntimeError as exc:
                    notes.append(f"peer LoCoMo ranking failed: {exc}")
    report["host"]["loadavg_end"] = _load()
    report["runtime_s"] = round(time.perf_counter() - started, 1)
    notes.extend(_notes(report))
    report["ratios"] = ratios(report)
    return report


def _notes(report: dict[str, Any]) -> list[str]:
    out = []
    for side in ("ours", "peer"):
        for row in report["perf"][side]:
            for fig in ("search_fts", "remember_1", "remember_100"):
                cell = row[fig]
                if cell["n"] < cell["wanted"]:
                    out.append(f"{side} {fig} at {row['entries']}: {cell['n']} of "
                               f"{cell['wanted']} samples (cell budget "
                               f"{report['settings']['cell_budget_s']:.0f} s)")
    if report["peer"]["status"] == "ran":
        out.append(
            f"peer = powercontext {report['peer']['version']} from the package index, run "
            "as a black box in .venv-peer: its Memory is Atomic Memory (one Artifact per "
            "entry; remember = `create` of a batch), searched with mode `text` (its name "
            "for full text); ours = MemoryService.remember(mode='append') / search(mode="
            "'fts') on one Memory (one Revision per write)")
    out.append("vector and hybrid search not compared: the peer embeds through a "
               "configured provider (API credentials), not available here")
    return out


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench peer", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="1k entries, 30 queries x 1 pass, 10 + 2 writes, first LoCoMo "
                   "conversation (60 questions)")
    p.add_argument("--sizes", type=_sizes, default=None, help="entries (default 1000,10000)")
    p.add_argument("--queries", type=int, default=None, help="LoCoMo questions (default 100)")
    p.add_argument("--search-runs", type=int, default=None, help="passes (default 3)")
    p.add_argument("--write-runs", type=int, default=None, help="remember +1 (default 20)")
    p.add_argument("--batch-runs", type=int, default=None, help="remember +100 (default 3)")
    p.add_argument("--cell-budget", type=float, default=120.0,
                   help="seconds per timed step and side (default 120)")
    p.add_argument("--peer-python", type=Path, default=DEFAULT_PEER_PYTHON)
    p.add_argument("--peer-timeout", type=float, default=3600.0,
                   help="seconds the peer's driver may take per job")
    p.add_argument("--ours-embed", action="store_true",
                   help="ours with the deterministic embedder (vectors written too)")
    p.add_argument("--no-locomo", dest="locomo", action="store_false")
    p.add_argument("--data", type=Path, default=Path("/work/shared/data/locomo-dev.json"))
    p.add_argument("--locomo-data", type=Path, default=None, help="default: --data")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--replot", type=Path, default=None, metavar="JSON",
                   help="rewrite the PNG of an earlier run's JSON report, run nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.replot is not None:
        rep = json.loads(args.replot.read_text("utf-8"))
        png = args.replot.with_suffix(".png")
        print(f"wrote {png}" if plot(rep, png) else "no plot: matplotlib is not installed")
        return 0
    quick = args.quick
    for name, full, small in (("sizes", [1_000, 10_000], [1_000]), ("queries", 100, 30),
                              ("search_runs", 3, 1), ("write_runs", 20, 10),
                              ("batch_runs", 3, 2)):
        if getattr(args, name) is None:
            setattr(args, name, small if quick else full)
    args.locomo_data = args.locomo_data or args.data
    report = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"peer-{dt.date.today().isoformat()}{'-quick' if quick else ''}"
    Path(f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    table = markdown(report)
    given = " ".join(argv if argv is not None else sys.argv[1:])
    head = (f"Command: `python -m bench peer {given}`"
            f"; {report['date']}; load average {report['host']['loadavg_start']} -> "
            f"{report['host']['loadavg_end']}; {report['runtime_s']} s")
    Path(f"{stem}.md").write_text(f"{head}\n\n{table}\n", "utf-8")
    print(head)
    print()
    print(table)
    print(f"wrote {stem}.json, {stem}.md")
    if not args.no_plot:
        from bench.plotting import NO_PLOT

        print(f"wrote {stem}.png" if plot(report, Path(f"{stem}.png")) else NO_PLOT)
    return 0
