"""The hooks' log, ``<data dir>/logs/hooks.log``: a bounded log written through the
standard library's :mod:`logging` with a :class:`~logging.handlers.RotatingFileHandler`
(at most :data:`MAX_LOG_BYTES` per file, :data:`LOG_BACKUPS` older files kept as
``hooks.log.1`` ...). It holds each prompt's receipts (what was injected and why: one
line per prompt) and every hook failure with its traceback. Logging never breaks a
hook: a log that cannot be written is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["LOG_BACKUPS", "MAX_LOG_BYTES", "log_failure", "log_path", "log_receipts",
           "log_refused"]

#: One log file holds at most this many bytes before it is rotated.
MAX_LOG_BYTES = 1_000_000
#: Rotated files kept beside ``hooks.log``.
LOG_BACKUPS = 3
_LOGGER = "powercontext.hooks"


def log_path() -> Path:
    """``<data dir>/logs/hooks.log`` (``$POWERCONTEXT_HOME/logs/hooks.log`` when set)."""
    from powercontext.paths import data_dir

    return data_dir() / "logs" / "hooks.log"


def _logger() -> Any:
    """The hooks' logger, its one handler writing to :func:`log_path` (a handler of an
    earlier data directory in this process, e.g. in tests, is replaced)."""
    import logging
    import logging.handlers
    import time

    path = log_path()
    logger = logging.getLogger(_LOGGER)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    for handler in list(logger.handlers):
        if getattr(handler, "baseFilename", None) != str(path):
            logger.removeHandler(handler)
            handler.close()
    if not logger.handlers:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=MAX_LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8",
            errors="replace")
        formatter = logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%dT%H:%M:%SZ")
        formatter.converter = time.gmtime
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    return logger


def log_failure(event: str, exc: BaseException) -> str | None:
    """Log a failed hook with its traceback; the log's path, or None when it could not be
    written."""
    try:
        logger = _logger()
        logger.error("hook %s failed (exit 0 kept for the agent):", event, exc_info=exc)
        return str(log_path())
    except Exception:  # the log is best effort too
        return None


def log_refused(event: str, message: str) -> str | None:
    """Log input a hook refused at its boundary in one line, without a traceback (it is
    the agent's input, not a fault); the log's path, or None."""
    try:
        _logger().error("hook %s refused its input (exit 0 kept for the agent): %s",
                        event, message)
        return str(log_path())
    except Exception:  # the log is best effort too
        return None


def log_receipts(event: str, repo: str, receipts: list[dict[str, Any]]) -> None:
    """One line for a prompt: ``hook <event> prompt <repo> injected N <receipts JSON>``
    (each receipt: which channel found the item, its rank there, the rank it got, the
    matched intents and terms)."""
    try:
        _logger().info("hook %s prompt %s injected %d %s", event, repo, len(receipts),
                       json.dumps(receipts, ensure_ascii=False, separators=(",", ":")))
    except Exception:  # the log is best effort
        return
