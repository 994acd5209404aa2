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
    chunk_evidence,
    context_precision,
    question_terms,
)
from ragsieve.evaluators.judges.offline.conversation import (
    JudgedQuestion,
    in_user_voice,
    judged_question,
)
from ragsieve.evaluators.judges.offline.text.question import answers_type, expected_type
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


MAX_ANSWER_CHARS = 400  # the answer's gist for the question-answer cosine
MEANING_FLOOR = 0.05  # question-answer cosine at or below this: about something else
MEANING_SPAN = 0.25  # ... and at floor + span: clearly about the question
MISSING_TYPE_FACTOR = 0.7
MEANING_SHARE = 0.7  # closeness in meaning alone (the same topic) is not a full answer
SHORT_ANSWER_WORDS = 6  # a short answer holding the asked type addresses the question
SHORT_TYPED_ADDRESSED = 0.6
# service pages and FAQs title each section ("Can I transfer benefits?", "REPAYE and ICR Plans"):
# an answer taken from a section whose title matches the question addresses it, in the page's
# words rather than the question's
SOURCE_SHARE = 0.6  # share of an answer sentence's words one chunk sentence holds: its source
HEADING_MAX_WORDS = 10  # an unpunctuated line this short titles what follows (a question: 20)
HEADING_MIN = 0.5  # a title that matches the question less than this says nothing
HEADING_SHARE = 0.9  # a matching title is nearly as good as the answer restating the question
HEADING_TYPED = 0.8  # a title this close to the question: its section answers in its own form
HEADING_COSINE_FLOOR = 0.2
HEADING_COSINE_SPAN = 0.4
_ENDS_CLAUSE = re.compile(r"[.!;:,\u2026]\s*$")


# "what ...?" / "which ...?" (anywhere: "In what century ...?") asked for no particular type: a
# name or a number can answer it, as it cannot answer "how do I ...?" or "can I ...?"; Spanish
# marks the question word ("qué", "cuál"; "que" is also "that"), and "¿cómo llamó ...?" asks a name
_OPEN_WH = re.compile(r"\b(?:what|which|qué|cuál|cuáles|cómo (?:se )?llam\w*)(?!\w)")
# a question without a question word asks whether ("Can I still use it?", "¿Puedo pagar con
# tarjeta?"): a reply that opens with yes or no answers it
_WH = re.compile(
    r"\b(?:what|which|who|whom|whose|where|when|why|how|qué|cuál|cuáles|quién|quiénes|dónde"
    r"|cuándo|cómo|cuánto|cuánta|cuántos|cuántas|por qué)(?!\w)"
)
_YES_NO = re.compile(r"^\W*(?:yes|yeah|yep|no|nope|of course|sure|si|claro|por supuesto)\b")


def _direct_answer(sents: list[str], kind: str | None, question: str) -> bool:
    """A short sentence that gives a value of the asked type (a name or a number when a "what"
    or "which" question asks for no particular type, yes or no when it asks whether): "The
    answer is Marlee Matlin.", "In 1349.", "Yes, you can."."""
    asked = question.casefold()
    open_wh = kind is None and bool(_OPEN_WH.search(asked))
    whether = kind is None and not _WH.search(asked)
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
        if whether and _YES_NO.search(fold(claim)):
            return True  # "Yes, you can."
    return False


def _is_heading(sent: str) -> bool:
    """A section title or an FAQ's question: a question, or a short capitalised line that does
    not end like a clause."""
    n = len(sent.split())
    if sent.endswith(("?", "\uff1f")):
        return n <= 2 * HEADING_MAX_WORDS
    return n <= HEADING_MAX_WORDS and sent[:1].isupper() and not _ENDS_CLAUSE.search(sent)


