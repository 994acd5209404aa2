"""Offline faithfulness: rarity-weighted lexical support of each claim by the retrieved context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ragsieve.evaluators.embeddings import embed
from ragsieve.evaluators.judges.choice import check_choice
from ragsieve.evaluators.judges.claims import ParsedAnswer, find_injections, parse_answer
from ragsieve.evaluators.judges.compare import check_comparison
from ragsieve.evaluators.judges.offline import OfflineJudge, chunk_texts
from ragsieve.evaluators.judges.spans import broken_spans
from ragsieve.evaluators.judges.support_model import (
    DRIVER_TEXT,
    SupportModel,
    features,
    shipped_model,
)
from ragsieve.evaluators.judges.terms import (
    NO_MATCH,
    Match,
    TermIndex,
    all_values,
    key,
    number_values,
    tokens,
)
from ragsieve.evaluators.judges.text import (
    NEGATIONS,
    STOPWORDS,
    entities,
    fold,
    language,
    rarity,
    sentences,
    words,
)
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import EvalResult, RagInteraction

SUPPORT_THRESHOLD = 0.6  # a claim with soft support below this is "unsupported"
MAX_CONTEXT_SENTENCES = 400
BROKEN_SPAN_SUPPORT = 0.25  # a name the context never writes in one piece is not evidence
VALUE_MISSING_SUPPORT = 0.25  # a number the context never states
MAX_CROSS_LINGUAL_SENTENCES = 80
XLING_SENT_FLOOR = 0.45  # claim-to-sentence cosine across languages below this: no support
XLING_SENT_SPAN = 0.3  # ... and at floor + span: full support
NEGATION_LENGTH_RATIO = 1.6  # negation is compared only with sentences of about the claim's size
SUPPORT_POWER = 1.5  # one unsupported rare word in a short claim should cost more than its share
_YES = frozenset({"yes", "si", "yeah", "yep", "true", "correct", "indeed", "cierto"})
_NO = frozenset({"no", "nope", "false", "incorrect", "falso"})


@dataclass(slots=True)
class _Context:
    sents: list[str]
    sent_chunk: list[str]
    sent_neg: list[bool]
    index: TermIndex
    values: set[str]
    value_sents: dict[str, frozenset[int]]
    lang: str


def _context(chunks: list[tuple[str, str]], *, translate: bool) -> _Context:
    pairs = [(cid, s) for cid, c in chunks for s in sentences(c)][:MAX_CONTEXT_SENTENCES]
    sents = [s for _, s in pairs]
    return _Context(
        sents=sents,
        sent_chunk=[cid for cid, _ in pairs],
        sent_neg=[_negated(s) for s in sents],
        index=TermIndex(sents, cross_lingual=translate),
        values=set().union(*(all_values(c) for _, c in chunks)),
        value_sents=_value_sentences(sents),
        lang=language(" ".join(c for _, c in chunks)),
    )


def _value_sentences(sents: list[str]) -> dict[str, frozenset[int]]:
    where: dict[str, set[int]] = {}
    for i, sent in enumerate(sents):
        for value in all_values(sent):
            where.setdefault(value, set()).add(i)
    return {v: frozenset(ix) for v, ix in where.items()}


def _negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in words(text))


def _by_value(token: str, ctx: _Context) -> Match | None:
    """``token`` found as a value the context states (a number or a number word), or None."""
    hits = sorted(all_values(token) & ctx.values)
    return Match(1.0, ctx.value_sents.get(hits[0], frozenset()), "value", token) if hits else None


def _claim_terms(claim: str, q_keys: set[str]) -> list[str]:
    """The claim's content words that the question did not already say (numbers are compared
    by value, not as words: "40 000" is one number, not the words "40" and "000")."""
    words_ = [
        t
        for t in tokens(claim)
        if t not in STOPWORDS and len(t) > 1 and not t[0].isdigit() and key(t) not in q_keys
    ]
    raws = [raw for raw in number_values(claim) if raw[:1].isdigit()]
    return words_ + [
        r for r in raws if key(r) not in q_keys and key(r.replace(",", "")) not in q_keys
    ]


def _coverage(toks: list[str], ctx: _Context) -> tuple[float, float, int, float, list[str], float]:
    """Weighted coverage of ``toks``: over the whole context, over the best window (two adjacent
    sentences of one chunk); the best single sentence and its coverage; the words found nowhere
    and their share of the claim's weight (how much the claim says that the context never does)."""
    weights: dict[str, float] = {}
    found: dict[str, Match] = {}
    for t in toks:
        k = key(t)
        weights[k] = max(weights.get(k, 0.0), 2.5 if t[0].isdigit() else rarity(t))
        if t[:1].isdigit():  # a number as written ("8,8", "40 000"): found by value
            found[k] = _by_value(t, ctx) or NO_MATCH
            continue
        if k not in found or found[k].strength < 1.0:
            m = ctx.index.find(t)
            if m.strength < 1.0:  # a number word: "seis" for "six-time"
                m = _by_value(t, ctx) or m
            if k not in found or m.strength > found[k].strength:
                found[k] = m
    total = sum(weights.values())
    glob = sum(w * found[k].strength for k, w in weights.items()) / total
    per_sent = [0.0] * len(ctx.sents)
    for k, w in weights.items():
        for i in found[k].sentences:
            per_sent[i] += w * found[k].strength
    best_window = 0.0
    for i, cov in enumerate(per_sent):
        nxt = i + 1 < len(per_sent) and ctx.sent_chunk[i + 1] == ctx.sent_chunk[i]
        window = {i, i + 1} if nxt else {i}
        cov = sum(w * found[k].strength for k, w in weights.items() if found[k].sentences & window)
        best_window = max(best_window, cov)
    best_i = max(range(len(per_sent)), key=per_sent.__getitem__) if per_sent else -1
    best_single = per_sent[best_i] / total if best_i >= 0 else 0.0
    missing = [t for t in toks if found[key(t)].strength == 0.0]
    novel = sum(w for k, w in weights.items() if found[k].strength == 0.0) / total
    return glob, best_window / total, best_i, best_single, missing, novel


