"""Offline answer relevance: question-term coverage, answer type, specificity and evasion.

``ContextRelevanceJudge`` lives in :mod:`.context` and is re-exported here.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.claims import is_abstention, parse_answer
from ragsieve.evaluators.judges.context import ContextRelevanceJudge, context_precision
from ragsieve.evaluators.judges.offline import OfflineJudge
from ragsieve.evaluators.judges.question import coverage as term_coverage
from ragsieve.evaluators.judges.question import expected_type, has_type, key_terms
from ragsieve.evaluators.judges.text import content_words, fold, rarity, sentences, stem, stems
from ragsieve.evaluators.records import EvalResult, RagInteraction

_HEDGE = re.compile(
    r"\b(typically|generally|usually|various|several|some|may|might|could|possibly|perhaps"
    r"|specific (?:details|region|date|information)|not (?:sure|aware|certain)|unclear|depends"
    r"|probablemente|quizas|quiza|depende|varios|algunos)\b"
)


class AnswerRelevanceJudge(OfflineJudge):
    """Does the answer address what was asked? (deterministic heuristic, no LLM)"""

    name = "answer_relevance"

    def __init__(self, threshold: float = 0.85) -> None:
        self.threshold = threshold
        self.version = f"offline-4:t{threshold}"

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        question, answer = interaction.query or "", interaction.answer or ""
        if not question.strip() or not answer.strip():
            return self.result(
                interaction, "skipped", None, "no question" if not question.strip() else "no answer"
            )
        parsed = parse_answer(answer)
        meta: dict[str, Any] = {}
        if parsed.suspicious:
            meta["suspicious_instructions"] = parsed.suspicious[:5]
        sents = [s for s in sentences(answer) if s not in parsed.suspicious] or [answer]
        terms = key_terms(question)
        sent_stems = [stems(content_words(s)) for s in sents]
        coverage = term_coverage(terms, set().union(*sent_stems))
        new = [t for s in sents for t in content_words(s) if stem(t) not in terms]
        # concrete answers name rare things; generic filler ("a popular destination") does not
        specificity = (
            float(np.clip((np.mean([rarity(t) for t in new]) - 1.0) / 1.2, 0, 1)) if new else 0.0
        )
        evasive = sum(is_abstention(s) or bool(_HEDGE.search(fold(s))) for s in sents) / len(sents)
        kind = expected_type(question)
        type_ok = 1.0 if kind is None else float(has_type(answer, kind))
        score = 0.3 * coverage + 0.3 * specificity + 0.2 * type_ok + 0.2 * (1.0 - evasive)
        if parsed.abstained:
            score = min(score, 0.2)  # noncommittal answers address nothing
        meta.update(
            coverage=round(coverage, 4),
            specificity=round(specificity, 4),
            evasive=round(evasive, 4),
            expected_type=kind,
            type_found=bool(type_ok),
            abstained=parsed.abstained,
        )
        notes = []
        if kind and not type_ok:
            notes.append(f"the question asks for a {kind} and the answer gives none")
        if evasive:
            notes.append(f"{evasive:.0%} of the answer is evasive or hedged")
        if specificity < 0.3:
            notes.append("the answer is generic (few specific names, numbers or terms)")
        label = "relevant" if score >= self.threshold else "irrelevant"
        explanation = f"covers {coverage:.0%} of the question's key terms" + (
            "; " + "; ".join(notes) if notes else ""
        )
        return self.result(interaction, label, score, explanation, meta)


__all__ = ["AnswerRelevanceJudge", "ContextRelevanceJudge", "context_precision"]
