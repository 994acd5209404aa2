"""Offline context relevance: lexical evidence per chunk first, the encoder where it falls short."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragsieve.evaluators.embeddings import embed
from ragsieve.evaluators.judges.claims import find_injections
from ragsieve.evaluators.judges.offline import OfflineJudge, chunk_texts
from ragsieve.evaluators.judges.question import coverage, expected_type, has_type, key_terms
from ragsieve.evaluators.judges.text import content_words, language, sentences, stems
from ragsieve.evaluators.records import EvalResult, RagInteraction

RELEVANT_COSINE = 0.32  # question-sentence cosine that makes a chunk relevant
LEXICAL_BOOST = 0.2  # cosine credit for a sentence holding all the question's key terms
NOISE_ONLY_FACTOR = 0.5  # context precision is scaled by this when no chunk is relevant
# encoder cost grows with tokens: a sentence's first ~25 words carry its gist for the cosine
MAX_EMBED_CHARS = 150


def _lexical_score(covs: list[float], typed: float) -> float:
    return _with_density(0.6 * max(covs) + 0.4 * typed, covs)


def _semantic_score(covs: list[float], typed: float, cosine: float) -> float:
    sim = float(np.clip((cosine - 0.1) / 0.5, 0.0, 1.0))
    return _with_density(0.4 * max(covs) + 0.3 * typed + 0.3 * sim, covs)


def _with_density(score: float, covs: list[float]) -> float:
    if len(covs) > 1:  # RAGAS-style: a chunk mostly about other things is partly noise
        return 0.6 * score + 0.4 * sum(covs) / len(covs)
    return score


def _head(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text``, cut at a word boundary when there is one."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[: cut if cut > limit // 2 else limit]


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
    """Is each retrieved chunk relevant to the question? Reports rank-aware context precision@k.

    A chunk is relevant when its lexical/type score reaches ``threshold``; such a chunk is never
    encoded. Otherwise, with embeddings, it is relevant when one of its sentences is within
    ``relevant_cosine`` of the question in meaning (this is what catches paraphrases, synonyms
    and answers in the other language), and its closest sentence joins its graded score.
    """

    name = "context_relevance"

    def __init__(
        self,
        threshold: float = 0.65,
        use_embeddings: bool | None = True,
        max_embed_chars: int = MAX_EMBED_CHARS,
        relevant_cosine: float = RELEVANT_COSINE,
        max_sentences: int = 12,
        skip_unrelated: bool = True,
        min_overlap: float = 0.0,
    ) -> None:
        """``use_embeddings=None`` (auto): encode only when a chunk's language differs."""
        self.threshold = threshold
        self.use_embeddings = use_embeddings
        self.max_embed_chars = max_embed_chars
        self.relevant_cosine = relevant_cosine
        self.max_sentences = max_sentences
        self.skip_unrelated = skip_unrelated
        self.min_overlap = min_overlap
        self.version = (
            f"offline-4:t{threshold}:e{use_embeddings}:c{relevant_cosine}"
            f":m{max_embed_chars}:o{min_overlap}:s{max_sentences}:u{skip_unrelated}"
        )

    def _similarities(
        self,
        question: str,
        chunks: list[tuple[str, int, str]],
        split: list[list[str]],
        covs: list[list[float]],
        lexical: list[float],
    ) -> list[np.ndarray | None]:
        """Question-sentence cosines for the chunks lexical evidence could not call relevant.

        Every sentence to encode goes into one batched encoder call (vectors are cached by
        text, and chunks recur across traces); chunks already relevant on their words are
        not encoded at all.
        """
        use = self.use_embeddings
        need = [i for i, s in enumerate(lexical) if s < self.threshold] if use is not False else []
        qlang = language(question) if need else "unknown"

        def other_language(i: int) -> bool:
            return qlang != "unknown" and language(chunks[i][2]) not in ("unknown", qlang)

        if use is None:  # auto: only chunks in another language than the question
            need = [i for i in need if other_language(i)]
        # which sentences to encode; in the question's language a sentence sharing no question
        # word is left out (lexical evidence already calls it unrelated): its cosine counts as 0
        picked: dict[int, list[int]] = {}
        for i in need:
            top = range(min(len(split[i]), self.max_sentences))
            every = not self.skip_unrelated or other_language(i)
            keep = [j for j in top if every or covs[i][j] > self.min_overlap]
            if keep:
                picked[i] = keep
        out: list[np.ndarray | None] = [None] * len(chunks)
        if not picked:
            return out
        texts = [_head(split[i][j], self.max_embed_chars) for i, js in picked.items() for j in js]
        vecs = embed([question, *texts])  # one batched encoder call per interaction
        flat, at = vecs[1:] @ vecs[0], 0
        for i, js in picked.items():
            sims = np.zeros(len(split[i][: self.max_sentences]), dtype=np.float32)
            sims[js], at = flat[at : at + len(js)], at + len(js)
            out[i] = sims
        return out

    def _judge(self, interaction: RagInteraction) -> EvalResult:
        question = interaction.query or ""
        chunks = chunk_texts(interaction)
        if not question.strip() or not chunks:
            return self.result(
                interaction,
                "skipped",
                None,
                "no question" if not question.strip() else "no context",
            )
        terms = key_terms(question)
        kind = expected_type(question)
        split = [sentences(c) or [c] for _, _, c in chunks]
        covs = [[coverage(terms, stems(content_words(s))) for s in ss] for ss in split]
        typed = [0.5 if kind is None else float(has_type(" ".join(ss), kind)) for ss in split]
        scores = [_lexical_score(c, t) for c, t in zip(covs, typed, strict=True)]
        sims = self._similarities(question, chunks, split, covs, scores)
        per_chunk: list[dict[str, Any]] = []
        for i, (cid, rank, _) in enumerate(chunks):
            close, sim = False, sims[i]
            if sim is not None:  # lexical evidence was not enough: meaning decides
                scores[i] = _semantic_score(covs[i], typed[i], float(sim.max()))
                boosted = sim + LEXICAL_BOOST * np.asarray(covs[i][: len(sim)])
                close = (
                    float(sim.max()) >= self.relevant_cosine
                    # a paraphrase that also shares the question's rare terms counts a little lower
                    or float(boosted.max()) >= self.relevant_cosine + LEXICAL_BOOST / 2
                )
            per_chunk.append(
                {
                    "id": cid,
                    "rank": rank,
                    "relevant": scores[i] >= self.threshold or close,
                    "score": round(scores[i], 4),
                }
            )
        relevant = [c for c in per_chunk if c["relevant"]]
        score = context_precision([c["score"] for c in per_chunk])
        if not relevant and len(per_chunk) > 1:
            # several chunks and none relevant: their graded scores average to a middling
            # precision that would pass as "partly useful"; a lone chunk's score already says it
            score *= NOISE_ONLY_FACTOR
        meta: dict[str, Any] = {"chunks": per_chunk, "k": len(per_chunk)}
        if any(x is not None for x in sims):  # closest sentence per encoded chunk
            meta["cosines"] = [None if x is None else round(float(x.max()), 4) for x in sims]
        injected = [s for _, _, c in chunks for s in find_injections(c)]
        if injected:
            meta["suspicious_instructions"] = injected[:5]
        noise = [c["id"] for c in per_chunk if not c["relevant"]]
        explanation = f"{len(relevant)}/{len(per_chunk)} chunks relevant to the question"
        if noise:
            explanation += f"; noise: {', '.join(noise[:5])}"
        label = "relevant" if relevant else "irrelevant"
        return self.result(interaction, label, score, explanation, meta)
