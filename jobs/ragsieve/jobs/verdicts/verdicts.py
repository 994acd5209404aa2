"""Verdict decisions for a run's picks.

A pass is final only when every configured judge has a usable result (a checkpoint) for its
current version; until then the trace is ``unjudged`` (partial) and a later run decides it. A
fail is kept as soon as one decided metric fails. What a fresh decision emits (a flagged case,
an audit, a ``samples`` row) is :mod:`.flagged_case`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges.offline.conversation import judged_question
from ragsieve.evaluators.judges.offline.faithfulness import FaithfulnessJudge
from ragsieve.evaluators.judges.thresholds import DEFAULT_THRESHOLDS
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.sampling.golden_index import GoldenIndex
from ragsieve.jobs.sampling.sampling import Pick
from ragsieve.jobs.verdicts import rewordings
from ragsieve.jobs.verdicts.branches import missed_attribute, near_refusal
from ragsieve.jobs.verdicts.corpus import VOUCHED_LEAD, CorpusHit, ObservedCorpus
from ragsieve.jobs.verdicts.flagging import (
    CorpusAnswer,
    Verdict,
    decide,
)
from ragsieve.jobs.verdicts.gather import (
    context_best,
    failure_pieces,
    review_piece,
    reviewed_causes,
)
from ragsieve.jobs.verdicts.ledger import DEFAULT_WEIGHTS, STATED_RIGHT, Piece
from ragsieve.jobs.verdicts.rootcause import Expectation


@dataclass
class Decision:
    """The verdict on one pick, with the results it was decided from."""

    pick: Pick
    interaction: RagInteraction
    results: list[EvalResult]
    verdict: Verdict
    category: str
    missing: tuple[str, ...] = ()  # configured judges without a usable current-version result


def root_cause_weights(store: Store) -> dict[str, float]:
    """The root-cause decision's weights: the active calibration's refit (``judges fit``
    from reviewers' root causes), else the defaults (:data:`ledger.DEFAULT_WEIGHTS`). A refit
    made under another price of an ``undetermined`` (``stated_right``; none was stored before
    :data:`ledger.STATED_RIGHT`) is not this loss's: the defaults stand until the next fit."""
    from ragsieve.jobs.judging.calibrations import active

    cal = active(store)
    refit = (cal.report if cal is not None else {}).get("root_cause_weights") or {}
    fitted = refit.get("weights") if refit.get("stated_right") == STATED_RIGHT else None
    out = dict(DEFAULT_WEIGHTS)
    if isinstance(fitted, Mapping):
        for k, v in fitted.items():
            if k in out and isinstance(v, (int, float)) and math.isfinite(v) and v >= 0:
                out[k] = float(v)
    return out


def decide_all(
    store: Store,
    picks: Sequence[Pick],
    records: dict[str, RagInteraction],
    versions: dict[str, str],
    thresholds: dict[str, float],
    golden: GoldenIndex | None,
    corpus: ObservedCorpus | None = None,
) -> list[Decision]:
    """Decide every pick with a stored record from its current-version results.

    When nothing relevant reached a trace's prompt, ``corpus`` (the observed corpus) is searched
    for a chunk that answers its question: found, the retriever missed it; not found, the system
    should have abstained.
    """
    searched = corpus.size() if corpus is not None else 0
    reviewed = reviewed_evidence(store)
    ids = [p.trace_id for p in picks]
    stored = resultstore.stored_results(store, ids, versions)
    done = resultstore.done_judges(store, ids, versions)
    out: list[Decision] = []
    expects: list[Expectation] = []
    corpora: list[CorpusAnswer | None] = []
    weighed: list[tuple[Piece, ...]] = []
    for p in picks:
        it = records.get(p.trace_id)
        if it is None:
            continue
        results = _current(stored.get(p.trace_id, []), versions)
        verdict = decide(it, results, thresholds)
        category = "uncategorized"
        expected: Expectation = None
        found: CorpusAnswer | None = None
        if golden is not None and (verdict.outcome == "fail" or verdict.abstained):
            expected, category = golden.lookup(it.query or "")
            verdict = decide(it, results, thresholds, expected=expected)
        rival: CorpusHit | None = None
        refused: tuple[Piece, ...] = ()
        if corpus is not None and (it.query or "").strip():
            best = context_best(results)
            found, rival, refused = _search(corpus, searched, it, verdict, thresholds, best)
            if found is not None:
                verdict = decide(it, results, thresholds, expected=expected, corpus=found)
        verdict, pieces = _weighed(
            it,
            results,
            thresholds,
            verdict,
            (expected, found),
            (corpus, golden, rival, reviewed),
            refused,
        )
        missing = tuple(sorted(set(versions) - done.get(p.trace_id, set())))
        out.append(Decision(p, it, results, verdict, category, missing))
        expects.append(expected)
        corpora.append(found)
        weighed.append(pieces)
    _agree_rewordings(out, expects, corpora, thresholds, (weighed, reviewed.weights))
    _hold_partial(out)
    return out


def _current(results: Sequence[EvalResult], versions: Mapping[str, str]) -> list[EvalResult]:
    """A trace's results from each judge's current version (or from judges not configured)."""
    return [
        r
        for r in results
        if versions.get(r.evaluator) == r.judge_version or r.evaluator not in versions
    ]


def _hold_partial(out: list[Decision]) -> None:
    """Only a failure is safe to keep before every judge has answered: any other verdict with a
    judge still missing stays ``unjudged`` for a later run."""
    for d in out:
        if d.missing and d.verdict.outcome != "fail":
            why = f"partial: no usable result yet from {', '.join(d.missing)}"
            d.verdict = Verdict("unjudged", evidence=why, abstained=d.verdict.abstained)


def _weighed(
    it: RagInteraction,
    results: list[EvalResult],
    thresholds: dict[str, float],
    verdict: Verdict,
    known: tuple[Expectation, CorpusAnswer | None],
    sources: tuple[ObservedCorpus | None, GoldenIndex | None, CorpusHit | None, Reviewed],
    found_pieces: tuple[Piece, ...] = (),
) -> tuple[Verdict, tuple[Piece, ...]]:
    """A failure decided again with the evidence beyond the judges (:mod:`gather`), weighed
    with the rule's; a pass, or a failure with no such evidence, stays as it was."""
    if verdict.outcome != "fail":
        return verdict, ()
    corpus, golden, rival, reviewed = sources
    pieces = found_pieces + failure_pieces(it, results, verdict, corpus, thresholds, golden, rival)
    pieces += review_piece(it, reviewed.causes)
    if not pieces:
        return verdict, ()
    expected, found = known
    again = decide(
        it,
        results,
        thresholds,
        expected=expected,
        corpus=found,
        pieces=pieces,
        weights=reviewed.weights,
    )
    return again, pieces


@dataclass(frozen=True, slots=True)
class Reviewed:
    """What people taught the root cause: their causes per question, and the fitted weights."""

    causes: Mapping[str, tuple[str, str]]
    weights: Mapping[str, float]


def reviewed_evidence(store: Store) -> Reviewed:
    """Reviewers' root causes (:func:`gather.reviewed_causes`) and the active weights."""
    return Reviewed(reviewed_causes(store), root_cause_weights(store))


def needs_corpus(verdict: Verdict) -> bool:
    """True when the observed corpus should be asked: nothing relevant reached the prompt, or
    only the answer vouches for the chunks it drew on (a chunk elsewhere may answer better)."""
    return verdict.context_relevant is False or verdict.rescued


def needs_source(verdict: Verdict) -> bool:
    """True when the observed corpus should be asked where an unfaithful answer came from: a
    ``generation`` failure of faithfulness although a relevant chunk reached the prompt (a chunk
    elsewhere that answers the question better and holds what the answer says makes it a
    retrieval failure)."""
    return (
        verdict.root_cause == "generation"
        and bool(verdict.context_relevant)
        and "faithfulness" in verdict.failed_metrics
        and not verdict.abstained
    )


def _search(
    corpus: ObservedCorpus,
    searched: int,
    it: RagInteraction,
    verdict: Verdict,
    thresholds: dict[str, float],
    best: float = 0.0,
) -> tuple[CorpusAnswer | None, CorpusHit | None, tuple[Piece, ...]]:
    """Ask the observed corpus for the chunk the retriever missed: when nothing relevant reached
    the prompt, one that answers the question; when an answer is unfaithful to relevant chunks,
    one that answers the question better and holds what the answer says (``None``: not asked).
    Second: a chunk that answers as well as the prompt without deciding it (evidence only).
    Third, for a refusal blamed on a relevant chunk in the prompt: a chunk elsewhere that
    answers clearly better, holds what the turn asks (as typed) that no chunk of the prompt
    holds and what the prompt names of it (:func:`missed_attribute`): the prompt was about the
    topic, the refusal was right for it, and the retriever missed the page. (A better-scoring
    chunk alone does not say so: pages overlap, and on the service bench's tuning half one
    scored clearly better than the prompt's for 9 of 33 wrong abstentions whose prompt held
    the answer.) When the prompt's chunk only nearly answered (``best``, its score, under the
    context threshold), a chunk that answers outright says so alone (:func:`near_refusal`)."""
    source = needs_source(verdict)
    refusal = verdict.root_cause == "abstained_wrongly" and not needs_corpus(verdict)
    if not (needs_corpus(verdict) or source or refusal):
        return None, None, ()
    ctx_threshold = thresholds.get("context_relevance", DEFAULT_THRESHOLDS["context_relevance"])
    exclude = {d.id for d in it.documents}
    lead = VOUCHED_LEAD if verdict.rescued else 0.0
    asked = judged_question(it)  # a follow-up: what it means, not what it says
    typed = asked.typed if asked.source == "resolved" else None
    holds = None
    if source:
        judge = FaithfulnessJudge(
            thresholds.get("faithfulness", DEFAULT_THRESHOLDS["faithfulness"])
        )
        holds = partial(judge.holds_answer, it)
    got = corpus.search(asked.text, exclude, ctx_threshold, lead, typed, holds)
    if refusal:
        gap = missed_attribute(asked.text, it, got.hit, typed)
        return None, None, gap or near_refusal(got.hit, best, ctx_threshold)
    if source and got.hit is None:
        return None, got.rival, ()  # the answer holds nowhere better: the rule stays as it was
    return CorpusAnswer(got.hit, searched), got.rival, ()


def _agree_rewordings(
    out: list[Decision],
    expects: list[Expectation],
    corpora: list[CorpusAnswer | None],
    thresholds: dict[str, float],
    evidence: tuple[list[tuple[Piece, ...]], Mapping[str, float]],
) -> None:
    """One failure asked in other words gets one root cause (:mod:`rewordings`), weighing the
    evidence any of its wordings found."""
    verdicts = [d.verdict for d in out]
    interactions = [d.interaction for d in out]
    weighed, weights = evidence
    pooled_pieces = list(weighed)
    for group in rewordings.same_failure_groups(interactions, verdicts):
        union = {(p.name, p.cause): p for j in reversed(group) for p in weighed[j]}
        for j in group:
            pooled_pieces[j] = tuple(union.values())

    def redecide(i: int, pooled: list[EvalResult], found: CorpusAnswer | None) -> Verdict:
        return decide(
            out[i].interaction,
            pooled,
            thresholds,
            expected=expects[i],
            corpus=found,
            pieces=pooled_pieces[i],
            weights=weights,
        )

    if rewordings.agree(interactions, verdicts, [d.results for d in out], corpora, redecide):
        for d, v in zip(out, verdicts, strict=True):
            d.verdict = v


__all__ = ["Decision", "decide_all"]
