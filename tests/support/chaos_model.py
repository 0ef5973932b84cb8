"""The ``chaos`` Topic generation provider of the chaos tests (tests/chaos/): the
deterministic provider plus delays and blocking that a test controls from outside the
process, through files in the directory ``$PC_CHAOS_DIR`` (a Worker is a child process
of the Supervisor, so a test cannot reach into it; files reach every process).

Registered through the plugin registry exactly as a third-party provider is: this module
is a plugin (``powercontext_register_topic_generation_models`` registers ``chaos``), and
:func:`install_entry_point` writes a ``.dist-info`` with a ``powercontext`` entry point
for it, so a Supervisor process and its Worker children (``PYTHONPATH`` = that directory
and ``tests/``) find it by the configuration's ``generation_provider = "chaos"``.

The control directory is the configuration's ``inference.generation_base_url`` (the
chaos provider's "endpoint"; a plain path), else ``$PC_CHAOS_DIR``. Control files there
(each read on every stage call; no file, no effect):

* ``block`` / ``block-<stage>``: while it exists, a stage call (of that stage) waits
  (polling every 20 ms) -- unless the file holds text and the stage input does not
  contain that text (a per-Scope block: put a word only that Scope's Sources carry), or
  ``release-<pid>`` exists (this process goes on). A blocked call first writes
  ``blocked-<pid>`` (its text: the stage).
* ``sleep-<stage>`` (``probe``, ``evolve``, ...): seconds (a float) to sleep before
  answering that stage.
* ``fail-<stage>``: that stage raises a provider failure when the file exists (its text,
  if any, is a substring the input must contain): a :class:`ChaosProviderError` whose
  message quotes the stage input, as an SDK error echoing a rejected request would (so
  the log tests see what a careless log of an exception message would leak).
  ``fail-once-<stage>``: the same, and the file is removed (one failure). With a file
  ``fail-kind`` holding ``backend`` the error is a :class:`ChaosBackendError` (a
  ``BackendError``, as a plugin provider may raise) instead.

Every call appends one line ``<pid> <stage> <sequence>`` to ``calls`` (no Source text: the
log canary test greps everything the processes write) and writes ``started-<pid>`` the
first time a process calls the model (its text: ``<pid> <parent pid>``), so a test can
tell which pid is a Worker in the middle of generation, and whose child it is.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.errors import BackendError
from powercontext.core.topic.generation import StageRequest, StageResponse
from powercontext.plugins import hookimpl

__all__ = ["CHAOS_DIR_ENV", "NAME", "ChaosBackendError", "ChaosProviderError",
           "ChaosTopicModel", "calls",
           "install_entry_point", "powercontext_register_topic_generation_models"]

NAME = "chaos"
CHAOS_DIR_ENV = "PC_CHAOS_DIR"
_POLL = 0.02


def _quoting(request: StageRequest) -> str:
    return f"chaos provider rejected the {request.stage} request: {request.input_json[:300]}"


class ChaosProviderError(RuntimeError):
    """A provider failure that quotes the request (its first 300 characters of input),
    as an SDK's error echoing a rejected request does."""

    def __init__(self, request: StageRequest) -> None:
        super().__init__(_quoting(request))


class ChaosBackendError(BackendError):
    """The same, raised as a powercontext error (a plugin may raise BackendError)."""

    def __init__(self, request: StageRequest) -> None:
        super().__init__(_quoting(request))


class ChaosTopicModel:
    """``TopicGenerationModel`` ``chaos``: :class:`DeterministicTopicModel`'s answers
    (byte for byte), after the waits the control files of ``control_dir`` (default
    ``$PC_CHAOS_DIR``; None: no control, a plain deterministic provider) ask for."""

    def __init__(self, context_window_tokens: int = 125_000, max_requests: int = 1,
                 control_dir: str | os.PathLike[str] | None = None, **_options: Any) -> None:
        self.inner = DeterministicTopicModel(context_window_tokens, max_requests)
        chosen = control_dir if control_dir is not None else os.environ.get(CHAOS_DIR_ENV)
        self.control = Path(chosen) if chosen else None
        self._calls = 0

    name = NAME
    model = NAME

    @property
    def context_window_tokens(self) -> int:
        return self.inner.context_window_tokens

    @property
    def max_requests(self) -> int:
        return self.inner.max_requests

    def _matches(self, path: Path, request: StageRequest) -> bool | None:
        """None: no such file; else whether it applies to this request."""
        try:
            text = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return not text or text in request.input_json

    def _blocked(self, control: Path, request: StageRequest, pid: int) -> bool:
        if (control / f"release-{pid}").exists():
            return False
        return bool(self._matches(control / "block", request)
                    or self._matches(control / f"block-{request.stage}", request))

    async def generate(self, request: StageRequest) -> StageResponse:
        control = self.control
        if control is not None:
            self._calls += 1
            pid = os.getpid()
            started = control / f"started-{pid}"
            if not started.exists():
                started.write_text(f"{pid} {os.getppid()}")
            with (control / "calls").open("a", encoding="utf-8") as fh:
                fh.write(f"{pid} {request.stage} {self._calls}\n")
            if self._blocked(control, request, pid):
                (control / f"blocked-{pid}").write_text(request.stage)
                while self._blocked(control, request, pid):
                    await asyncio.sleep(_POLL)
            delay = control / f"sleep-{request.stage}"
            if delay.exists():
                await asyncio.sleep(float(delay.read_text() or "0"))
            once = control / f"fail-once-{request.stage}"
            error = (ChaosBackendError if (control / "fail-kind").exists()
                     and (control / "fail-kind").read_text().strip() == "backend"
                     else ChaosProviderError)
            if self._matches(once, request):
                once.unlink(missing_ok=True)
                raise error(request)
            if self._matches(control / f"fail-{request.stage}", request):
                raise error(request)
        return await self.inner.generate(request)


@hookimpl
def powercontext_register_topic_generation_models(register: Any) -> None:
    register(NAME, _factory)


def _factory(*, context_window_tokens: int = 125_000, max_requests: int = 1,
             base_url: str | None = None, **_options: Any) -> ChaosTopicModel:
    return ChaosTopicModel(context_window_tokens, max_requests, control_dir=base_url)


def install_entry_point(directory: str | os.PathLike[str]) -> Path:
    """Write ``pc_chaos_plugin-1.0.dist-info`` (entry point ``powercontext``: ``chaos =
    support.chaos_model``) into ``directory`` and return it: put it and ``tests/`` on
    ``PYTHONPATH`` and every ``Registry()`` of that process sees the provider."""
    root = Path(directory)
    dist = root / "pc_chaos_plugin-1.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pc-chaos-plugin\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[powercontext]\nchaos = support.chaos_model\n", encoding="utf-8")
    return root


def calls(control_dir: str | os.PathLike[str]) -> list[tuple[int, str]]:
    """The ``(pid, stage)`` of every stage call so far, in order."""
    path = Path(control_dir) / "calls"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) == 3:
            out.append((int(parts[0]), parts[1]))
    return out
