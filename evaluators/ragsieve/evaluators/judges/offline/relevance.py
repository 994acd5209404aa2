"""Offline answer relevance: question-term coverage, answer type, specificity and evasion.

``ContextRelevanceJudge`` lives in :mod:`.context` and is re-exported here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.offline.base import OfflineJudge, chunk_texts
from ragsieve.evaluators.judges.offline.claims import is_abstention, parse_answer, strip_attribution
from ragsieve.evaluators.judges.offline.context import (
    ContextRelevanceJudge,
    context_precision,
    question_terms,
    topic_terms,
)
from ragsieve.evaluators.judges.offline.conversation import (
    JudgedQuestion,
    judged_question,
    names_its_subject,
)
from ragsieve.evaluators.judges.offline.sources import (
    HEADING_SHARE,
    HEADING_TYPED,
    MAX_ANSWER_CHARS,
    REQUEST,
    SHORT_ANSWER_WORDS,
    WH_OPENING,
    YES_NO,
    answer_sources,
    continues_last_reply,
    heading_match,
    limits,
    stays_on,
    term_coverage,
)
from ragsieve.evaluators.judges.offline.text.question import (
    answers_type,
    expected_type,
    in_user_voice,
)
from ragsieve.evaluators.judges.offline.text.terms import TermIndex, key
from ragsieve.evaluators.judges.offline.text.text import (
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
from ragsieve.evaluators.tools.embeddings import embed

# "you may apply online" grants a permission (how service pages say what one can do), not a hedge
_HEDGE = re.compile(
    r"\b(typically|generally|usually|various|several|some|(?<!\d )(?<!you )may(?! \d)|might|could"
    r"|possibly"
    r"|perhaps"
    r"|not (?:sure|aware|certain)|unclear|depends"
    r"|probablemente|quizas|quiza|depende|varios|algunos)\b"
)


MEANING_FLOOR = 0.05  # question-answer cosine at or below this: about something else
MEANING_SPAN = 0.25  # ... and at floor + span: clearly about the question
MISSING_TYPE_FACTOR = 0.7
ABOUT_ELSE = 0.3  # addressed below this: the answer is about something else than the question
GOES_ON_ADDRESSED = 0.6  # a reply going on from the last reply's passage addresses a follow-up
MEANING_SHARE = 0.7  # closeness in meaning alone (the same topic) is not a full answer
SHORT_TYPED_ADDRESSED = 0.6
RESTATED_SHARE = 0.9  # an answer restating a passage sentence addresses what that sentence does
RESTATED_MIN = 0.5  # ... when the sentence holds most of the question's key terms
OWN_TERM_RARITY = 1.0  # a follow-up's word this rare names what it asks (as in carried_words)


# "what ...?" / "which ...?" (anywhere: "In what century ...?") asked for no particular type: a
# name or a number can answer it, as it cannot answer "how do I ...?" or "can I ...?"; Spanish
# marks the question word ("qué", "cuál"; "que" is also "that"), and "¿cómo llamó ...?" asks a name
_OPEN_WH = re.compile(r"\b(?:what|which|qué|cuál|cuáles|cómo (?:se )?llam\w*)(?!\w)")


def _direct_answer(
    sents: list[str], kind: str | None, question: str, cosine: float | None = None
) -> bool:
    """A short sentence that gives a value of the asked type (a name or a number when a "what"
    or "which" question asks for no particular type, yes or no when it asks whether): "The
    answer is Marlee Matlin.", "In 1349.", "Yes, you can."."""
    asked = question.casefold()
    open_wh = kind is None and bool(_OPEN_WH.search(asked))
    plain = fold(question)
    whether = kind is None and not WH_OPENING.search(plain) and not REQUEST.search(plain)
    for sent in sents:
        claim = strip_attribution(sent)
        if len(content_words(claim)) > SHORT_ANSWER_WORDS:
            continue
        if kind is not None and answers_type(claim, kind):
            return True
        if kind == "definition" and len(content_words(claim)) >= 1:
            return True  # "genetic branches." defines "what are clades?" in a noun phrase
        if open_wh and (entities(" x " + claim) or numbers(claim)):
            return True
        if whether and YES_NO.search(fold(claim)) and stays_on(claim, (question,), cosine):
            return True  # "Yes, you can."
    return False


