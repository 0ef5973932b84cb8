"""Deprecated old name of :mod:`powercontext.entrypoints.quickstart`, kept for one release.

``python -m powercontext.quickstart [--repo PATH] [--db PATH]`` (the quickstart's command
before the entry points moved to :mod:`powercontext.entrypoints`) still runs the same
walk-through. New commands name ``python -m powercontext.entrypoints.quickstart``.
"""

from powercontext.entrypoints.quickstart import main, run_quickstart, run_topic_quickstart

__all__ = ["main", "run_quickstart", "run_topic_quickstart"]
