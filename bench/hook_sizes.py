"""Stop hooks of growing size: ``powercontext hook claude-code`` handling a ``Stop`` event
whose ``last_assistant_message`` is 10 KB to 50 MB, run as Claude Code runs it (a
subprocess reading the event on stdin), on a repository whose Memory exists.

``python -m bench hook-sizes [--sizes 0.01,1,5,50] [--runs 3] [--out DIR]``

Each run times the process from start to exit (wall clock) and reads its peak resident
memory (``ru_maxrss`` of the child, through a small launcher so the benchmark's own
memory is not counted). The reply is prose with a GitHub token near its end, so the
redaction runs on what is kept. Printed per size: the median wall time, the largest
peak RSS, and whether every run stored the outcome with the token redacted. The hook
runs with ``--no-extract`` (no model), so the figure is the boundary, the redaction and
the two Source writes. Writes ``hook_sizes.json`` to ``--out`` when given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

_TOKEN = "ghp_" + "Zq7Rt2Lm9Xw4Pk8Vn3" + "Bc6Hd1Js5Fg0Ya2Ue7"  # fake, split: no scan finds it
_LAUNCHER = ("import os, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[2:])\n"
             "_, status, usage = os.wait4(p.pid, 0)\n"
             "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
             "sys.exit(os.waitstatus_to_exitcode(status))\n")


def _cli() -> list[str]:
    return [sys.executable, "-m", "powercontext.entrypoints.cli.entry"]


def _payload(path: Path, repo: Path, megabytes: float) -> None:
    line = "The build passed after the flaky test in tests/unit was fixed.\n"
    body = line * max(1, int(megabytes * 1024 * 1024) // len(line))
    reply = body + f"Pushed with the token {_TOKEN}. Done."
    path.write_text(json.dumps({"session_id": "bench", "cwd": str(repo),
                                "hook_event_name": "Stop", "stop_hook_active": False,
                                "last_assistant_message": reply}))


def _run(env: dict[str, str], db: Path, payload: Path) -> tuple[float, float, bool]:
    rss = payload.with_suffix(".rss")
    start = time.perf_counter()
    with open(payload, "rb") as fh:
        proc = subprocess.run([sys.executable, "-c", _LAUNCHER, str(rss), *_cli(), "--db",
                               str(db), "--json", "hook", "claude-code", "--no-extract"],
                              stdin=fh, capture_output=True, env=env, timeout=900)
    wall = time.perf_counter() - start
    ok = proc.returncode == 0 and b"source_id" in proc.stdout and not proc.stderr
    return wall, int(rss.read_text()) / 1024, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench hook-sizes", description=__doc__)
    parser.add_argument("--sizes", default="0.01,1,5,50",
                        help="reply sizes in MB, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",")]
    results: dict[str, dict[str, float | int]] = {}
    with tempfile.TemporaryDirectory(prefix="pc-bench-hook-sizes-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        (repo / ".git").mkdir(parents=True)
        env = dict(os.environ, POWERCONTEXT_HOME=str(root / "home"))
        for var in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "POWERCONTEXT_HOOK_DAEMON"):
            env.pop(var, None)
        db = root / "memory.db"
        subprocess.run([*_cli(), "--db", str(db), "memory", "remember", "--key",
                        f"repo:{repo}", "--text", "Run make test before review."],
                       check=True, env=env, capture_output=True, timeout=300)
        walls: dict[float, list[float]] = {s: [] for s in sizes}
        peaks: dict[float, list[float]] = {s: [] for s in sizes}
        stored = dict.fromkeys(sizes, 0)
        for size in sizes:
            _payload(root / f"stop-{size}.json", repo, size)
        load_before = os.getloadavg()[0]
        for _ in range(args.runs):  # interleaved: the load hits every size alike
            for size in sizes:
                wall, peak, ok = _run(env, db, root / f"stop-{size}.json")
                walls[size].append(wall)
                peaks[size].append(peak)
                stored[size] += ok
        load = (load_before, os.getloadavg()[0])
        print(f"load average {load[0]:.1f} before, {load[1]:.1f} after "
              f"({os.cpu_count()} CPUs)", flush=True)
        for size in sizes:
            results[f"{size:g} MB"] = {
                "runs": args.runs, "wall_p50_s": round(statistics.median(walls[size]), 2),
                "wall_max_s": round(max(walls[size]), 2),
                "peak_rss_mb": round(max(peaks[size])), "stored": stored[size]}
            r = results[f"{size:g} MB"]
            print(f"Stop, {size:>6g} MB reply: wall p50 {r['wall_p50_s']:5.2f} s  max "
                  f"{r['wall_max_s']:5.2f} s  peak RSS {r['peak_rss_mb']:4d} MB  stored "
                  f"{stored[size]}/{args.runs}", flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hook_sizes.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
