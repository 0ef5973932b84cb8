"""A scripted TopicGenerationModel for the processing tests: a fake at the port (the
real-provider evidence is the loopback servers' tests). Each stage answers with the
deterministic provider unless a script overrides it; every call is recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.topic.generation import StageRequest, StageResponse

Script = Callable[[StageRequest, dict[str, Any]], object]


class ScriptedTopicModel:
    """``scripts`` maps a stage to ``fn(request, input) -> output`` (a str is sent
    as is, anything else JSON-encoded; an exception is raised as the provider's)."""

    def __init__(self, scripts: dict[str, Script] | None = None, *,
                 context_window_tokens: int = 125_000, max_requests: int = 1) -> None:
        self.scripts = dict(scripts or {})
        self.inner = DeterministicTopicModel(context_window_tokens, max_requests)
        self.calls: list[StageRequest] = []

    name = "scripted"
    model = "scripted"

    @property
    def context_window_tokens(self) -> int:
        return self.inner.context_window_tokens

    @property
    def max_requests(self) -> int:
        return self.inner.max_requests

    def stages(self) -> list[str]:
        return [c.stage for c in self.calls]

    async def generate(self, request: StageRequest) -> StageResponse:
        self.calls.append(request)
        script = self.scripts.get(request.stage)
        if script is None:
            return await self.inner.generate(request)
        out = script(request, json.loads(request.input_json))
        text = out if isinstance(out, str) else json.dumps(out)
        return StageResponse(text, None, 1)