DEFAULT_WEIGHTS = MappingProxyType(
    {"addressed": 0.55, "type_ok": 0.2, "direct": 0.15, "specificity": 0.1}
)
"""How the evidence combines into the score: the question addressed (terms or meaning), the
asked-for type present, the share of the answer that is not evasive, and its specificity."""


def _addressed(
    question: str, answer: str, sents: list[str], topic: frozenset[str] = frozenset()
) -> tuple[float, float, float, list[str]]:
    """``(coverage, cosine, addressed, only the topic)``: the question's key terms found in the
    answer, the closest question-answer cosine, how much the answer addresses the question, and
    the :func:`.context.topic_terms` it shares when it shares no other: covering only the subject
    ("API keys do not expire, but Tallyfox recommends ...") addresses nothing asked of it, so
    those terms count for nothing; its closeness in meaning still counts ("X is led by ..."
    answers "Who is the CEO of X?")."""
    qlang, alang = language(question), language(answer)
    across = qlang != alang and "unknown" not in (qlang, alang)
    index = TermIndex(sents, cross_lingual=across)
    terms = question_terms(question)
    coverage = term_coverage(terms, index)
    # across languages the names are what carry over word for word: no sign it says nothing else
    asked = {k: t for k, t in terms.items() if k not in topic and not across}
    only = []
    if coverage > 0 and asked and len(asked) < len(terms) and term_coverage(asked, index) == 0:
        only = [w for k, (w, _) in terms.items() if k in topic and index.find(w).strength > 0]
    # the whole answer, and each sentence: a direct answer followed by a detail still answers
    texts = [" ".join(sents)[:MAX_ANSWER_CHARS], *(s[:MAX_ANSWER_CHARS] for s in sents[:8])]
    vecs = embed([question, *texts])
    cosine = float((vecs[1:] @ vecs[0]).max())
    meaning = float(np.clip((cosine - MEANING_FLOOR) / MEANING_SPAN, 0.0, 1.0))
    return coverage, cosine, max(0.0 if only else coverage, MEANING_SHARE * meaning), only


def _own_terms(typed: str) -> list[str]:
    """The words a follow-up names what it asks by (as rare as a carried word must be): an
    answer that touches none of them does not answer it through the words carried over."""
    return [w for w, weight in question_terms(typed).values() if weight >= OWN_TERM_RARITY]


