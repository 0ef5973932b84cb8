"""A test generation provider for the Supervisor tests, registered in the Workers (child
processes) through the plugin registry: ``worker_plugins=["support.supervisor_models:
plugin"]`` and ``inference.generation_provider = "sup-test"``.

It answers like the deterministic provider, with switches read from the control
directory named by ``inference.generation_model`` (files, so a test can flip them while
Workers run in other processes):

- a Source text containing ``POISON`` makes every call over it raise (a provider
  fault: an ordinary failure, backed off per key);
- while ``<dir>/hang`` exists every call blocks (the Worker timeout);
- while ``<dir>/flaky`` exists a call over a Source text containing ``FLAKY`` raises
  (a fault that ends when the test removes the file);
- every call appends its stage to ``<dir>/calls`` (counts only, never text).
"""

from __future__ import annotations

import time
from pathlib import Path

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.topic.generation import StageRequest, StageResponse
from powercontext.plugins import hookimpl

NAME = "sup-test"
POISON = "POISON"
FLAKY = "FLAKY"


class SupervisorTestModel:
    def __init__(self, *, model: str | None = None, context_window_tokens: int = 125_000,
                 max_requests: int = 1, **_options: object) -> None:
        self.name = NAME
        self.model = model or "none"
        self.control = Path(model) if model else None
        self.context_window_tokens = context_window_tokens
        self.max_requests = max_requests
        self.settings: dict[str, object] = {}
        self._inner = DeterministicTopicModel(context_window_tokens, max_requests)

    async def generate(self, request: StageRequest) -> StageResponse:
        if self.control is not None:
            with open(self.control / "calls", "a", encoding="utf-8") as fh:
                fh.write(request.stage + "\n")
            while (self.control / "hang").exists():
                time.sleep(0.05)  # blocks the Worker: only the Supervisor's timeout ends it
        if (FLAKY in request.input_json and self.control is not None
                and (self.control / "flaky").exists()):
            raise RuntimeError("the test provider is down for this Scope for now")
        if POISON in request.input_json:
            raise RuntimeError("the test provider is down for this Scope")
        return await self._inner.generate(request)


class _Plugin:
    @hookimpl
    def powercontext_register_topic_generation_models(self, register):
        register(NAME, lambda **options: SupervisorTestModel(**options))


plugin = _Plugin()


def calls(control: Path) -> int:
    """How many stage calls the Workers made so far."""
    path = control / "calls"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0
