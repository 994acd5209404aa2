"""Failure policy: per-metric thresholds turn one interaction's judge results into pass or fail.

A metric fails when its score is below its threshold (or, without a score or threshold, when its
label is a failing one); the judges label with the same thresholds, so a label and a flag never
disagree. ``error`` and ``skipped`` results are unknown, never failures.

The judges are made to agree before anything is decided: a chunk that supports a faithful claim
of an answer that addresses the question is relevant, whatever the context judge scored it
(the answer shows the chunk held what was asked). So a faithful, on-question answer is never a
retrieval failure.

When nothing relevant reached the prompt, what the job can see of the knowledge base (the
observed corpus: chunks other traces retrieved, see :mod:`corpus`) says whether it could have
answered. An abstention fails only when a relevant chunk reached the prompt
(``abstained_wrongly``) or such a chunk exists elsewhere, in the corpus or per the golden set
(``retrieval``); otherwise it is a correct abstention and passes. For an abstention a chunk
that nearly reached the context threshold (within ``NEAR_MARGIN``) and is close to the question
in meaning (the offline judge's cosine at least ``NEAR_COSINE``) counts as relevant: a follow-up
or a reworded question often shares its answer's meaning more than its words, and a refusal
that withholds what such a chunk says is what a reviewer needs to see. With context relevance
unknown an abstention stays ``unjudged``. An answer given when nothing relevant reached the
prompt fails.
A reply that only asks the user back to narrow the question (the faithfulness result's
``asks_back``) is a turn, not an answer: it passes when what it offers is in the passages or the
conversation and fails as ``generation`` otherwise, unless a missed chunk or the golden set says
the question had to be answered.
A turn that asks nothing (a statement, thanks: ``turn_kind``) retrieves for nothing: its reply is
judged by its fit and its faithfulness, never failed for the context's relevance.
A judge's ``uncertain`` (its score at or just above the threshold, evidence too weak to call) is
a pass that names the metric in ``Verdict.uncertain``: never flagged, always audited.
Whether every configured judge answered is the job's business (``verdicts.decide_all``): a pass
from only some judges is partial, never final.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ragsieve.evaluators.judges.offline.claims import is_abstention as declines
from ragsieve.evaluators.judges.offline.conversation import GROUNDED_ASK, turn_kind
from ragsieve.evaluators.judges.offline.text.text import sentences
from ragsieve.evaluators.judges.protocol import FAILING_LABELS
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.verdicts.corpus import HIT_LEAD, VOUCHED_LEAD, CorpusHit
from ragsieve.jobs.verdicts.ledger import DEFAULT_WEIGHTS, Piece
from ragsieve.jobs.verdicts.rootcause import (
    Edge,
    Expectation,
    RootCause,
    Signals,
    assign,
    edges_of,
    reply_reads,
)
from ragsieve.jobs.verdicts.steps import step_note

NEAR_MARGIN = 0.15  # below the context threshold, a chunk an abstention is still checked against
NEAR_COSINE = 0.3  # ... when its closest sentence is this near the question in meaning
UNKNOWN_LABELS = frozenset({"error", "skipped"})
Outcome = Literal["pass", "fail", "unjudged"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision for one interaction."""

    outcome: Outcome
    failed_metrics: tuple[str, ...] = ()
    root_cause: str | None = None
    evidence: str = ""
    abstained: bool = False
    context_relevant: bool | None = None  # after the judges were made to agree
    rescued: bool = False  # relevant only because a faithful, on-question answer drew on it
    missed_chunk: str | None = None  # a chunk of the observed corpus that would have answered
    missed_holds_answer: bool = False  # ... and holds what the (unfaithful) answer says
    uncertain: tuple[str, ...] = ()  # metrics whose judge could not call it: a pass to audit
    competing: tuple[str, ...] = ()  # root cause undetermined: the two lines that compete
    pieces: tuple[Piece, ...] = ()  # the evidence the root cause weighed (the rule's first)


@dataclass(frozen=True, slots=True)
class CorpusAnswer:
    """What a search of the observed corpus found: the missed chunk, or none among ``searched``."""

    hit: CorpusHit | None
    searched: int


