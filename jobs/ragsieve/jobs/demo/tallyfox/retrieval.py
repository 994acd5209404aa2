"""Demo retrieval: BM25 (bm25s) and the embedded encoder fused by RRF, then a reranker."""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import bm25s
import numpy as np

from ragsieve.evaluators.tools.embeddings import embed
from ragsieve.jobs.demo.tallyfox.kb import Chunk, KnowledgeBase

# bm25s pins its logger to DEBUG on import; let it follow the application's level again.
logging.getLogger("bm25s").setLevel(logging.NOTSET)

_STOP = frozenset(
    """a an and are as at be by can do does for from how i in is it its my of on or the to what when
    where which who will with your you me many much long after before this that there any
    el la los las
    un una unos de del al que en y o por para con como es son se su sus mi mis
    cual cuales cuanto cuanta
    cuantos cuantas cuando donde puedo debo hay lo le les tras desde qué""".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def fold(text: str) -> str:
    """Lowercase and strip accents."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    """Folded content tokens cut to a 6-letter stem (merges most English/Spanish inflections)."""
    return list(_stems(text))


@lru_cache(maxsize=16_384)
def _stems(text: str) -> tuple[str, ...]:
    words = _WORD.findall(fold(text))
    return tuple(w[:6] for w in words if w not in _STOP and (len(w) > 1 or w.isdigit()))


def coverage(query: str, text: str) -> float:
    """Share of the query's content stems that occur in ``text``."""
    q = set(_stems(query))
    return len(q & set(_stems(text))) / len(q) if q else 0.0


class Encoder:
    """Embedding cache: the KB is encoded once, queries are memoised (traffic repeats phrasings)."""

    def __init__(self, maxsize: int = 4096) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._maxsize = maxsize

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (rows in the same order)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vec in zip(missing, embed(missing), strict=True):
                self._cache[text] = vec
            while len(self._cache) > self._maxsize:
                self._cache.popitem(last=False)
        return (
            np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 512), np.float32)
        )


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk with the score of the stage that returned it."""

    chunk: Chunk
    score: float


class HybridRetriever:
    """BM25 and dense rankings over the KB fused by reciprocal rank fusion (RRF)."""

    def __init__(
        self, kb: KnowledgeBase, encoder: Encoder | None = None, *, rrf_k: int = 60
    ) -> None:
        if rrf_k < 1:
            raise ValueError(f"rrf_k must be >= 1, got {rrf_k}")
        self.kb = kb
        self.encoder = encoder or Encoder()
        self.rrf_k = rrf_k
        texts = [f"{c.title}. {c.text}" for c in kb.chunks]
        self._bm25 = bm25s.BM25()
        self._bm25.index([tokenize(t) for t in texts], show_progress=False)
        self._dense = self.encoder.vectors(texts)

    def search(
        self, query: str, k: int = 8, *, exclude: Callable[[Chunk], bool] | None = None
    ) -> list[Hit]:
        """The ``k`` best chunks for ``query`` by RRF score; ``exclude`` hides chunks."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        lexical = np.asarray(self._bm25.get_scores(tokenize(query)), dtype=np.float64)
        dense = self._dense @ self.encoder.vectors([query])[0]
        fused = np.zeros(len(self.kb.chunks))
        for scores in (lexical, dense):
            order = np.argsort(-scores, kind="stable")
            fused[order] += 1.0 / (self.rrf_k + np.arange(1, len(order) + 1))
        hits = [
            Hit(self.kb.chunks[i], float(fused[i]))
            for i in np.argsort(-fused, kind="stable")
            if exclude is None or not exclude(self.kb.chunks[i])
        ]
        return hits[:k]


class Reranker:
    """Re-scores candidates (cosine + lexical coverage + first-stage score) and keeps ``top_k``."""

    model_name = "ragsieve-demo-rerank-v1"

    def __init__(
        self, encoder: Encoder, *, lexical_weight: float = 0.3, prior_weight: float = 1.0
    ) -> None:
        self.encoder = encoder
        self.lexical_weight = lexical_weight
        self.prior_weight = prior_weight

    def rerank(self, query: str, hits: Sequence[Hit], top_k: int = 4) -> list[Hit]:
        """``hits`` re-ordered by rerank score, cut to ``top_k``."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if not hits:
            return []
        q = self.encoder.vectors([query])[0]
        vecs = self.encoder.vectors([f"{h.chunk.title}. {h.chunk.text}" for h in hits])
        prior = np.array([h.score for h in hits])
        prior = prior / max(float(prior.max()), 1e-12)
        lexical = np.array([coverage(query, h.chunk.text) for h in hits])
        scores = vecs @ q + self.lexical_weight * lexical + self.prior_weight * prior
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [Hit(hits[i].chunk, round(float(scores[i]), 4)) for i in order]
