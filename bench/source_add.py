"""The Source path on large inputs: ``source add --jsonl`` in process, stage by stage.

``python -m bench source-add [--scale 1.0] [--only SHAPE,...] [--reference]``

Shapes: one JSON line with 10,000 / 70,000 / 100,000 metadata keys, one line whose
content is 4 MB, and 100,000 short lines. Printed per shape and stage, CPU seconds
(``time.process_time``): ``parse`` (:func:`~powercontext.entrypoints.cli.sources.read_jsonl`:
the JSON, the duplicate-key check, the Source and its hash), ``check`` (the store's
checks before its transaction: normalisation, hash, secrets) and ``store``
(``put_scoped_sources`` into a fresh SQLite file: the Sources, their journal rows and
the Pending raise in one transaction). ``--reference`` also times the duplicate-key
check that counted each key in the list of keys (quadratic: 70,000 keys took 56 s), on
the metadata shapes up to 10,000 keys. Every stage should grow linearly with the input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SHAPES = ("meta10k", "meta70k", "meta100k", "line4mb", "lines100k")


def _text(shape: str, scale: float) -> str:
    if shape.startswith("meta"):
        n = int(int(shape[4:-1]) * 1000 * scale)
        meta = {f"key{i}": f"value {i}" for i in range(n)}
        return json.dumps({"kind": "note", "content": "release notes", "metadata": meta})
    if shape == "line4mb":
        words = ["deploy", "window", "cursor", "lease", "topic", "pending", "probe"]
        n = int(4 * 1024 * 1024 * scale)
        body = " ".join(words[i % len(words)] for i in range(n // 6))[:n]
        return json.dumps({"kind": "note", "content": body})
    n = int(100_000 * scale)
    return "\n".join(json.dumps({"kind": "chat_turn", "content": f"user: line {i} about "
                                 "the deploy"}) for i in range(n))


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def _quadratic_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    if dup is not None:
        raise ValueError(f"duplicate key {dup!r}")
    return dict(pairs)


def run(shape: str, scale: float, reference: bool, root: Path) -> dict[str, float]:
    from powercontext.adapters.sqlite import SQLiteTopicBackend
    from powercontext.entrypoints.cli.sources import read_jsonl

    text = _text(shape, scale)
    figures: dict[str, float] = {"MB": len(text.encode()) / 1e6}
    figures["parse"], items = _timed(lambda: read_jsonl(text, shape))
    sources = [s for _, s in items]
    backend = SQLiteTopicBackend(str(root / f"{shape}.db"))
    figures["check"], _ = _timed(lambda: backend.source_journal.check_new_sources(sources))

    async def store() -> None:
        await backend.put_scoped_sources("bench:source-add", sources)
        await backend.close()

    figures["store"], _ = _timed(lambda: asyncio.run(store()))
    if reference and shape.startswith("meta") and int(shape[4:-1]) * scale <= 10:
        figures["parse_reference"], _ = _timed(
            lambda: [json.loads(line, object_pairs_hook=_quadratic_hook)
                     for line in text.splitlines()])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench source-add",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default=",".join(SHAPES))
    parser.add_argument("--reference", action="store_true")
    args = parser.parse_args(argv)
    shapes = [s for s in args.only.split(",") if s]
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown:
        print(f"unknown shapes {unknown}; known: {', '.join(SHAPES)}", file=sys.stderr)
        return 2
    print(f"{'shape':<10} {'MB':>6} {'parse s':>8} {'check s':>8} {'store s':>8} "
          f"{'ref parse s':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            f = run(shape, args.scale, args.reference, Path(tmp))
            ref = f"{f['parse_reference']:11.2f}" if "parse_reference" in f else f"{'-':>11}"
            print(f"{shape:<10} {f['MB']:6.2f} {f['parse']:8.2f} {f['check']:8.2f} "
                  f"{f['store']:8.2f} {ref}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
