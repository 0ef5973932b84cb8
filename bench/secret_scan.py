"""Secret-scan throughput (issue 13/14 follow-up, p2-scanner): the default scanner
(core rules + detect-secrets plugins) on megabyte inputs of different shapes.

``python -m bench scanner [--scale 1.0] [--reference] [--profile SHAPE] [--only SHAPE,...]``

Shapes (deterministic, seeded): a 1 MB single line of prose, 1 MB of base64 on one
line, 1 MB of minified JSON, 4 MB of multi-line Markdown, a Source with 32,768 metadata
pairs, and one LoCoMo conversation (``/work/shared/data/locomo-dev.json``) as text.
Printed per shape: MB, CPU seconds (``time.process_time``), MB/s and the number of
findings. ``--scale`` multiplies every size (0.1 for a quick look); ``--reference``
times the straightforward scan (:mod:`bench.secret_scan_reference`, the code before the
scanner was made fast) instead; ``--profile SHAPE`` prints the top cProfile entries for
that shape instead.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import json
import pstats
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from powercontext.adapters.secret_scanner import default_scanner
from powercontext.core.models import Source
from powercontext.core.secrets import source_findings

MB = 1 << 20
LOCOMO = Path("/work/shared/data/locomo-dev.json")
_WORDS = ("the", "memory", "agent", "source", "topic", "window", "secret", "token", "key",
          "password", "vault", "commit", "rotate", "review", "fixed", "build", "a", "of",
          "and", "is", "in", "never", "stored", "api", "revision", "hash", "user", "note")


def _prose(rng: random.Random, size: int, sep: str = " ") -> str:
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(_WORDS)
        if rng.random() < 0.08:
            w += rng.choice(".,;:")
        out.append(w)
        n += len(w) + 1
    return sep.join(out)[:size]


def _base64(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size * 3 // 4 + 3)).decode()[:size]


def _json(rng: random.Random, size: int) -> str:
    items = []
    n = 0
    while n < size:
        item = {"id": rng.randrange(10**9), "name": _prose(rng, 20), "ok": rng.random() < .5,
                "tags": [rng.choice(_WORDS) for _ in range(3)], "score": rng.random()}
        items.append(item)
        n += 120
    return json.dumps(items, separators=(",", ":"))[:size]


def _markdown(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    n = 0
    while n < size:
        r = rng.random()
        if r < 0.1:
            line = "## " + _prose(rng, 30)
        elif r < 0.2:
            line = "- " + _prose(rng, 60)
        elif r < 0.25:
            line = "    x = compute(" + rng.choice(_WORDS) + ")"
        else:
            line = _prose(rng, rng.randrange(40, 200))
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)[:size]


def _locomo() -> str:
    data = json.loads(LOCOMO.read_text())
    conv = data[0]["conversation"]
    turns = []
    for value in conv.values():
        if isinstance(value, list):
            for t in value:
                turns.append(f"{t.get('speaker', '')}: {t.get('text', '')}")
    return "\n".join(turns)


def _source(content: str, metadata: tuple[tuple[str, str], ...] = ()) -> Source:
    return Source("src_bench", "file", content, "0" * 64, "file:///bench.txt", metadata)


def shapes(scale: float) -> dict[str, Callable[[], Source]]:
    size = max(1024, int(MB * scale))

    def meta() -> Source:
        rng = random.Random(5)
        n = max(64, int(32768 * scale))
        pairs = tuple(sorted((f"k{i:06d}", _prose(rng, 24)) for i in range(n)))
        return _source("", pairs)

    return {
        "prose-line": lambda: _source(_prose(random.Random(1), size)),
        "base64-line": lambda: _source(_base64(random.Random(2), size)),
        "json-min": lambda: _source(_json(random.Random(3), size)),
        "markdown-4mb": lambda: _source(_markdown(random.Random(4), 4 * size)),
        "metadata-32k": meta,
        "locomo": lambda: _source(_locomo()),
    }


def _size(s: Source) -> int:
    return len(s.content) + sum(len(k) + len(v) for k, v in s.metadata)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench scanner")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--profile", default=None)
    p.add_argument("--only", default=None)
    p.add_argument("--reference", action="store_true")
    a = p.parse_args(argv)
    scan = default_scanner().scan
    scan("warm up: load the detect-secrets plugins")
    findings = source_findings
    if a.reference:
        from bench.secret_scan_reference import reference_scan, reference_source_findings
        scan, findings = reference_scan, reference_source_findings
    table = shapes(a.scale)
    if a.profile:
        src = table[a.profile]()
        prof = cProfile.Profile()
        prof.enable()
        findings(src, scan)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        return 0
    names = a.only.split(",") if a.only else list(table)
    print("reference (before)" if a.reference else "optimised (after)")
    print(f"{'shape':<14}{'MB':>8}{'cpu s':>9}{'MB/s':>10}{'found':>7}")
    for name in names:
        src = table[name]()
        t0 = time.process_time()
        found = findings(src, scan)
        cpu = time.process_time() - t0
        mb = _size(src) / MB
        print(f"{name:<14}{mb:>8.2f}{cpu:>9.2f}{mb / max(cpu, 1e-9):>10.2f}{len(found):>7}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
