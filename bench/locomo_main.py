"""``python -m bench locomo``: the LoCoMo retrieval benchmark (:mod:`bench.locomo`, whose
docstring gives the method, the options and the outputs), then its cross-validation
(:mod:`bench.locomo_cv`). The command lives apart from both so that neither imports the
other's caller: the cross-validation reuses the benchmark's data and search, and this
module drives the two.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
from pathlib import Path

from bench import locomo, locomo_cv
from bench.locomo import DEFAULT_DATA, DEFAULT_OUT, MODES, load, plot, run, table
from bench.plotting import NO_PLOT
from powercontext.core import analyzer as analyzers

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench locomo",
                                description=(locomo.__doc__ or "").split("\n")[0])
    p.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"LoCoMo-format JSON (default: {DEFAULT_DATA})",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results directory")
    p.add_argument("--modes", default=",".join(MODES), help="comma list of fts,vector,hybrid")
    p.add_argument("--model", default="local", choices=("local", "deterministic"))
    p.add_argument(
        "--analyzer",
        default=",".join(analyzers.ANALYZERS),
        help="comma list of search analyzer versions to measure (default: all, "
        f"{', '.join(analyzers.ANALYZERS)}; the default analyzer is "
        f"{analyzers.DEFAULT_VERSION})",
    )
    p.add_argument("--quick", action="store_true", help="first conversation, first 60 questions")
    p.add_argument(
        "--session-date",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="prefix each entry with its session's date (default: on)",
    )
    p.add_argument(
        "--captions",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="append the caption of a shared image to the turn's entry (default: on)",
    )
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument(
        "--cv",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="then the leave-one-conversation-out cross-validation of the retrieval "
        "settings (bench/locomo_cv.py) with the default analyzer (default: on, off with "
        "--quick)",
    )
    p.add_argument("--cv-only", action="store_true", help="the cross-validation alone")
    p.add_argument(
        "--cv-texts",
        default="speaker,date,nospeaker",
        help="the entry texts the cross-validation tries (comma list of speaker: "
        "'<speaker>: <text>', date: '[<session date>] <speaker>: <text>', nospeaker: "
        "'<text>'; default: all three)",
    )
    p.add_argument(
        "--cv-fts",
        default="1:0,2:0.25,2:0.34,2:0.5,3:0.34,3:0.5",
        help="the fts admission floors the cross-validation tries for queries of three or "
        "more terms (comma list of <min matched terms>:<min coverage>)",
    )
    p.add_argument(
        "--cv-analyzer", default=None,
        help="the search analyzer version of the cross-validation (default: the library's)",
    )
    p.add_argument(
        "--cv-suffix", default="",
        help="appended to the cross-validation's file stem (locomo-cv-<date><suffix>)",
    )
    p.add_argument(
        "--cv-floors",
        default="0.25,0.3,0.35,0.4,0.45,0.5,0.55,0.6,0.65,0.7,0.75,0.8",
        help="the vector cosine admission floors the cross-validation tries",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="embedding vector cache and scratch databases (default: <out>/.cache)",
    )
    args = p.parse_args(argv)
    args.workdir = args.workdir or args.out / ".cache"
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        p.error(f"--modes takes a comma list of {', '.join(MODES)}")
    versions = list(dict.fromkeys(v for v in args.analyzer.split(",") if v))
    unknown = [v for v in versions if v not in analyzers.ANALYZERS]
    if unknown or not versions:
        p.error(f"--analyzer takes a comma list of {', '.join(analyzers.ANALYZERS)}")
    cv = args.cv_only or (args.cv if args.cv is not None else not args.quick)
    texts = list(dict.fromkeys(t for t in args.cv_texts.split(",") if t))
    try:
        fts_grid = [(int(a), float(b)) for a, _, b in
                    (f.partition(":") for f in args.cv_fts.split(",") if f)]
        floors = [float(f) for f in args.cv_floors.split(",") if f]
    except ValueError:
        p.error("--cv-fts takes <int>:<float> items, --cv-floors floats")
    if not texts or not set(texts) <= {"speaker", "date", "nospeaker"}:
        p.error("--cv-texts takes a comma list of speaker, date, nospeaker")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.cv_only:
        _plain(args, modes, versions, argv)
    if cv and len(load(args.data)) < 2:
        print("cross-validation skipped: it needs at least two conversations")
        cv = False
    if cv:
        report = asyncio.run(
            locomo_cv.cross_validate(
                args.data, args.model, version=args.cv_analyzer or analyzers.DEFAULT_VERSION,
                workdir=args.workdir, captions=args.captions, texts=texts,
                fts_grid=fts_grid, floors=floors,
                progress=lambda m: print(m, file=sys.stderr, flush=True),
            )
        )
        report["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        report["data"] = str(args.data)
        report["model"] = args.model
        stem = f"locomo-cv-{dt.date.today().isoformat()}{args.cv_suffix}" + (
            "" if args.model == "local" else f"-{args.model}")
        path = args.out / f"{stem}.json"
        report["command"] = "python -m bench locomo " + " ".join(argv or sys.argv[1:])
        path.write_text(json.dumps(report, indent=2) + "\n", "utf-8")
        table = locomo_cv.cv_table(report)
        (args.out / f"{stem}.md").write_text(
            f"# LoCoMo cross-validation\n\n`{report['command']}`\n\n{table}\n", "utf-8")
        print()
        print(table)
        print(f"wrote {path} and {path.with_suffix('.md')}")
    return 0


def _plain(args: argparse.Namespace, modes: list[str], versions: list[str],
           argv: list[str] | None) -> None:
    """The plain run: every analyzer at the library's settings, its tables and files."""
    report = asyncio.run(
        run(
            args.data,
            modes,
            args.model,
            quick=args.quick,
            session_date=args.session_date,
            captions=args.captions,
            versions=versions,
            workdir=args.workdir,
            cache=args.workdir / "vectors",
        )
    )
    stem = (
        f"locomo-{dt.date.today().isoformat()}"
        + ("-quick" if args.quick else "")
        + ("" if args.model == "local" else f"-{args.model}")
        + ("" if args.session_date else "-nodate")
        + ("" if args.captions else "-nocaptions")
        + ("" if versions == list(analyzers.ANALYZERS) else "-" + "-".join(versions))
    )
    json_path = args.out / f"{stem}.json"
    json_path.write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    md_path = args.out / f"{stem}.md"
    given = " ".join(argv if argv is not None else sys.argv[1:])
    md_path.write_text(f"Command: `python -m bench locomo {given}`; {report['date']}\n\n"
                       f"{table(report)}\n", "utf-8")
    print(table(report))
    print()
    print(f"settings: {json.dumps(report['settings'])}")
    print(f"counts: {json.dumps(report['counts'])}  runtime: {json.dumps(report['runtime_s'])}")
    print(f"wrote {json_path}, {md_path}")
    if not args.no_plot:
        png = args.out / f"{stem}.png"
        print(f"wrote {png}" if plot(report, png) else NO_PLOT)


if __name__ == "__main__":
    sys.exit(main())
