"""Any OpenAI-compatible embeddings server (``POST {base_url}/embeddings``) through the
``openai`` SDK (Memory RFC, "EmbeddingModel"; issue 4 item 2).

Needs the ``openai`` extra. The SDK is imported on the first :meth:`OpenAIEmbedding.embed`.
No retries (``max_retries=0``): a failed call is reported at once as BackendError and the
service decides (the Revision and its full-text projection commit without vectors).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any, final

from powercontext.adapters.embedding._check import build_result, check_texts
from powercontext.core.errors import BackendError, InvalidInputError
from powercontext.core.models import EmbeddingProfile, EmbeddingResult

__all__ = ["OpenAIEmbedding"]

_NO_KEY = "no-key"  # a local server usually needs none, but the SDK insists on a value


@final
class OpenAIEmbedding:
    """EmbeddingModel over an OpenAI-compatible embeddings endpoint.

    ``model`` is sent as the request's model; ``dimension`` is the profile's fixed
    dimension that every returned vector must have (nothing asks the server to shorten
    vectors); ``base_url`` is the API root, e.g. ``http://127.0.0.1:8000/v1``;
    ``api_key`` falls back to ``$OPENAI_API_KEY``, then to a placeholder; ``timeout`` is
    seconds per HTTP request; ``batch_size`` texts are sent per request. The profile is
    ``(profile_id or "openai-<model>-<dimension>", model, dimension, "l2", "unit")``.

    :meth:`embed` raises BackendError when the server is unreachable, times out, answers
    an HTTP error or a malformed body, or returns a different number of vectors. Each
    vector goes through the shared :func:`build_result`: a non-unit one is normalised,
    an unusable one (empty, wrong dimension, NaN/infinity) is returned as is for the
    consumer to refuse for that entry only.
    """

    def __init__(
        self,
        model: str,
        dimension: int,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        profile_id: str | None = None,
        *,
        batch_size: int = 128,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidInputError("model", "must be a non-empty string")
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise InvalidInputError("dimension", f"must be an int >= 1, not {dimension!r}")
        if not isinstance(base_url, str) or not base_url:
            raise InvalidInputError("base_url", "must be a non-empty URL")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidInputError(
                "timeout", f"must be a positive number of seconds, not {timeout!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError("batch_size", f"must be an int >= 1, not {batch_size!r}")
        self._profile = EmbeddingProfile(
            profile_id=profile_id or f"openai-{model}-{dimension}",
            model=model,
            dimension=dimension,
            distance="l2",
            normalization="unit",
        )
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = float(timeout)
        self._batch_size = batch_size

    @staticmethod
    def available() -> bool:
        """Whether the ``openai`` extra is installed (finds the package; imports nothing)."""
        return importlib.util.find_spec("openai") is not None

    @property
    def profile(self) -> EmbeddingProfile:
        """The fixed profile built from the constructor arguments."""
        return self._profile

    def _new_client(self) -> Any:
        try:
            from openai import AsyncOpenAI
        except ImportError as exc:
            raise BackendError(
                f"embedding model {self._profile.model!r} unavailable: the openai package "
                "is not installed; install powercontext[openai]"
            ) from exc
        key = self._api_key or os.environ.get("OPENAI_API_KEY") or _NO_KEY
        return AsyncOpenAI(
            api_key=key, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )

    async def _request(self, client: Any, batch: list[str]) -> tuple[list[list[float]], int]:
        import openai

        try:
            response = await client.embeddings.create(
                model=self._profile.model, input=batch, encoding_format="float"
            )
        except openai.APITimeoutError as exc:
            raise BackendError(
                f"embedding model {self._profile.model!r} unavailable: no answer from "
                f"{self._base_url} within {self._timeout:g} s"
            ) from exc
        except openai.APIStatusError as exc:
            raise BackendError(
                f"embedding model {self._profile.model!r} unavailable: {self._base_url} "
                f"answered HTTP {exc.status_code}: {exc.message}"
            ) from exc
        except Exception as exc:  # openai.OpenAIError and anything the transport lets through
            raise BackendError(
                f"embedding model {self._profile.model!r} unavailable at {self._base_url}: {exc}"
            ) from exc
        try:
            data = getattr(response, "data", None)
            if not isinstance(data, list):
                raise ValueError("the body has no list of embeddings in 'data'")
            items = sorted(data, key=lambda d: d.index)
            if [d.index for d in items] != list(range(len(batch))):
                raise ValueError(f"indices {[d.index for d in items]} for {len(batch)} inputs")
            vectors = [list(d.embedding) for d in items]
            usage = getattr(response, "usage", None)
            tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        except (AttributeError, TypeError, ValueError) as exc:
            raise BackendError(
                f"embedding model {self._profile.model!r} at {self._base_url} "
                f"returned a malformed response: {exc}"
            ) from exc
        return vectors, tokens

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        """One unit vector per text, in input order; usage counts the server's prompt tokens."""
        texts = check_texts(texts)
        if not texts:
            return build_result((), 0, self._profile)
        rows: list[list[float]] = []
        tokens = 0
        # One client per call: its connection pool belongs to the running event loop.
        async with self._new_client() as client:
            for start in range(0, len(texts), self._batch_size):
                batch = list(texts[start : start + self._batch_size])
                vectors, used = await self._request(client, batch)
                rows.extend(vectors)
                tokens += used
        return build_result(rows, len(texts), self._profile, input_tokens=tokens)

    def __repr__(self) -> str:
        return f"OpenAIEmbedding(model={self._profile.model!r}, base_url={self._base_url!r})"
