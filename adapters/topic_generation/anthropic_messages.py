"""The ``anthropic`` Topic generation provider: the Anthropic Messages API (``POST
{base_url}/v1/messages``) through the ``anthropic`` SDK (Topic Memory RFC, "Cumulative
work and evidence ceilings"; TOPIC-MEMORY.md, "Providers").

One stage call is one request, ``client.messages.with_raw_response.create(model,
system=system + stage instructions, messages=[the user message holding the stage input
JSON], tools=[{name, description, input_schema: the stage schema}],
tool_choice={"type": "tool", "name": ...}, max_tokens=the request's output cap, +
service_tier when set)``, on a client with ``max_retries=0`` and the configured
timeout. The one tool is user-defined (its input is the structured answer); no
provider-hosted tool, no stream, no raw extras are ever sent. The SDK 2.x
``messages.create`` has no ``temperature``, ``top_p`` or seed, so the policy admits
none for this provider.

The answer is read from the RAW body: ``type`` must be ``message``; ``stop_reason``
``tool_use``, or ``end_turn`` with the tool block, is accepted; ``pause_turn`` (a
suspended turn the SDK would continue in another billed request) and ``max_tokens``
raise TopicProcessingError ``model_response_incomplete``; ``refusal`` raises
``model_refused``; anything else, or no tool block, is a BackendError; two tool blocks
are ``model_output_invalid``. The output text is the tool block's ``input`` cut from the
raw body: the body is parsed with a hook that keeps every object's key/value pairs
(duplicates included) and every number's source text, and the ``input`` value is
serialised back from those pairs (:func:`~._boundary.dump_pairs`), so a duplicated key
in the model's answer still reaches the core's parser, which refuses it. ``usage`` from
the body (None when missing); ``requests`` is 1.
"""

from __future__ import annotations

import json
import re
from typing import Any, final

from powercontext.adapters.topic_generation._boundary import (
    INVALID,
    NO_KEY,
    REFUSED,
    Pairs,
    SDKTopicModel,
    check_request,
    dump_pairs,
    incomplete,
    read_pairs,
    transport_cause,
    usage_of,
)
from powercontext.core.errors import BackendError, TopicProcessingError
from powercontext.core.topic.generation import StageRequest, StageResponse, StageUsage

__all__ = ["AnthropicMessagesTopicModel", "tool_name"]

_ACCEPTED = frozenset({"tool_use", "end_turn"})
_INCOMPLETE = frozenset({"pause_turn", "max_tokens"})
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(schema_name: str) -> str:
    """The forced tool's name for a stage schema (``^[A-Za-z0-9_-]{1,64}$``)."""
    return (_TOOL_NAME.sub("_", schema_name) or "stage_output")[:64]


