"""Checks of embedding vectors (Memory RFC, "Normalization, hashing, and the search
analyzer": NaN, infinity, wrong dimension or an empty vector is rejected and not
written; "Search": vector search requires unit-normalized embeddings).

:func:`prepare_vector` is the one place a model's raw output becomes a vector that may
be stored or searched with. It is applied to every vector of every model, the project's
own and third-party ones alike: by the embedding adapters (``build_result``), by
``MemoryService`` for entries and queries, and by the offline rebuild. Each vector is
judged on its own, so one bad vector costs only its own entry.
"""

from __future__ import annotations

import math
import numbers

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import EmbeddingProfile, EmbeddingVector

__all__ = ["UNIT_TOLERANCE", "check_vector", "prepare_vector"]

#: A vector counts as unit length when its L2 norm is within this of 1.0.
UNIT_TOLERANCE = 1e-3


def check_vector(vector: EmbeddingVector, profile: EmbeddingProfile) -> None:
    """InvalidInputError (a ValueError) unless ``vector`` is non-empty, has the profile's
    dimension, holds only finite numbers and has unit L2 norm within 1e-3."""
    if len(vector) == 0:
        raise InvalidInputError("vector", "is empty")
    if len(vector) != profile.dimension:
        raise InvalidInputError(
            "vector", f"has {len(vector)} dimensions; the profile fixes {profile.dimension}"
        )
    total = 0.0
    for x in vector:
        if isinstance(x, bool) or not isinstance(x, float | int) or not math.isfinite(x):
            raise InvalidInputError("vector", "contains NaN, infinity or a non-number")
        total += x * x
    norm = math.sqrt(total)
    if abs(norm - 1.0) > UNIT_TOLERANCE:
        raise InvalidInputError("vector", f"is not unit length (norm {norm:.4f})")


def prepare_vector(vector: object, profile: EmbeddingProfile) -> EmbeddingVector:
    """One model output as a storable vector: a tuple of ``profile.dimension`` floats.

    ``vector`` may be any sequence of real numbers (tuple, list, numpy row; ``bool`` is
    not a number here). Under a profile with ``normalization == "unit"`` a finite,
    non-zero vector whose L2 norm differs from 1 by more than :data:`UNIT_TOLERANCE` is
    divided by its norm (providers that do not normalise); a vector within the
    tolerance is kept as given. Raises InvalidInputError(field="vector") for anything
    else: not a sequence, empty, a different dimension, a NaN, infinity or non-number,
    a zero (or underflowing) norm, or, under any other normalization, a vector that is
    not unit length (vector search requires unit vectors).
    """
    if isinstance(vector, str | bytes) or not hasattr(vector, "__len__") or not hasattr(
        vector, "__iter__"
    ):
        raise InvalidInputError("vector", f"must be a sequence of numbers, not "
                                f"{type(vector).__name__}")
    values = []
    for x in vector:  # type: ignore[attr-defined]
        if type(x) is float:  # the common case, without the ABC check below
            f = x
        elif isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise InvalidInputError("vector", "contains NaN, infinity or a non-number")
        else:
            f = float(x)
        if not math.isfinite(f):
            raise InvalidInputError("vector", "contains NaN, infinity or a non-number")
        values.append(f)
    out = tuple(values)
    if not out:
        raise InvalidInputError("vector", "is empty")
    if len(out) != profile.dimension:
        raise InvalidInputError(
            "vector", f"has {len(out)} dimensions; the profile fixes {profile.dimension}"
        )
    norm = math.hypot(*out)  # no overflow for large components
    if norm == 0.0 or not math.isfinite(norm):
        raise InvalidInputError("vector", f"has no direction (norm {norm:.4f})")
    if abs(norm - 1.0) > UNIT_TOLERANCE and profile.normalization == "unit":
        out = tuple(x / norm for x in out)
    check_vector(out, profile)
    return out
