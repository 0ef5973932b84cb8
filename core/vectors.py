"""Checks of embedding vectors (Memory RFC, "Normalization, hashing, and the search
analyzer": NaN, infinity, wrong dimension or an empty vector is rejected)."""

from __future__ import annotations

import math

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import EmbeddingProfile, EmbeddingVector

__all__ = ["UNIT_TOLERANCE", "check_vector"]

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
