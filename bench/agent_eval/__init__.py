"""``python -m bench agent-eval``: what a coding agent receives from the memory, scored
on the contract files of six real repositories.

It runs ``bench/agent_eval/score.py`` (a byte-for-byte copy of the shared agent-eval
scorer; its data, copied beside it in ``bench/agent_eval/data``, names every source in
``MANIFEST.md`` and explains every figure in ``README.md``) against this checkout's
``powercontext`` command: ``repo bootstrap`` on a fresh Git copy of each repository,
realistic prompts through ``hook claude-code`` (must-recall, noise, honest empty, bytes),
then a stream of 40 ``Stop`` events (notes per session, duplicates, the user's rule
correction, probes). About 150 CLI calls, ~40 s on two cores.

``python -m bench agent-eval [--powercontext PATH] [--data DIR] [--out DIR] [--no-stream]
[--repos a,b] [--limit N] [-v]``

Prints the scorer's report and its final line::

    agent-eval: must-recall X% noise Y% empty-ok Z% bootstrap-precision P% recall R% ...

and writes its JSON to ``--out`` (default ``bench/results``) as
``agent-eval-<UTC date>.json``. Exit status: the scorer's (0 when it ran), 2 for bad
arguments. Figures, not a verdict: the targets are in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
from pathlib import Path

__all__ = ["DATA", "SCORER", "main"]

HERE = Path(__file__).resolve().parent
SCORER = HERE / "score.py"
DATA = HERE / "data"


def _default_cli() -> str:
    """This checkout's ``powercontext`` command: the one beside the running interpreter."""
    return str(Path(sys.executable).with_name("powercontext"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench agent-eval",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--powercontext", default=_default_cli(),
                        help="the command to score (default: this checkout's)")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="the agent-eval data folder (default: the copy under bench/)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results",
                        help="where agent-eval-<date>.json goes (default: bench/results)")
    parser.add_argument("--no-stream", action="store_true", help="skip the Stop stream")
    parser.add_argument("--repos", help="only these repositories (comma-separated)")
    parser.add_argument("--limit", type=int, help="pass --limit N to the prompt hook")
    parser.add_argument("-v", action="store_true", help="one line per prompt on stderr")
    args = parser.parse_args(argv)
    if not (args.data / "labels").is_dir():
        parser.error(f"{args.data} holds no agent-eval data (labels/, repos/, stream/)")
    args.out.mkdir(parents=True, exist_ok=True)
    day = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    out = args.out / f"agent-eval-{day}.json"
    cmd = [sys.executable, str(SCORER), "--powercontext", args.powercontext,
           "--data", str(args.data), "--out", str(out)]
    if args.no_stream:
        cmd.append("--no-stream")
    if args.repos:
        cmd += ["--repos", args.repos]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    if args.v:
        cmd.append("-v")
    status = subprocess.run(cmd, check=False).returncode
    if status == 0:
        print(f"wrote {out}", flush=True)
    return status
