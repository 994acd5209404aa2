"""Shared plumbing of the offline (heuristic, no-LLM) judges: result building and error capture."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragsieve.evaluators.records import EvalResult, RagInteraction

log = logging.getLogger(__name__)

OFFLINE_MODEL = "ragsieve-offline-heuristic-v1 (deterministic, no LLM)"
OFFLINE_VERSION = "offline-1"


class OfflineJudge:
    """Helper base: subclasses implement ``_judge`` (sync, may raise); ``evaluate`` never raises."""

    name: str = ""
    version: str = OFFLINE_VERSION
    judge_model: str = OFFLINE_MODEL

    async def evaluate(self, interaction: RagInteraction) -> Sequence[EvalResult]:
        """Judge one interaction; failures become a single ``label="error"`` result."""
        try:
            return [self._judge(interaction)]
        except Exception as exc:  # a heuristic bug must not stop a job run
            log.warning("%s failed on trace %s: %s", self.name, interaction.trace_id, exc)
            return [self.result(interaction, "error", None, f"offline judge failed: {exc}")]

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        raise NotImplementedError

    def result(
        self,
        interaction: RagInteraction,
        label: str,
        score: float | None,
        explanation: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> EvalResult:
        """Build an ``EvalResult`` for this judge with the offline provenance filled in."""
        if score is not None:
            score = round(min(1.0, max(0.0, float(score))), 4)
        return EvalResult(
            trace_id=interaction.trace_id,
            span_id=interaction.span_id,
            evaluator=self.name,
            label=label,
            score=score,
            explanation=explanation,
            judge_model=self.judge_model,
            judge_version=self.version,
            prompt_version=self.version,
            annotator_kind="CODE",
            metadata=dict(metadata or {}),
        )


class EmbeddingCache:
    """LRU cache of sentence vectors: chunks recur across traces, so each is encoded once."""

    def __init__(self, maxsize: int = 20_000) -> None:
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._maxsize = maxsize

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Return unit vectors for ``texts``, encoding only those not seen recently."""
        from ragsieve.evaluators.embeddings import embed

        missing = [t for t in dict.fromkeys(texts) if t not in self._items]
        if missing:
            for text, vec in zip(missing, embed(missing), strict=True):
                self._items[text] = vec
            while len(self._items) > self._maxsize:
                self._items.popitem(last=False)
        for t in texts:
            self._items.move_to_end(t)
        return np.stack([self._items[t] for t in texts]) if texts else np.zeros((0, 512))


EMBEDDINGS = EmbeddingCache()


def chunk_texts(interaction: RagInteraction) -> list[tuple[str, int, str]]:
    """``(id, rank, content)`` of the context chunks that have content, in rank order."""
    docs = sorted(interaction.context, key=lambda d: d.rank)
    return [(d.id, d.rank, d.content) for d in docs if d.content and d.content.strip()]
