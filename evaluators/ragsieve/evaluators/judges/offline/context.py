"""Offline context relevance: does a chunk hold what answers the question, not only its topic?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np

from ragsieve.evaluators.judges.offline.base import OfflineJudge, chunk_texts
from ragsieve.evaluators.judges.offline.claims import find_injections
from ragsieve.evaluators.judges.offline.conversation import best_reading, judged_question
from ragsieve.evaluators.judges.offline.text.asked import (
    find_term,
    limit_matches,
    name_keys,
    question_terms,
    yes_no,
)
from ragsieve.evaluators.judges.offline.text.question import (
    expected_type,
    has_type,
)
from ragsieve.evaluators.judges.offline.text.terms import Match, TermIndex, key
from ragsieve.evaluators.judges.offline.text.text import (
    content_words,
    language,
    sentences,
)
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.evaluators.tools.embeddings import embed

# encoder cost grows with tokens: a sentence's first ~25 words carry its gist for the cosine
MAX_EMBED_CHARS = 150
MAX_SENTENCES = 12  # sentences of a chunk the encoder reads (long chunks: their start)
MAX_LEXICAL_SENTENCES = 400  # sentences of a chunk searched for the question's terms
UNTYPED_CREDIT = 0.7  # a question that asks for no particular type: no evidence either way
TOPIC_DISCOUNT = 0.6  # weight taken from a question term that every chunk holds
DENSITY_WEIGHT = 0.05  # share of the score that rewards chunks focused on the question
SEMANTIC_FLOOR = 0.2  # question-sentence cosine below this adds nothing
SEMANTIC_SPAN = 0.3
XLING_FLOOR_SHIFT = 0.05  # ... and at floor + span, full credit
# a question term the window's second sentence names again: the paragraph's topic, worth this
# share of its weight the second time
REPEAT_CREDIT = 0.0


DEFAULT_WEIGHTS = MappingProxyType({"terms": 0.7, "type": 0.3, "lexical": 0.55, "meaning": 0.45})
"""How a chunk's evidence combines: the lexical score is ``terms * key-term share + type *
answer-type credit``; the blend is ``lexical * lexical score + meaning * meaning credit``
(each pair sums to 1)."""


@dataclass(frozen=True, slots=True)
class ChunkEvidence:
    """How well one chunk answers a question: the graded score and what it rests on."""

    score: float
    terms: float  # weighted share of the question's key terms in the chunk's best window
    typed: bool | None  # the answer type the question asks for is in that window (None: no type)
    cosine: float | None  # closest sentence in meaning (None: not encoded)
    window: str  # the best window's text (evidence)
    density: float = 1.0  # share of the chunk's sentences about the question
    other_language: bool = False  # the chunk is in another language than the question


@dataclass(frozen=True, slots=True)
class _Window:
    cov: float
    typed: bool | None
    text: str
    density: float


def _head(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text``, cut at a word boundary when there is one."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[: cut if cut > limit // 2 else limit]


def _best_window(
    sents: list[str],
    found: dict[str, Match],
    weights: dict[str, float],
    kind: str | None,
    question: str,
) -> _Window:
    """The two adjacent sentences holding most of the question's (weighted) key terms, each term
    counted once however many of the two sentences name it (a paragraph about the question's
    subject names it in every sentence: that is its topic, not what the question asks)."""
    total = sum(weights.values()) or 1.0
    per_sent = [0.0] * len(sents)
    held: list[set[str]] = [set() for _ in sents]
    for k, w in weights.items():
        m = found[k]
        for i in m.sentences:
            per_sent[i] += w * m.strength
            held[i].add(k)
    best_cov, best_i = 0.0, 0
    for i in range(len(sents)):
        window = per_sent[i]
        if i + 1 < len(sents):
            window += sum(
                weights[k] * found[k].strength * (1.0 if k not in held[i] else REPEAT_CREDIT)
                for k in held[i + 1]
            )
        both = min(1.0, window / total)
        if both > best_cov:
            best_cov, best_i = both, i
    text = " ".join(sents[best_i : best_i + 2])
    typed = None if kind is None else has_type(text, kind, question)
    # RAGAS-style density: a chunk mostly about other things is partly noise
    density = sum(min(1.0, c / total) for c in per_sent) / len(sents)
    return _Window(best_cov, typed, text, density)


def _closest_meaning(
    question: str, pending: list[tuple[int, list[str]]], max_embed_chars: int
) -> dict[int, float]:
    """Chunk number -> cosine of its sentence closest in meaning to the question."""
    cosines: dict[int, float] = {}
    if not pending:
        return cosines
    texts = [_head(s, max_embed_chars) for _, ss in pending for s in ss]
    vecs = embed([question, *texts])
    flat, at = vecs[1:] @ vecs[0], 0
    for n, ss in pending:
        cosines[n] = float(flat[at : at + len(ss)].max())
        at += len(ss)
    return cosines


def chunk_evidence(
    question: str,
    chunks: Sequence[str],
    *,
    use_embeddings: bool | None = True,
    max_sentences: int = MAX_SENTENCES,
    max_embed_chars: int = MAX_EMBED_CHARS,
    weights: Mapping[str, float] = DEFAULT_WEIGHTS,
    near_words: bool = True,
) -> list[ChunkEvidence]:
    """Score each chunk by whether it holds what answers ``question``.

    The best window (two adjacent sentences) must hold the question's key terms, found exactly,
    misspelt or (for a chunk in the other language) translated, and, when the question asks for
    a date, a number or a name, a value of that type; the encoder's closest sentence in meaning
    adds credit where words fall short (paraphrase, another language). Topic alone (a chunk
    that shares the subject but not what is asked about it) stays below the threshold.
    """
    terms = question_terms(question)
    kind = expected_type(question)
    qlang = language(question)
    split = [(sentences(chunk) or [chunk])[:MAX_LEXICAL_SENTENCES] for chunk in chunks]
    # a chunk in another language than the question: words are matched by translation
    others = [qlang != "unknown" and language(c) not in ("unknown", qlang) for c in chunks]
    found: list[dict[str, Match]] = []
    names = name_keys(question)
    limits = yes_no(question) and any(w[:1].isdigit() for w, _ in terms.values())
    for sents, other in zip(split, others, strict=True):
        index = TermIndex(sents, cross_lingual=other)
        got = {k: find_term(index, word, k in names, near_words) for k, (word, _) in terms.items()}
        found.append(limit_matches(question, terms, sents, got) if limits else got)
    term_weights = _discriminative(terms, found)
    windows = [
        _best_window(sents, found[n], term_weights, kind, question) for n, sents in enumerate(split)
    ]
    pending: list[tuple[int, list[str]]] = []
    for n, (sents, w) in enumerate(zip(split, windows, strict=True)):
        lexical = _combine(w.cov, w.typed, None)  # default weights: the same evidence whatever
        # the calibration, so a fit can re-score stored evidence
        want = use_embeddings is True or (use_embeddings is None and others[n])
        if want and (others[n] or lexical < 0.9):
            pending.append((n, sents[:max_sentences]))
    cosines = _closest_meaning(question, pending, max_embed_chars)
    out: list[ChunkEvidence] = []
    for n, w in enumerate(windows):
        cos = cosines.get(n)
        graded = graded_score(w.cov, w.typed, cos, others[n], w.density, weights)
        out.append(
            ChunkEvidence(
                round(graded, 4), round(w.cov, 4), w.typed, cos, w.text, w.density, others[n]
            )
        )
    return out


def graded_score(
    terms: float,
    typed: bool | None,
    cosine: float | None,
    other_language: bool,
    density: float,
    weights: Mapping[str, float] = DEFAULT_WEIGHTS,
) -> float:
    """A chunk's graded relevance from its evidence (:func:`_combine`), discounted by density."""
    return _combine(terms, typed, cosine, other_language, weights) * (
        1.0 - DENSITY_WEIGHT + DENSITY_WEIGHT * density
    )


