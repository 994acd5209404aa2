"""Offline faithfulness: is every claim of the answer supported by the retrieved context?

The answer is read as a person reads it (:mod:`.claims`, :mod:`.reading`), each claim gets its
support from the context (:mod:`.support`), whole-answer checks (broken names, comparisons,
choices) can mark a claim contradicted, and a model fitted to people's labels weighs the
evidence into one probability (:mod:`.support_model`). A contradiction or a value the context
never states is decisive whatever the model weighs; a claim with nothing near it in the context
(:func:`nothing_near`) is evidence the model weighs.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from types import MappingProxyType
from typing import Any

from ragsieve.evaluators.judges.offline.answer_checks import check_whole_answer
from ragsieve.evaluators.judges.offline.base import OfflineJudge, chunk_texts
from ragsieve.evaluators.judges.offline.claims import (
    ParsedAnswer,
    find_injections,
    is_abstention,
    parse_answer,
)
from ragsieve.evaluators.judges.offline.conversation import ASSISTANT_ROLES, asks_back_grounding
from ragsieve.evaluators.judges.offline.support import (
    SUPPORT_THRESHOLD,
    Context,
    bare_answer,
    build_context,
    claim_verdict,
    yes_no,
)
from ragsieve.evaluators.judges.offline.support_model import (
    DRIVER_TEXT,
    SHORT_CLAIMS,
    SupportModel,
    features,
    shipped_model,
)
from ragsieve.evaluators.judges.offline.text.choice import given_elsewhere
from ragsieve.evaluators.judges.offline.text.reading import QUESTION_BACK, is_hedge
from ragsieve.evaluators.judges.offline.text.terms import all_values, key, tokens
from ragsieve.evaluators.judges.offline.text.text import STOPWORDS, content_words, fold, language
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import EvalResult, RagInteraction, RetrievedDocument

log = logging.getLogger(__name__)


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
    parsed: ParsedAnswer, question: str, answer: str, ctx: Context
) -> list[dict[str, Any]]:
    """One verdict per claim; a bare "Yes." / "No." is checked as the question's proposition.
    A list item's lead-in ("the benefits include:") is, like the question, not the item's claim:
    its words need no support of their own."""
    q_keys = _keys(question)
    q_values = all_values(question) | _pair(question)
    polarity = yes_no(answer)
    verdicts = []
    lead_ins = parsed.lead_ins or [""] * len(parsed.claims)
    for claim, lead_in in zip(parsed.claims, lead_ins, strict=True):
        bare = bare_answer(claim)
        if polarity is not None and bare:  # "Yes." / "No.": the question's proposition
            verdict = {**claim_verdict(question, ctx, set(), set(), polarity), "claim": claim}
            if polarity is False:
                _follows_restriction(verdict, question, ctx, denied=False)
            verdicts.append(verdict)
            continue
        keys = q_keys | _keys(lead_in)
        verdict = claim_verdict(claim, ctx, keys, q_values, None)
        _follows_restriction(verdict, claim, ctx, denied=True)
        if lead_in:
            verdict["lead_in"] = lead_in
        verdicts.append(verdict)
    return verdicts


def _follows_restriction(verdict: dict[str, Any], text: str, ctx: Context, denied: bool) -> None:
    """A denial the context's restriction makes true ("No." / "SSO is not available on the
    Starter plan" where the context gives it to the Enterprise plan only) is supported."""
    if verdict["support"] >= SUPPORT_THRESHOLD or verdict.get("values_missing"):
        return
    elsewhere = given_elsewhere(text, " ".join(ctx.sents), denied=denied)
    if elsewhere is not None:
        why = f"the context gives it to {elsewhere[0].written} only"
        verdict.update(support=1.0, novel=0.0, names_missing=False, negation=False)
        verdict.update(contradiction=False, reason=why)


# a question that weighs two things ("difference between X and Y", "FIFO or LIFO?", "X vs Y")
# gives the answer its "two": "the difference between the two is ...", "there are two types"
_PAIR = re.compile(
    r"\b(?:difference|differ|differences|different|versus|vs|compare|compared|comparison|between"
    r"|diferencia|diferencias|entre|comparar|comparaci[oó]n)\b|\w\s+(?:or|o)\s+\w[^?]*\?\s*$"
)


def _pair(question: str) -> set[str]:
    """{"2"} when the question weighs two things (:data:`_PAIR`), else nothing."""
    return {"2"} if _PAIR.search(fold(question)) else set()


def _keys(text: str) -> set[str]:
    """The comparison keys of ``text``'s content words (what a claim need not support again)."""
    return {key(t) for t in tokens(text) if t not in STOPWORDS}


