"""The driving side: what starts powercontext and calls the application.

- :mod:`powercontext.entrypoints.cli`, the ``powercontext`` command (and the agent hooks
  it runs, with the per-host ``setup`` in :mod:`~powercontext.entrypoints.cli.hosts`);
- :mod:`powercontext.entrypoints.http`, the HTTP API and the dashboard (``powercontext
  serve``);
- :mod:`powercontext.entrypoints.mcp`, the MCP server;
- the process entries :mod:`~powercontext.entrypoints.supervisor` (``python -m
  powercontext.entrypoints.supervisor``), :mod:`~powercontext.entrypoints.topic_worker`
  (a Supervisor's child process) and :mod:`~powercontext.entrypoints.quickstart`.

This package sits on top of the layers (docs/architecture.md "The layers"): it imports
the application, the adapters and the core; nothing below imports it.
"""
