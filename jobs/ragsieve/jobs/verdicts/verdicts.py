"""Verdict decisions for a run's picks, and what a fresh decision emits: flags, audits, rows.

A pass is final only when every configured judge has a usable result (a checkpoint) for its
current version; until then the trace is ``unjudged`` (partial) and a later run decides it. A
fail is kept as soon as one decided metric fails. A fresh pass or fail (one not decided before
for the judge set) is emitted once: a fail becomes a flagged case, a hash-chosen share of
passes becomes an audit case, and the run annotates every fresh decision in Phoenix.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from ragsieve.jobs.sampling.strata import unit_hash
from ragsieve.jobs.verdicts import rewordings
from ragsieve.jobs.verdicts.corpus import VOUCHED_LEAD, ObservedCorpus
from ragsieve.jobs.verdicts.flagged_case import FlaggedCase
from ragsieve.jobs.verdicts.flagging import (
    CorpusAnswer,
    Verdict,
    decide,
    needs_corpus,
    needs_source,
)
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
    ids = [p.trace_id for p in picks]
    stored = resultstore.stored_results(store, ids, versions)
    done = resultstore.done_judges(store, ids, versions)
    out: list[Decision] = []
    expects: list[Expectation] = []
    corpora: list[CorpusAnswer | None] = []
    for p in picks:
        it = records.get(p.trace_id)
        if it is None:
            continue
        results = [
            r
            for r in stored.get(p.trace_id, [])
            if versions.get(r.evaluator) == r.judge_version or r.evaluator not in versions
        ]
        verdict = decide(it, results, thresholds)
        category = "uncategorized"
        expected: Expectation = None
        found: CorpusAnswer | None = None
        if golden is not None and (verdict.outcome == "fail" or verdict.abstained):
            expected, category = golden.lookup(it.query or "")
            verdict = decide(it, results, thresholds, expected=expected)
        if corpus is not None and (it.query or "").strip():
            found = _search(corpus, searched, it, verdict, thresholds)
            if found is not None:
                verdict = decide(it, results, thresholds, expected=expected, corpus=found)
        missing = tuple(sorted(set(versions) - done.get(p.trace_id, set())))
        out.append(Decision(p, it, results, verdict, category, missing))
        expects.append(expected)
        corpora.append(found)
    _agree_rewordings(out, expects, corpora, thresholds)
    for d in out:
        if d.missing and d.verdict.outcome != "fail":
            # Only a failure is safe to keep before every judge has answered.
            why = f"partial: no usable result yet from {', '.join(d.missing)}"
            d.verdict = Verdict("unjudged", evidence=why, abstained=d.verdict.abstained)
    return out


def _search(
    corpus: ObservedCorpus,
    searched: int,
    it: RagInteraction,
    verdict: Verdict,
    thresholds: dict[str, float],
) -> CorpusAnswer | None:
    """Ask the observed corpus for the chunk the retriever missed: when nothing relevant reached
    the prompt, one that answers the question; when an answer is unfaithful to relevant chunks,
    one that answers the question better and holds what the answer says (``None``: not asked)."""
    source = needs_source(verdict)
    if not (needs_corpus(verdict) or source):
        return None
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
    hit = corpus.find_answer(asked.text, exclude, ctx_threshold, lead, typed, holds)
    if source and hit is None:
        return None  # the unfaithful answer holds nowhere better: the rule stays as it was
    return CorpusAnswer(hit, searched)


def _agree_rewordings(
    out: list[Decision],
    expects: list[Expectation],
    corpora: list[CorpusAnswer | None],
    thresholds: dict[str, float],
) -> None:
    """One failure asked in other words gets one root cause (:mod:`rewordings`)."""
    verdicts = [d.verdict for d in out]

    def redecide(i: int, pooled: list[EvalResult], found: CorpusAnswer | None) -> Verdict:
        return decide(out[i].interaction, pooled, thresholds, expected=expects[i], corpus=found)

    interactions = [d.interaction for d in out]
    if rewordings.agree(interactions, verdicts, [d.results for d in out], corpora, redecide):
        for d, v in zip(out, verdicts, strict=True):
            d.verdict = v


def audit_probability(verdict: Verdict, audit_share: float) -> float:
    """The chance a pass had of being audited: 1 when a judge was uncertain, else the share."""
    return 1.0 if verdict.uncertain else audit_share


def emit_fresh(
    decisions: Sequence[Decision],
    before: set[str],
    run_id: str,
    *,
    seed: int,
    audit_share: float,
) -> tuple[list[FlaggedCase], list[FlaggedCase], list[Decision]]:
    """``(flagged, audit, fresh)`` from the passes and fails not in ``before``."""
    flagged: list[FlaggedCase] = []
    audit: list[FlaggedCase] = []
    fresh = [
        d
        for d in decisions
        if d.pick.trace_id not in before and d.verdict.outcome in ("pass", "fail")
    ]
    for d in fresh:
        meta: dict[str, object] = {
            "category": d.category,
            "failed_metrics": list(d.verdict.failed_metrics),
        }
        if d.verdict.missed_chunk:
            meta["missed_chunk"] = d.verdict.missed_chunk
        case = FlaggedCase(
            d.interaction,
            d.results,
            d.verdict.root_cause or "",
            d.verdict.evidence,
            run_id,
            d.pick.stratum,
            d.pick.inclusion_p,
            dict(meta),
        )
        if d.verdict.outcome == "fail":
            flagged.append(case)
            continue
        audit_p = audit_probability(d.verdict, audit_share)
        if d.verdict.uncertain or unit_hash(d.pick.trace_id, "audit", seed) < audit_share:
            why = "audit of a pass"
            if d.verdict.uncertain:
                why += f" the judges could not call ({', '.join(d.verdict.uncertain)} uncertain)"
            audit.append(
                FlaggedCase(
                    d.interaction,
                    d.results,
                    "none",
                    why,
                    run_id,
                    d.pick.stratum,
                    d.pick.inclusion_p,
                    {
                        "audit": True,
                        "audit_p": audit_p,
                        "uncertain": list(d.verdict.uncertain),
                        "category": d.category,
                    },
                )
            )
    return flagged, audit, fresh


def sample_rows(
    decisions: Sequence[Decision],
    key: str,
    versions: dict[str, str],
    audit_ids: set[str],
    audit_share: float = 1.0,
) -> list[resultstore.SampleRow]:
    """One ``samples`` row per decision, recording the verdict under the judge set ``key`` (and,
    for a pass, the probability it had of being audited: 1 when a judge was uncertain)."""
    return [
        resultstore.SampleRow(
            d.pick.trace_id,
            d.pick.stratum,
            d.pick.inclusion_p,
            d.verdict.outcome,
            d.verdict.root_cause,
            {
                "key": key,
                "complete": not d.missing,
                "missing": list(d.missing),
                "recovered": d.pick.recovered,
                "audit": d.pick.trace_id in audit_ids,
                "evidence": d.verdict.evidence,
                "failed_metrics": list(d.verdict.failed_metrics),
                "category": d.category,
                "upstream_p": d.pick.upstream_p,
                "missed_chunk": d.verdict.missed_chunk,
                "missed_holds_answer": d.verdict.missed_holds_answer,
                "uncertain": list(d.verdict.uncertain),
                "audit_p": audit_probability(d.verdict, audit_share),
            },
            versions,
        )
        for d in decisions
    ]


__all__ = ["Decision", "audit_probability", "decide_all", "emit_fresh", "sample_rows"]