def _discriminative(
    terms: dict[str, tuple[str, float]], found: list[dict[str, Match]]
) -> dict[str, float]:
    """Each question term's weight, lowered when most chunks hold it: a term every retrieved
    chunk shares is the topic, not what the question asks about the topic."""
    n = len(found)
    out: dict[str, float] = {}
    for k, (_, w) in terms.items():
        if n < 2:
            out[k] = w
            continue
        df = sum(1 for f in found if f[k].strength > 0)
        out[k] = w * (1.0 - TOPIC_DISCOUNT * max(0, df - 1) / (n - 1))
    return out


# what a question is about is not what it asks: "When will I receive the money for a returned
# Tallyfox Reader?" names its subject (the product every page of the deployment is on) and asks
# for a refund's timing. Stated principles, nothing fitted: a name the question gives that half
# of two or more prompt passages hold is the subject; so is a term most (more than half) of them
# hold, unless the passage that best answers the question holds it: the retriever matched it
# there, so it is what is asked ("money" and "returned" when every passage is on refunds). A
# name is what every page of the product holds, the answering one too
TOPIC_MAJORITY = 0.5


def topic_terms(question: str, context: Sequence[str]) -> frozenset[str]:
    """Keys of the question's terms that name its subject rather than what it asks: the names
    it gives (:func:`.text.asked.name_keys`) that half of the passages hold, and the terms most
    of them hold that the passage answering it best (:func:`chunk_evidence`, by its words) does
    not."""
    return _topic_terms(question, tuple(context))