@final
class AnthropicMessagesTopicModel(SDKTopicModel):
    """TopicGenerationModel over the Anthropic Messages API.

    ``model`` the request's model; ``base_url`` a compatible API root without ``/v1``
    (e.g. ``http://127.0.0.1:8000``; None: ``$ANTHROPIC_BASE_URL`` or the SDK default);
    ``api_key`` the credential (None: the SDK's own resolution, ``$ANTHROPIC_API_KEY``
    first, or a placeholder when a ``base_url`` is named); ``context_window_tokens``,
    ``max_requests`` (it makes 1), ``timeout_seconds`` per request, ``settings``
    (``service_tier`` only besides the output cap and timeout). Raises
    TopicProcessingUnavailableError for a refused setting and InvalidInputError for a
    bad argument, and ImportError when the SDK is missing, before any request."""

    name = "anthropic"

    def _client(self) -> Any:
        import anthropic

        key = self._api_key or (NO_KEY if self._base_url else None)
        try:
            client = anthropic.AsyncAnthropic(api_key=key, base_url=self._base_url,
                                              timeout=self._timeout, max_retries=0)
        except (anthropic.AnthropicError, ValueError) as exc:
            raise BackendError(f"Topic provider anthropic ({self._model!r}) is not "
                               f"configured: {type(exc).__name__}") from exc
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            raise BackendError(f"Topic provider anthropic ({self._model!r}) has no "
                               "credentials (inference.generation_api_key or "
                               "$ANTHROPIC_API_KEY)")
        return client

    async def generate(self, request: StageRequest) -> StageResponse:
        """One Messages request for ``request``; see the module docstring for what is
        accepted. BackendError: transport failure, timeout, HTTP error (429, 500, ...),
        a malformed body or no tool answer; TopicProcessingError
        ``model_response_incomplete`` / ``model_refused`` / ``model_output_invalid``."""
        check_request(request, self._context)
        import anthropic

        name = tool_name(request.schema_name)
        extra = {"service_tier": self._settings["service_tier"]} \
            if "service_tier" in self._settings else {}
        client = self._client()
        try:
            async with client:
                raw = await client.messages.with_raw_response.create(
                    model=self._model,
                    system=f"{request.system}\n\n{request.instructions}",
                    messages=[{"role": "user", "content": request.input_json}],
                    tools=[{"name": name,
                            "description": f"Record the complete {request.stage} stage "
                                           "output (the only accepted answer).",
                            "input_schema": json.loads(request.schema_json)}],
                    tool_choice={"type": "tool", "name": name},
                    max_tokens=request.max_output_tokens,
                    **extra,
                )
                body_text = await raw.text()
        except anthropic.APITimeoutError as exc:
            raise BackendError(f"Topic provider anthropic ({self._model!r}): no answer "
                               f"within {self._timeout:g} s") from exc
        except anthropic.APIStatusError as exc:
            raise BackendError(f"Topic provider anthropic ({self._model!r}) answered HTTP "
                               f"{exc.status_code}") from exc
        except anthropic.AnthropicError as exc:
            raise BackendError(f"Topic provider anthropic ({self._model!r}) failed: "
                               f"{transport_cause(exc)}") from exc
        return self._answer(request, name, body_text)

    def _answer(self, request: StageRequest, name: str, body_text: str) -> StageResponse:
        def malformed(why: str) -> BackendError:
            return BackendError(f"Topic provider anthropic ({self._model!r}) returned a "
                                f"malformed response: {why}")

        try:
            body = read_pairs(body_text)
            if not isinstance(body, Pairs):
                raise ValueError("the body is not a JSON object")
            kind, stop, content = body.get("type"), body.get("stop_reason"), \
                body.get("content")
        except ValueError as exc:
            raise malformed(str(exc)) from None
        if kind != "message":
            raise malformed(f"type {str(kind)[:40]!r}, not 'message'")
        if stop in _INCOMPLETE:
            raise incomplete("anthropic", request.stage, f"stop_reason {stop!r}")
        if stop == "refusal":
            raise TopicProcessingError(REFUSED, "anthropic: the model refused the "
                                       f"{request.stage} stage", stage=request.stage)
        if stop not in _ACCEPTED:
            raise BackendError(f"Topic provider anthropic ({self._model!r}): stop_reason "
                               f"{str(stop)[:40]!r} is not accepted")
        if not isinstance(content, list):
            raise malformed("no 'content' list")
        try:
            calls = [block for block in content if isinstance(block, Pairs)
                     and block.get("type") == "tool_use" and block.get("name") == name]
            inputs = [block.get("input") for block in calls]
        except ValueError as exc:
            raise malformed(str(exc)) from None
        if not calls:
            raise BackendError(f"Topic provider anthropic ({self._model!r}) returned no "
                               f"{name!r} tool call (stop_reason {stop!r})")
        if len(calls) > 1:
            raise TopicProcessingError(INVALID, f"anthropic: {len(calls)} answers to the "
                                       f"{request.stage} stage, one expected",
                                       stage=request.stage)
        if not isinstance(inputs[0], Pairs):
            raise TopicProcessingError(INVALID, f"anthropic: the {request.stage} answer is "
                                       "not a JSON object", stage=request.stage)
        try:
            usage_pairs = body.get("usage")
        except ValueError:
            usage_pairs = None
        counts = usage_of(usage_pairs if isinstance(usage_pairs, Pairs) else None)
        usage = StageUsage(*counts) if counts is not None else None
        return StageResponse(output_text=dump_pairs(inputs[0]), usage=usage, requests=1)

    def __repr__(self) -> str:
        return (f"AnthropicMessagesTopicModel(model={self._model!r}, "
                f"base_url={self._base_url!r})")