def metric_failed(result: EvalResult, thresholds: Mapping[str, float]) -> bool | None:
    """True/False for a decided metric, None when the result is unknown."""
    if result.label in UNKNOWN_LABELS:
        return None
    threshold = thresholds.get(result.evaluator)
    if result.score is not None and threshold is not None:
        return result.score < threshold
    return result.label in FAILING_LABELS


def _context_signals(res: EvalResult | None) -> tuple[bool | None, tuple[str, ...], int]:
    if res is None or res.label in UNKNOWN_LABELS:
        return None, (), 0
    chunks = res.metadata.get("chunks") if isinstance(res.metadata, Mapping) else None
    if isinstance(chunks, Sequence) and chunks:
        rel = tuple(
            str(c.get("id")) for c in chunks if isinstance(c, Mapping) and c.get("relevant")
        )
        return bool(rel), rel, len(chunks)
    if res.score is not None:
        return res.score > 0, (), 0
    return res.label == "relevant", (), 0


def near_answers(res: EvalResult | None, threshold: float | None) -> tuple[str, ...]:
    """Chunks scored within ``NEAR_MARGIN`` below ``threshold`` whose closest sentence is
    ``NEAR_COSINE`` near the question in meaning (judges that report no cosine: none)."""
    meta = res.metadata if res is not None and isinstance(res.metadata, Mapping) else {}
    chunks = meta.get("chunks")
    if threshold is None or not isinstance(chunks, Sequence):
        return ()
    return tuple(
        str(c.get("id"))
        for c in chunks
        if isinstance(c, Mapping)
        and isinstance(score := c.get("score"), (int, float))
        and isinstance(cosine := c.get("cosine"), (int, float))
        and score >= threshold - NEAR_MARGIN
        and cosine >= NEAR_COSINE
    )


def is_abstention(res: EvalResult | None, answer: str | None = None) -> bool:
    """The faithfulness judge saw an abstention, or every sentence of ``answer`` declines
    ("Lo siento, pero los documentos no contienen esa información.": a courtesy before the
    refusal is no claim to check, in whichever language)."""
    if res is None:
        return False
    meta = res.metadata if isinstance(res.metadata, Mapping) else {}
    if res.label == "abstained" or bool(meta.get("abstained")):
        return True
    said = sentences(answer or "")
    return bool(said) and all(declines(s) for s in said)


def supporting_chunks(
    faith: EvalResult | None, ans: EvalResult | None, thresholds: Mapping[str, float]
) -> tuple[str, ...]:
    """Chunks that back a faithful answer to the question (empty unless both judges pass)."""
    if faith is None or ans is None:
        return ()
    if metric_failed(faith, thresholds) is not False or metric_failed(ans, thresholds) is not False:
        return ()
    meta = faith.metadata if isinstance(faith.metadata, Mapping) else {}
    ids = meta.get("evidence_chunks")
    return tuple(str(i) for i in ids) if isinstance(ids, Sequence) and ids else ()


@dataclass
class _Reading:
    """What one interaction's judge results say, before any verdict."""

    decided: dict[str, bool | None]  # metric -> failed (None: undecided)
    faith: EvalResult | None
    ans: EvalResult | None
    ctx_rel: bool | None
    rel_ids: tuple[str, ...]
    n_chunks: int
    abstained: bool
    missed: CorpusHit | None  # what the observed corpus found for this question
    rescued: bool
    near: bool = False  # an abstention's relevant chunks only nearly reached the threshold
    edges: tuple[Edge, ...] = ()  # the scores that decided the rule's branches, and how near

    @property
    def failed(self) -> tuple[str, ...]:
        """The metrics that failed, sorted."""
        return tuple(sorted(m for m, v in self.decided.items() if v))


