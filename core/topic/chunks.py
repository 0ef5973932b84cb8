"""The Detail chunk policy (Topic Memory RFC, "Detail chunks and deployment-enabled
retrieval channels"). STUB: signatures fixed, bodies to write."""

from __future__ import annotations

from powercontext.core.topic.models import DetailChunk

__all__ = ["CHUNK_POLICY_VERSION", "MAX_CHUNKS", "chunk_detail"]

CHUNK_POLICY_VERSION = "topic-chunks-v1"
#: Hard chunk count per Topic: MAX_CHUNKS x the per-channel candidate count (80 at
#: limit 20) stays within vec0's k <= 4096.
MAX_CHUNKS = 48


def chunk_detail(detail: str) -> tuple[DetailChunk, ...]:
    """The chunks of ``detail`` under :data:`CHUNK_POLICY_VERSION`: deterministic,
    covering every character, at most :data:`MAX_CHUNKS`, at least one."""
    raise NotImplementedError
