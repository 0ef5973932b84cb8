"""Helpers of the Supervisor tests: a configuration with the test provider
(:mod:`support.supervisor_models`), Sources, a Supervisor started on a database, and
:func:`until`, which waits for a condition by polling a bounded number of times (never
an assertion on the clock)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from powercontext import make_source
from powercontext.configuration import load_config
from powercontext.entrypoints.supervisor import ArtifactProcessingSupervisor

PLUGIN = "support.supervisor_models:plugin"


def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """No ``POWERCONTEXT_*`` from outside; a home in ``tmp_path``; no embedding."""
    import os

    for k in [k for k in os.environ if k.startswith("POWERCONTEXT_")]:
        monkeypatch.delenv(k)
    env = {"POWERCONTEXT_HOME": str(tmp_path / "home"), "POWERCONTEXT_EMBEDDING": "none"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def write_config(tmp_path: Path, control: Path, **runtime: Any) -> Any:
    """A loaded configuration: provider ``sup-test`` controlled by ``control``, a fast
    poll, and the given ``[runtime]`` values."""
    control.mkdir(parents=True, exist_ok=True)
    values = {"artifact_processing_poll_seconds": 0.05, **runtime}
    lines = ["[runtime]"] + [f"{k} = {v!r}" for k, v in values.items()]
    lines += ["[inference]", 'generation_provider = "sup-test"',
              f"generation_model = {str(control)!r}"]
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_config(path, env={"POWERCONTEXT_HOME": str(tmp_path / "home")})


def sources(scope: str, n: int = 2, *, text: str = "deploys go out on Tuesdays") -> list[Any]:
    tag = "".join(c for c in scope if c.isalnum())
    return [make_source(f"src_{tag}_{i}", "chat_turn", f"user: {text} (note {i})")
            for i in range(n)]


@contextlib.asynccontextmanager
async def supervisor(db: str, config: Any, **kw: Any
                     ) -> AsyncIterator[ArtifactProcessingSupervisor]:
    """A started Supervisor with the test provider in its Workers; stopped on exit."""
    kw.setdefault("worker_plugins", [PLUGIN])
    sup = ArtifactProcessingSupervisor(db, config, **kw)
    await sup.start()
    try:
        yield sup
    finally:
        await sup.stop()


async def until(predicate: Callable[[], Any], what: str, *, polls: int = 1_200,
                every: float = 0.05) -> Any:
    """Poll ``predicate`` (sync or async) until it returns something truthy; fail
    naming ``what`` after ``polls`` polls."""
    for _ in range(polls):
        got = predicate()
        if asyncio.iscoroutine(got):
            got = await got
        if got:
            return got
        await asyncio.sleep(every)
    pytest.fail(f"never happened: {what}")