def decide(
    interaction: RagInteraction,
    results: Sequence[EvalResult],
    thresholds: Mapping[str, float],
    *,
    expected: Expectation = None,
    corpus: CorpusAnswer | None = None,
    pieces: Sequence[Piece] = (),
    weights: Mapping[str, float] = DEFAULT_WEIGHTS,
) -> Verdict:
    """Pass, fail (with root cause and evidence) or unjudged for one interaction.

    ``corpus`` is what a search of the observed corpus found for this question (a missed chunk,
    or none among ``corpus.searched`` chunks); ``None`` when it was not searched. ``pieces``:
    evidence beyond the judges that a failure's root cause weighs with the rule's (``weights``,
    :mod:`ledger`).
    """
    by_metric = {r.evaluator: r for r in results}
    decided = {m: metric_failed(r, thresholds) for m, r in by_metric.items()}
    asks = turn_kind(interaction.query or "") == "question"
    if not asks and "context_relevance" in decided:  # a statement retrieves for nothing
        decided["context_relevance"] = None
    if all(v is None for v in decided.values()):
        return Verdict("unjudged", evidence="no judge could decide")
    rd = _read(interaction, by_metric, decided, thresholds, corpus)
    unsure = tuple(sorted(m for m, r in by_metric.items() if r.label == "uncertain"))
    asked = asks_back(rd.faith)
    if asked is not None and rd.missed is None and expected != "answerable":
        return _asks_back_verdict(rd, asked, unsure)
    failed = rd.failed
    if rd.abstained:
        early = _abstention_verdict(rd, expected, corpus)
        if early is not None:
            return early
        failed = tuple(sorted({*failed, "faithfulness"}))
    elif rd.ctx_rel is False and rd.n_chunks and asks:
        # Nothing relevant reached the prompt yet the system answered.
        failed = tuple(sorted({*failed, "context_relevance"}))
    elif not failed:
        return Verdict("pass", context_relevant=rd.ctx_rel, rescued=rd.rescued, uncertain=unsure)
    return _fail_verdict(interaction, rd, failed, expected, corpus, (tuple(pieces), weights))


def _read(
    interaction: RagInteraction,
    by_metric: Mapping[str, EvalResult],
    decided: dict[str, bool | None],
    thresholds: Mapping[str, float],
    corpus: CorpusAnswer | None,
) -> _Reading:
    """Context relevance, abstention and the agreement rule (an answer backed by chunks)."""
    faith = by_metric.get("faithfulness")
    ans = by_metric.get("answer_relevance")
    ctx_rel, rel_ids, n_chunks = _context_signals(by_metric.get("context_relevance"))
    abstained = is_abstention(faith, interaction.answer)
    backing = () if abstained else supporting_chunks(faith, ans, thresholds)
    missed = corpus.hit if corpus is not None else None
    if missed is not None and missed.holds_answer and decided.get("faithfulness") is not True:
        missed = None  # found as an unfaithful answer's source: nothing to say of a faithful one
    rescued = bool(backing) and ctx_rel is False
    if rescued and missed is None:  # the answer proves those chunks held what was asked
        ctx_rel, rel_ids = True, backing
        decided["context_relevance"] = False
    if abstained and ctx_rel is None and not interaction.context:
        ctx_rel = False  # nothing reached the prompt: nothing relevant could have
    near: tuple[str, ...] = ()
    if abstained and ctx_rel is False and decided.get("context_relevance") is not None:
        # (a turn that asks nothing retrieves for nothing: its context is not decided)
        ctx = by_metric.get("context_relevance")
        near = near_answers(ctx, thresholds.get("context_relevance"))
        if near:
            ctx_rel, rel_ids = True, near
    res = by_metric.get("context_relevance")
    scored = res.metadata.get("chunks") or () if res is not None else ()
    edges = edges_of(  # a near call hangs on the near chunks' scores, not the best chunk's
        [c for c in scored if not near or str(c.get("id")) in near],
        thresholds.get("context_relevance"),
        ctx_rel,
        vouched=bool(backing),
        near_margin=NEAR_MARGIN if near else None,
        missed=(missed, VOUCHED_LEAD if rescued else HIT_LEAD) if missed is not None else None,
    )
    return _Reading(
        decided, faith, ans, ctx_rel, rel_ids, n_chunks, abstained, missed, rescued, bool(near),
        edges,
    )  # fmt: skip