def source_titles(sents: list[str], context: Sequence[str]) -> list[str]:
    """The titles of the chunk sections the answer's sentences were taken from: for each answer
    sentence, a chunk sentence holding most of its words, then the nearest title above it."""
    answer_keys = [ks for s in sents if len(ks := {key(w) for w in content_words(s)}) >= 2]
    found: list[str] = []
    for chunk in context:
        lines = sentences(chunk)
        keys = [{key(w) for w in content_words(line)} for line in lines]
        for i, have in enumerate(keys):
            if not any(len(ks & have) >= SOURCE_SHARE * len(ks) for ks in answer_keys):
                continue
            title = next((lines[j] for j in range(i - 1, -1, -1) if _is_heading(lines[j])), None)
            if title is not None and title not in found:
                found.append(title)
    return found


def _coverage(terms: Mapping[str, tuple[str, float]], index: TermIndex) -> float:
    """The weighted share of the question's key terms that ``index`` holds (0 without terms)."""
    total = sum(w for _, w in terms.values())
    return (
        sum(w * index.find(word).strength for word, w in terms.values()) / total if total else 0.0
    )


def heading_match(question: str, titles: Sequence[str]) -> tuple[float, str]:
    """``(match, title)``: how well the best of ``titles`` (the sections the answer comes from,
    :func:`source_titles`) matches the question, in key terms or in meaning; 0 below
    ``HEADING_MIN``."""
    terms = question_terms(question)
    if not titles or not terms:
        return 0.0, ""
    vecs = embed([question, *titles])
    best, best_title = 0.0, ""
    for title, vec in zip(titles, vecs[1:], strict=True):
        index = TermIndex([title], cross_lingual=language(title) != language(question))
        meaning = (float(vec @ vecs[0]) - HEADING_COSINE_FLOOR) / HEADING_COSINE_SPAN
        match = float(np.clip(max(_coverage(terms, index), meaning), 0.0, 1.0))
        if match > best:
            best, best_title = match, title
    return (best, best_title) if best >= HEADING_MIN else (0.0, "")


DEFAULT_WEIGHTS = MappingProxyType(
    {"addressed": 0.55, "type_ok": 0.2, "direct": 0.15, "specificity": 0.1}
)
"""How the evidence combines into the score: the question addressed (terms or meaning), the
asked-for type present, the share of the answer that is not evasive, and its specificity."""


def _addressed(question: str, answer: str, sents: list[str]) -> tuple[float, float, float]:
    """``(coverage, cosine, addressed)``: the question's key terms found in the answer, the
    closest question-answer cosine, and how much the answer addresses the question."""
    qlang, alang = language(question), language(answer)
    index = TermIndex(sents, cross_lingual=qlang != alang and "unknown" not in (qlang, alang))
    coverage = _coverage(question_terms(question), index)
    # the whole answer, and each sentence: a direct answer followed by a detail still answers
    texts = [" ".join(sents)[:MAX_ANSWER_CHARS], *(s[:MAX_ANSWER_CHARS] for s in sents[:8])]
    vecs = embed([question, *texts])
    cosine = float((vecs[1:] @ vecs[0]).max())
    meaning = float(np.clip((cosine - MEANING_FLOOR) / MEANING_SPAN, 0.0, 1.0))
    return coverage, cosine, max(coverage, MEANING_SHARE * meaning)


def evidence(
    question: str, answer: str, sents: list[str], asks: bool = True, titles: Sequence[str] = ()
) -> dict[str, Any]:
    """The evidence the score combines (each in [0, 1]) and what it was read from; a turn that
    ``asks`` nothing (a statement, thanks) expects no particular type of answer. ``titles``: the
    sections of the retrieved chunks the answer was taken from (:func:`source_titles`), which
    can show what it answers."""
    coverage, cosine, addressed = _addressed(question, answer, sents)
    heading, title = heading_match(question, titles)
    addressed = max(addressed, HEADING_SHARE * heading)
    terms = question_terms(question)
    new = [t for s in sents for t in content_words(s) if key(t) not in terms]
    kind = expected_type(question) if asks else None
    type_ok = 1.0 if kind is None else float(answers_type(answer, kind))
    if heading >= HEADING_TYPED:  # the page answers its own question in that section
        type_ok = 1.0
    if _direct_answer(sents, kind, question):
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


