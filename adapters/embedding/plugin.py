"""The embedding plugin: registers the built-in embedding models by name through the
same hook a third-party plugin implements (ARCHITECTURE.md, "Plugins"; Memory RFC,
"EmbeddingModel").

- ``deterministic``: :class:`~.deterministic.DeterministicEmbedding` (feature hashing,
  no model files; for tests);
- ``local``: :class:`~.local.LocalEmbedding` (all-MiniLM-L6-v2, the ``local`` extra);
- ``openai``: :class:`~.openai_compat.OpenAIEmbedding` (any OpenAI-compatible server,
  the ``openai`` extra).

Each factory takes the model's keyword options and imports its module when called, so
importing this module imports no SDK, no torch and no model module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from powercontext.plugins.hookspecs import RegisterEmbeddingModel, hookimpl

if TYPE_CHECKING:
    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
    from powercontext.adapters.embedding.local import LocalEmbedding
    from powercontext.adapters.embedding.openai_compat import OpenAIEmbedding

__all__ = ["deterministic", "local", "openai", "powercontext_register_embedding_models"]


def deterministic(**options: Any) -> DeterministicEmbedding:
    """``DeterministicEmbedding(**options)``."""
    from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

    return DeterministicEmbedding(**options)


def local(**options: Any) -> LocalEmbedding:
    """``LocalEmbedding(**options)``; ImportError when the ``local`` extra is missing
    (raised when the model loads)."""
    from powercontext.adapters.embedding.local import LocalEmbedding

    return LocalEmbedding(**options)


def openai(**options: Any) -> OpenAIEmbedding:
    """``OpenAIEmbedding(**options)``; ImportError when the ``openai`` extra is missing."""
    from powercontext.adapters.embedding.openai_compat import OpenAIEmbedding

    return OpenAIEmbedding(**options)


@hookimpl
def powercontext_register_embedding_models(register: RegisterEmbeddingModel) -> None:
    register("deterministic", deterministic)
    register("local", local)
    register("openai", openai)
