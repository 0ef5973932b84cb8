"""Serving latency (issue 16): ``powercontext serve --role all`` as docs/serving.md sets it
up, measured from outside, the way users and agents reach it.

``python -m bench serve-latency [--sources 300] [--runs 50] [--hook-runs 10]
[--db URL] [--out bench/results] [--no-write]``

1. A temporary repository (``.git``, Makefile, pyproject.toml, AGENTS.md) is
   bootstrapped (``repo bootstrap``: its Memory under ``repo:<path>``), and
   ``--sources`` synthetic documents (one service each, distinct made-up names) are
   added to its Scope ``repo:<path>`` with one ``source add --jsonl``; ``--runs``
   further Scopes get one Source each (not flushed: the ``accepted`` flushes below).
2. ``powercontext serve --role all --port 0`` starts with the deterministic provider
   (extractive, no model), a bearer token and a 0.2 s discovery poll; its URL is read
   from its log.
3. One HTTP flush of the repository's Scope; timed: flush to the first searchable Topic
   (a search for the first document's words polled every 50 ms) and flush to the Scope
   covered (``topic status`` polled every second), with the number of Topics made.
4. ``--runs`` rounds, each: ``flush`` of a covered Scope (``idle``), ``flush`` of a new
   Scope (``accepted``; its processing then runs in the background, as in real use),
   ``search`` (limit 10), ``get`` of a hit, ``context/prepare`` (default 8,000 bytes).
   Every request is a new HTTP connection (``urllib``, like a ``curl`` per call);
   wall clock around the request, milliseconds.
5. The agent hooks as the agents run them, one process per call, ``--hook-runs``
   each, taking turns: the Claude Code Stop hook (stores the turn as a Source in the
   repository's Scope, then the candidate pipeline) and the prompt hook
   (``UserPromptSubmit``, the repository's context on stdout), on the same database
   while ``serve`` runs.

Printed: p50 / p95 / max per operation (nearest rank). Written:
``<out>/serve-latency-<UTC date>.json`` and ``.md``. No test asserts a timing; a smoke
test runs this on a tiny size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import re
import secrets
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.hooks import percentile

__all__ = ["main", "make_documents"]

_SYLLABLES = ("ka", "lo", "mi", "ru", "te", "sa", "vo", "ne", "di", "pa", "zu", "fe",
              "go", "ri", "ba", "xu")
_REPO_FILES = {
    "Makefile": "check:\n\truff check .\n\tpytest -q\n\ntest:\n\tpytest -q\n",
    "pyproject.toml": ('[project]\nname = "demo"\nversion = "0.1.0"\n'
                       'requires-python = ">=3.11"\n'),
    "AGENTS.md": "# Agents\n\nRun `make check` before every pull request.\n",
}
PROMPT = "How do we deploy the {name} service and who reviews its changes?"
_URL = re.compile(r"(?:serving|running on) (http://[^\s:/]+:\d+)")


def make_documents(count: int, seed: int = 16) -> list[dict[str, Any]]:
    """``count`` synthetic documents (JSON-lines Source rows), each of eight made-up
    words of its own (no word shared between two documents, so the deterministic
    provider makes about one Topic per document instead of folding them), reproducible
    from ``seed``; ``name`` = its two-word title (queries use it)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    syllables = 3 if count * 8 <= 2_000 else 4  # 16**3 words, else 16**4

    def word() -> str:
        while True:
            candidate = "".join(rng.choice(_SYLLABLES) for _ in range(syllables))
            if candidate not in seen:
                seen.add(candidate)
                return candidate

    docs = []
    for _ in range(count):
        w = [word() for _ in range(8)]
        text = (f"# {w[0].title()} {w[1]}\n\n{w[0].title()} {w[1]} {w[2]} {w[3]}. "
                f"{w[4].title()} {w[2]} {w[5]}; {w[6]} {w[3]} {w[7]}.\n")
        docs.append({"kind": "document", "content": text,
                     "uri": f"file:///docs/{w[0]}-{w[1]}.md", "name": f"{w[0]} {w[1]}"})
    return docs


def _cli() -> list[str]:
    return [sys.executable, "-m", "powercontext.entrypoints.cli.main"]


