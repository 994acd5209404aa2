"""The evidence beyond the judges that a failure's root cause weighs (:mod:`ledger`).

For one failing interaction, what the trace and the store hold besides the three judges:

- where the answer's own words sit (:func:`answer_source`): the answer's content words that the
  question does not already name (its values, names and claims) are looked up in the chunks of
  the prompt and, by BM25 on the answer, in the observed corpus. A chunk the retriever missed
  that holds them, about the question, when no chunk of the prompt does, says the model had
  the answer from a page the prompt lacked (``retrieval``); the prompt's own chunks holding
  them say it had what it said (``generation``). The lookup is lexical; only whether a chunk
  is about the question (:func:`_about`) asks the encoder.
- a chunk the retriever returned that answers the question but never reached the prompt
  (:func:`dropped`): a reranker or a context budget cut it (``retrieval``), with the
  retriever's own rank and score.
- the golden set's relevant chunks for the same question (:func:`golden_chunks`).
- ``rival``: the observed corpus's best chunk that answers as well as the prompt, from the
  search the job already makes (:meth:`ObservedCorpus.search`).
- a reviewer's root cause for this failure or the same question (:func:`review_piece`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges.offline.context import chunk_evidence, question_terms
from ragsieve.evaluators.judges.offline.conversation import judged_question
from ragsieve.evaluators.judges.offline.text.terms import key, tokens
from ragsieve.evaluators.judges.offline.text.text import sentences
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.sampling.golden_index import GoldenIndex
from ragsieve.jobs.verdicts.branches import goes_on, near_context, off_conversation
from ragsieve.jobs.verdicts.corpus import CorpusHit, ObservedCorpus, holds_question
from ragsieve.jobs.verdicts.flagging import NEAR_MARGIN, Verdict
from ragsieve.jobs.verdicts.ledger import UNDETERMINED, Piece

SOURCE_MIN = 0.7  # share of the answer's own (weighted) words a chunk must hold to be its source
SOURCE_LEAD = 0.3  # ... and by how much more than the best chunk of the prompt
PROMPT_MIN = 0.8  # share the prompt's best chunk holds for the answer to count as taken from it
PARTLY_MIN = 0.5  # ... and at least this much for the model to have read it (``_partly``)
MIN_ANSWER_WEIGHT = 2.0  # an answer whose own words weigh less names nothing to look for
SOURCE_CANDIDATES = 8
VALUE_CHARS = 60


@dataclass(frozen=True, slots=True)
class Held:
    """How much of the answer's own words one chunk holds."""

    chunk_id: str
    share: float
    values: tuple[str, ...]  # the answer's values and names the chunk holds


def answer_terms(question: str, answer: str) -> dict[str, tuple[str, float]]:
    """The answer's content words (key -> word, weight) that the question does not name."""
    asked = set(question_terms(question))
    return {k: v for k, v in question_terms(answer).items() if k not in asked}


def held(terms: Mapping[str, tuple[str, float]], cid: str, content: str) -> Held:
    """The weighted share of ``terms`` that ``content`` holds, and which of its values."""
    have = {key(t) for t in tokens(content)}
    total = sum(w for _, w in terms.values()) or 1.0
    got = [(k, word, w) for k, (word, w) in terms.items() if k in have]
    values = tuple(word for _, word, w in got if word[:1].isdigit() or w >= 2.5)
    return Held(cid, sum(w for _, _, w in got) / total, values)


def _said(h: Held, terms: Mapping[str, tuple[str, float]]) -> str:
    shown = ", ".join(h.values[:4]) or ", ".join(w for w, _ in list(terms.values())[:4])
    return shown[:VALUE_CHARS]


def _about(question: str, content: str, threshold: float) -> bool:
    """``content`` is about what ``question`` asks: it names what the question names
    (:func:`holds_question`), or the context judge scores it within ``NEAR_MARGIN`` of its
    threshold (a page that says "burial" and "Veteran" for "funerals for vets")."""
    if holds_question(question, content):
        return True
    return chunk_evidence(question, [content])[0].score >= threshold - NEAR_MARGIN


