"""An ``uncertain`` judge result: a pass the job never flags and always audits (issue 25)."""

from __future__ import annotations

import pytest

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import EvalResult
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.golden.growth.repo import Candidate, CandidateRepo
from ragsieve.jobs.golden.review.audit import audit_id
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.results.reviews import ReviewLabel, audit_stratum
from ragsieve.jobs.run.estimate import audit_shares, judge_quality
from ragsieve.jobs.sampling.sampling import Pick
from ragsieve.jobs.verdicts.flagged_case import emit_fresh, sample_rows
from ragsieve.jobs.verdicts.flagging import decide
from ragsieve.jobs.verdicts.verdicts import Decision

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


def _decision(n: int, faith_label: str, faith_score: float, stratum: str = "uniform") -> Decision:
    it = make_interaction("What is the capital of France?", trace_id=f"{n:032x}")
    results = _results(it.trace_id, faith_label, faith_score)
    verdict = decide(it, results, TH)
    return Decision(Pick(it.trace_id, stratum, 0.5), it, results, verdict, "uncategorized")


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


def test_a_pass_the_user_marked_as_bad_is_audited_even_when_judged_before() -> None:
    """A thumbs-down on a pass is a disagreement a person should settle: such a pass is always
    audited, in an audit stratum of its own, including one judged in an earlier run (the
    feedback came after); other passes judged before are not emitted again."""
    bad = _decision(1, "faithful", 0.95, stratum="negative_feedback")
    judged_before = _decision(2, "faithful", 0.95, stratum="negative_feedback")
    plain_before = _decision(3, "faithful", 0.95)
    decisions = [bad, judged_before, plain_before]
    before = {judged_before.pick.trace_id, plain_before.pick.trace_id}
    flagged, audit, fresh = emit_fresh(decisions, before, "run-2", seed=0, audit_share=0.0)
    assert not flagged and fresh == [bad]
    assert [c.interaction.trace_id for c in audit] == [
        bad.pick.trace_id,
        judged_before.pick.trace_id,
    ]
    assert all("marked as bad" in c.evidence and c.metadata["audit_p"] == 1.0 for c in audit)
    rows = sample_rows(decisions, "k", {}, {c.interaction.trace_id for c in audit}, 0.05)
    assert [r.body["audit_p"] for r in rows] == [1.0, 1.0, 0.05]
    assert [audit_stratum(r.body) for r in rows] == ["disagreed", "disagreed", "random"]


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


def test_a_missed_uncertain_pass_waits_for_a_random_audit_before_correcting_the_rate(
    store: Store,
) -> None:
    # a new user's first review: two flags (one a false alarm) and the one uncertain pass,
    # a missed failure; the passes the judges were sure of have no reviewed audit yet
    sure = [_decision(n, "faithful", 0.95) for n in range(1, 9)]
    unsure = _decision(9, "uncertain", 0.7)
    decisions = [*sure, unsure]
    resultstore.begin_run(store, "r1", 1.0)
    resultstore.save_samples(store, "r1", sample_rows(decisions, "k", {}, set(), 0.05))
    _review(store, [(unsure, "audit_fail")])
    shares = audit_shares(
        (audit_stratum({"uncertain": d.verdict.uncertain}), 1 / d.pick.inclusion_p)
        for d in decisions
    )
    assert shares == {"random": pytest.approx(8 / 9), "uncertain": pytest.approx(1 / 9)}
    flags = [ReviewLabel("f1", "tp"), ReviewLabel("f2", "fp")]
    labels = [*flags, *resultstore.review_labels(store, "k")]
    assert [lab.stratum for lab in labels[2:]] == ["uncertain"]
    q = judge_quality(0.2, (0.1, 0.3), labels, None, shares)
    assert q["false_omission_rate"] is None and q["corrected_failure_rate"] is None
    assert q["failure_rate_ppi"] is None and q["unaudited_pass_share"] == pytest.approx(8 / 9)
    # without the strata, that one miss would stand for every pass (the rate the user saw)
    assert judge_quality(0.2, (0.1, 0.3), labels)["false_omission_rate"] == 1.0
    # a reviewed random audit of a sure pass speaks for the rest of them
    _review(store, [(sure[0], "audit_pass")])
    labels = [*flags, *resultstore.review_labels(store, "k")]
    q = judge_quality(0.2, (0.1, 0.3), labels, None, shares)
    assert q["false_omission_rate"] == pytest.approx(1 / 9, abs=1e-6)
    assert q["corrected_failure_rate"]["estimate"] == pytest.approx(0.2 * 0.5 + 0.8 / 9, abs=1e-6)
    assert q["unaudited_pass_share"] == 0.0


def _review(store: Store, done: list[tuple[Decision, str]]) -> None:
    CandidateRepo(store).save(
        [
            Candidate(
                id=audit_id(d.pick.trace_id),
                status=status,
                norm_query=f"q{d.pick.trace_id}",
                body={"query": "q", "source_trace_ids": [d.pick.trace_id], "audit": True},
            )
            for d, status in done
        ]
    )


def test_the_report_names_the_audit_stratum_still_waiting_and_a_run_without_passes_pools() -> None:
    from ragsieve.jobs.run.report import _quality_rows

    flags = [ReviewLabel("f1", "tp"), ReviewLabel("f2", "fp")]
    sure = [ReviewLabel("a1", "tn", 20.0, "random")]
    q = judge_quality(0.2, (0.1, 0.3), [*flags, *sure], None, {"random": 0.9, "uncertain": 0.1})
    assert q["unaudited_strata"] == ["uncertain"] and q["corrected_failure_rate"] is None
    rows = dict(_quality_rows(q))
    assert "none speaks for 10.0% of passes, the uncertain ones" in rows["corrected failure rate"]
    # before any audit is reviewed, every pass waits: the row says only that audits are needed
    unreviewed = judge_quality(0.2, (0.1, 0.3), flags, None, {"random": 0.9, "uncertain": 0.1})
    assert "none speaks for" not in dict(_quality_rows(unreviewed))["corrected failure rate"]
    # a run that decided no pass: no miss rate to show, the rate is the flags' precision
    flagged = [ReviewLabel(f"t{i}", "tp") for i in range(8)] + [ReviewLabel("f", "fp")]
    all_failed = judge_quality(1.0, (0.72, 1.0), flagged, None, {})
    assert all_failed["false_omission_rate"] is None and all_failed["unaudited_strata"] == []
    assert all_failed["corrected_failure_rate"]["estimate"] == pytest.approx(8 / 9, abs=1e-6)
    assert all_failed["failure_rate_ppi"]["estimate"] == pytest.approx(8 / 9, abs=1e-6)