def _mark_repeats(
    verdicts: list[dict[str, Any]], interaction: RagInteraction, question: str, translate: bool
) -> None:
    """A claim this turn's context does not support but an earlier assistant turn of the
    conversation already stated is a repeat, not an invention: its verdict says so
    (``from_conversation``) and takes that turn's support. It is never support for a new fact:
    a value or a name the context and the earlier turns never state stays unsupported."""
    said = [m.content for m in interaction.chat_history if m.role in ASSISTANT_ROLES]
    if not said or not any(v["support"] < SUPPORT_THRESHOLD for v in verdicts):
        return
    earlier = build_context([(f"turn-{i}", t) for i, t in enumerate(said)], translate=translate)
    q_keys = _keys(question)
    for v in verdicts:
        if v["support"] >= SUPPORT_THRESHOLD or v.get("contradiction"):
            continue
        again = claim_verdict(v["claim"], earlier, q_keys, all_values(question), None)
        if again["support"] >= SUPPORT_THRESHOLD and not again.get("values_missing"):
            v.update(
                support=again["support"],
                novel=again.get("novel", 0.0),
                names_missing=again.get("names_missing", False),
                rarest_missing=again.get("rarest_missing", 0.0),
                values_missing=False,
                from_conversation=True,
                reason="repeats what an earlier turn of the conversation said (not in this"
                " turn's context)",
            )


# A claim that says something (NOTHING_NEAR_WORDS content words) with no context sentence
# anywhere near it (support below NOTHING_NEAR) was added from elsewhere: "You should shop around
# to find an account at a price you can afford." under a benefits page. Its words may all be in
# the context, so no rare word or value is missing; what gives it away is that nothing comes near
# it, as something does near a paraphrase. Not for what talks about the passages ("is not
# mentioned in the given passages"), a general framing ("X serves several functions", "varies
# depending on ..."), a hedge or a refusal: those are not claims about the world. On people's
# labels, among answers the model passes: RAGTruth 1 of 172 faithful answers has one and 2 of
# 21 hallucinated; HaluEval 0 of 306 and 36 of 178; MEMERAG en/es 0 of 134 and 1 of 61. The
# fitted model weighs it (``nothing_near`` in :data:`.support_model.FEATURES`). In an answer of
# more than SHORT_CLAIMS claims, the question's words say nothing new: "the same method can be
# used for chicken tenders" under "how long to make chicken tenders" adds two words ("method",
# "used"), an elaboration of the claim before it, not a fact from elsewhere. A one- or
# two-claim reply is the answer itself: all its words count ("Stanford University has a
# Chestnut Hill campus", asked about Stanford's campus).
NOTHING_NEAR = 0.1
NOTHING_NEAR_WORDS = 4
_ABOUT_SOURCES = re.compile(
    r"\b(?:passages?|context|provided|given|mentioned|specified|stated|sources?|texts?|documents?"
    r"|information|pasajes?|contexto|informacion|mencionad\w*|proporcionad\w*|textos?|fuentes?)\b"
)
_GENERAL = re.compile(
    r"\b(?:several|various|many|multiple|number of|some|few|varies|vary|depends?|depending"
    r"|sometimes|often|usually|generally|typically|pros and cons|(?:dis)?advantages|best"
    r"|varios|varias|diversos|diversas|diferentes|algunos|algunas|varia|depende|segun|a veces"
    r"|normalmente|ventajas|desventajas|mejor)\b"
)
# courtesy, and sending the person elsewhere ("You can check the hours by calling your local
# office"): a service reply's own words, not a claim the passages must hold
_SERVICE_TALK = re.compile(
    r"\b(?:no problem|i can help|happy to help|glad to help|you're welcome|con gusto|puedo ayudar"
    r"|de nada)\b"
    r"|\b(?:call|calling|contact|contacting|visit|visiting|check with|ask|llam\w+|contact\w+"
    r"|visit\w+|acud\w+|consult\w*)\b[^.;]{0,120}\b(?:office|agency|servicer|counselor|website|department"
    r"|center|centre|branch|helpline|oficina|ayuntamiento|web|centro)s?\b"
)


def nothing_near(verdict: Mapping[str, Any], asked: AbstractSet[str] = frozenset()) -> bool:
    """A claim about the world with no context sentence near it (:data:`NOTHING_NEAR`); the
    keys of the question's words (``asked``) do not count towards what the claim says."""
    claim = str(verdict.get("claim", ""))
    if (
        float(verdict["support"]) >= NOTHING_NEAR
        or verdict.get("translated")  # across languages support runs lower: not measured there
        or verdict.get("from_conversation")
        or verdict.get("reason") == "only restates the question"
        or len([w for w in content_words(claim) if key(w) not in asked]) < NOTHING_NEAR_WORDS
    ):
        return False
    text = fold(claim)
    return not (
        _ABOUT_SOURCES.search(text)
        or _GENERAL.search(text)
        or _SERVICE_TALK.search(text)
        or is_hedge(claim)
        or is_abstention(claim)
    )


