"""A deterministic, model-free EmbeddingModel for tests and offline development (Memory
RFC, "EmbeddingModel"; issue 4 item 2).

Feature hashing: every token of the text by the ``v1-porter`` analyzer (pinned here,
whatever analyzer a database uses: :data:`powercontext.core.analyzer.V1_PORTER`) and every
character trigram of each word token is hashed with BLAKE2b into one of
``dimension`` buckets with a hash-derived sign, the counts are summed in input order and
the vector is L2-normalized. Only integer hashing and IEEE-754 double arithmetic in a fixed
order are involved, so a text gets bit-identical values in every process and on every
platform. Texts that share words (or word fragments) get a higher cosine than unrelated
texts; it knows nothing of synonyms.
"""

from __future__ import annotations

import functools
import hashlib
import math
from typing import Final, final

from powercontext.adapters.embedding._check import build_result, check_texts
from powercontext.core import analyzer
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import EmbeddingProfile, EmbeddingResult

__all__ = ["DETERMINISTIC_MODEL", "DeterministicEmbedding"]

#: The model id stored in the profile: bump ``hash-v1`` whenever the hashing or weights
#: change; the analyzer version is part of it because the features are analyzer tokens
#: (stemmed tokens: a bag-of-words embedder gains from merging word forms).
_ANALYZER: Final = analyzer.V1_PORTER
DETERMINISTIC_MODEL: Final = f"powercontext/deterministic-hash-v1+analyzer-{_ANALYZER.version}"

_PERSON: Final = b"pc-detemb-v1"
_WORD_WEIGHT: Final = 1.0
_TRIGRAM_WEIGHT: Final = 0.35


@functools.lru_cache(maxsize=1 << 15)  # a pure function; words and trigrams repeat
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, person=_PERSON).digest()
    h = int.from_bytes(digest, "big")
    return (h >> 1) % dimension, (-1.0 if h & 1 else 1.0)


def _token_terms(token: str) -> list[tuple[str, float]]:
    """The features of one token, in order: the word, then its character trigrams."""
    out = [("w:" + token, _WORD_WEIGHT)]
    # ASCII words never contain "_"; x_/u_/b_ tokens are hex encodings, not spellings.
    if "_" not in token:
        padded = f"#{token}#"
        out.extend(("t:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return out


#: Tokens whose adds are memoised (about 1 KB each: a word and ~8 trigrams).
TOKEN_MEMO: Final = 1 << 14


@functools.lru_cache(maxsize=TOKEN_MEMO)  # a pure function; a text's tokens repeat
def _token_adds(token: str, dimension: int) -> tuple[tuple[int, float], ...]:
    """What one token adds to the vector, in feature order: (bucket, sign * weight)."""
    adds = []
    for feature, weight in _token_terms(token):
        i, sign = _bucket(feature, dimension)
        adds.append((i, sign * weight))
    return tuple(adds)


def embed_text(text: str, dimension: int, tokens: list[str] | None = None) -> tuple[float, ...]:
    """The unit vector of one text (``dimension`` floats, L2 norm 1).

    A text without tokens (empty, punctuation or stopwords only) or whose features cancel
    out still gets a valid unit vector: one signed bucket chosen by hashing the raw text.
    ``tokens`` are ``analyze(text)`` when the caller already has them. Each token's
    (bucket, signed weight) pairs are memoised; they are added in the same order as
    the features, so every value is bit for bit what adding feature by feature gives.
    """
    acc = [0.0] * dimension
    for token in _ANALYZER.analyze(text) if tokens is None else tokens:
        for i, add in _token_adds(token, dimension):
            acc[i] += add
    norm = math.sqrt(math.fsum(x * x for x in acc))
    if norm == 0.0:
        i, sign = _bucket("raw:" + text, dimension)
        acc = [0.0] * dimension
        acc[i] = sign
        norm = 1.0
    return tuple(x / norm for x in acc)


@final
class DeterministicEmbedding:
    """EmbeddingModel by feature hashing; no model files, no I/O, no randomness.

    ``dimension`` (>= 8, default 384) fixes the profile: ``profile_id`` defaults to
    ``"deterministic-hash-v1-<dimension>"``, model :data:`DETERMINISTIC_MODEL`, distance
    ``"l2"``, normalization ``"unit"``. Raises InvalidInputError for a bad dimension or
    non-str texts; every result passes the shared vector check.
    """

    def __init__(self, dimension: int = 384, *, profile_id: str | None = None) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 8:
            raise InvalidInputError("dimension", f"must be an int >= 8, not {dimension!r}")
        self._profile = EmbeddingProfile(
            profile_id=profile_id or f"deterministic-hash-v1-{dimension}",
            model=DETERMINISTIC_MODEL,
            dimension=dimension,
            distance="l2",
            normalization="unit",
        )

    @property
    def profile(self) -> EmbeddingProfile:
        """The fixed profile this embedder produces vectors for."""
        return self._profile

    def embed_sync(self, texts: tuple[str, ...]) -> EmbeddingResult:
        """:meth:`embed` without the event loop (it does no I/O)."""
        texts = check_texts(texts)
        dim = self._profile.dimension
        analyzed = [_ANALYZER.analyze(t) for t in texts]
        return build_result(
            (embed_text(t, dim, toks) for t, toks in zip(texts, analyzed, strict=True)),
            len(texts),
            self._profile,
            input_tokens=sum(len(toks) for toks in analyzed),
        )

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        """One unit vector per text, in input order; usage counts Analyzer v1 tokens."""
        return self.embed_sync(texts)

    def __repr__(self) -> str:
        return f"DeterministicEmbedding(dimension={self._profile.dimension})"
