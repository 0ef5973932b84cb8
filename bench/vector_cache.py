"""Embedding vectors cached on disk, keyed by (embedding profile, SHA-256 of the text), so
benchmark runs over the same texts embed each text once per model (issue 14 item 3: the
LoCoMo cross-validation re-indexes the same turns several times on a shared machine).

The cache is a plain SQLite file (stdlib ``sqlite3``) holding each vector as packed
float64 values, so a cached vector is bit-for-bit the model's: search results with and
without the cache are the same.
"""

from __future__ import annotations

import hashlib
import sqlite3
import struct
from pathlib import Path
from typing import Any

from powercontext.core.models import EmbeddingResult, EmbeddingVector

__all__ = ["DiskCachedModel", "profile_key"]


def profile_key(profile: Any) -> str:
    """The cache key of an embedding profile: id, model, dimension, distance, normalization."""
    return "|".join(
        str(getattr(profile, f))
        for f in ("profile_id", "model", "dimension", "distance", "normalization")
    )


class DiskCachedModel:
    """Wraps an EmbeddingModel: a text's vector comes from memory, then from
    ``<directory>/vectors.sqlite``, then from the model (and is stored). ``directory``
    None keeps the cache in memory only. ``embedded`` counts texts the model embedded."""

    def __init__(self, model: Any, directory: Path | None = None) -> None:
        self.model = model
        self._memory: dict[str, EmbeddingVector] = {}
        self._key = profile_key(model.profile)
        self.embedded = 0
        self._db: sqlite3.Connection | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(directory / "vectors.sqlite")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (profile TEXT NOT NULL, text_sha256 "
                "TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (profile, text_sha256))"
            )

    @property
    def profile(self) -> Any:
        return self.model.profile

    def vector(self, text: str) -> EmbeddingVector | None:
        """The vector of ``text`` if this process has seen it (memory only)."""
        return self._memory.get(text)

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memory]
        if missing and self._db is not None:
            for t in list(missing):
                row = self._db.execute(
                    "SELECT vector FROM vectors WHERE profile = ? AND text_sha256 = ?",
                    (self._key, _sha(t)),
                ).fetchone()
                if row is not None:
                    blob = row[0]
                    self._memory[t] = struct.unpack(f"<{len(blob) // 8}d", blob)
                    missing.remove(t)
        if missing:
            result = await self.model.embed(tuple(missing))
            self.embedded += len(missing)
            for t, v in zip(missing, result.vectors, strict=True):
                self._memory[t] = tuple(float(x) for x in v)
            if self._db is not None:
                with self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                        [
                            (self._key, _sha(t), struct.pack(f"<{len(v)}d", *v))
                            for t in missing
                            for v in (self._memory[t],)
                        ],
                    )
        return EmbeddingResult(tuple(self._memory[t] for t in texts))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
