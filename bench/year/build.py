"""Building the year once (``--data DIR``): the 20 repositories' Memories, their Scopes'
conversation turns and the Topics the processing grows from them, each through the
path a user's tools take, timed stage by stage (CPU and wall seconds).

* **Memories**: ``MemoryService.remember(key="repo:<path>", mode="append")``, 500
  entries per call (what ``remember`` with many entries or a bulk ``repo bootstrap``
  does; the one bulk step, said so in the report).
* **Turns**: each turn the ``conversation`` Source the Stop hook and ``powercontext
  import claude-code`` store (:func:`~powercontext.entrypoints.cli.hook_turn.
  conversation_source`: bounded, secrets checked, id from Scope and turn), written 50 per
  transaction through ``put_scoped_sources`` exactly as ``import`` writes them.
* **Topics**: ``open_topic_processor(...).process(scope)`` (what ``topic process
  --once`` does) with the ``deterministic`` generation provider, Scope after Scope,
  every Window until the Cursor reaches the head.

A manifest (``manifest-<backend>.json`` in the data directory) says what was built:
scale, seed, the commit of the tree, the counts and each stage's seconds. A second run
with the same backend, scale and seed reuses the database (SQLite; a seekdb server is
started per run, so seekdb is built every run).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.perf.common import ROOT, log
from bench.year import corpus

ENTRY_BATCH = 500
SOURCE_BATCH = 50  # entrypoints/cli/importer.py BATCH


def commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except OSError:
        return "unknown"


def environment(data: Path) -> dict[str, str]:
    """The variables every step runs with: the deterministic provider, a home of its
    own (never the user's configuration), the deterministic embedder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(POWERCONTEXT_HOME=str(data / "home"),
               POWERCONTEXT_INFERENCE_GENERATION_PROVIDER="deterministic",
               POWERCONTEXT_EMBEDDING="deterministic")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


@dataclass
class Stage:
    cpu_s: float = 0.0
    wall_s: float = 0.0
    count: int = 0

    def public(self) -> dict[str, float]:
        return {"cpu_s": round(self.cpu_s, 2), "wall_s": round(self.wall_s, 2),
                "count": self.count}


@dataclass
class Built:
    """What a build made (the manifest's body)."""

    backend: str
    db: str
    scale: float
    seed: int
    commit: str = ""
    memory_scale: float | None = None
    repos: list[str] = field(default_factory=list)
    entries: list[int] = field(default_factory=list)
    sources_per_scope: int = 0
    topics: int = 0
    revisions: int = 0
    windows: int = 0
    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    #: per Scope: (sources, windows, topics created, cpu s, wall s) of its processing
    processing: list[list[float]] = field(default_factory=list)
    maxrss_mb: float = 0.0
    built_at: str = ""


def repo_dirs(data: Path) -> list[Path]:
    """The 20 repositories (a ``.git`` folder each: the keys are their paths)."""
    out = []
    for r in range(corpus.REPOS):
        d = data / "repos" / f"repo-{r:02d}"
        (d / ".git").mkdir(parents=True, exist_ok=True)
        out.append(d)
    return out


class _Clock:
    def __init__(self, stage: Stage) -> None:
        self.stage = stage

    def __enter__(self) -> _Clock:
        self.c, self.w = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stage.cpu_s += time.process_time() - self.c
        self.stage.wall_s += time.perf_counter() - self.w


