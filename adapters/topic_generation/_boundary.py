"""What the SDK providers share at the raw boundary: the constructor checks (the same
provider policy as the configuration), the request guard, error mapping and the
duplicate-keeping JSON reader."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from powercontext.core.errors import InvalidInputError, TopicProcessingError
from powercontext.core.topic.generation import StageRequest
from powercontext.core.topic.provider_policy import check_generation_policy, require_policy

NO_KEY = "no-key"  # a compatible local server needs none, but the SDKs insist on a value
INCOMPLETE = "model_response_incomplete"
REFUSED = "model_refused"
INVALID = "model_output_invalid"


def checked_options(provider: str, *, model: object, context_window_tokens: object,
                    max_requests: object, timeout_seconds: object,
                    settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The provider's settings after the policy (TopicProcessingUnavailableError when
    refused, so a refused setting reaches no server), and the checked scalars."""
    if not isinstance(model, str) or not model:
        raise InvalidInputError("generation_model", "must be a non-empty model name")
    settings = dict(settings or {})
    for key in ("max_output_tokens", "timeout_seconds"):
        if key in settings:
            raise InvalidInputError(f"generation_settings.{key}", "is not a setting of the "
                                    "provider here: the stage request carries the output "
                                    "cap, the timeout is its own argument")
    require_policy(check_generation_policy(
        provider, {**settings, "timeout_seconds": timeout_seconds},
        known_providers=(provider,),
        context_window_tokens=context_window_tokens
        if isinstance(context_window_tokens, int) else 0))
    for name, value, lo, hi in (
            ("generation_model_context_window_tokens", context_window_tokens, 1_024,
             10_000_000),
            ("generation_max_requests", max_requests, 1, 16)):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise InvalidInputError(name, f"must be an integer in {lo}..{hi}, not {value!r}")
    return settings


class SDKTopicModel:
    """The constructor and properties both SDK providers share: the SDK must be
    installed (ImportError naming the extra otherwise), the options pass
    :func:`checked_options` (the provider policy) before anything else, and the values
    are read back through ``model``, ``context_window_tokens``, ``max_requests`` and
    ``settings``. Subclasses set ``name`` (the provider and the SDK's module)."""

    name: ClassVar[str]

    def __init__(self, *, model: str | None, base_url: str | None = None,
                 api_key: str | None = None, context_window_tokens: int = 125_000,
                 max_requests: int = 1, timeout_seconds: float = 60.0,
                 settings: Mapping[str, Any] | None = None) -> None:
        if importlib.util.find_spec(self.name) is None:
            raise ImportError(f"the {self.name} SDK is not installed (the {self.name!r} "
                              "extra)", name=self.name)
        self._settings = checked_options(
            self.name, model=model, context_window_tokens=context_window_tokens,
            max_requests=max_requests, timeout_seconds=timeout_seconds, settings=settings)
        assert isinstance(model, str)
        self._model = model
        self._base_url = base_url
        self._api_key = api_key
        self._context = context_window_tokens
        self._max_requests = max_requests
        self._timeout = float(timeout_seconds)

    @property
    def model(self) -> str:
        """The model every request names."""
        return self._model

    @property
    def context_window_tokens(self) -> int:
        """The configured context window (tokens)."""
        return self._context

    @property
    def max_requests(self) -> int:
        """Requests reserved per stage call (one is made)."""
        return self._max_requests

    @property
    def settings(self) -> Mapping[str, Any]:
        """The admitted settings sent with every request (a copy)."""
        return dict(self._settings)


def transport_cause(exc: BaseException) -> str:
    """``exc``'s type and, when its cause chain ends in a transport error (an OSError
    or an httpx/httpcore error: connection refused, DNS, TLS), that error's type and
    its message (which names no request content), e.g. ``APIConnectionError
    (ConnectError: [Errno 111] Connection refused)``."""
    inner: BaseException | None = exc
    seen = 0
    while inner is not None and seen < 16:
        nxt = inner.__cause__ or inner.__context__
        if nxt is None:
            break
        inner, seen = nxt, seen + 1
    described = type(exc).__name__
    if inner is not None and inner is not exc and (
            isinstance(inner, OSError)
            or type(inner).__module__.split(".")[0] in ("httpx", "httpcore", "httpx2")):
        message = " ".join(str(inner).split())[:200]
        described += f" ({type(inner).__name__}: {message})" if message else \
            f" ({type(inner).__name__})"
    return described


def check_request(request: StageRequest, context_window_tokens: int) -> None:
    """Refuse, before any I/O, a request that does not fit the context window."""
    if not 1 <= request.max_output_tokens <= context_window_tokens \
            or request.estimated_tokens > context_window_tokens:
        raise InvalidInputError(
            "request.estimated_tokens",
            f"the {request.stage} request (estimated {request.estimated_tokens} tokens, "
            f"output {request.max_output_tokens}) does not fit the context window of "
            f"{context_window_tokens} tokens")


def incomplete(provider: str, stage: str, why: str) -> TopicProcessingError:
    return TopicProcessingError(INCOMPLETE, f"{provider}: {why}; a suspended or incomplete "
                                "response is never used", stage=stage)


class Raw(str):
    """A JSON number kept as its exact source text."""


class Pairs(list[tuple[str, Any]]):
    """A JSON object as its key/value pairs, in order, duplicates kept."""

    def get(self, key: str) -> Any:
        """The value of ``key``; ValueError when it occurs more than once."""
        found = [v for k, v in self if k == key]
        if len(found) > 1:
            raise ValueError(f"the key {key!r} occurs {len(found)} times")
        return found[0] if found else None


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_pairs(text: str) -> Any:
    """Parse JSON keeping every object as :class:`Pairs` (duplicate keys survive) and
    every number as its source text. ValueError for malformed JSON."""
    return json.loads(text, object_pairs_hook=Pairs, parse_float=Raw, parse_int=Raw,
                      parse_constant=_constant)


def dump_pairs(value: Any) -> str:
    """JSON text of a :func:`read_pairs` value: keys, order, duplicates and number
    texts exactly as received (only insignificant whitespace differs)."""
    if isinstance(value, Pairs):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{dump_pairs(v)}"
                              for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump_pairs(v) for v in value) + "]"
    if isinstance(value, Raw):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def usage_of(usage: Any) -> tuple[int | None, int | None] | None:
    """``(input_tokens, output_tokens)`` from a usage object (plain dict or Pairs), None
    when absent; a missing or non-integer count becomes None."""
    if usage is None:
        return None
    get = usage.get if hasattr(usage, "get") else (lambda _k: None)

    def count(key: str) -> int | None:
        try:
            value = get(key)
        except ValueError:  # a duplicated count is no count
            return None
        try:
            number = int(str(value)) if value is not None else None
        except ValueError:
            return None
        return number if number is not None and number >= 0 else None

    return count("input_tokens"), count("output_tokens")