@lru_cache(maxsize=4096)  # every reading of every answer to the same turn asks it again
def _topic_terms(question: str, context: tuple[str, ...]) -> frozenset[str]:
    if len(context) < 2:
        return frozenset()
    named = name_keys(question)
    held = [{key(w) for w in content_words(c)} for c in context]
    shares = {k: sum(k in h for h in held) / len(held) for k in question_terms(question)}
    topic = {k for k, share in shares.items() if share >= TOPIC_MAJORITY and k in named}
    common = {k for k, share in shares.items() if share > TOPIC_MAJORITY} - topic
    if common:  # the passage that answers best, by the question's words as written, holds what
        # is asked (read without the encoder or near words: this runs for every answer)
        scores = [
            ev.score
            for ev in chunk_evidence(question, context, use_embeddings=False, near_words=False)
        ]
        common -= held[max(range(len(context)), key=scores.__getitem__)]
    return frozenset(topic | common)


def _combine(
    terms: float,
    typed: bool | None,
    cosine: float | None,
    other_language: bool = False,
    weights: Mapping[str, float] = DEFAULT_WEIGHTS,
) -> float:
    """Graded relevance from term coverage, answer type and meaning (cosines across languages
    run lower for the same meaning, so their floor is lower)."""
    type_credit = UNTYPED_CREDIT if typed is None else float(typed)
    lexical = weights["terms"] * terms + weights["type"] * type_credit
    if typed is False:
        lexical = min(lexical, 0.6 * terms + 0.1)  # the window holds no value of the asked type
    if cosine is None:
        return lexical
    floor = SEMANTIC_FLOOR - (XLING_FLOOR_SHIFT if other_language else 0.0)
    meaning = float(np.clip((cosine - floor) / SEMANTIC_SPAN, 0.0, 1.0))
    blended = weights["lexical"] * lexical + weights["meaning"] * meaning * (
        0.5 + 0.5 * type_credit
    )
    return max(lexical, blended)


