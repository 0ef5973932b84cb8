"""``python -m bench.perf ...``: the performance benchmark (see :mod:`bench.perf`)."""

from __future__ import annotations

import sys

from bench.perf.cli import main

sys.exit(main())