def answer_source(
    it: RagInteraction,
    question: str,
    corpus: ObservedCorpus | None,
    threshold: float = 0.6,
    rule_cause: str | None = None,
) -> tuple[Piece, ...]:
    """Where the answer's own words sit, sentence by sentence. Every sentence in a chunk of the
    prompt: the model had what it said (``generation``); some: the rest was added from
    elsewhere (``generation``, an added claim); none, and a chunk the retriever missed holds
    them and is about the question: the answer came from the page the prompt lacked
    (``retrieval``). Nothing when the answer names too little or its words sit nowhere.
    Beside the rule's ``no_answer_expected`` (``rule_cause``), a chunk of the prompt about the
    question that holds most of the answer's words (:func:`_partly`) argues ``generation``."""
    answer = it.answer or ""
    terms = answer_terms(question, answer)
    if sum(w for _, w in terms.values()) < MIN_ANSWER_WEIGHT:
        return ()
    docs = [(d.id, d.content or "") for d in it.context if d.content]
    said = [t for s in sentences(answer) or [answer] if (t := answer_terms(question, s))]
    in_prompt = [_best(t, docs) for t in said]
    held_by = [h for h in in_prompt if h.share >= PROMPT_MIN]
    if held_by:
        ids = list(dict.fromkeys(h.chunk_id for h in held_by))
        where = "a chunk of the prompt" if len(ids) == 1 else "chunks of the prompt"
        part = "" if len(held_by) == len(said) else f" ({len(held_by)} of {len(said)} sentences)"
        return (
            Piece(
                "answer_in_prompt",
                "generation",
                f"the answer's words are in {', '.join(ids)}, {where}{part}",
            ),
        )
    best_prompt = _best(terms, docs)
    partly = (
        _partly(best_prompt, dict(docs), question, threshold)
        if rule_cause == "no_answer_expected"
        else ()
    )
    if corpus is None:
        return partly
    exclude = {d.id for d in it.documents}
    for cid, content in corpus.by_words(answer, exclude, SOURCE_CANDIDATES):
        h = held(terms, cid, content)
        if h.share < SOURCE_MIN or h.share - best_prompt.share < SOURCE_LEAD:
            continue
        if not _about(question, content, threshold):
            continue  # it holds the words, but it is not about what was asked
        return (
            Piece(
                "answer_source",
                "retrieval",
                f"the observed chunk {cid} holds what the answer says ({_said(h, terms)}) and"
                f" no chunk in the prompt does (best {best_prompt.share:.0%})",
            ),
            *partly,
        )
    return partly


def _partly(
    best: Held, docs: Mapping[str, str], question: str, threshold: float
) -> tuple[Piece, ...]:
    """The prompt's chunk that holds at least ``PARTLY_MIN`` of the answer's own words (not all
    of them: that is ``answer_in_prompt``), about what the question asks: the model read it and
    said what it does not hold (``generation``, ``answer_partly_in_prompt``)."""
    if best.share < PARTLY_MIN or not _about(question, docs.get(best.chunk_id, ""), threshold):
        return ()
    return (
        Piece(
            "answer_partly_in_prompt",
            "generation",
            f"{best.share:.0%} of the answer's words are in {best.chunk_id}, a chunk of the"
            " prompt about the question: the model read it and said what it does not hold",
        ),
    )


def _best(terms: Mapping[str, tuple[str, float]], docs: Sequence[tuple[str, str]]) -> Held:
    got = [held(terms, cid, content) for cid, content in docs]
    return max(got, key=lambda h: h.share, default=Held("", 0.0, ()))


def rival_piece(rival: CorpusHit | None, best_seen: str) -> tuple[Piece, ...]:
    """A chunk the retriever missed that answers as well as the prompt's best (``retrieval``)."""
    if rival is None:
        return ()
    return (
        Piece(
            "rival",
            "retrieval",
            f"the observed chunk {rival.chunk_id} answers the question at least as well as the"
            f" prompt (answer score {rival.score:.2f}{best_seen}): '{rival.window[:120]}'",
        ),
    )