def _notes(ev: Mapping[str, Any]) -> list[str]:
    notes = []
    if ev["addressed"] < 0.3:
        notes.append("the answer is about something else than the question")
    if ev["heading"]:
        notes.append(f"taken from the section {ev['title'][:80]!r}, which matches the question")
    if ev["kind"] and not ev["type_ok"]:
        notes.append(f"the question asks for a {ev['kind']} and the answer gives none")
    evasive = ev["evasive"]
    if evasive:
        notes.append(f"{evasive:.0%} of the answer is evasive or hedged")
    if ev["specificity"] < 0.3:
        notes.append("the answer is generic (few specific names, numbers or terms)")
    return notes


ACKNOWLEDGED = 0.9  # any reply that does not decline fits "ok" / "thanks!"
FIT_FLOOR = 0.3  # share of a reply's words from the conversation and context: fits nothing
FIT_SPAN = 0.4  # ... and at floor + span, fits the statement fully
OFF_CONVERSATION_WORDS = 3  # content words a reply needs before its words can show it off topic
OFF_CONVERSATION_SCORE = 0.3  # at most this for a reply that leaves the conversation


def shared_with_conversation(
    asked: JudgedQuestion, answer: str, context: list[str]
) -> tuple[float, int] | None:
    """``(share, words)``: the share of the reply's content words (weighed by rarity) that the
    turn, the last turns or the retrieved context hold, and how many content words it has;
    None when it has none ("Sure.")."""
    said = [asked.typed, *(m.content for m in asked.last_turns), *context]
    pool = {key(w) for text in said for w in content_words(text)}
    words = {key(w): w for w in content_words(answer)}
    if not words:
        return None
    total = sum(rarity(w) for w in words.values())
    return sum(rarity(w) for k, w in words.items() if k in pool) / total, len(words)


def fits_turn(
    asked: JudgedQuestion, answer: str, context: list[str], score: float, abstained: bool
) -> float:
    """A reply to a turn that asks nothing fits it unless it declines or leaves the
    conversation: to an acknowledgement anything else fits; to a statement, a reply whose
    words (weighed by rarity) come from the turn, the last turns or the retrieved context."""
    if abstained:
        return score
    if asked.kind == "acknowledgement":
        return max(score, ACKNOWLEDGED)
    shared = shared_with_conversation(asked, answer, context)
    if shared is None:
        return max(score, ACKNOWLEDGED)  # "Sure." / "Of course!"
    on_topic = float(np.clip((shared[0] - FIT_FLOOR) / FIT_SPAN, 0.0, 1.0))
    return max(score, on_topic)


def leaves_conversation(asked: JudgedQuestion, answer: str, context: list[str]) -> bool:
    """A reply to a follow-up question that shares (almost) none of its words with the
    question, the last turns or the passages, in their language: it belongs to another
    conversation, however fluent ("Schools must provide the information." to a question about
    VA health care). Short replies ("Yes, you can.") carry too little to tell."""
    if not asked.last_turns or not context:
        return False
    lang = language(answer)
    if lang == "unknown" or lang != language(" ".join([asked.text, *context])):
        return False
    shared = shared_with_conversation(asked, answer, context)
    return shared is not None and shared[1] >= OFF_CONVERSATION_WORDS and shared[0] < FIT_FLOOR


# an answer taken whole from one retrieved chunk that does not hold what the question asks, while
# another chunk clearly does: the model answered from the wrong passage ("Once you are certified as
# an instructor, ..." to a question about a suspended licence, beside the passage that answers it)
SOURCE_WHOLE = 0.9  # share of the answer's content words one chunk holds: taken from it
SOURCE_LITTLE = 0.5  # ... and less than this from the chunk that answers
SOURCE_CLEAR = 0.15  # below / above the context threshold by this: clearly not / clearly relevant
SOURCE_MIN_WORDS = 3
WRONG_SOURCE_SCORE = 0.3  # at most this for an answer from the wrong passage


