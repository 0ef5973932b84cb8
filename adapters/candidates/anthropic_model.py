"""A GenerationModel over the Anthropic Messages API (Memory RFC, "Candidate
generation": the optional model extractor), through the ``anthropic`` SDK.

Needs the ``anthropic`` extra; the SDK is imported on the first call. ``max_retries=0``
and a per-request timeout: a failure is reported at once as BackendError, and the
pipeline goes on without the model (the Sources stay stored).

The JSON answer is asked for as the input of one forced tool call (``tools`` with an
``input_schema`` and ``tool_choice={"type": "tool", ...}``); the tool input is
serialized back to JSON text for :func:`~powercontext.core.extraction.parse_model_answer`.
A server that answers with text instead (no tool_use block) has its text blocks used
as the answer, validated the same way.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any, final

from powercontext.core.errors import (
    BackendError,
    CapabilityNotSupportedError,
    InvalidInputError,
)

__all__ = ["ANSWER_TOOL", "AnthropicGenerationModel"]

ANSWER_TOOL: dict[str, Any] = {
    "name": "record_memory_entries",
    "description": "Record the durable memory entries extracted from the Sources "
                   "(an empty list when nothing is worth saving).",
    "input_schema": {
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": [
                            "fact", "preference", "decision", "constraint", "working_note"]},
                        "text": {"type": "string"},
                        "evidence": {"type": "array", "items": {"type": "string"},
                                     "minItems": 1},
                        "revises": {"type": ["string", "null"]},
                        "reason": {"type": ["string", "null"]},
                    },
                    "required": ["kind", "text", "evidence"],
                },
            },
        },
        "required": ["entries"],
    },
}
"""The tool whose input is the extractor's answer: the JSON shape of
:func:`~powercontext.core.extraction.model_prompt` as a JSON schema."""


@final
class AnthropicGenerationModel:
    """``generate(system, prompt)`` -> the answer text of one Messages API call whose
    answer is the input of the forced :data:`ANSWER_TOOL` call, as JSON text (the SDK
    2.x ``messages.create`` has no ``temperature``; the model's default sampling is used).

    ``model`` is the request's model (e.g. ``claude-...``); ``base_url`` the API root
    without ``/v1`` (e.g. ``http://127.0.0.1:8000``; None = ``$ANTHROPIC_BASE_URL`` or the
    SDK default); ``api_key`` None lets the SDK resolve its credentials
    (``$ANTHROPIC_API_KEY``, ``$ANTHROPIC_AUTH_TOKEN``, profiles); ``timeout`` seconds per
    request; ``max_tokens`` caps the answer. Raises InvalidInputError on a bad argument and
    CapabilityNotSupportedError when the ``anthropic`` SDK is not installed (so the
    pipeline marks the model provider unavailable). ``generate`` raises BackendError on
    missing credentials, a connection error, timeout, HTTP error or an answer with
    neither a tool call nor text.
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 30.0, max_tokens: int = 4096) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidInputError("model", "must be a non-empty string")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise InvalidInputError("timeout", "must be a positive number of seconds")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise InvalidInputError("max_tokens", "must be a positive integer")
        if importlib.util.find_spec("anthropic") is None:
            raise CapabilityNotSupportedError(
                "the anthropic SDK is not installed (install the 'anthropic' extra)")
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_tokens = max_tokens

    async def generate(self, system: str, prompt: str) -> str:
        import anthropic

        try:
            client = anthropic.AsyncAnthropic(base_url=self.base_url, api_key=self.api_key,
                                              max_retries=0, timeout=self.timeout)
        except (anthropic.AnthropicError, ValueError) as exc:
            raise BackendError(f"extraction model {self.model!r} is not configured: {exc}") \
                from exc
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            await client.close()
            raise BackendError(f"extraction model {self.model!r} has no Anthropic credentials "
                               "(set POWERCONTEXT_EXTRACTOR_API_KEY or ANTHROPIC_API_KEY)")
        try:
            async with client:
                response = await client.messages.create(  # type: ignore[call-overload]
                    model=self.model,
                    system=system,
                    messages=[{"role": "user", "content": prompt}],
                    tools=[ANSWER_TOOL],
                    tool_choice={"type": "tool", "name": ANSWER_TOOL["name"]},
                    max_tokens=self.max_tokens,
                )
        except anthropic.AnthropicError as exc:
            raise BackendError(f"extraction model {self.model!r} failed: {exc}") from exc
        blocks = getattr(response, "content", None) or []
        for block in blocks:
            if getattr(block, "type", None) == "tool_use" \
                    and getattr(block, "name", None) == ANSWER_TOOL["name"]:
                return json.dumps(getattr(block, "input", None), ensure_ascii=False)
        text = "".join(b.text for b in blocks
                       if getattr(b, "type", None) == "text" and isinstance(b.text, str))
        if not text.strip():
            raise BackendError(f"extraction model {self.model!r} returned no answer "
                               f"(stop_reason={getattr(response, 'stop_reason', None)!r})")
        return text