def dropped(
    it: RagInteraction, question: str, threshold: float, context_best: float
) -> tuple[Piece, ...]:
    """A chunk the retriever returned that answers the question (at least as well as the
    prompt's best) but did not reach the prompt. Scored with the prompt's chunks, as the context
    judge scores a trace's chunks: a term every chunk shares is the topic for all of them."""
    cut = [d for d in it.documents if d.in_prompt is False and d.content]
    if not cut or not question.strip():
        return ()
    shown = [d.content or "" for d in it.context if d.content]
    scored = chunk_evidence(question, [*shown, *(d.content or "" for d in cut)])[len(shown) :]
    best = max(zip(cut, scored, strict=True), key=lambda p: p[1].score)
    doc, ev = best
    if ev.score < threshold or ev.score < context_best:
        return ()
    by = doc.retrieval_score if doc.retrieval_score is not None else doc.score
    rank = f"rank {doc.rank + 1}" + (f", retriever score {by:.2f}" if by is not None else "")
    return (
        Piece(
            "dropped",
            "retrieval",
            f"{doc.id} was retrieved ({rank}) but did not reach the prompt (a reranker or the"
            f" context budget dropped it); it answers the question (score {ev.score:.2f})",
        ),
    )


def golden_chunks(golden: Any, it: RagInteraction, rule_cause: str | None) -> tuple[Piece, ...]:
    """The golden set's relevant chunks for the same question (a near duplicate): none reached
    the prompt → ``retrieval``; one did → the context was right, the failure is not there (the
    rule's cause when it blames the answer, else ``generation``)."""
    cases = getattr(golden, "cases", None)
    if not cases or not (it.query or "").strip():
        return ()
    sims = np.asarray(golden.embed([it.query])[0] @ golden.vectors.T)
    best = int(np.argmax(sims))
    if float(sims[best]) < float(golden.near_duplicate):
        return ()
    relevant = set(getattr(cases[best], "relevant_chunks", {}) or {})
    if not relevant:
        return ()
    shown = {d.id for d in it.context}
    hit = sorted(relevant & shown)
    if hit:
        blames_answer = rule_cause in ("generation", "abstained_wrongly", "ambiguous_query")
        return (
            Piece(
                "golden",
                str(rule_cause) if blames_answer else "generation",
                f"{hit[0]}, in the prompt, is the golden set's relevant chunk for this question",
            ),
        )
    names = ", ".join(sorted(relevant)[:3])
    return (
        Piece(
            "golden",
            "retrieval",
            f"the golden set's relevant chunks for this question ({names}) never reached the"
            " prompt",
        ),
    )


def gather(
    it: RagInteraction,
    question: str,
    corpus: ObservedCorpus | None,
    threshold: float,
    context_best: float,
    golden: Any = None,
    rival: tuple[Piece, ...] = (),
    rule_cause: str | None = None,
    abstained: bool = False,
) -> tuple[Piece, ...]:
    """Every piece this module finds for one failing interaction (none may apply; a refusal
    says nothing whose source could be looked up)."""
    out: list[Piece] = [*rival]
    if not abstained:
        out += answer_source(it, question, corpus, threshold, rule_cause)
    out += dropped(it, question, threshold, context_best)
    if golden is not None:
        out += golden_chunks(golden, it, rule_cause)
    return tuple(out)


def question_key(query: str | None) -> str:
    """A question as reviews are matched to it: case and spacing aside."""
    return " ".join((query or "").casefold().split())


def reviewed_causes(store: Store) -> dict[str, tuple[str, str]]:
    """Question (:func:`question_key`) -> (root cause, trace) a reviewer gave a failure of it
    (the ``labels`` table: review corrections, answers to an ``undetermined``, files); the
    latest label per question."""
    rows = store.query(  # the body is read here, not with SQL JSON (not portable across stores)
        "SELECT l.trace_id, l.root_cause, i.body FROM labels l"
        " JOIN interactions i ON i.trace_id = l.trace_id WHERE l.root_cause IS NOT NULL"
        " AND l.verdict = 'fail' AND l.metric IS NULL ORDER BY l.created_at, l.id"
    )
    asked = ((tid, cause, body_query(body)) for tid, cause, body in rows)
    return {question_key(q): (str(cause), str(tid)) for tid, cause, q in asked if q}