def wrong_source(question: str, answer: str, context: Sequence[str]) -> tuple[int, int] | None:
    """``(taken from, answering)`` chunk positions when the answer was taken from a chunk that
    does not hold what ``question`` asks while another chunk clearly does; else None."""
    words = {key(w) for w in content_words(answer)}
    if len(context) < 2 or len(words) < SOURCE_MIN_WORDS:
        return None
    shares = [len(words & {key(w) for w in content_words(c)}) / len(words) for c in context]
    source = max(range(len(context)), key=shares.__getitem__)
    if shares[source] < SOURCE_WHOLE:
        return None
    scores = [ev.score for ev in chunk_evidence(question, list(context))]
    answering = max(range(len(context)), key=scores.__getitem__)
    threshold = DEFAULT_THRESHOLDS["context_relevance"]
    if (
        answering != source
        and shares[answering] < SOURCE_LITTLE
        and scores[source] < threshold - SOURCE_CLEAR
        and scores[answering] >= threshold + SOURCE_CLEAR
    ):
        return source, answering
    return None


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
        self.version = f"offline-9:t{threshold}" + (f":{calibration}" if calibration else "")

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        asked = judged_question(interaction)  # a follow-up's standalone meaning
        question, answer = asked.text, interaction.answer or ""
        # carried words are a guess at what a follow-up leaves out: the better reading counts
        readings = [question, asked.typed] if asked.source == "resolved" else [question]
        if not question.strip() or not answer.strip():
            return self.result(
                interaction, "skipped", None, "no question" if not question.strip() else "no answer"
            )
        parsed = parse_answer(answer)
        meta: dict[str, Any] = asked.evidence()
        if parsed.suspicious:
            meta["suspicious_instructions"] = parsed.suspicious[:5]
        sents = [s for s in sentences(answer) if s not in parsed.suspicious] or [answer]
        context = [c for _, _, c in chunk_texts(interaction)]
        titles = source_titles(sents, context)  # the same for every reading of the question
        judged = (evidence(q, answer, sents, asked.is_question, titles) for q in readings)
        # a reply that only asks a question in the user's voice (a page's heading copied out:
        # "Am I eligible for ...?") answers nothing, like a refusal
        echoes = all(s.rstrip().endswith("?") and in_user_voice(s) for s in sents)
        ev, score = max(
            ((ev, combine(ev, parsed.abstained or echoes, self.weights)) for ev in judged),
            key=lambda p: p[1],
        )
        if not asked.is_question:  # nothing was asked: does the reply fit the turn?
            score = fits_turn(asked, answer, context, score, parsed.abstained)
        elif leaves_conversation(asked, answer, context):
            score = min(score, OFF_CONVERSATION_SCORE)
            meta["leaves_conversation"] = True
        elif not parsed.abstained and (found := wrong_source(question, answer, context)):
            ids = [cid for cid, _, _ in chunk_texts(interaction)]
            score = min(score, WRONG_SOURCE_SCORE)
            meta["wrong_source"] = {"taken_from": ids[found[0]], "answering": ids[found[1]]}
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
        if self.calibration:
            meta["calibration"] = self.calibration
        notes = _notes(ev) if asked.is_question else [f"the turn is a {asked.kind}, not a question"]
        if meta.get("leaves_conversation"):
            notes.append("the reply shares nothing with the conversation or the passages")
        if "wrong_source" in meta:
            src = meta["wrong_source"]
            notes.append(
                f"taken from {src['taken_from']}, which does not hold what is asked;"
                f" {src['answering']} does"
            )
        label = "relevant" if score >= self.threshold else "irrelevant"
        explanation = f"covers {ev['coverage']:.0%} of the question's key terms" + (
            "; " + "; ".join(notes) if notes else ""
        )
        return self.result(interaction, label, score, explanation, meta)


__all__ = ["AnswerRelevanceJudge", "ContextRelevanceJudge", "context_precision"]