def _claim_verdict(
    claim: str, ctx: _Context, q_keys: set[str], q_values: set[str], polarity: bool | None
) -> dict[str, Any]:
    toks = _claim_terms(claim, q_keys)
    restates = not toks or {key(t) for t in toks} <= _YES | _NO
    if restates:  # only the question's words: the claim is the question's proposition
        toks = [t for t in _claim_terms(claim, set()) if t not in _YES | _NO]
    values = number_values(claim)
    if not toks and not values:
        return {
            "claim": claim,
            "support": 1.0,
            "evidence": None,
            "chunk": None,
            "reason": "only restates the question",
            "novel": 0.0,
        }
    glob, local, best_i, single, missing_words, novel = _coverage(toks, ctx)
    support = (0.5 * glob + 0.5 * local) ** SUPPORT_POWER
    if ctx.index.cross_lingual and not restates:  # word by word misses idiom; meaning does not
        cos, j = _closest_sentence(claim, ctx)
        meaning = float(np.clip((cos - XLING_SENT_FLOOR) / XLING_SENT_SPAN, 0.0, 1.0))
        if meaning > support:
            support, best_i, single = meaning, j, 1.0
    problems: list[str] = []
    missing_nums = sorted(raw for raw, vals in values.items() if not vals & (ctx.values | q_values))
    if missing_nums:
        problems.append(f"{', '.join(missing_nums)} is not in the context")
        support = min(support, VALUE_MISSING_SUPPORT)
    missing_ents = sorted(
        e for e in entities(claim) if key(e) not in q_keys and ctx.index.find(e).strength < 0.6
    )
    if missing_ents:
        problems.append(f"{', '.join(missing_ents[:3])} not found in the context")
        # names are sometimes translated ("Luther"/"Lutero", "Academy Award"/"Óscar")
        support *= 0.85 if ctx.index.cross_lingual else 0.7
    claim_neg = _negated(claim) if polarity is None else not polarity
    aligned = (len(toks) >= 2 or polarity is not None) and single >= 0.6
    if aligned:  # a long sentence may negate another of its clauses: compare like with like
        aligned = len(words(ctx.sents[best_i])) <= NEGATION_LENGTH_RATIO * len(words(claim)) + 3
    if aligned and claim_neg != ctx.sent_neg[best_i]:
        problems.append("negation differs from the closest context sentence")
        support *= 0.6 if polarity is None else 0.3
    if not problems and support < SUPPORT_THRESHOLD and missing_words:
        problems.append(f"'{' '.join(missing_words[:4])}' not supported by the context")
    reason = "; ".join(problems) or "content words found in the context"
    if restates and not problems:
        reason = "the question's own proposition, found in the context"
    return {
        "claim": claim,
        "support": round(support, 4),
        "novel": round(novel, 4),
        "values_missing": bool(missing_nums),
        "names_missing": bool(missing_ents),
        "negation": "negation differs" in reason,
        # the question's own proposition, answered with the opposite polarity of the context
        "contradiction": polarity is not None and "negation differs" in reason,
        "evidence": ctx.sents[best_i] if best_i >= 0 and single > 0 else None,
        "chunk": ctx.sent_chunk[best_i] if best_i >= 0 and single > 0 else None,
        "reason": reason,
    }