def evidence(
    question: str,
    answer: str,
    sents: list[str],
    asks: bool = True,
    titles: Sequence[str] = (),
    restates: Sequence[str] = (),
    topic: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The evidence the score combines (each in [0, 1]) and what it was read from; a turn that
    ``asks`` nothing (a statement, thanks) expects no particular type of answer. ``titles``: the
    sections of the retrieved chunks the answer was taken from, and ``restates``: the passage
    clauses it restates (both :func:`answer_sources`); both can show
    what it answers in the passage's words where the answer leaves them out. ``topic``: the
    question's subject (:func:`_subject`), given only when the restated clauses hold nothing
    else it asks: restating them restates nothing asked."""
    coverage, cosine, addressed, only_topic = _addressed(question, answer, sents, topic)
    heading, title = heading_match(question, titles)
    addressed = max(addressed, HEADING_SHARE * heading)
    terms = question_terms(question)
    if restates and not topic:  # "Press the red button." restates "Damage is reported with ..."
        # in the question's terms only: a passage sentence on the same topic is near in meaning
        index = TermIndex(list(restates), cross_lingual=language(question) != language(answer))
        said = term_coverage(terms, index)
        if said >= RESTATED_MIN:  # a word in common is not what the passage sentence is about
            addressed = max(addressed, RESTATED_SHARE * said)
    new = [t for s in sents for t in content_words(s) if key(t) not in terms]
    kind = expected_type(question) if asks else None
    type_ok = 1.0 if kind is None else float(answers_type(answer, kind))
    if heading >= HEADING_TYPED:  # the page answers its own question in that section
        type_ok = 1.0
    # an answer sharing only the subject, not clearly about the question in meaning: its value
    # of the asked type ("every 90 days") is of the subject, not of what is asked, however short
    unclear = bool(only_topic) and addressed < MEANING_SHARE
    zeroed = unclear and type_ok > 0
    type_ok = 0.0 if unclear else type_ok
    if not unclear and _direct_answer(sents, kind, question, cosine):
        addressed = max(addressed, SHORT_TYPED_ADDRESSED)  # "May 2013." answers "When ...?"
    # concrete answers name rare things; generic filler ("a popular destination") does not
    specificity = (
        float(np.clip((np.mean([rarity(t) for t in new]) - 1.0) / 1.2, 0, 1)) if new else 0.0
    )
    evasive = sum(is_abstention(s) or bool(_HEDGE.search(fold(s))) for s in sents) / len(sents)
    return {
        "addressed": addressed,
        "type_ok": type_ok,
        "direct": 1.0 - evasive,
        "specificity": specificity,
        "evasive": evasive,
        "coverage": coverage,
        "cosine": cosine,
        "kind": kind,
        "heading": heading,
        "title": title,
        "only_topic": only_topic,
        "subject_zeroed": zeroed,
    }


def combine(
    ev: Mapping[str, Any], abstained: bool, weights: Mapping[str, float] = DEFAULT_WEIGHTS
) -> float:
    """``score = sum_i w_i * evidence_i`` (weights sum to 1), times 0.7 when the asked-for type
    is missing, at most 0.2 for a noncommittal answer."""
    # an answer that is about something else fails however concrete and confident it is
    score = (
        weights["addressed"] * ev["addressed"]
        + weights["type_ok"] * ev["type_ok"]
        + weights["direct"] * ev["direct"]
        + weights["specificity"] * ev["specificity"]
    )
    if not ev["type_ok"]:
        score *= MISSING_TYPE_FACTOR  # on topic, but without what was asked for
    if abstained:
        score = min(score, 0.2)  # noncommittal answers address nothing
    return float(score)


def _notes(ev: Mapping[str, Any], passed: bool = False) -> list[str]:
    """What held the score down; a passing answer is not said to be about something else."""
    notes = []
    if ev["addressed"] < ABOUT_ELSE and not passed:
        notes.append("the answer is about something else than the question")
    if ev["heading"]:
        notes.append(f"taken from the section {ev['title'][:80]!r}, which matches the question")
    if ev["subject_zeroed"] and not passed:  # the subject rule took the type's credit
        subject = ", ".join(ev["only_topic"])
        notes.append(f"it shares only the subject ({subject}), not what is asked of it")
    if ev["kind"] and not ev["type_ok"] and not ev["subject_zeroed"]:
        notes.append(f"the question asks for a {ev['kind']} and the answer gives none")
    evasive = ev["evasive"]
    if evasive:
        notes.append(f"{evasive:.0%} of the answer is evasive or hedged")
    if ev["specificity"] < 0.3:
        notes.append("the answer is generic (few specific names, numbers or terms)")
    return notes


def _subject(
    question: str, answer: str, context: list[str], restates: Sequence[str]
) -> frozenset[str]:
    """The question's subject (:func:`.context.topic_terms`), unless the answer restates passage
    clauses that hold a question term besides it: then it shows what it addresses in the
    passage's words. A restated clause holding only the subject ("The Quillwick Slate warranty
    covers ...") shows nothing of what is asked."""
    topic = topic_terms(question, context)
    if topic and restates:
        asked = {k: t for k, t in question_terms(question).items() if k not in topic}
        index = TermIndex(list(restates), cross_lingual=language(question) != language(answer))
        if term_coverage(asked, index) > 0:
            return frozenset()
    return topic


def _read(
    asked: JudgedQuestion,
    answer: str,
    sents: list[str],
    context: list[str],
    abstained: bool,
    meta: dict[str, Any],
) -> list[dict[str, Any]]:
    """The evidence of each reading of the turn that may count (noted in ``meta``): carried
    words are a guess at what a follow-up leaves out, so the better reading counts, unless the
    follow-up names what it asks ("Is there a yearly option?") and the answer is about
    something else than that."""
    readings = [asked.text, asked.typed] if asked.source == "resolved" else [asked.text]
    # the same for every reading of the question
    titles, restates = answer_sources(sents, context, readings)
    topics = [_subject(q, answer, context, restates) for q in readings]
    judged = [
        evidence(q, answer, sents, asked.is_question, titles, restates, topic)
        for q, topic in zip(readings, topics, strict=True)
    ]
    leans = asked.follows_up and asked.source in ("resolved", "typed")
    own = _own_terms(asked.typed) if leans and names_its_subject(asked.typed) else []
    if own and judged[-1]["addressed"] < ABOUT_ELSE:  # the last reading is the typed turn
        meta["unanswered_own_terms"] = own
        return judged[-1:]
    if not abstained and continues_last_reply(asked, answer, context):
        # the follow-up asks about what the last reply's passage is on, and it goes on there
        meta["goes_on_from_last_reply"] = True
        return [{**ev, "addressed": max(ev["addressed"], GOES_ON_ADDRESSED)} for ev in judged]
    return judged


class AnswerRelevanceJudge(OfflineJudge):
    """Does the answer address what was asked? (deterministic heuristic, no LLM)

    ``weights`` and ``calibration`` come from a fitted calibration (``ragsieve judges fit``).
    """

    name = "answer_relevance"

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLDS["answer_relevance"],
        weights: Mapping[str, float] | None = None,
        calibration: str | None = None,
    ) -> None:
        self.threshold = threshold
        self.weights = dict(weights or DEFAULT_WEIGHTS)
        self.calibration = calibration
        self.version = f"offline-22:t{threshold}" + (f":{calibration}" if calibration else "")

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        asked = judged_question(interaction)  # a follow-up's standalone meaning
        question, answer = asked.text, interaction.answer or ""
        if not question.strip() or not answer.strip():
            return self.result(
                interaction, "skipped", None, "no question" if not question.strip() else "no answer"
            )
        parsed = parse_answer(answer)
        meta: dict[str, Any] = asked.evidence()
        if parsed.suspicious:
            meta["suspicious_instructions"] = parsed.suspicious[:5]
        sents = [s for s in sentences(answer) if s not in parsed.suspicious] or [answer]
        chunks = chunk_texts(interaction)
        context = [c for _, _, c in chunks]
        judged = _read(asked, answer, sents, context, parsed.abstained, meta)
        # a reply that only asks a question in the user's voice (a page's heading copied out:
        # "Am I eligible for ...?") answers nothing, like a refusal
        echoes = all(s.rstrip().endswith("?") and in_user_voice(s) for s in sents)
        ev, score = max(
            ((ev, combine(ev, parsed.abstained or echoes, self.weights)) for ev in judged),
            key=lambda p: p[1],
        )
        score, limited, said = limits(
            asked, answer, parsed.abstained, chunks, score, self.threshold
        )
        meta.update(limited)
        meta.update(
            coverage=round(ev["coverage"], 4),
            cosine=round(ev["cosine"], 4),
            specificity=round(ev["specificity"], 4),
            evasive=round(ev["evasive"], 4),
            expected_type=ev["kind"],
            type_found=bool(ev["type_ok"]),
            abstained=parsed.abstained,
            evidence={k: round(ev[k], 6) for k in DEFAULT_WEIGHTS},
        )
        if ev["heading"]:
            meta["section_title"] = ev["title"]
        if ev["only_topic"]:
            meta["only_topic"] = ev["only_topic"]
        if asked.is_question and len(context) < 2:  # every page is "most" of one
            meta["subject_rule"] = "not applied: fewer than two passages"
        if self.calibration:
            meta["calibration"] = self.calibration
        label = "relevant" if score >= self.threshold else "irrelevant"
        notes = [*(_notes(ev, label == "relevant") if asked.is_question else []), *said]
        if meta.get("unanswered_own_terms") and label == "irrelevant":
            own = ", ".join(meta["unanswered_own_terms"])
            notes.append(f"nothing on {own}, which the turn asks about")
        if meta.get("goes_on_from_last_reply"):
            notes.append("a follow-up answered from the passage the last reply came from")
        explanation = f"covers {ev['coverage']:.0%} of the question's key terms" + (
            "; " + "; ".join(notes) if notes else ""
        )
        return self.result(interaction, label, score, explanation, meta)


__all__ = ["AnswerRelevanceJudge", "ContextRelevanceJudge", "context_precision"]
