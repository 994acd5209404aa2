"""The three LLM metric judges (faithfulness, answer relevance, context relevance) and verdicts."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel

from ragsieve.evaluators.errors import JudgeError
from ragsieve.evaluators.judges.llm.base import LLMJudge
from ragsieve.evaluators.judges.llm.prompt import turn_fields
from ragsieve.evaluators.judges.offline.base import chunk_texts
from ragsieve.evaluators.judges.offline.context import context_precision
from ragsieve.evaluators.judges.offline.conversation import judged_question
from ragsieve.evaluators.records import RagInteraction
from ragsieve.evaluators.tools.embeddings import embed


class _Claim(BaseModel):
    claim: str
    supported: bool
    evidence: str | None = None
    reason: str = ""


class FaithfulnessVerdict(BaseModel):
    """Structured reply of the faithfulness prompt."""

    reasoning: str
    abstained: bool = False
    claims: list[_Claim] = []


class AnswerRelevanceVerdict(BaseModel):
    """Structured reply of the answer-relevance prompt."""

    reasoning: str
    questions: list[str] = []
    noncommittal: bool = False


class _ChunkVerdict(BaseModel):
    index: int
    relevant: bool
    quote: str | None = None


class ContextRelevanceVerdict(BaseModel):
    """Structured reply of the context-relevance prompt."""

    reasoning: str
    chunks: list[_ChunkVerdict] = []


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


class LLMFaithfulnessJudge(LLMJudge):
    """Claims of the answer checked against the context by an LLM, with verbatim evidence."""

    name, prompt_name, verdict_model = "faithfulness", "faithfulness", FaithfulnessVerdict

    def skip_reason(self, x: RagInteraction) -> str | None:
        if not (x.answer or "").strip():
            return "no answer"
        return None if chunk_texts(x) else "no context reached the prompt"

    def fields(self, x: RagInteraction) -> dict[str, str]:
        ctx = "\n\n".join(f"[{i}] {c}" for i, (_, _, c) in enumerate(chunk_texts(x)))
        return {"question": x.query or "(none)", "context": ctx, "answer": x.answer or ""}

    def score(
        self, v: Any, x: RagInteraction, f: dict[str, str]
    ) -> tuple[str, float | None, str, dict[str, Any]]:
        claims = [c.model_dump() for c in v.claims]
        ctx = _squash(f["context"])
        for c in claims:  # a quote that is not verbatim is not evidence
            if c["evidence"] and _squash(c["evidence"]) not in ctx:
                c["evidence_verbatim"] = False
        if v.abstained and not claims:
            return (
                "abstained",
                None,
                "the answer declines to answer",
                {"claims": [], "abstained": True},
            )
        if not claims:
            raise JudgeError("the model returned no claims")
        ok = sum(c["supported"] for c in claims)
        score = ok / len(claims)
        bad = [c["reason"] for c in claims if not c["supported"]]
        expl = f"{ok}/{len(claims)} claims supported" + (": " + "; ".join(bad[:3]) if bad else "")
        return (
            "faithful" if ok == len(claims) else "unfaithful",
            score,
            expl,
            {"claims": claims, "abstained": v.abstained, "reasoning": v.reasoning},
        )

    def relabel(self, score: float, labels: list[str]) -> str:
        return "faithful" if score >= 0.999 else "unfaithful"


class LLMAnswerRelevanceJudge(LLMJudge):
    """RAGAS-style: questions regenerated from the answer vs the real one (embedding cosine)."""

    name, prompt_name, verdict_model = (
        "answer_relevance",
        "answer_relevance",
        AnswerRelevanceVerdict,
    )
    threshold = 0.5

    def skip_reason(self, x: RagInteraction) -> str | None:
        if not (x.query or "").strip():
            return "no question"
        return None if (x.answer or "").strip() else "no answer"

    def fields(self, x: RagInteraction) -> dict[str, str]:
        return {**turn_fields(x), "answer": x.answer or "", "n_questions": "3"}

    def score(
        self, v: Any, x: RagInteraction, f: dict[str, str]
    ) -> tuple[str, float | None, str, dict[str, Any]]:
        meta = {
            "generated_questions": v.questions,
            "noncommittal": v.noncommittal,
            "reasoning": v.reasoning,
            **judged_question(x).evidence(),
        }
        if v.noncommittal:
            return "irrelevant", 0.0, "noncommittal answer", meta
        if not v.questions:
            raise JudgeError("the model generated no questions")
        vecs = embed([f["judged_question"], *v.questions])  # a follow-up: what it means
        score = float(np.clip(np.mean(vecs[1:] @ vecs[0]), 0.0, 1.0))
        label = "relevant" if score >= self.threshold else "irrelevant"
        return label, score, f"regenerated questions match the question at cosine {score:.2f}", meta

    def relabel(self, score: float, labels: list[str]) -> str:
        return "relevant" if score >= self.threshold else "irrelevant"


class LLMContextRelevanceJudge(LLMJudge):
    """Per-chunk relevance by an LLM; score is rank-aware context precision@k."""

    name, prompt_name, verdict_model = (
        "context_relevance",
        "context_relevance",
        ContextRelevanceVerdict,
    )

    def skip_reason(self, x: RagInteraction) -> str | None:
        if not (x.query or "").strip():
            return "no question"
        return None if chunk_texts(x) else "no context"

    def fields(self, x: RagInteraction) -> dict[str, str]:
        chunks = {f"chunk:{i}": c for i, (_, _, c) in enumerate(chunk_texts(x))}
        return {**turn_fields(x), **chunks}

    def layout(self, sent: dict[str, str], fence: str) -> dict[str, str]:
        n = sum(k.startswith("chunk:") for k in sent)
        blocks = [
            f"<<<BEGIN CHUNK {i} {fence}>>>\n{sent[f'chunk:{i}']}\n<<<END CHUNK {i} {fence}>>>"
            for i in range(n)
        ]
        turn = {k: v for k, v in sent.items() if not k.startswith("chunk:")}
        return {**turn, "chunks": "\n".join(blocks)}

    def score(
        self, v: Any, x: RagInteraction, f: dict[str, str]
    ) -> tuple[str, float | None, str, dict[str, Any]]:
        chunks = chunk_texts(x)
        by_index = {c.index: c for c in v.chunks}
        missing = [i for i in range(len(chunks)) if i not in by_index]
        if missing:
            raise JudgeError(f"the model gave no verdict for chunk(s) {missing[:5]}")
        per = [
            {
                "id": cid,
                "rank": rank,
                "relevant": by_index[i].relevant,
                "score": 1.0 if by_index[i].relevant else 0.0,
                "quote": by_index[i].quote,
            }
            for i, (cid, rank, _) in enumerate(chunks)
        ]
        score = context_precision([c["score"] for c in per])
        n = sum(c["relevant"] for c in per)
        noise = [c["id"] for c in per if not c["relevant"]]
        expl = f"{n}/{len(per)} chunks relevant" + (
            f"; noise: {', '.join(noise[:5])}" if noise else ""
        )
        return (
            ("relevant" if n else "irrelevant"),
            score,
            expl,
            {
                "chunks": per,
                "k": len(per),
                "reasoning": v.reasoning,
                **judged_question(x).evidence(),
            },
        )

    def relabel(self, score: float, labels: list[str]) -> str:
        return "relevant" if score > 0 else "irrelevant"
