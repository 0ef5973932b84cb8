"""``python -m bench [NAME [ARGS...]]``: run one benchmark, or every benchmark with its
defaults when no name is given.

Each benchmark is a module ``bench.<module>`` with ``main(argv: list[str] | None) -> int``
(its own argparse); add a line to :data:`BENCHMARKS` to register a new one.
"""

from __future__ import annotations

import importlib
import sys

#: benchmark name -> module implementing ``main(argv) -> int``
BENCHMARKS: dict[str, str] = {
    "agent-eval": "bench.agent_eval",
    "hooks": "bench.hooks",
    "hook-sizes": "bench.hook_sizes",
    "locomo": "bench.locomo_main",
    "peer": "bench.peer",
    "perf": "bench.perf",
    "serve-latency": "bench.serve_latency",
    "topic-locomo": "bench.topic_locomo",
    "scanner": "bench.secret_scan",
    "dashboard": "bench.dashboard",
    "evidence": "bench.evidence",
    "source-add": "bench.source_add",
    "year": "bench.year",
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        status = 0
        for module in BENCHMARKS.values():
            status = importlib.import_module(module).main([]) or status
        return status
    name, rest = args[0], args[1:]
    if name in ("-h", "--help"):
        print(__doc__.strip())
        print("benchmarks: " + ", ".join(BENCHMARKS))
        return 0
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    return importlib.import_module(BENCHMARKS[name]).main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
