"""The one check every EmbeddingModel adapter runs on its own output before returning it
(Memory RFC, "Vector integrity and offline rebuilds"; issue 4 item 2)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from powercontext.core.errors import BackendError, InvalidInputError
from powercontext.core.models import EmbeddingProfile, EmbeddingResult, InferenceUsage
from powercontext.core.vectors import check_vector

__all__ = ["build_result", "check_texts"]


def check_texts(texts: object) -> tuple[str, ...]:
    """``texts`` as a tuple of ``str``; InvalidInputError(field="texts") for anything else
    (a bare ``str`` included, which would otherwise be embedded character by character)."""
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
        raise InvalidInputError("texts", f"must be a tuple of str, not {type(texts).__name__}")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InvalidInputError("texts", f"item {i} is {type(t).__name__}, not str")
    return tuple(texts)


def build_result(
    rows: Iterable[Iterable[float]],
    expected: int,
    profile: EmbeddingProfile,
    *,
    input_tokens: int = 0,
) -> EmbeddingResult:
    """Validate a model's raw output and freeze it as an :class:`EmbeddingResult`.

    ``rows`` are the vectors in input order (lists, tuples or numpy rows); ``expected``
    is the number of input texts. Every vector goes through
    :func:`powercontext.core.vectors.check_vector` (non-empty, ``profile.dimension``
    values, all finite, unit length within 1e-3). Raises :class:`BackendError` naming the
    model and the offending vector when the count differs or any vector fails; the
    model, not the caller, produced the bad value, so nothing partial is returned.
    """
    vectors = []
    for i, row in enumerate(rows):
        try:
            vector = tuple(float(x) for x in row)
        except (TypeError, ValueError) as exc:
            raise BackendError(
                f"embedding model {profile.model!r} returned a non-numeric vector {i}"
            ) from exc
        try:
            check_vector(vector, profile)
        except InvalidInputError as exc:
            raise BackendError(
                f"embedding model {profile.model!r} returned an invalid vector {i}: {exc}"
            ) from exc
        vectors.append(vector)
    if len(vectors) != expected:
        raise BackendError(
            f"embedding model {profile.model!r} returned {len(vectors)} vectors "
            f"for {expected} texts"
        )
    return EmbeddingResult(
        tuple(vectors), InferenceUsage(input_tokens=input_tokens, texts=expected)
    )
