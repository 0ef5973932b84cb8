"""Deprecated old name of :mod:`powercontext.entrypoints.supervisor`, kept for one release.

``python -m powercontext.supervisor`` (the background runner's command before the entry
points moved to :mod:`powercontext.entrypoints`, maybe written into a service unit) still
starts the same Supervisor with the same options and output. New commands name
``python -m powercontext.entrypoints.supervisor``.
"""

from powercontext.entrypoints.supervisor import (
    ArtifactProcessingSupervisor,
    SupervisorStats,
    main,
)

__all__ = ["ArtifactProcessingSupervisor", "SupervisorStats", "main"]