def _closest_sentence(claim: str, ctx: _Context) -> tuple[float, int]:
    """The cosine of the context sentence closest in meaning to ``claim``, and its index."""
    sents = ctx.sents[:MAX_CROSS_LINGUAL_SENTENCES]
    vecs = embed([claim, *sents])
    sims = vecs[1:] @ vecs[0]
    j = int(np.argmax(sims))
    return float(sims[j]), j


def yes_no(answer: str) -> bool | None:
    """True for an answer that opens with yes, False for no, None otherwise."""
    first = words(answer[:40])[:1]
    if not first:
        return None
    return True if first[0] in _YES else False if first[0] in _NO else None


def _mark_broken_spans(verdicts: list[dict[str, Any]], answer: str, sources: list[str]) -> None:
    """A name the sources never write in one piece ("Amy Johnson" for "Amy Jo Johnson")
    makes the claim that states it unsupported, whatever its word-level support."""
    for broken in broken_spans(answer, sources):
        for v in verdicts:
            if broken.span in v["claim"] or len(verdicts) == 1:
                v["support"] = min(v["support"], BROKEN_SPAN_SUPPORT)
                v["contradiction"] = True
                known = v["reason"] if v["reason"] != "content words found in the context" else ""
                v["reason"] = "; ".join(r for r in (broken.reason, known) if r)


DEFAULT_WEIGHTS = MappingProxyType({"model": 1.0, "mean": 0.0, "min": 0.0, "share": 0.0})
"""How the evidence combines into the score: all of it from the fitted model (which already
weighs the claims' supports, values, names and negation); a deployment's fit may move weight to
the claims' mean or minimum support or the supported share."""


def _skip_or_abstain(
    parsed: ParsedAnswer, chunks: list[str], meta: dict[str, Any]
) -> tuple[str, str] | None:
    """``(label, explanation)`` when the answer needs no claim check, else None."""
    if not chunks:  # an abstention needs no context to be recognised (empty retrieval)
        if parsed.abstained:
            meta.update(claims=[], context="none")
            why = "the answer declines to answer (no context reached the prompt): "
            return "abstained", why + parsed.abstentions[0]
        return "skipped", "no context reached the prompt"
    context_injections = [s for c in chunks for s in find_injections(c)]
    if parsed.suspicious or context_injections:
        meta["suspicious_instructions"] = (parsed.suspicious + context_injections)[:5]
    if parsed.abstained:
        meta["claims"] = []
        return "abstained", "the answer declines to answer: " + parsed.abstentions[0]
    if not parsed.claims:
        meta["claims"] = []
        if parsed.set_aside:  # only a preamble, headings or talk about the passages
            meta["set_aside"] = [f"{why}: {text}" for text, why in parsed.set_aside[:5]]
            return "skipped", "the answer states nothing to check: " + parsed.set_aside[0][0]
        return "error", "no verifiable claim in the answer"
    return None