def evidence(
    verdicts: Sequence[Mapping[str, Any]], model: SupportModel | None = None
) -> dict[str, float]:
    """The evidence the score combines: the fitted model's probability that the answer is
    faithful (:mod:`.support_model`), and the mean and minimum support of the informative claims
    (claims that only restate the question count when nothing else is said) and the supported
    share, which a deployment's own fit (``ragsieve judges fit``) may weigh in."""
    feats = features(verdicts)
    # decisive whatever the rest weighs: a claim the context contradicts, a number or date it
    # never states (a hallucination in 64-100 % of such answers on every labelled set). A claim
    # marked ``nothing_near`` is a feature of the model instead: decisive, it flagged 5 faithful
    # RAGTruth answers for 2 hallucinated ones (summaries such as "Hiking offers a wide range of
    # benefits"); weighed, it lowered every left-out set's false flags
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
        self.version = f"offline-25:t{threshold}:{self.model.version}" + (
            f":{calibration}" if calibration else ""
        )

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        pairs = [(cid, c) for cid, _, c in chunk_texts(interaction)]
        chunks = [c for _, c in pairs]
        answer = interaction.answer or ""
        if not answer.strip():
            return self.result(interaction, "skipped", None, "no answer")
        parsed = parse_answer(answer, interaction.query or "")
        meta: dict[str, Any] = {"abstained": parsed.abstained}
        if parsed.suspicious:
            meta["suspicious_instructions"] = parsed.suspicious[:5]
        early = _skip_or_abstain(parsed, chunks, meta)
        if early is not None:
            asked = [text for text, why in parsed.set_aside if why == QUESTION_BACK]
            offer = None
            if early[0] == "skipped" and chunks and asked and not parsed.claims:
                offer = asks_back_grounding(asked, interaction, chunks)  # only asks back
            if offer is not None:
                meta["asks_back"] = {"grounded": offer[0], "unknown": offer[1][:5]}
            return self.result(interaction, early[0], None, early[1], meta)
        question = interaction.query or ""
        lang = language(answer)
        ctx_lang = language(" ".join(chunks))
        translate = lang != "unknown" and ctx_lang != "unknown" and lang != ctx_lang
        if translate:
            meta["cross_lingual"] = f"{lang} answer, {ctx_lang} context"
        ctx = build_context(pairs, translate=translate)
        verdicts = _claim_verdicts(parsed, question, answer, ctx)
        if translate:
            for v in verdicts:
                v["translated"] = True
        check_whole_answer(verdicts, question, answer, chunks, translated=translate)
        _mark_repeats(verdicts, interaction, question, translate)
        return self._verdict(interaction, verdicts, meta)

    def _verdict(
        self, interaction: RagInteraction, verdicts: list[dict[str, Any]], meta: dict[str, Any]
    ) -> EvalResult:
        # a long answer's claims elaborate on what was asked; a short reply is the answer
        asked = _keys(interaction.query or "") if len(verdicts) > SHORT_CLAIMS else set()
        for v in verdicts:
            v["supported"] = v["support"] >= SUPPORT_THRESHOLD
            if nothing_near(v, asked):
                v["nothing_near"] = True
                v["reason"] = f"nothing in the context comes near it ({v.get('reason')})"
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

    def holds_answer(self, interaction: RagInteraction, chunk_id: str, content: str) -> bool:
        """True when ``interaction``'s answer is faithful to this one chunk alone (scored and
        labelled as the judge scores the prompt's chunks: at or above its threshold). Never
        raises: a heuristic failure is logged and reads as "does not hold"."""
        doc = RetrievedDocument(id=chunk_id, content=content, rank=0, in_prompt=True)
        alone = interaction.model_copy(update={"documents": (doc,)})
        try:
            score = self._judge(alone).score
        except Exception as exc:  # a heuristic bug must not stop a job run
            log.warning(
                "faithfulness against %s failed on trace %s: %s", chunk_id, alone.trace_id, exc
            )
            return False
        return score is not None and score >= self.threshold

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
            # the score weighs more than the support line: say why the rest passed, or
            # "faithful: 0/1 claims supported" reads as a contradiction
            rest = "; the score, which weighs all the evidence, passes the rest"
            return head + rest if n_ok < len(verdicts) else head
        bad = [v["reason"] for v in verdicts if not v["supported"]]
        why = bad[:3] or [DRIVER_TEXT[f] for f in self.model.drivers(feats)]
        if label == "uncertain":
            head += "; too close to the threshold to call a pass"
        return head + (": " + "; ".join(why) if why else "")
