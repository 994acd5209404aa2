"""Offline faithfulness: rarity-weighted lexical support of each claim by the retrieved context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragsieve.evaluators.embeddings import embed
from ragsieve.evaluators.judges.choice import check_choice
from ragsieve.evaluators.judges.claims import find_injections, parse_answer
from ragsieve.evaluators.judges.compare import check_comparison
from ragsieve.evaluators.judges.offline import OfflineJudge, chunk_texts
from ragsieve.evaluators.judges.spans import broken_spans
from ragsieve.evaluators.judges.text import (
    NEGATIONS,
    content_words,
    entities,
    fold,
    language,
    numbers,
    rarity,
    sentences,
    stem,
    stems,
    words,
)
from ragsieve.evaluators.records import EvalResult, RagInteraction

SUPPORT_THRESHOLD = 0.6  # a claim with soft support below this is "unsupported"
FAITHFUL_THRESHOLD = 0.6  # answer-level score at or above this is "faithful"
RESTATEMENT_SUPPORT = (
    0.65  # a claim made only of question words can be neither confirmed nor refuted
)
MAX_CONTEXT_SENTENCES = 400
MAX_CROSS_LINGUAL_SENTENCES = 60
BROKEN_SPAN_SUPPORT = 0.25  # a name the context never writes in one piece is not evidence
SUPPORT_POWER = 2.0  # one unsupported rare word in a short claim should cost more than its share
_YES_NO = frozenset({"yes", "no", "si", "yeah", "nope", "true", "false", "correct"})


@dataclass(slots=True)
class _Context:
    sents: list[str]
    sent_stems: list[set[str]]
    sent_neg: list[bool]
    stems: set[str]
    numbers: set[str]
    lang: str


def _context(chunks: list[str]) -> _Context:
    sents = [s for c in chunks for s in sentences(c)][:MAX_CONTEXT_SENTENCES]
    toks = [words(s) for s in sents]
    sent_stems = [stems(t) for t in toks]
    return _Context(
        sents=sents,
        sent_stems=sent_stems,
        sent_neg=[any(w in NEGATIONS or w.endswith("n't") for w in t) for t in toks],
        stems=set().union(*sent_stems) if sent_stems else set(),
        numbers=set().union(*(numbers(c) for c in chunks)),
        lang=language(" ".join(chunks)),
    )


def _claim_verdict(
    claim: str, ctx: _Context, q_stems: set[str], q_nums: set[str]
) -> dict[str, Any]:
    toks = [t for t in content_words(claim) if stem(t) not in q_stems]
    claim_stems = {stem(t) for t in toks}
    if not claim_stems or claim_stems <= _YES_NO:
        return {
            "claim": claim,
            "support": RESTATEMENT_SUPPORT,
            "evidence": None,
            "reason": "only restates the question",
        }
    weights = {s: rarity(t) for t, s in zip(toks, (stem(t) for t in toks), strict=True)}
    total = sum(weights.values())
    global_cov = sum(w for s, w in weights.items() if s in ctx.stems) / total
    best_i, best_cov = -1, 0.0
    for i, ss in enumerate(ctx.sent_stems):
        cov = sum(w for s, w in weights.items() if s in ss)
        if cov > best_cov:
            best_i, best_cov = i, cov
    local_cov = best_cov / total
    support = (0.5 * global_cov + 0.5 * local_cov) ** SUPPORT_POWER
    problems: list[str] = []
    missing_nums = sorted(n for n in numbers(claim) - ctx.numbers - q_nums)
    if missing_nums:
        problems.append(f"{', '.join(missing_nums)} is not in the context")
        support = min(support, 0.25)
    missing_ents = sorted(
        e for e in entities(claim) if stem(e) not in ctx.stems and stem(e) not in q_stems
    )
    if missing_ents:
        problems.append(f"{', '.join(missing_ents[:3])} not found in the context")
        support *= 0.7
    claim_neg = any(w in NEGATIONS or w.endswith("n't") for w in words(claim))
    long_claim = len(claim.split()) >= 4
    if long_claim and best_i >= 0 and local_cov >= 0.5 and claim_neg != ctx.sent_neg[best_i]:
        problems.append("negation differs from the closest context sentence")
        support *= 0.6
    missing_words = [t for t in toks if stem(t) not in ctx.stems]
    if not problems and support < SUPPORT_THRESHOLD and missing_words:
        problems.append(f"'{' '.join(missing_words[:4])}' not supported by the context")
    return {
        "claim": claim,
        "support": round(support, 4),
        "evidence": ctx.sents[best_i] if best_i >= 0 and local_cov > 0 else None,
        "reason": "; ".join(problems) or "content words found in the context",
    }


def _cross_lingual(claims: list[str], ctx: _Context) -> list[dict[str, Any]]:
    """Claims in another language than the context: compare meaning with the encoder."""
    sents = ctx.sents[:MAX_CROSS_LINGUAL_SENTENCES]
    vecs = embed([*claims, *sents])  # one batched encoder call
    sims = vecs[: len(claims)] @ vecs[len(claims) :].T
    out = []
    for claim, row in zip(claims, sims, strict=True):
        j = int(np.argmax(row))
        support = float(np.clip((row[j] - 0.35) / 0.35, 0.0, 1.0))
        missing = sorted(numbers(claim) - ctx.numbers)
        reason = f"cross-lingual similarity {row[j]:.2f}"
        if missing:
            support = min(support, 0.25)
            reason = f"{', '.join(missing)} is not in the context"
        out.append(
            {
                "claim": claim,
                "support": round(support, 4),
                "evidence": ctx.sents[j] if support > 0 else None,
                "reason": reason,
            }
        )
    return out


def _mark_broken_spans(verdicts: list[dict[str, Any]], answer: str, sources: list[str]) -> None:
    """A name the sources never write in one piece ("Amy Johnson" for "Amy Jo Johnson")
    makes the claim that states it unsupported, whatever its word-level support."""
    for broken in broken_spans(answer, sources):
        for v in verdicts:
            if broken.span in v["claim"] or len(verdicts) == 1:
                v["support"] = min(v["support"], BROKEN_SPAN_SUPPORT)
                known = v["reason"] if v["reason"] != "content words found in the context" else ""
                v["reason"] = "; ".join(r for r in (broken.reason, known) if r)


class FaithfulnessJudge(OfflineJudge):
    """Is every claim of the answer supported by the retrieved context? (deterministic heuristic)

    Example:
        >>> judge = FaithfulnessJudge()
        >>> [result] = asyncio.run(judge.evaluate(interaction))
        >>> result.label, result.metadata["claims"][0]["reason"]
        ('unfaithful', '2025 is not in the context')
    """

    name = "faithfulness"

    def __init__(self, threshold: float = FAITHFUL_THRESHOLD) -> None:
        self.threshold = threshold
        self.version = f"offline-4:t{threshold}"

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        chunks = [c for _, _, c in chunk_texts(interaction)]
        answer = interaction.answer or ""
        if not answer.strip():
            return self.result(interaction, "skipped", None, "no answer")
        parsed = parse_answer(answer)
        meta: dict[str, Any] = {"abstained": parsed.abstained}
        if not chunks:  # an abstention needs no context to be recognised (empty retrieval)
            if parsed.suspicious:
                meta["suspicious_instructions"] = parsed.suspicious[:5]
            if parsed.abstained:
                meta.update(claims=[], context="none")
                why = "the answer declines to answer (no context reached the prompt): "
                return self.result(
                    interaction, "abstained", None, why + parsed.abstentions[0], meta
                )
            return self.result(interaction, "skipped", None, "no context reached the prompt", meta)
        context_injections = [s for c in chunks for s in find_injections(c)]
        if parsed.suspicious or context_injections:
            meta["suspicious_instructions"] = (parsed.suspicious + context_injections)[:5]
        if parsed.abstained:
            meta["claims"] = []
            return self.result(
                interaction,
                "abstained",
                None,
                "the answer declines to answer: " + parsed.abstentions[0],
                meta,
            )
        if not parsed.claims:
            meta["claims"] = []
            return self.result(
                interaction, "error", None, "no verifiable claim in the answer", meta
            )
        ctx = _context(chunks)
        q_words = content_words(interaction.query or "")
        lang = language(answer)
        if lang != "unknown" and ctx.lang != "unknown" and lang != ctx.lang:
            verdicts = _cross_lingual(parsed.claims, ctx)
            meta["cross_lingual"] = f"{lang} answer, {ctx.lang} context"
        else:
            q_nums = numbers(interaction.query or "")
            verdicts = [_claim_verdict(c, ctx, stems(q_words), q_nums) for c in parsed.claims]
            _mark_broken_spans(verdicts, answer, [*chunks, interaction.query or ""])
            question, context = interaction.query or "", " ".join(chunks)
            # "X or Y, which came first?" answered against the years; "X or Y?" / "are both
            # X and Y …?" answered against what the context says about each option
            clash = check_comparison(question, answer, context) or check_choice(
                question, answer, context
            )
            if clash is not None:
                for v in verdicts:
                    if fold(clash.picked) in fold(v["claim"]) or len(verdicts) == 1:
                        v["support"] = min(v["support"], 0.25)
                        v["reason"] = clash.reason
        for v in verdicts:
            v["supported"] = v["support"] >= SUPPORT_THRESHOLD
            if not v["supported"]:
                v["evidence"] = None
        informative = [v for v in verdicts if v["reason"] != "only restates the question"]
        score = float(np.mean([v["support"] for v in (informative or verdicts)]))
        n_ok = sum(v["supported"] for v in verdicts)
        meta.update(claims=verdicts, supported=n_ok, total=len(verdicts))
        label = "faithful" if score >= self.threshold else "unfaithful"
        bad = [v["reason"] for v in verdicts if not v["supported"]]
        explanation = f"{n_ok}/{len(verdicts)} claims supported by the context"
        if bad:
            explanation += ": " + "; ".join(bad[:3])
        return self.result(interaction, label, score, explanation, meta)