def body_query(body: str | bytes | None) -> str | None:
    """The ``query`` of a stored interaction body (None when it has none or is not JSON)."""
    try:
        value = json.loads(body or "{}")
    except ValueError:
        return None
    query = value.get("query") if isinstance(value, dict) else None
    return query if isinstance(query, str) else None


def review_piece(it: RagInteraction, reviewed: Mapping[str, tuple[str, str]]) -> tuple[Piece, ...]:
    """A reviewer's root cause for this failure or the same question asked before."""
    got = reviewed.get(question_key(it.query))
    if got is None or got[0] == UNDETERMINED:
        return ()
    cause, tid = got
    which = "this failure" if tid == it.trace_id else f"the same question (trace {tid})"
    return (Piece("review", cause, f"a reviewer named {cause} for {which}"),)


def context_best(results: Sequence[Any]) -> float:
    """The best chunk's score in the context judge's result (0 when unknown)."""
    for r in results:
        if r.evaluator == "context_relevance" and r.score is not None:
            return float(r.score)
    return 0.0


def failure_pieces(
    it: RagInteraction,
    results: list[EvalResult],
    verdict: Verdict,
    corpus: ObservedCorpus | None,
    thresholds: dict[str, float],
    golden: GoldenIndex | None,
    rival: CorpusHit | None,
) -> tuple[Piece, ...]:
    """The evidence beyond the judges a failure's root cause weighs (:mod:`gather`); for a
    retrieval failure the rule already pinned on a missed chunk, only a reply that belongs to
    another conversation (:func:`branches.off_conversation`), which no page explains, and one that
    goes on from the chunk the last reply came from (``goes_on``).

    A page the retriever missed explains an answer only if the answer answers the question: "the
    model had it from a page the prompt lacked" (``answer_source``) and "a page answers better
    than the prompt" (``rival``) both say the right page would have given the right answer. An
    answer off the question (its judge failed it) came from neither: the page that holds its
    words is not one the question needed, and a better page would not have kept the model on
    the question. Neither piece is weighed for it (a refusal says nothing whose source could be
    looked up, but a chunk that answers as well still argues that it was there to be found);
    the prompt holding what it says (``answer_in_prompt``) still argues it was the model's.
    ``answer_partly_in_prompt`` (a chunk of the prompt about the question holds most of the
    answer's words) is the reading ``goes_on`` (the answer goes on from the last reply's chunk)
    and ``near_context`` (a chunk of the prompt nearly answers) already make: the model had a
    chunk about the question and did not keep to it. Beside either it is not counted again."""
    left = off_conversation(results, verdict) + goes_on(results, verdict)
    if verdict.missed_chunk is not None and verdict.root_cause == "retrieval":
        return left
    ctx_threshold = thresholds.get("context_relevance", DEFAULT_THRESHOLDS["context_relevance"])
    best = context_best(results)
    seen = f" vs {rival.best_seen:.2f} in the prompt" if rival and rival.best_seen else ""
    off = "answer_relevance" in verdict.failed_metrics and not verdict.abstained
    got = (
        left
        + near_context(results, verdict, ctx_threshold)
        + gather(
            it,
            judged_question(it).text,
            corpus,
            ctx_threshold,
            best,
            golden,
            rival_piece(rival, seen),
            verdict.root_cause,
            verdict.abstained,
        )
    )
    read = any(p.name in ("goes_on", "near_context") for p in got)
    drop = {
        *(("answer_source", "rival") if off else ()),
        *(("answer_partly_in_prompt",) if read else ()),
    }
    return tuple(p for p in got if p.name not in drop)


__all__ = [
    "answer_source",
    "answer_terms",
    "context_best",
    "dropped",
    "failure_pieces",
    "gather",
    "golden_chunks",
    "held",
    "question_key",
    "review_piece",
    "reviewed_causes",
    "rival_piece",
]
