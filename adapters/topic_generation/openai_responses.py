"""The ``openai`` Topic generation provider: the OpenAI Responses API (``POST
{base_url}/responses``) through the ``openai`` SDK (Topic Memory RFC, "Cumulative work
and evidence ceilings"; TOPIC-MEMORY.md, "Providers").

One stage call is one request, ``client.responses.with_raw_response.create(model,
instructions=system + stage instructions, input=[the user message holding the stage
input JSON], text={"format": {"type": "json_schema", "name", "schema", "strict":
True}}, max_output_tokens, store=False, + the admitted settings temperature / top_p /
service_tier)``, on a client with ``max_retries=0`` and the configured timeout. Nothing
else is ever sent: no tools, no ``previous_response_id`` or ``conversation``, no
``background``, no stream, no raw extras (the policy refuses them in the settings,
before the client exists). ``store=False``: the server keeps no response that a later
call could continue from.

The answer is read from the RAW body (the SDK's parsed model is never used): its
``status`` must be ``completed``; ``incomplete``, ``queued`` and ``in_progress`` are a
suspended or partial answer and raise TopicProcessingError ``model_response_incomplete``;
any other status (``failed``, ``cancelled``, ...) is a BackendError. The output text is
the concatenation of the ``output_text`` parts of the ``message`` items, returned as is
(JSON text, parsed by the core, so duplicate keys are still seen there); a ``refusal``
part raises TopicProcessingError ``model_refused``; a function call or no text is a
BackendError. ``usage`` comes from the body (None when missing); ``requests`` is 1.
"""

from __future__ import annotations

import json
from typing import Any, final

from powercontext.adapters.topic_generation._boundary import (
    NO_KEY,
    REFUSED,
    SDKTopicModel,
    check_request,
    incomplete,
    transport_cause,
    usage_of,
)
from powercontext.core.errors import BackendError, TopicProcessingError
from powercontext.core.topic.generation import StageRequest, StageResponse, StageUsage

__all__ = ["OpenAIResponsesTopicModel"]

_INCOMPLETE = frozenset({"incomplete", "queued", "in_progress"})
_SENT_SETTINGS = ("temperature", "top_p", "service_tier")


@final
class OpenAIResponsesTopicModel(SDKTopicModel):
    """TopicGenerationModel over the OpenAI Responses API.

    ``model`` the request's model; ``base_url`` a compatible API root (e.g.
    ``http://127.0.0.1:8000/v1``; None: the SDK default); ``api_key`` the credential
    (None: ``$OPENAI_API_KEY`` as the SDK reads it, or a placeholder when a
    ``base_url`` is named); ``context_window_tokens`` the model's window;
    ``max_requests`` what one call may make (it makes 1); ``timeout_seconds`` per
    request; ``settings`` the admitted bounded scalars. Raises
    TopicProcessingUnavailableError for a refused setting and InvalidInputError for a
    bad argument, and ImportError when the SDK is missing, before any request."""

    name = "openai"

    def _client(self) -> Any:
        import openai

        key = self._api_key or (NO_KEY if self._base_url else None)
        try:
            return openai.AsyncOpenAI(api_key=key, base_url=self._base_url,
                                      timeout=self._timeout, max_retries=0)
        except openai.OpenAIError as exc:
            raise BackendError(f"Topic provider openai ({self._model!r}) is not configured: "
                               f"{exc}") from exc

    async def generate(self, request: StageRequest) -> StageResponse:
        """One Responses request for ``request``; see the module docstring for what is
        accepted. BackendError: transport failure, timeout, HTTP error (429, 500, ...),
        a malformed body or no structured output; TopicProcessingError
        ``model_response_incomplete`` / ``model_refused``."""
        check_request(request, self._context)
        import openai

        kwargs = {k: self._settings[k] for k in _SENT_SETTINGS if k in self._settings}
        client = self._client()
        try:
            async with client:
                raw = await client.responses.with_raw_response.create(
                    model=self._model,
                    instructions=f"{request.system}\n\n{request.instructions}",
                    input=[{"role": "user", "type": "message",
                            "content": [{"type": "input_text", "text": request.input_json}]}],
                    text={"format": {"type": "json_schema", "name": request.schema_name,
                                     "schema": json.loads(request.schema_json),
                                     "strict": True}},
                    max_output_tokens=request.max_output_tokens,
                    store=False,
                    **kwargs,
                )
                body_text = raw.text
        except openai.APITimeoutError as exc:
            raise BackendError(f"Topic provider openai ({self._model!r}): no answer within "
                               f"{self._timeout:g} s") from exc
        except openai.APIStatusError as exc:
            raise BackendError(f"Topic provider openai ({self._model!r}) answered HTTP "
                               f"{exc.status_code}") from exc
        except openai.OpenAIError as exc:
            raise BackendError(f"Topic provider openai ({self._model!r}) failed: "
                               f"{transport_cause(exc)}") from exc
        return self._answer(request, body_text)

    def _answer(self, request: StageRequest, body_text: str) -> StageResponse:
        def malformed(why: str) -> BackendError:
            return BackendError(f"Topic provider openai ({self._model!r}) returned a "
                                f"malformed response: {why}")

        try:
            body = json.loads(body_text)
        except ValueError:
            raise malformed("the body is not JSON") from None
        if not isinstance(body, dict):
            raise malformed("the body is not a JSON object")
        status = body.get("status")
        if status in _INCOMPLETE:
            detail = body.get("incomplete_details")
            reason = detail.get("reason") if isinstance(detail, dict) else None
            raise incomplete("openai", request.stage, f"status {status!r}"
                             + (f" ({reason})" if isinstance(reason, str) else ""))
        if status != "completed":
            raise BackendError(f"Topic provider openai ({self._model!r}): response status "
                               f"{str(status)[:40]!r}, not 'completed'")
        items = body.get("output")
        if not isinstance(items, list):
            raise malformed("no 'output' list")
        texts: list[str] = []
        for item in items:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "reasoning":
                continue
            if kind != "message":
                raise BackendError(f"Topic provider openai ({self._model!r}) answered with "
                                   f"a {str(kind)[:40]!r} item, not a message")
            for part in item.get("content") or ():
                ptype = part.get("type") if isinstance(part, dict) else None
                if ptype == "refusal":
                    raise TopicProcessingError(REFUSED, "openai: the model refused the "
                                               f"{request.stage} stage", stage=request.stage)
                if ptype != "output_text" or not isinstance(part.get("text"), str):
                    raise malformed(f"a message part of type {str(ptype)[:40]!r}")
                texts.append(part["text"])
        text = "".join(texts)
        if not text.strip():
            raise BackendError(f"Topic provider openai ({self._model!r}) returned no "
                               "structured output")
        counts = usage_of(body.get("usage") if isinstance(body.get("usage"), dict) else None)
        usage = StageUsage(*counts) if counts is not None else None
        return StageResponse(output_text=text, usage=usage, requests=1)

    def __repr__(self) -> str:
        return f"OpenAIResponsesTopicModel(model={self._model!r}, base_url={self._base_url!r})"
