"""The upstream package as a peer, in the same run (issue 14, item 2).

``python -m bench peer [--quick] [--sizes 1000,10000] [--peer-python PATH] [--out DIR]``
(``make bench-peer`` creates ``.venv-peer``, installs ``powercontext==1.4.1`` from the
package index into it and runs this).

The specs' reference implementation is published as the ``powercontext`` distribution
(1.4.1): the same import name as this project, so it only ever runs in its own
interpreter: ``.venv-peer/bin/python bench/peer/driver.py``, a long-lived process that
answers JSON requests on stdin/stdout (:mod:`bench.peer.remote` is our end); this
process never imports it. One loop, :mod:`bench.peer.protocol` (standard library only),
drives both sides call by call interleaved (ours, peer, then peer, ours, ...), so both
see the same machine load; the driver times each peer call itself, so the pipe is not
counted. Each side works on fresh SQLite files:

* ours: :class:`bench.peer.ours.OurStore`, one Memory of ``MemoryService`` on
  ``SQLiteMemoryBackend``; by default without an embedding profile (full text only),
  like the peer without a configured embedding model;
* peer: ``bench/peer/driver.py``, one Scope's Atomic Memory (the peer's Memory: one
  Artifact per entry) through its public runtime API.

Data: the perf benchmark's LoCoMo entries and questions (:mod:`bench.perf.common`:
``make_entries``, ``fresh_entries``, ``pick_queries``). Figures per size (default 1k,
10k and 50k entries): remember +1 and +100 p50/p95, fts search p50/p95 (limit 10) and hits
per query, forget of one entry p50/p95, database bytes (file + WAL after a checkpoint),
load rate. LoCoMo dev fts
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
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.peer import protocol
from bench.peer.report import markdown, plot, ratios

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PEER_PYTHON = ROOT / ".venv-peer" / "bin" / "python"
DEFAULT_OUT = ROOT / "bench" / "results"
PEER_VERSION = "1.4.1"
LOCOMO_LIMIT = 25
SEARCH_LIMIT = 10

__all__ = ["PEER_VERSION", "locomo_job", "main", "run", "score"]


def _load() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


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


def _ours_open(args: argparse.Namespace, work: Path, kind: str) -> Any:
    from bench.peer.ours import OurStore

    async def open_store(n: int) -> protocol.Store:
        return OurStore(work / f"ours-{kind}-{n}.db", keys=kind == "rank",
                        embed=args.ours_embed)

    return open_store


def _peer_open(peer: Any, work: Path, kind: str) -> Any:
    from bench.peer.remote import RemoteStore

    async def open_store(n: int) -> protocol.Store:
        return RemoteStore(peer, work / f"peer-{kind}-{n}.db")

    return open_store


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole run; the JSON report (``ratios`` included)."""
    from bench.peer.remote import PeerError, PeerProcess
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
            "interleaved": "call by call (ours, peer, then peer, ours, ...)",
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
    peer: PeerProcess | None = None
    if not python.exists():
        reason = (f"peer not run: {python} does not exist (`make bench-peer` creates it "
                  f"and installs powercontext=={PEER_VERSION} from the package index)")
        notes.append(reason)
        report["peer"]["reason"] = reason
        protocol.log(reason)
    else:
        peer = PeerProcess(python)
        try:
            info, _ = peer.request("info")
            report["peer"].update(version=info["version"], python=info["python"])
        except PeerError as exc:
            report["peer"]["reason"] = f"peer driver did not start: {exc}"
            notes.append(report["peer"]["reason"])
            peer.close()
            peer = None
    try:
        with tempfile.TemporaryDirectory(prefix="bench-peer-", dir=args.workdir) as tmp:
            work = Path(tmp)
            _perf(args, report, work, peer, texts, fresh, queries)
            if args.locomo:
                _locomo(args, report, work, peer)
    finally:
        if peer is not None:
            peer.close()
    report["host"]["loadavg_end"] = _load()
    report["runtime_s"] = round(time.perf_counter() - started, 1)
    notes.extend(_notes(report))
    report["ratios"] = ratios(report)
    return report


def _perf(args: argparse.Namespace, report: dict[str, Any], work: Path, peer: Any,
          texts: Sequence[str], fresh: Sequence[str], queries: Sequence[str]) -> None:
    from bench.peer.remote import PeerError

    opens = [_ours_open(args, work, "perf")]
    labels = ["ours"]
    if peer is not None:
        opens.append(_peer_open(peer, work, "perf"))
        labels.append("peer")

    def measure() -> list[list[dict[str, Any]]]:
        return asyncio.run(protocol.run_perf(
            opens, sizes=args.sizes, texts=texts, fresh=fresh, queries=queries,
            search_runs=args.search_runs, write_runs=args.write_runs,
            batch_runs=args.batch_runs, limit=SEARCH_LIMIT, cell_budget_s=args.cell_budget,
            labels=labels,
        ))

    try:
        rows = measure()
    except PeerError as exc:  # the peer failed: measure ours alone, say why
        report["peer"]["reason"] = f"peer perf failed: {exc}"
        report["notes"].append(report["peer"]["reason"])
        opens, labels = opens[:1], labels[:1]
        rows = measure()
    report["perf"]["ours"] = rows[0]
    if len(rows) > 1:
        report["perf"]["peer"] = rows[1]
        report["peer"]["status"] = "ran"


def _locomo(args: argparse.Namespace, report: dict[str, Any], work: Path, peer: Any) -> None:
    from bench.peer.remote import PeerError

    convs, keys = locomo_job(args.locomo_data, args.quick)
    report["locomo"]["counts"] = {
        "conversations": len(convs),
        "entries": sum(len(c["texts"]) for c in convs),
        "questions": sum(len(c["questions"]) for c in convs),
    }
    ours = asyncio.run(protocol.run_ranking(_ours_open(args, work, "rank"), convs,
                                            LOCOMO_LIMIT, "ours"))
    report["locomo"]["ours"] = score(ours, keys)
    if peer is None or report["peer"]["status"] != "ran":
        return
    try:
        got = asyncio.run(protocol.run_ranking(_peer_open(peer, work, "rank"), convs,
                                               LOCOMO_LIMIT, "peer"))
        report["locomo"]["peer"] = score(got, keys)
    except PeerError as exc:
        report["notes"].append(f"peer LoCoMo ranking failed: {exc}")


def _notes(report: dict[str, Any]) -> list[str]:
    out = []
    for side in ("ours", "peer"):
        for row in report["perf"][side]:
            for fig in ("search_fts", "remember_1", "remember_100", "forget_1"):
                cell = row.get(fig)
                if cell is None:
                    continue
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
    p.add_argument("--sizes", type=_sizes, default=None,
                   help="entries (default 1000,10000,50000)")
    p.add_argument("--queries", type=int, default=None, help="LoCoMo questions (default 100)")
    p.add_argument("--search-runs", type=int, default=None, help="passes (default 3)")
    p.add_argument("--write-runs", type=int, default=None, help="remember +1 (default 20)")
    p.add_argument("--batch-runs", type=int, default=None, help="remember +100 (default 3)")
    p.add_argument("--cell-budget", type=float, default=60.0,
                   help="seconds per timed step and side (default 60: the whole run in "
                   "about 15 minutes on two cores)")
    p.add_argument("--peer-python", type=Path, default=DEFAULT_PEER_PYTHON)
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
    for name, full, small in (("sizes", [1_000, 10_000, 50_000], [1_000]),
                              ("queries", 100, 30),
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
