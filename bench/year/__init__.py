"""A year of a team, measured: ``python -m bench year``.

``python -m bench year [--scale 1.0] [--memory-scale S] [--data DIR] [--backend sqlite|seekdb|both]
[--seed 39] [--queries 40] [--runs 2] [--hook-runs 20] [--no-daemon] [--build-only]
[--rebuild] [--out bench/results]``

Builds once (kept in ``--data``; a second run with the same backend, scale and seed
reuses it, see :mod:`bench.year.build`): 20 repositories' Memories of 2,000 to 5,000
entries (times ``--scale``), 500,000 conversation turns (times ``--scale``) in 20
Scopes (one per repository), and the Topics the processing grows from them with the
``deterministic`` provider. The material is the LoCoMo conversations and the
agent-eval Stop events, varied deterministically from ``--seed``
(:mod:`bench.year.corpus`).

Then measures (:mod:`bench.year.measure`), beside the raw engine where one applies:
Memory search (fts, vector, hybrid) on the largest Memory, Topic search in the largest
Scope, ``context/prepare``, the prompt hook (a process per prompt, in process and with
``hook daemon``), flush to first searchable Topic, the build's throughput (entries,
turns and turns processed per second), the database's size and peak memory.

Writes ``<out>/year-<backend>-<stamp>.json`` (every figure and the manifest), ``.md``
(the tables, starting with the command) and ``.png``. seekdb runs on loopback, started
the way ``tests/oceanbase_server.py`` starts it, and is built every run. No test asserts
a timing; a test runs this at a tiny scale on SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from bench.perf.common import DEFAULT_OUT, ROOT, log, pick_queries

DEFAULT_DATA = ROOT / ".benchcache" / "year"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench year", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    p.add_argument("--scale", type=float, default=1.0,
                   help="1.0 = 20 Memories of 2,000-5,000 entries and 500,000 turns")
    p.add_argument("--memory-scale", type=float, default=None,
                   help="the Memories' own scale (default --scale): Memories are cheap to "
                        "build, so a small year can keep full-size Memories")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA,
                   help=f"where the built databases are kept and reused (default {DEFAULT_DATA})")
    p.add_argument("--backend", choices=("sqlite", "seekdb", "both"), default="sqlite")
    p.add_argument("--seed", type=int, default=39)
    p.add_argument("--queries", type=int, default=40, help="LoCoMo questions per search cell")
    p.add_argument("--runs", type=int, default=2, help="passes over the queries")
    p.add_argument("--hook-runs", type=int, default=20, help="prompts per hook case")
    p.add_argument("--no-daemon", action="store_true", help="skip the hook daemon case")
    p.add_argument("--build-only", action="store_true", help="build (or find) and stop")
    p.add_argument("--rebuild", action="store_true", help="build again even when kept")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return p


async def _run_backend(backend: str, args: argparse.Namespace, material: Any,
                       server: str | None) -> dict[str, Any]:
    from bench.year import build as building
    from bench.year import measure

    mscale = args.scale if args.memory_scale is None else args.memory_scale
    data = args.data / (f"{backend}-scale{args.scale:g}"
                        + (f"-m{mscale:g}" if mscale != args.scale else "") + f"-seed{args.seed}")
    data.mkdir(parents=True, exist_ok=True)
    built = None if args.rebuild else building.load_manifest(data, backend, args.scale,
                                                             args.seed, mscale)
    engine: Any
    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

    model = DeterministicEmbedding(384)
    if backend == "sqlite":
        from bench.perf.engines import SQLiteEngine
        from bench.perf.topic_engines import SQLiteTopicEngine

        engine, tengine = SQLiteEngine(data, model), SQLiteTopicEngine(data)
        db = str(data / "year.db")
        if built is None:
            for suffix in ("", "-wal", "-shm", ".anchor"):
                Path(db + suffix).unlink(missing_ok=True)
    else:
        sys.path.insert(0, str(ROOT / "tests"))
        import oceanbase_server  # tests/oceanbase_server.py

        from bench.perf.engines import SeekdbEngine
        from bench.perf.topic_engines import SeekdbTopicEngine

        assert server is not None
        built = None  # the server is new: build every run
        db = oceanbase_server._database_url(server, f"year_{int(time.time())}")
        import MySQLdb

        from powercontext.adapters.oceanbase.backend import parse_url

        u = parse_url(db)
        conn = MySQLdb.connect(host=u.host, port=u.port, user=u.user, passwd=u.password)
        conn.cursor().execute(f"CREATE DATABASE `{u.database}`")
        conn.close()
        engine, tengine = SeekdbEngine(model, url=server), SeekdbTopicEngine(server)
    if built is None:
        log(f"{backend}: building the year at scale {args.scale} into {db}")
        built = await building.build(db, backend, data, args.scale, args.seed, material,
                                     memory_scale=mscale)
        building.save_manifest(data, built)
    else:
        log(f"{backend}: reusing the year built at {built.built_at} (commit {built.commit})")
        os.environ.update(building.environment(data))
    result: dict[str, Any] = {"built": built.__dict__, "notes": []}
    if args.build_only:
        return result
    queries = pick_queries(list(material.questions), args.queries)
    log("memory search")
    result["memory_search"] = await measure.memory_search(built, engine, queries, args.runs)
    log("topic search")
    result["topic_search"] = await measure.topic_search(built, tengine, queries, args.runs)
    log("context/prepare")
    result["prepare"] = await measure.prepare(built, queries, args.runs)
    log("prompt hook")
    result["hooks"], notes = measure.hooks(built, data, queries, args.hook_runs,
                                           not args.no_daemon)
    result["notes"] += notes
    log("flush to first searchable Topic")
    result["flush"] = await measure.flush_to_searchable(built, time.strftime("%H%M%S"))
    result["size"] = measure.db_size(built, engine)
    return result


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from bench.year import corpus, report

    material = corpus.load_material()
    backends = ["sqlite", "seekdb"] if args.backend == "both" else [args.backend]
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python -m bench year " + shlex.join(argv if argv is not None else sys.argv[1:])
    for backend in backends:
        load0 = os.getloadavg()[0]
        if backend == "seekdb":
            sys.path.insert(0, str(ROOT / "tests"))
            import oceanbase_server

            with oceanbase_server.seekdb_server() as server:
                result = asyncio.run(_run_backend(backend, args, material, server))
        else:
            result = asyncio.run(_run_backend(backend, args, material, None))
        result.update(command=command, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      load=f"{load0:.1f} to {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)",
                      maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        result.setdefault("size", {"bytes": 0})
        stamp = time.strftime("%Y%m%d-%H%M%S")
        prefix = args.out / f"year-{backend}-{stamp}"
        if args.build_only:
            print(json.dumps(result["built"]["stages"], indent=2))
            continue
        if not args.no_plot:
            report.plots(result, prefix)
        text = report.markdown(result)
        Path(f"{prefix}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        Path(f"{prefix}.md").write_text(text)
        print(text, flush=True)
    return 0