def _abstention_verdict(
    rd: _Reading, expected: Expectation, corpus: CorpusAnswer | None
) -> Verdict | None:
    """Unjudged or a correct abstention; None when the abstention is a failure."""
    if rd.ctx_rel is None and expected != "answerable":
        return Verdict("unjudged", evidence="abstained; context relevance unknown", abstained=True)
    if not rd.ctx_rel and expected != "answerable" and rd.missed is None:
        why = "correct abstention: no relevant context"
        if corpus is not None:
            why += f"; none of the {corpus.searched} chunks seen in traffic answers this"
        return Verdict("pass", evidence=why, abstained=True, context_relevant=False)
    return None


def asks_back(res: EvalResult | None) -> Mapping[str, object] | None:
    """What the faithfulness judge found when the reply only asks the user back (a clarifying
    question, nothing stated): how much of it the context or the conversation grounds."""
    meta = res.metadata if res is not None and isinstance(res.metadata, Mapping) else {}
    found = meta.get("asks_back")
    return found if isinstance(found, Mapping) else None


def _asks_back_verdict(
    rd: _Reading, asked: Mapping[str, object], uncertain: tuple[str, ...]
) -> Verdict:
    """A reply that asks the user to narrow the question states nothing and answers nothing:
    neither context relevance ("answered although nothing relevant was retrieved") nor answer
    relevance applies. It passes when what it offers comes from the passages or the
    conversation, and fails as ``generation`` when it asks about things neither mentions.
    (Not used when the observed corpus holds a chunk that answers, a retrieval failure, or when
    the golden set says the question must be answered: those decide as for any reply.)"""
    grounded = asked.get("grounded")
    if isinstance(grounded, (int, float)) and grounded >= GROUNDED_ASK:
        return Verdict(
            "pass",
            evidence="asks the user to narrow the question; what it offers is in the context"
            " or the conversation",
            context_relevant=rd.ctx_rel,
            uncertain=uncertain,
        )
    unknown = asked.get("unknown")
    words = ", ".join(str(w) for w in unknown) if isinstance(unknown, Sequence) else ""
    return Verdict(
        "fail",
        ("answer_relevance",),
        "generation",
        f"the reply only asks back, about what neither the context nor the conversation"
        f" mentions ({words or 'only the question echoed'})",
        context_relevant=rd.ctx_rel,
    )


def _fail_verdict(
    interaction: RagInteraction,
    rd: _Reading,
    failed: tuple[str, ...],
    expected: Expectation,
    corpus: CorpusAnswer | None,
    weighed: tuple[tuple[Piece, ...], Mapping[str, float]] = ((), DEFAULT_WEIGHTS),
) -> Verdict:
    """A fail with its root cause assigned from every signal."""
    faithful = None if rd.faith is None or rd.abstained else _ok(rd.decided.get("faithfulness"))
    holds = rd.missed is not None and rd.missed.holds_answer
    signals = Signals(
        query=interaction.query,
        has_history=bool(interaction.chat_history),
        abstained=rd.abstained,
        context_relevant=rd.ctx_rel,
        relevant_chunks=rd.rel_ids,
        n_chunks=rd.n_chunks or len(interaction.context),
        faithful=faithful,
        answer_relevant=None if rd.ans is None else _ok(rd.decided.get("answer_relevance")),
        expected=expected,
        missed_chunk=rd.missed.evidence() if rd.missed is not None else None,
        corpus_searched=corpus.searched if corpus is not None else None,
        near_only=rd.near,
        missed_holds_answer=holds,
        pieces=weighed[0],
        weights=weighed[1],
        edges=rd.edges,
        reads=reply_reads(rd.ans),
    )
    cause: RootCause = assign(signals)
    return Verdict(
        "fail",
        failed,
        cause.label,
        cause.evidence + step_note(interaction),  # several retrieval steps: which one fed it
        rd.abstained,
        context_relevant=rd.ctx_rel,
        missed_chunk=rd.missed.chunk_id if rd.missed is not None else None,
        missed_holds_answer=holds,
        competing=cause.competing,
        pieces=cause.pieces,
    )


def _ok(failed: bool | None) -> bool | None:
    return None if failed is None else not failed


__all__ = [
    "FAILING_LABELS",
    "CorpusAnswer",
    "Verdict",
    "asks_back",
    "decide",
    "is_abstention",
    "metric_failed",
    "supporting_chunks",
]