class _Serve:
    """``powercontext serve`` as a child process; its log collected in a thread."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        self.lines: list[str] = []
        self.base: str | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            match = _URL.search(line)
            if match and self.base is None:
                self.base = match.group(1)
                self._ready.set()
        self._ready.set()

    def wait(self, timeout: float) -> str:
        self._ready.wait(timeout)
        if self.base is None:
            raise RuntimeError("serve did not start:\n" + "".join(self.lines[-40:]))
        return self.base

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class _Client:
    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=60) as response:
            return json.loads(response.read())

    def post(self, path: str, body: dict[str, Any]) -> tuple[float, Any]:
        """(milliseconds, JSON answer) of one POST; a non-200 answer raises."""
        request = urllib.request.Request(
            self.base + path, data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json",
                     "Authorization": f"Bearer {self.token}"})
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"{path}: HTTP {error.code} {error.read()[:300]!r}") from None
        return (time.perf_counter() - start) * 1000, json.loads(raw)


def _summary(values: list[float]) -> dict[str, float | int]:
    return {"n": len(values), "p50_ms": round(percentile(values, 50), 1),
            "p95_ms": round(percentile(values, 95), 1), "max_ms": round(max(values), 1)}


def _run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    for name, text in _REPO_FILES.items():
        (repo / name).write_text(text)
    db = args.db or str(root / "serve.db")
    token = secrets.token_urlsafe(24)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("POWERCONTEXT_") and k not in ("OPENAI_API_KEY",
                                                             "ANTHROPIC_API_KEY")}
    env.update(POWERCONTEXT_HOME=str(root / "home"), POWERCONTEXT_API_TOKEN=token,
               POWERCONTEXT_INFERENCE_GENERATION_PROVIDER="deterministic",
               POWERCONTEXT_RUNTIME_ARTIFACT_PROCESSING_POLL_SECONDS="0.2")

    def pc(*argv: str, stdin: str | None = None) -> Any:
        out = subprocess.run([*_cli(), "--db", db, "--json", *argv], input=stdin,
                             capture_output=True, text=True, env=env, timeout=1800)
        if out.returncode != 0:
            raise RuntimeError(f"powercontext {' '.join(argv)}: exit {out.returncode}: "
                               f"{out.stderr.strip()[-500:]}")
        return json.loads(out.stdout) if out.stdout.strip() else None

    print(f"bootstrapping {repo} and adding {args.sources} Sources ...", file=sys.stderr)
    pc("repo", "bootstrap", str(repo))
    docs = make_documents(args.sources + args.runs)
    main_docs, extra_docs = docs[:args.sources], docs[args.sources:]
    lines = "".join(json.dumps({k: v for k, v in d.items() if k != "name"}) + "\n"
                    for d in main_docs)
    scope = f"repo:{os.path.realpath(repo)}"
    added = pc("source", "add", "--scope", scope, "--jsonl", stdin=lines)
    scope = added["scope_id"]
    extra_scopes = []
    for i, doc in enumerate(extra_docs):
        extra = f"project:bench-{i}"
        row = json.dumps({k: v for k, v in doc.items() if k != "name"}) + "\n"
        pc("source", "add", "--scope", extra, "--jsonl", stdin=row)
        extra_scopes.append(extra)

    serve = _Serve([*_cli(), "--db", db, "serve", "--role", "all", "--host", "127.0.0.1",
                    "--port", "0"], env)
    try:
        client = _Client(serve.wait(120), token)
        result = _measure(args, pc, client, scope, main_docs, extra_scopes, repo, db, env)
    finally:
        serve.stop()
    result["serve_log_lines"] = len(serve.lines)
    if not args.db:
        result["db_bytes"] = Path(db).stat().st_size
    return result


def _measure(args: argparse.Namespace, pc: Any, client: _Client, scope: str,
             docs: list[dict[str, Any]], extra_scopes: list[str], repo: Path, db: str,
             env: dict[str, str]) -> dict[str, Any]:
    first_query = docs[0]["name"]
    supervised = client.get("/v1/health").get("supervisor") is not None
    start = time.perf_counter()
    _ms, answer = client.post("/v1/topic-memory/flush", {"scope_id": scope})
    assert answer == {"status": "accepted"}, answer
    processor = None
    if not supervised:  # a build whose serve runs no Supervisor: process as the CLI does
        print("serve runs no Supervisor here: processing with topic process --once",
              file=sys.stderr)
        processor = subprocess.Popen([*_cli(), "--db", db, "topic", "process", "--scope",
                                      scope, "--once"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
    first_searchable = None
    covered_s = None
    next_status = start
    while time.perf_counter() - start < args.process_timeout:
        if first_searchable is None:
            _ms, hits = client.post("/v1/topic-memory/search",
                                    {"scope_id": scope, "query": first_query, "limit": 1})
            if hits["hits"]:
                first_searchable = time.perf_counter() - start
        if covered_s is not None and first_searchable is not None:
            break
        if covered_s is not None and time.perf_counter() - start > covered_s + 30:
            raise RuntimeError(f"covered, but no hit for {first_query!r}")
        if covered_s is None and time.perf_counter() >= next_status:
            next_status = time.perf_counter() + 1.0
            status = pc("topic", "status", "--scope", scope)["scopes"][0]
            if status["covered"]:
                covered_s = time.perf_counter() - start
                continue
            print(f"  processing: Cursor {status['cursor']} of {status['source_head']}",
                  file=sys.stderr)
        time.sleep(0.05)
    if processor is not None:
        processor.wait(timeout=60)
    if covered_s is None:
        raise RuntimeError(f"the Scope was not covered within {args.process_timeout} s")
    print(f"first searchable Topic after {first_searchable:.2f} s, covered after "
          f"{covered_s:.1f} s", file=sys.stderr)
    topic_count = _topic_count(db)  # before the accepted flushes add other Scopes' Topics

    times: dict[str, list[float]] = {k: [] for k in (
        "flush (idle)", "flush (accepted)", "search", "get", "prepare")}
    topics: set[str] = set()
    rng = random.Random(7)
    for i in range(args.runs):
        ms, answer = client.post("/v1/topic-memory/flush", {"scope_id": scope})
        assert answer == {"status": "idle"}, answer
        times["flush (idle)"].append(ms)
        ms, answer = client.post("/v1/topic-memory/flush", {"scope_id": extra_scopes[i]})
        assert answer == {"status": "accepted"}, answer
        times["flush (accepted)"].append(ms)
        doc = rng.choice(docs)
        query = f"how do we deploy the {doc['name']} service"
        ms, found = client.post("/v1/topic-memory/search",
                                {"scope_id": scope, "query": query, "limit": 10})
        times["search"].append(ms)
        hits = found["hits"]
        topics.update(h["artifact"]["artifact_id"] for h in hits)
        if hits:
            ms, _rev = client.post("/v1/topic-memory/get",
                                   {"scope_id": scope, "artifact": hits[0]["artifact"]})
            times["get"].append(ms)
        ms, _prepared = client.post("/v1/context/prepare",
                                    {"scope_id": scope, "query": query})
        times["prepare"].append(ms)

    head = pc("topic", "status", "--scope", scope)["scopes"][0]["source_head"]
    hook_times, injected = _hooks(args, docs, repo, db, env)
    status = pc("topic", "status", "--scope", scope)["scopes"][0]
    return {
        "processed_by": "the Supervisor of serve --role all" if supervised else
                        "topic process --once (this build's serve ran no Supervisor)",
        "scope_sources": head,
        "topics": topic_count,
        "flush_to_first_searchable_s": round(first_searchable or 0.0, 2),
        "flush_to_covered_s": round(covered_s, 1),
        "http": {k: _summary(v) for k, v in times.items() if v},
        "hooks": {k: _summary(v) for k, v in hook_times.items() if v},
        "source_head_after_hooks": status["source_head"],
        "prompt_hooks_injecting": injected["prompt"],
        "prompt_hooks_with_topics": injected["topics"],
    }


def _topic_count(db: str) -> int | None:
    """Current Topic Heads (SQLite only; None on OceanBase)."""
    if "://" in db:
        return None
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            return conn.execute("SELECT COUNT(*) FROM artifact_heads WHERE artifact_id "
                                "LIKE 'topic_art_%'").fetchone()[0]
        except sqlite3.Error:
            return None


def _hooks(args: argparse.Namespace, docs: list[dict[str, Any]], repo: Path, db: str,
           env: dict[str, str]) -> tuple[dict[str, list[float]], dict[str, int]]:
    """The hook timings and how many prompt hooks injected context (and Topics)."""
    times: dict[str, list[float]] = {"Stop hook (Source add)": [],
                                     "prompt hook (UserPromptSubmit)": []}
    injected = {"prompt": 0, "topics": 0}
    for i in range(args.hook_runs):
        name = docs[i % len(docs)]["name"]
        stop = {"session_id": f"bench-{i}", "cwd": str(repo), "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": f"Deployed the {name} service with its script "
                                          f"and ran make check: 12 passed (run {i})."}
        prompt = {"session_id": f"bench-{i}", "cwd": str(repo),
                  "hook_event_name": "UserPromptSubmit", "prompt": PROMPT.format(name=name)}
        for label, payload in (("Stop hook (Source add)", stop),
                               ("prompt hook (UserPromptSubmit)", prompt)):
            start = time.perf_counter()
            out = subprocess.run([*_cli(), "--db", db, "hook", "claude-code"],
                                 input=json.dumps(payload), capture_output=True, text=True,
                                 env=env, timeout=600)
            times[label].append((time.perf_counter() - start) * 1000)
            if payload is prompt:
                injected["prompt"] += "additionalContext" in out.stdout
                injected["topics"] += "[topic]" in out.stdout
    return times, injected


def _markdown(result: dict[str, Any]) -> str:
    rows = ["| operation | n | p50 ms | p95 ms | max ms |", "|---|---:|---:|---:|---:|"]
    for group in ("http", "hooks"):
        for name, s in result[group].items():
            rows.append(f"| {name} | {s['n']} | {s['p50_ms']} | {s['p95_ms']} | "
                        f"{s['max_ms']} |")
    env = result["environment"]
    prompts = result["hooks"].get("prompt hook (UserPromptSubmit)", {}).get("n", 0)
    return "\n".join([
        f"# serve latency, {result['date']}", "",
        f"`{result['command']}`", "",
        f"{result['scope_sources']} Sources in one Scope -> {result['topics']} Topics "
        f"(deterministic provider, processed by {result['processed_by']}); "
        f"flush -> first searchable Topic "
        f"{result['flush_to_first_searchable_s']} s, flush -> Scope covered "
        f"{result['flush_to_covered_s']} s.", "",
        *rows, "",
        f"Prompt hooks that injected context: {result['prompt_hooks_injecting']}, with "
        f"Topics: {result['prompt_hooks_with_topics']} (of {prompts}); "
        f"Scope Source head {result['scope_sources']} before the Stop hooks, "
        f"{result['source_head_after_hooks']} after.", "",
        f"Python {env['python']}, {env['cpus']} CPUs, load average {env['load_before']} "
        f"before / {env['load_after']} after.", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench serve-latency",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=int, default=300,
                        help="documents in the measured Scope (about one Topic each)")
    parser.add_argument("--runs", type=int, default=50, help="rounds of HTTP calls")
    parser.add_argument("--hook-runs", type=int, default=10)
    parser.add_argument("--db", help="a database URL (e.g. oceanbase://...; default a "
                                     "temporary SQLite file)")
    parser.add_argument("--process-timeout", type=float, default=1800.0,
                        help="seconds to wait for the Scope to be covered")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    if args.sources < 1 or args.runs < 1 or args.hook_runs < 0:
        parser.error("--sources and --runs must be >= 1, --hook-runs >= 0")
    load_before = round(os.getloadavg()[0], 1)
    with tempfile.TemporaryDirectory(prefix="pc-bench-serve-") as tmp:
        result = _run(args, Path(tmp))
    now = dt.datetime.now(dt.UTC)
    result.update(
        date=now.strftime("%Y-%m-%d %H:%M UTC"),
        command="python -m bench serve-latency " + " ".join(argv or sys.argv[2:]),
        environment={"python": platform.python_version(), "cpus": os.cpu_count(),
                     "load_before": load_before,
                     "load_after": round(os.getloadavg()[0], 1)})
    print(_markdown(result))
    if not args.no_write:
        args.out.mkdir(parents=True, exist_ok=True)
        stem = args.out / f"serve-latency-{now:%Y-%m-%d}"
        stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
        stem.with_suffix(".md").write_text(_markdown(result))
        print(f"wrote {stem}.json and .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