def _claim_verdicts(
    parsed: ParsedAnswer, question: str, answer: str, ctx: _Context
) -> list[dict[str, Any]]:
    """One verdict per claim; a bare "Yes." / "No." is checked as the question's proposition.
    A list item's lead-in ("the benefits include:") is, like the question, not the item's claim:
    its words need no support of their own."""
    q_keys = {key(t) for t in tokens(question) if t not in STOPWORDS}
    q_values = all_values(question)
    polarity = yes_no(answer)
    verdicts = []
    lead_ins = parsed.lead_ins or [""] * len(parsed.claims)
    for claim, lead_in in zip(parsed.claims, lead_ins, strict=True):
        bare = not [t for t in tokens(claim) if t not in _YES | _NO and t not in STOPWORDS]
        if polarity is not None and bare:  # "Yes." / "No.": the question's proposition
            verdicts.append(
                {**_claim_verdict(question, ctx, set(), set(), polarity), "claim": claim}
            )
            continue
        keys = q_keys | {key(t) for t in tokens(lead_in) if t not in STOPWORDS}
        verdict = _claim_verdict(claim, ctx, keys, q_values, None)
        if lead_in:
            verdict["lead_in"] = lead_in
        verdicts.append(verdict)
    return verdicts


def _check_whole_answer(
    verdicts: list[dict[str, Any]], question: str, answer: str, chunks: list[str]
) -> None:
    """Checks that read the whole answer: broken names, comparisons and choices."""
    _mark_broken_spans(verdicts, answer, [*chunks, question])
    context = " ".join(chunks)
    # "X or Y, which came first?" answered against the years; "X or Y?" / "are both
    # X and Y …?" answered against what the context says about each option
    clash = check_comparison(question, answer, context) or check_choice(question, answer, context)
    if clash is None:
        return
    for v in verdicts:
        if fold(clash.picked) in fold(v["claim"]) or len(verdicts) == 1:
            v["support"] = min(v["support"], 0.25)
            v["reason"] = clash.reason
            v["contradiction"] = True


def evidence(
    verdicts: Sequence[Mapping[str, Any]], model: SupportModel | None = None
) -> dict[str, float]:
    """The evidence the score combines: the fitted model's probability that the answer is
    faithful (:mod:`.support_model`), and the mean and minimum support of the informative claims
    (claims that only restate the question count when nothing else is said) and the supported
    share, which a deployment's own fit (``ragsieve judges fit``) may weigh in."""
    feats = features(verdicts)
    # decisive whatever the rest weighs: a claim the context contradicts, and a number or date
    # it never states (a hallucination in 64-100 % of such answers on every labelled set)
    clashes = [
        float(v["support"]) for v in verdicts if v.get("contradiction") or v.get("values_missing")
    ]
    return {
        "model": (model or shipped_model()).probability(feats),
        "mean": feats["mean"],
        "min": feats["min"],
        "share": feats["share"],
        "cap": min(clashes, default=1.0),
    }


def combine(ev: Mapping[str, float], weights: Mapping[str, float] = DEFAULT_WEIGHTS) -> float:
    """``score = sum(w_k * evidence_k)`` over the weights' keys (weights sum to 1), at most the
    support of a claim the context contradicts (``cap``: decisive, whatever the rest weighs).
    Evidence recorded before the fitted model existed has no ``model``: it reads as the mean."""
    score = sum(w * float(ev.get(k, ev.get("mean", 0.0))) for k, w in weights.items())
    return min(score, float(ev.get("cap", 1.0)))