def context_precision(rels: list[float]) -> float:
    """Rank-aware precision: mean over ranks k of precision@k weighted by relevance at k."""
    if not rels or sum(rels) <= 0:
        return 0.0
    total, hits = 0.0, 0.0
    for k, r in enumerate(rels, 1):
        hits += r
        total += (hits / k) * r
    return total / sum(rels)


class ContextRelevanceJudge(OfflineJudge):
    """Does a retrieved chunk hold what answers the question? (deterministic heuristic)

    Each chunk gets a graded score (:func:`chunk_evidence`); a chunk is relevant when its score
    reaches ``threshold``, and the result's score is the best chunk's, so the label and the job's
    flag are one decision. Rank-aware context precision over the graded scores is reported in
    ``metadata["context_precision"]``.
    """

    name = "context_relevance"

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLDS["context_relevance"],
        use_embeddings: bool | None = True,
        max_embed_chars: int = MAX_EMBED_CHARS,
        max_sentences: int = MAX_SENTENCES,
        weights: Mapping[str, float] | None = None,
        calibration: str | None = None,
    ) -> None:
        """``use_embeddings=None`` (auto): encode only chunks in another language.

        ``weights`` and ``calibration`` come from a fitted calibration (``ragsieve judges fit``).
        """
        self.threshold = threshold
        self.weights = dict(weights or DEFAULT_WEIGHTS)
        self.calibration = calibration
        self.use_embeddings = use_embeddings
        self.max_embed_chars = max_embed_chars
        self.max_sentences = max_sentences
        self.version = (
            f"offline-21:t{threshold}:e{use_embeddings}:m{max_embed_chars}:s{max_sentences}"
        ) + (f":{calibration}" if calibration else "")

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        asked = judged_question(interaction)  # a follow-up's standalone meaning
        question = asked.text
        chunks = chunk_texts(interaction)
        if not question.strip() or not chunks:
            return self.result(
                interaction,
                "skipped",
                None,
                "no question" if not question.strip() else "no context",
            )
        found = best_reading(  # a resolved follow-up: its better reading counts
            asked,
            lambda q: chunk_evidence(
                q,
                [c for _, _, c in chunks],
                use_embeddings=self.use_embeddings,
                max_sentences=self.max_sentences,
                max_embed_chars=self.max_embed_chars,
                weights=self.weights,
            ),
        )
        per_chunk: list[dict[str, Any]] = []
        for (cid, rank, _), ev in zip(chunks, found, strict=True):
            per_chunk.append(
                {
                    "id": cid,
                    "rank": rank,
                    "relevant": ev.score >= self.threshold,
                    "score": ev.score,
                    "terms": ev.terms,
                    "typed": ev.typed,
                    "cosine": None if ev.cosine is None else round(ev.cosine, 4),
                    "density": round(ev.density, 6),
                    "other_language": ev.other_language,
                }
            )
        relevant = [c for c in per_chunk if c["relevant"]]
        score = max(c["score"] for c in per_chunk)
        meta: dict[str, Any] = {
            "chunks": per_chunk,
            "k": len(per_chunk),
            "context_precision": round(context_precision([c["score"] for c in per_chunk]), 4),
            "expected_type": expected_type(question),
            **asked.evidence(),
        }
        if self.calibration:
            meta["calibration"] = self.calibration
        injected = [s for _, _, c in chunks for s in find_injections(c)]
        if injected:
            meta["suspicious_instructions"] = injected[:5]
        noise = [c["id"] for c in per_chunk if not c["relevant"]]
        explanation = f"{len(relevant)}/{len(per_chunk)} chunks hold what the question asks"
        if relevant:
            best = max(zip(per_chunk, found, strict=True), key=lambda p: p[0]["score"])
            explanation += f"; best {best[0]['id']}: '{_head(best[1].window, 160)}'"
        if noise:
            explanation += f"; noise: {', '.join(noise[:5])}"
        label = "relevant" if score >= self.threshold else "irrelevant"
        return self.result(interaction, label, score, explanation, meta)
