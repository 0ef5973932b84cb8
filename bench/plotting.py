"""matplotlib for the benchmarks' PNG plots, imported lazily: it comes with the dev
extra (`make test`), so a benchmark without it still writes its JSON and tables."""

from __future__ import annotations

from typing import Any

#: What a benchmark prints instead of a plot when matplotlib is missing.
NO_PLOT = ("no plot: matplotlib is not installed (it comes with `make test`, the dev "
           "extra); --no-plot skips this")


def pyplot() -> Any | None:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, or None when matplotlib
    is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
