"""Demo answer generation: a deterministic extractive generator and an OpenAI-compatible one."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragsieve.jobs.demo.tallyfox.kb import KnowledgeBase
from ragsieve.jobs.demo.tallyfox.retrieval import Encoder, Hit, coverage, fold

ABSTAIN = {"en": "I don't have that information.", "es": "No tengo esa información."}
SYSTEM_PROMPT = (
    "You are the Tallyfox help assistant. Answer the question using only the numbered context "
    "passages, in the language of the question, in one or two sentences. If the context does not "
    'contain the answer, reply exactly "I don\'t have that information." (in Spanish: '
    '"No tengo esa información.").'
)
_ES_HINTS = frozenset(
    "el la los las del que es en por para una con como cual cuanto puedo mi".split()
)
_EN_HINTS = frozenset("the of and is to in for with what how can my do does when".split())


def detect_language(text: str) -> str:
    """``"es"`` or ``"en"`` from punctuation and stopword counts (English on a tie)."""
    if "¿" in text or "ñ" in text.lower():
        return "es"
    toks = re.findall(r"\w+", fold(text))
    es = sum(t in _ES_HINTS for t in toks)
    en = sum(t in _EN_HINTS for t in toks)
    return "es" if es > en else "en"


def build_messages(question: str, hits: Sequence[Hit]) -> list[dict[str, str]]:
    """The chat messages a generator receives: system rules, then context and question."""
    context = "\n".join(f"[{i + 1}] ({h.chunk.id}) {h.chunk.text}" for i, h in enumerate(hits))
    user = f"Context:\n{context}\n\nQuestion: {question}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass(frozen=True, slots=True)
class Generation:
    """What a generator produced, plus what the LLM span needs."""

    answer: str
    messages: tuple[dict[str, str], ...]
    model: str
    provider: str | None = None
    source_chunk_id: str | None = None
    abstained: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ExtractiveGenerator:
    """Answers with the context sentence that best matches the question, or abstains.

    FAQ-style matching: a sentence's similarity is the larger of cosine(question, sentence) and
    the best cosine(question, example question) for the example questions the KB authors attached
    to that sentence (in either language). Score = similarity + ``lexical_weight`` x share of
    question stems in the sentence + ``language_bonus`` when the sentence is in the question's
    language. Below ``min_score`` the generator abstains unless ``force`` is set. Only sentences
    of the context chunks are candidates, so every answer is grounded in the prompt.
    """

    model = "ragsieve-extractive-v1"
    provider = None

    def __init__(
        self,
        encoder: Encoder,
        kb: KnowledgeBase | None = None,
        *,
        min_score: float = 0.77,
        lexical_weight: float = 0.3,
        language_bonus: float = 0.1,
    ) -> None:
        self.encoder = encoder
        self.min_score = min_score
        self.lexical_weight = lexical_weight
        self.language_bonus = language_bonus
        examples: dict[tuple[str, int], list[str]] = {}
        for fact in kb.facts.values() if kb else ():
            phrasings = [q for qs in fact.questions.values() for q in qs]
            for cid, idx in fact.answers.values():
                examples.setdefault((cid, idx), []).extend(phrasings)
        self._examples = {key: encoder.vectors(qs) for key, qs in examples.items()}

    def best_sentence(self, question: str, hits: Sequence[Hit]) -> tuple[float, str, str | None]:
        """``(score, sentence, chunk id)`` of the best-matching context sentence."""
        lang = detect_language(question)
        pairs = [(h.chunk, i, s) for h in hits for i, s in enumerate(h.chunk.sentences)]
        if not pairs:
            return 0.0, "", None
        q = self.encoder.vectors([question])[0]
        sims = self.encoder.vectors([s for _, _, s in pairs]) @ q
        best: tuple[float, str, str | None] = (-1.0, "", None)
        for (chunk, idx, sent), sim in zip(pairs, sims, strict=True):
            examples = self._examples.get((chunk.id, idx))
            if examples is not None:
                sim = max(sim, float((examples @ q).max()))
            score = float(sim) + self.lexical_weight * coverage(question, sent)
            score += self.language_bonus if chunk.lang == lang else 0.0
            if score > best[0]:
                best = (score, sent, chunk.id)
        return best

    def generate(self, question: str, hits: Sequence[Hit], *, force: bool = False) -> Generation:
        """Answer ``question`` from ``hits``; ``force`` answers even from a weak match."""
        messages = tuple(build_messages(question, hits))
        score, sentence, chunk_id = self.best_sentence(question, hits)
        if not sentence or (score < self.min_score and not force):
            answer = ABSTAIN[detect_language(question)]
            return Generation(answer, messages, self.model, abstained=True)
        return Generation(sentence, messages, self.model, source_chunk_id=chunk_id)


class OpenAIGenerator:
    """Generation through an OpenAI-compatible chat endpoint (``base_url``), openai client."""

    provider = "openai"

    def __init__(
        self,
        base_url: str,
        *,
        model: str = "gpt-4o-mini",
        api_key: str = "ragsieve-demo",
        timeout_s: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        from openai import OpenAI  # only needed when an endpoint is configured

        self.model = model
        self._client = OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries
        )

    def generate(self, question: str, hits: Sequence[Hit], *, force: bool = False) -> Generation:
        """Ask the model; ``force`` is accepted for interface parity (an LLM decides for itself)."""
        messages = tuple(build_messages(question, hits))
        resp = self._client.chat.completions.create(
            model=self.model,
            messages=list(messages),  # type: ignore[arg-type]
            temperature=0,
        )
        answer = (resp.choices[0].message.content or "").strip()
        usage = resp.usage
        return Generation(
            answer,
            messages,
            resp.model or self.model,
            provider=self.provider,
            abstained=answer in ABSTAIN.values(),
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
        )

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()
