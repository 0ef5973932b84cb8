"""Prompt-hook latency (issue 11 item 3): the real ``powercontext hook claude-code``
command, run as a subprocess the way Claude Code runs it, on a bootstrapped repository.

``python -m bench hooks [--runs 30] [--hybrid-runs 0] [--no-local] [--out DIR]``

Two databases, each bootstrapped with ``powercontext repo bootstrap`` on the same small
repository (Makefile, pyproject.toml, AGENTS.md), in a temporary data directory:

* *no model*: bootstrapped without an embedding model;
* *local model*: bootstrapped with ``--embedding local``, so every later command on it
  remembers the local model (all-MiniLM-L6-v2, torch).

Each run sends one ``UserPromptSubmit`` payload on stdin and times the process from
start to exit (wall clock, milliseconds) and its CPU time (user + system, from the
children's rusage); the cases take turns run by run, so the machine's load falls on all
of them alike. Printed: p50 and p95 per case (nearest-rank), the load average, whether
every run injected memory, and the issue-14 target (local model p95 <= 300 ms).

The hook runs with bytecode caching on (``PYTHONPYCACHEPREFIX`` in the temporary
directory, one untimed warm-up run per case), as an installed package has it: with
``PYTHONDONTWRITEBYTECODE`` set (this machine's environment) every run compiled the
sources again, 1.25 s of the 2.9 s a run took in a profile. ``--hybrid-runs N`` also times N runs of
``hook claude-code --mode hybrid`` on the local-model database (each loads torch).
Unless ``--no-daemon``, one more case runs the same command while ``powercontext hook
daemon`` serves the local-model database (the no-model one with ``--no-local``); the
in-process cases run with ``POWERCONTEXT_HOOK_DAEMON=0``. Its CPU time is the client's
only; ``answered_by_daemon`` counts the events its daemon answered itself, of
``sent_to_daemon`` (every timed run and warm-up of the cases on that database).
``--instructions`` also counts, for each in-process case, the instructions one run
executes (valgrind's callgrind ``Ir``, the same to 0.1 % from run to run whatever the
machine's load, where CPU time moves by 20 % on a shared machine): the figure to compare
two versions of the hook by. Writes ``hooks.json`` to ``--out`` when given.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "percentile"]

PROMPT = "How do I run the checks before I open a pull request?"
_FILES = {
    "Makefile": "check:\n\truff check .\n\tpytest -q\n\ntest:\n\tpytest -q\n",
    "pyproject.toml": ('[project]\nname = "demo"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n'
                       '\n[tool.pytest.ini_options]\naddopts = "-q"\n'),
    "AGENTS.md": ("# Agents\n\nRun `make check` before every pull request.\n\n"
                  "Never edit files under `build/`.\n"),
}


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile ``p`` (0-100) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _cli() -> list[str]:
    """The console script's entry (the hook daemon's client runs first in it)."""
    return [sys.executable, "-m", "powercontext.entrypoints.cli.entry"]


class _Daemon:
    """``powercontext hook daemon --load-model`` on ``db``, started and listening (its
    embedding model loaded), until :meth:`stop`."""

    def __init__(self, env: dict[str, str], db: Path) -> None:
        self.proc = subprocess.Popen([*_cli(), "--db", str(db), "hook", "daemon", "-v",
                                      "--load-model"],
                                     env=env, stderr=subprocess.PIPE, text=True)
        seen: list[str] = []  # the model's loading, then "answering prompts ..."
        while self.proc.stderr and (line := self.proc.stderr.readline()):
            seen.append(line)
            if "answering prompts" in line:
                return
        self.stop()
        raise RuntimeError(f"the hook daemon did not start: {''.join(seen)}")

    def stop(self) -> int:
        """Stop it; the number of events it answered itself (its ``ok`` lines)."""
        if self.proc.poll() is None:
            self.proc.terminate()
        _, err = self.proc.communicate(timeout=60)
        return err.count("powercontext hook daemon: ok")


def _bootstrap(env: dict[str, str], db: Path, repo: Path, embedding: str | None) -> None:
    args = [*_cli(), "--db", str(db)]
    if embedding:
        args += ["--embedding", embedding]
    subprocess.run([*args, "repo", "bootstrap", str(repo)], env=env, check=True,
                   capture_output=True, timeout=900)


def _time_one(env: dict[str, str], db: Path, repo: Path, extra: tuple[str, ...]
              ) -> tuple[float, float, bool]:
    payload = json.dumps({"session_id": "bench", "cwd": str(repo),
                          "hook_event_name": "UserPromptSubmit", "prompt": PROMPT})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*_cli(), "--db", str(db), "hook", "claude-code", *extra],
                          input=payload, capture_output=True, text=True, env=env, timeout=600)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, "additionalContext" in proc.stdout


def _instructions(env: dict[str, str], db: Path, repo: Path, extra: tuple[str, ...]
                  ) -> int:
    """Instructions one run of the hook executes, counted by valgrind's callgrind
    (``Collected : N``); RuntimeError when valgrind cannot count them."""
    payload = json.dumps({"session_id": "bench", "cwd": str(repo),
                          "hook_event_name": "UserPromptSubmit", "prompt": PROMPT})
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           *_cli(), "--db", str(db), "hook", "claude-code", *extra],
                          input=payload, capture_output=True, text=True, env=env, timeout=900)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if found is None:
        raise RuntimeError(f"valgrind counted nothing: {proc.stderr[-500:]}")
    return int(found.group(1))


#: Issue 14: the prompt hook's p95 on a database whose profile is the local model.
TARGET_P95_MS = 300.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench hooks", description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--hybrid-runs", type=int, default=0)
    parser.add_argument("--no-local", action="store_true",
                        help="skip the local-model database (no torch; for smoke tests)")
    parser.add_argument("--no-daemon", action="store_true",
                        help="skip the case answered by `powercontext hook daemon`")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each in-process case's instructions with valgrind "
                             "(deterministic under load; about 30 s per case)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH (e.g. apt-get install valgrind)")
    results: dict[str, dict[str, float | int]] = {}
    with tempfile.TemporaryDirectory(prefix="pc-bench-hooks-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        (repo / ".git").mkdir(parents=True)
        for name, text in _FILES.items():
            (repo / name).write_text(text)
        env = dict(os.environ, POWERCONTEXT_HOME=str(root / "home"),
                   PYTHONPYCACHEPREFIX=str(root / "pycache"))
        for var in ("POWERCONTEXT_DB", "POWERCONTEXT_EMBEDDING", "PYTHONDONTWRITEBYTECODE"):
            env.pop(var, None)
        # (label, database, embedding of its bootstrap, hook options, through the daemon)
        cases: list[tuple[str, Path, str | None, tuple[str, ...], bool]] = [
            ("no model", root / "plain.db", None, (), False)]
        if not args.no_local:
            cases.append(("local model", root / "local.db", "local", (), False))
        if args.hybrid_runs and not args.no_local:
            cases.append(("local model, --mode hybrid", root / "local.db", None,
                          ("--mode", "hybrid"), False))
        if not args.no_daemon:
            base = cases[1] if not args.no_local else cases[0]
            cases.append((f"{base[0]}, hook daemon", base[1], None, (), True))
            if args.hybrid_runs and not args.no_local:
                cases.append(("local model, --mode hybrid, hook daemon", root / "local.db",
                              None, ("--mode", "hybrid"), True))
        for _label, db, embedding, _extra, _d in cases:
            if not db.exists():
                _bootstrap(env, db, repo, embedding)
        runs = {label: args.hybrid_runs if extra else args.runs
                for label, _db, _emb, extra, _d in cases}
        times: dict[str, list[float]] = {label: [] for label in runs}
        cpus: dict[str, list[float]] = {label: [] for label in runs}
        injected = dict.fromkeys(runs, 0)
        alone = {**env, "POWERCONTEXT_HOOK_DAEMON": "0"}  # in-process cases never use it
        daemons: dict[Path, _Daemon] = {}
        try:
            for db in dict.fromkeys(db for _l, db, _e, _x, through in cases if through):
                daemons[db] = _Daemon(env, db)  # one per database (a second is refused)
            for _label, db, _emb, extra, through in cases:  # untimed: the bytecode cache
                _time_one(env if through else alone, db, repo, extra)
            load_before = os.getloadavg()[0]
            for i in range(max(runs.values())):  # interleaved: the load hits all alike
                for label, db, _emb, extra, through in cases:
                    if i < runs[label]:
                        ms, cpu, ok = _time_one(env if through else alone, db, repo, extra)
                        times[label].append(ms)
                        cpus[label].append(cpu)
                        injected[label] += ok
        finally:
            answered = {db: d.stop() for db, d in daemons.items()}
        counted = {label: _instructions(alone, db, repo, extra)
                   for label, db, _emb, extra, through in cases
                   if args.instructions and not through}
        load = (load_before, os.getloadavg()[0])
        print(f"load average {load[0]:.1f} before, {load[1]:.1f} after "
              f"({os.cpu_count()} CPUs)", flush=True)
        for label, n in runs.items():
            t, c = times[label], cpus[label]
            results[label] = {"runs": n, "p50_ms": round(percentile(t, 50)),
                              "p95_ms": round(percentile(t, 95)), "max_ms": round(max(t)),
                              "cpu_p50_ms": round(percentile(c, 50)),
                              "cpu_p95_ms": round(percentile(c, 95)),
                              "injected": injected[label], "load": list(load)}
            through_db = next((db for lb, db, _e, _x, t in cases if lb == label and t), None)
            if through_db is not None:  # the client's CPU only; the daemon's is its own
                sent = sum(runs[lb] + 1 for lb, db, _e, _x, t in cases if t and db == through_db)
                results[label]["answered_by_daemon"] = answered[through_db]
                results[label]["sent_to_daemon"] = sent
            print(f"{label:28s} runs={n:3d}  p50={results[label]['p50_ms']:6d} ms  "
                  f"p95={results[label]['p95_ms']:6d} ms  max={results[label]['max_ms']:6d} "
                  f"ms  cpu p50={results[label]['cpu_p50_ms']:5d} "
                  f"p95={results[label]['cpu_p95_ms']:5d} ms  "
                  f"injected={injected[label]}/{n}", flush=True)
            if label in counted:
                results[label]["instructions"] = counted[label]
                print(f"{label:28s} instructions of one run: {counted[label] / 1e6:.0f} M",
                      flush=True)
        local = results.get("local model")
        if local is not None:
            status = "met" if local["p95_ms"] <= TARGET_P95_MS else "missed"
            print(f"target: prompt hook p95 (local model) {local['p95_ms']} ms, limit "
                  f"{TARGET_P95_MS:.0f} ms: {status} (CPU p95 {local['cpu_p95_ms']} ms; "
                  f"wall time is CPU time stretched by the load average)", flush=True)
        served = results.get("local model, hook daemon")
        if served is not None:
            status = "met" if served["p95_ms"] <= TARGET_P95_MS else "missed"
            print(f"target: prompt hook p95 (local model) with `powercontext hook daemon` "
                  f"running {served['p95_ms']} ms, limit {TARGET_P95_MS:.0f} ms: {status} "
                  f"({served['answered_by_daemon']} of the {served['sent_to_daemon']} events "
                  f"sent to its daemon answered by it)", flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hooks.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
