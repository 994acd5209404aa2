"""An ``uncertain`` judge result: a pass the job never flags and always audits (issue 25)."""

from __future__ import annotations

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import EvalResult
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.review.audit import audit_id
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.sampling.sampling import Pick
from ragsieve.jobs.verdicts.flagging import decide
from ragsieve.jobs.verdicts.verdicts import Decision, emit_fresh, sample_rows

TH = {"faithfulness": 0.65, "answer_relevance": 0.5, "context_relevance": 0.6}


def _results(trace_id: str, faith_label: str, faith_score: float) -> list[EvalResult]:
    def r(metric: str, label: str, score: float, **meta: object) -> EvalResult:
        return EvalResult(
            trace_id=trace_id,
            span_id=trace_id[:16],
            evaluator=metric,
            label=label,
            score=score,
            metadata=meta,
        )

    chunk = {"id": "doc-0", "rank": 0, "relevant": True, "score": 0.9}
    return [
        r("faithfulness", faith_label, faith_score),
        r("answer_relevance", "relevant", 0.9),
        r("context_relevance", "relevant", 0.9, chunks=[chunk]),
    ]


def _decision(n: int, faith_label: str, faith_score: float) -> Decision:
    it = make_interaction("What is the capital of France?", trace_id=f"{n:032x}")
    results = _results(it.trace_id, faith_label, faith_score)
    verdict = decide(it, results, TH)
    return Decision(Pick(it.trace_id, "uniform", 0.5), it, results, verdict, "uncategorized")


def test_uncertain_is_a_pass_that_names_the_metric() -> None:
    unsure = _decision(1, "uncertain", 0.7)
    sure = _decision(2, "faithful", 0.95)
    assert unsure.verdict.outcome == "pass" and unsure.verdict.uncertain == ("faithfulness",)
    assert sure.verdict.outcome == "pass" and sure.verdict.uncertain == ()
    assert _decision(3, "unfaithful", 0.4).verdict.outcome == "fail"


def test_every_uncertain_pass_is_audited_and_says_so() -> None:
    decisions = [_decision(1, "uncertain", 0.7), _decision(2, "faithful", 0.95)]
    flagged, audit, fresh = emit_fresh(decisions, set(), "run-1", seed=0, audit_share=0.0)
    assert not flagged and len(fresh) == 2
    [case] = audit  # the sure pass is not audited at a share of 0
    assert case.interaction.trace_id == decisions[0].pick.trace_id
    assert case.metadata["audit_p"] == 1.0 and case.metadata["uncertain"] == ["faithfulness"]
    assert "uncertain" in case.evidence
    rows = sample_rows(decisions, "k", {}, {case.interaction.trace_id}, audit_share=0.1)
    assert [r.body["audit_p"] for r in rows] == [1.0, 0.1]


def test_an_audit_weighs_one_over_its_audit_probability(store: Store) -> None:
    decisions = [_decision(1, "uncertain", 0.7), _decision(2, "faithful", 0.95)]
    resultstore.begin_run(store, "r1", 1.0)
    rows = sample_rows(decisions, "k", {}, set(), audit_share=0.1)
    resultstore.save_samples(store, "r1", rows)
    CandidateRepo(store).save(
        [
            Candidate(
                id=audit_id(d.pick.trace_id),
                status="audit_pass",
                norm_query=f"q{i}",
                body={"query": "q", "source_trace_ids": [d.pick.trace_id], "audit": True},
            )
            for i, d in enumerate(decisions)
        ]
    )
    weights = {lab.trace_id: lab.weight for lab in resultstore.review_labels(store, "k")}
    # inclusion p 0.5 each; the uncertain pass was certain to be audited, the other at 0.1
    assert weights == {decisions[0].pick.trace_id: 2.0, decisions[1].pick.trace_id: 20.0}