async def build(db: str, backend: str, data: Path, scale: float, seed: int,
                material: corpus.Material, memory_scale: float | None = None) -> Built:
    """Build the year into ``db`` (a path or URL), the Memories at ``memory_scale``
    (default ``scale``); returns what was built."""
    from powercontext import MemoryEntryInput, open_service, open_topic_processor
    from powercontext.entrypoints.cli.hook_turn import conversation_source
    from powercontext.memory_names import repo_key

    os.environ.update(environment(data))
    mscale = scale if memory_scale is None else memory_scale
    built = Built(backend, db, scale, seed, commit(), mscale)
    dirs = repo_dirs(data)
    built.repos = [repo_key(d) for d in dirs]
    built.entries = corpus.repo_entries(mscale)
    built.sources_per_scope = corpus.scope_sources(scale)
    mem, src, proc = Stage(), Stage(), Stage()
    async with open_service(db, embedding="deterministic") as svc:
        for r, (key, n) in enumerate(zip(built.repos, built.entries, strict=True)):
            texts = corpus.entries(material, r, n, seed)
            with _Clock(mem):
                for j in range(0, n, ENTRY_BATCH):
                    await svc.remember(None, key=key, mode="append", entries=[
                        MemoryEntryInput("fact", t) for t in texts[j:j + ENTRY_BATCH]])
            mem.count += n
        log(f"memories: {mem.count} entries in {mem.wall_s:.1f} s ({mem.cpu_s:.1f} s CPU)")
        processor = open_topic_processor(db, embedding="deterministic")
        try:
            tb = processor.service.backend
            for r, key in enumerate(built.repos):
                with _Clock(src):
                    batch: list[Any] = []
                    for t in corpus.turns(material, r, built.sources_per_scope, seed):
                        s = conversation_source(
                            scope_id=key, agent="claude-code", session=t.session, turn=t.turn,
                            prompt=t.prompt, reply=t.reply,
                            metadata={"agent": "claude-code", "session_id": t.session},
                            scanner=svc.secret_scanner)
                        if s is not None:
                            batch.append(s)
                        if len(batch) == SOURCE_BATCH:
                            await tb.put_scoped_sources(key, batch)
                            src.count += len(batch)
                            batch = []
                    if batch:
                        await tb.put_scoped_sources(key, batch)
                        src.count += len(batch)
                one = Stage()
                with _Clock(one):
                    report = await processor.process(key)
                created = sum(len(w.created) for w in report.windows)
                built.topics += created
                built.revisions += created + sum(len(w.updated) for w in report.windows)
                built.windows += len(report.windows)
                proc.cpu_s += one.cpu_s
                proc.wall_s += one.wall_s
                proc.count += built.sources_per_scope
                built.processing.append([built.sources_per_scope, len(report.windows), created,
                                         round(one.cpu_s, 2), round(one.wall_s, 2)])
                log(f"scope {r + 1}/{len(built.repos)}: {built.sources_per_scope} turns, "
                    f"{len(report.windows)} Windows, {created} Topics in {one.wall_s:.1f} s "
                    f"({one.cpu_s:.1f} s CPU); {built.topics} Topics so far"
                    + (f"; stopped: {report.stopped} {report.reason}" if report.stopped else ""))
        finally:
            await processor.service.close()
    built.stages = {"memories": mem.public(), "sources": src.public(),
                    "processing": proc.public()}
    built.maxrss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    built.built_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return built


def manifest_path(data: Path, backend: str) -> Path:
    return data / f"manifest-{backend}.json"


def load_manifest(data: Path, backend: str, scale: float, seed: int,
                  memory_scale: float | None = None) -> Built | None:
    """The manifest of a finished build of ``backend`` at ``scale`` and ``seed`` whose
    database is still there, else None."""
    path = manifest_path(data, backend)
    if not path.exists():
        return None
    body = json.loads(path.read_text(encoding="utf-8"))
    mscale = scale if memory_scale is None else memory_scale
    if (body.get("scale"), body.get("seed"), body.get("memory_scale", scale)) != (
            scale, seed, mscale):
        return None
    if backend == "sqlite" and not Path(body["db"]).exists():
        return None
    return Built(**body)


def save_manifest(data: Path, built: Built) -> None:
    manifest_path(data, built.backend).write_text(
        json.dumps(built.__dict__, indent=2) + "\n", encoding="utf-8")
