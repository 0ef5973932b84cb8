"""The one check every EmbeddingModel adapter runs on its own output before returning it
(Memory RFC, "Vector integrity and offline rebuilds"; issue 4 item 2)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from powercontext.core.errors import BackendError, InvalidInputError
from powercontext.core.models import EmbeddingProfile, EmbeddingResult, InferenceUsage
from powercontext.core.vectors import prepare_vector

__all__ = ["build_result", "check_texts"]

log = logging.getLogger("powercontext")


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
    """Freeze a model's raw output as an :class:`EmbeddingResult`, one vector per text.

    ``rows`` are the vectors in input order (lists, tuples or numpy rows); ``expected``
    is the number of input texts. A different count raises :class:`BackendError` naming
    the model (no vector can be matched to its text). Each vector goes through
    :func:`powercontext.core.vectors.prepare_vector` on its own: a non-unit vector under
    a unit profile comes back normalised; a vector that cannot be used (empty, zero,
    NaN/infinity, non-numeric, wrong dimension) comes back as given (non-numeric as
    ``()``), so the consumer refuses that entry only and keeps the others (Memory RFC,
    "Normalization, hashing, and the search analyzer"). It is logged here.
    """
    vectors: list[tuple[float, ...]] = []
    for i, row in enumerate(rows):
        try:
            raw = tuple(float(x) for x in row)
        except (TypeError, ValueError):
            raw = ()
        try:
            vectors.append(prepare_vector(raw, profile))
        except InvalidInputError as exc:
            log.warning("embedding model %r returned an invalid vector %d: %s",
                        profile.model, i, exc)
            vectors.append(raw)
    if len(vectors) != expected:
        raise BackendError(
            f"embedding model {profile.model!r} returned {len(vectors)} vectors "
            f"for {expected} texts"
        )
    return EmbeddingResult(
        tuple(vectors), InferenceUsage(input_tokens=input_tokens, texts=expected)
    )
