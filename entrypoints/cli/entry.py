"""The ``powercontext`` console script: a ``hook claude-code`` prompt that a running
``powercontext hook daemon`` can answer is answered by it
(:func:`powercontext.entrypoints.cli.hook_daemon.forward`, standard library only); every
other command line runs :func:`powercontext.entrypoints.cli.main.main`."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Entry point (``[project.scripts]``; also ``python -m
    powercontext.entrypoints.cli.entry``)."""
    from powercontext.entrypoints.cli.hook_daemon import forward
    from powercontext.entrypoints.cli.streams import configure_output

    # the daemon answers only a hook, whose output is UTF-8 (main() decides exactly)
    configure_output("hook" in sys.argv[1:])
    if forward(sys.argv[1:]) is not None:
        return
    from powercontext.entrypoints.cli.main import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
