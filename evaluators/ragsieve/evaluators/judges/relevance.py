"""Offline answer relevance: question-term coverage, answer type, specificity and evasion.

``ContextRelevanceJudge`` lives in :mod:`.context` and is re-exported here.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ragsieve.evaluators.embeddings import embed
from ragsieve.evaluators.judges.claims import is_abstention, parse_answer, strip_attribution
from ragsieve.evaluators.judges.context import (
    ContextRelevanceJudge,
    context_precision,
    question_terms,
)
from ragsieve.evaluators.judges.offline import OfflineJudge
from ragsieve.evaluators.judges.question import expected_type, has_type
from ragsieve.evaluators.judges.terms import TermIndex, key
from ragsieve.evaluators.judges.text import (
    content_words,
    entities,
    fold,
    language,
    numbers,
    rarity,
    sentences,
)
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import EvalResult, RagInteraction

_HEDGE = re.compile(
    r"\b(typically|generally|usually|various|several|some|(?<!\d )may(?! \d)|might|could|possibly"
    r"|perhaps"
    r"|not (?:sure|aware|certain)|unclear|depends"
    r"|probablemente|quizas|quiza|depende|varios|algunos)\b"
)


MAX_ANSWER_CHARS = 400  # the answer's gist for the question-answer cosine
MEANING_FLOOR = 0.05  # question-answer cosine at or below this: about something else
MEANING_SPAN = 0.25  # ... and at floor + span: clearly about the question
MISSING_TYPE_FACTOR = 0.7
MEANING_SHARE = 0.7  # closeness in meaning alone (the same topic) is not a full answer
SHORT_ANSWER_WORDS = 6  # a short answer holding the asked type addresses the question
SHORT_TYPED_ADDRESSED = 0.6


def _direct_answer(sents: list[str], kind: str | None) -> bool:
    """A short sentence that gives a value of the asked type (any name or number when the
    question asks for no particular type): "The answer is Marlee Matlin.", "In 1349."."""
    for sent in sents:
        claim = strip_attribution(sent)
        if len(content_words(claim)) > SHORT_ANSWER_WORDS:
            continue
        if kind is not None and has_type(claim, kind):
            return True
        if kind == "definition" and len(content_words(claim)) >= 1:
            return True  # "genetic branches." defines "what are clades?" in a noun phrase
        if kind is None and (entities(" x " + claim) or numbers(claim)):
            return True
    return False


class AnswerRelevanceJudge(OfflineJudge):
    """Does the answer address what was asked? (deterministic heuristic, no LLM)"""

    name = "answer_relevance"

    def __init__(self, threshold: float = DEFAULT_THRESHOLDS["answer_relevance"]) -> None:
        self.threshold = threshold
        self.version = f"offline-5:t{threshold}"

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
        terms = question_terms(question)
        qlang, alang = language(question), language(answer)
        index = TermIndex(sents, cross_lingual=qlang != alang and "unknown" not in (qlang, alang))
        total = sum(w for _, w in terms.values())
        coverage = (
            sum(w * index.find(word).strength for word, w in terms.values()) / total
            if total
            else 0.0
        )
        # the whole answer, and each sentence: a direct answer followed by a detail still answers
        texts = [" ".join(sents)[:MAX_ANSWER_CHARS], *(s[:MAX_ANSWER_CHARS] for s in sents[:8])]
        vecs = embed([question, *texts])
        cosine = float((vecs[1:] @ vecs[0]).max())
        meaning = float(np.clip((cosine - MEANING_FLOOR) / MEANING_SPAN, 0.0, 1.0))
        addressed = max(coverage, MEANING_SHARE * meaning)
        new = [t for s in sents for t in content_words(s) if key(t) not in terms]
        kind = expected_type(question)
        type_ok = 1.0 if kind is None else float(has_type(answer, kind))
        if _direct_answer(sents, kind):
            addressed = max(addressed, SHORT_TYPED_ADDRESSED)  # "May 2013." answers "When ...?"
        # concrete answers name rare things; generic filler ("a popular destination") does not
        specificity = (
            float(np.clip((np.mean([rarity(t) for t in new]) - 1.0) / 1.2, 0, 1)) if new else 0.0
        )
        evasive = sum(is_abstention(s) or bool(_HEDGE.search(fold(s))) for s in sents) / len(sents)
        # an answer that is about something else fails however concrete and confident it is
        score = 0.55 * addressed + 0.2 * type_ok + 0.15 * (1.0 - evasive) + 0.1 * specificity
        if not type_ok:
            score *= MISSING_TYPE_FACTOR  # on topic, but without what was asked for
        if parsed.abstained:
            score = min(score, 0.2)  # noncommittal answers address nothing
        meta.update(
            coverage=round(coverage, 4),
            cosine=round(cosine, 4),
            specificity=round(specificity, 4),
            evasive=round(evasive, 4),
            expected_type=kind,
            type_found=bool(type_ok),
            abstained=parsed.abstained,
        )
        notes = []
        if addressed < 0.3:
            notes.append("the answer is about something else than the question")
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