class FaithfulnessJudge(OfflineJudge):
    """Is every claim of the answer supported by the retrieved context? (deterministic heuristic)

    ``weights`` and ``calibration`` come from a fitted calibration (``ragsieve judges fit``):
    the evidence is combined with the fitted weights and labelled at ``threshold``.

    Example:
        >>> judge = FaithfulnessJudge()
        >>> [result] = asyncio.run(judge.evaluate(interaction))
        >>> result.label, result.metadata["claims"][0]["reason"]
        ('unfaithful', '2025 is not in the context')
    """

    name = "faithfulness"

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLDS["faithfulness"],
        weights: Mapping[str, float] | None = None,
        calibration: str | None = None,
    ) -> None:
        self.threshold = threshold
        self.weights = dict(weights or DEFAULT_WEIGHTS)
        self.calibration = calibration
        self.model = shipped_model()
        self.version = f"offline-5:t{threshold}:{self.model.version}" + (
            f":{calibration}" if calibration else ""
        )

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        pairs = [(cid, c) for cid, _, c in chunk_texts(interaction)]
        chunks = [c for _, c in pairs]
        answer = interaction.answer or ""
        if not answer.strip():
            return self.result(interaction, "skipped", None, "no answer")
        parsed = parse_answer(answer)
        meta: dict[str, Any] = {"abstained": parsed.abstained}
        if parsed.suspicious:
            meta["suspicious_instructions"] = parsed.suspicious[:5]
        early = _skip_or_abstain(parsed, chunks, meta)
        if early is not None:
            return self.result(interaction, early[0], None, early[1], meta)
        question = interaction.query or ""
        lang = language(answer)
        ctx_lang = language(" ".join(chunks))
        translate = lang != "unknown" and ctx_lang != "unknown" and lang != ctx_lang
        if translate:
            meta["cross_lingual"] = f"{lang} answer, {ctx_lang} context"
        ctx = _context(pairs, translate=translate)
        verdicts = _claim_verdicts(parsed, question, answer, ctx)
        if not translate:
            _check_whole_answer(verdicts, question, answer, chunks)
        return self._verdict(interaction, verdicts, meta)

    def _verdict(
        self, interaction: RagInteraction, verdicts: list[dict[str, Any]], meta: dict[str, Any]
    ) -> EvalResult:
        for v in verdicts:
            v["supported"] = v["support"] >= SUPPORT_THRESHOLD
            if not v["supported"]:
                v["evidence"] = v["chunk"] = None
        feats = features(verdicts)
        ev = evidence(verdicts, self.model)
        score = combine(ev, self.weights)
        n_ok = sum(v["supported"] for v in verdicts)
        meta.update(claims=verdicts, supported=n_ok, total=len(verdicts))
        meta["evidence_chunks"] = sorted({v["chunk"] for v in verdicts if v["chunk"]})
        meta["evidence"] = {k: round(x, 6) for k, x in ev.items()}
        meta["features"] = {k: round(x, 4) for k, x in feats.items()}
        if self.calibration:
            meta["calibration"] = self.calibration
        label = self.label(score)
        return self.result(
            interaction, label, score, self._explain(label, score, feats, verdicts), meta
        )

    def label(self, score: float) -> str:
        """unfaithful below the threshold (the job flags the same answers); uncertain just
        above it, inside the model's band (the evidence is too weak to call a pass: the job
        audits it and a cascade asks its LLM judge); faithful above that."""
        if score < self.threshold:
            return "unfaithful"
        if score < self.threshold + self.model.uncertain_width:
            return "uncertain"
        return "faithful"

    def _explain(
        self, label: str, score: float, feats: Mapping[str, float], verdicts: list[dict[str, Any]]
    ) -> str:
        """What decided the label: the score against the threshold, then the claims at fault or
        the evidence that pulled the score down."""
        n_ok = sum(v["supported"] for v in verdicts)
        cmp = "<" if label == "unfaithful" else ">="
        head = f"{label} ({score:.2f} {cmp} {self.threshold}): {n_ok}/{len(verdicts)} claims"
        head += " supported by the context"
        if label == "faithful":
            return head
        bad = [v["reason"] for v in verdicts if not v["supported"]]
        why = bad[:3] or [DRIVER_TEXT[f] for f in self.model.drivers(feats)]
        if label == "uncertain":
            head += "; too close to the threshold to call a pass"
        return head + (": " + "; ".join(why) if why else "")
