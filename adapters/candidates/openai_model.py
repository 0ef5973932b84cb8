"""A GenerationModel over any OpenAI-compatible chat completions server (Memory RFC,
"Candidate generation": the optional model extractor), through the ``openai`` SDK.

Needs the ``openai`` extra; the SDK is imported on the first call. ``max_retries=0``
and a per-request timeout: a failure is reported at once as BackendError, and the
pipeline goes on without the model (the Sources stay stored).
"""

from __future__ import annotations

import importlib.util
from typing import final

from powercontext.core.errors import BackendError, CapabilityNotSupportedError, InvalidInputError

__all__ = ["OpenAIGenerationModel"]


@final
class OpenAIGenerationModel:
    """``generate(system, prompt)`` -> the answer text of one chat completion asked for
    a JSON object (``response_format={"type": "json_object"}``, temperature 0).

    ``model`` is the request's model; ``base_url`` the API root (e.g.
    ``http://127.0.0.1:8000/v1``; None = the SDK default); ``api_key`` falls back to
    the SDK's ``$OPENAI_API_KEY``, then a placeholder; ``timeout`` seconds per request;
    ``max_tokens`` caps the answer. Raises BackendError on a connection error, timeout,
    HTTP error or an answer without text.
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 30.0, max_tokens: int = 2000) -> None:
        if importlib.util.find_spec("openai") is None:
            raise CapabilityNotSupportedError(
                "the openai SDK is not installed (install the 'openai' extra)")
        if not isinstance(model, str) or not model:
            raise InvalidInputError("model", "must be a non-empty string")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise InvalidInputError("timeout", "must be a positive number of seconds")
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_tokens = max_tokens

    async def generate(self, system: str, prompt: str) -> str:
        import os

        import openai

        key = self.api_key or os.environ.get("OPENAI_API_KEY") or "no-key"
        try:
            async with openai.AsyncOpenAI(base_url=self.base_url, api_key=key, max_retries=0,
                                          timeout=self.timeout) as client:
                response = await client.chat.completions.create(
                    model=self.model,
                    messages=[{"role": "system", "content": system},
                              {"role": "user", "content": prompt}],
                    response_format={"type": "json_object"},
                    temperature=0,
                    max_tokens=self.max_tokens,
                )
        except openai.OpenAIError as exc:
            raise BackendError(f"extraction model {self.model!r} failed: {exc}") from exc
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices else None
        if not isinstance(content, str) or not content.strip():
            raise BackendError(f"extraction model {self.model!r} returned no text")
        return content
