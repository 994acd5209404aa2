"""Context relevance by a local reranker: does some retrieved chunk answer the question?

Each chunk is cut to the reranker's length (:mod:`.windows`), every window is scored against
the question the judges read for this turn (a follow-up's standalone meaning), a chunk scores its
best window and the result the best chunk, as the offline judge scores it: one chunk that holds
the answer makes the context relevant. ``metadata["chunks"]`` holds each chunk's score and the
window that gave it.
"""

from __future__ import annotations

from typing import Any

from ragsieve.evaluators.judges.model.base import ModelJudge
from ragsieve.evaluators.judges.model.manifest import ModelFolderError
from ragsieve.evaluators.judges.model.runtime import LocalModel
from ragsieve.evaluators.judges.model.windows import budget, cut
from ragsieve.evaluators.judges.offline.base import chunk_texts
from ragsieve.evaluators.judges.offline.conversation import judged_question
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import EvalResult, RagInteraction


class ModelContextRelevanceJudge(ModelJudge):
    """The best chunk's reranker probability (sigmoid of its relevance logit)."""

    name = "context_relevance"

    def __init__(
        self,
        model: LocalModel,
        *,
        threshold: float = DEFAULT_THRESHOLDS["context_relevance"],
        **options: Any,
    ) -> None:
        if model.manifest.task != "relevance":
            raise ModelFolderError(
                f"{model.manifest.folder}: task {model.manifest.task!r} cannot judge context"
                " relevance (it needs a relevance model, a reranker)"
            )
        options.pop("windows_per_claim", None)
        super().__init__(model, threshold=threshold, **options)
        self.version = self._tag("context_relevance")

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        asked = judged_question(interaction)
        question = asked.text
        chunks = chunk_texts(interaction)
        if not question.strip() or not chunks:
            why = "no question" if not question.strip() else "no context"
            return self.result(interaction, "skipped", None, why)
        size = budget(self.model, [question])
        windows = [
            (rank, w) for cid, rank, text in chunks for w in cut(self.model, cid, text, size)
        ]
        scored = self.score([(question, w.text) for _, w in windows])
        per_chunk: dict[str, dict[str, Any]] = {}
        for (rank, w), s in zip(windows, scored, strict=True):
            seen = per_chunk.get(w.chunk)
            if seen is None or s.support > seen["score"]:
                per_chunk[w.chunk] = {
                    "id": w.chunk,
                    "rank": rank,
                    "relevant": s.support >= self.threshold,
                    "score": round(s.support, 6),
                    "window": [w.start, w.end],
                }
        ranked = sorted(per_chunk.values(), key=lambda c: c["rank"])
        top = max(ranked, key=lambda c: c["score"])
        score = float(top["score"])
        label = self.decide(score, "relevant", "irrelevant")
        n_ok = sum(c["relevant"] for c in ranked)
        a, b = top["window"]
        explanation = (
            f"{label} ({score:.2f} {'<' if label == 'irrelevant' else '>='} {self.threshold}):"
            f" {n_ok}/{len(ranked)} chunks answer the question ({self.model.manifest.name});"
            f" best {top['id']}[{a}:{b}] P(relevant)={score:.2f}"
        )
        meta = {"chunks": ranked, "k": len(ranked), "windows": len(windows), **asked.evidence()}
        return self.result(interaction, label, score, explanation, meta)


__all__ = ["ModelContextRelevanceJudge"]
