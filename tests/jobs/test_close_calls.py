"""The rule's own close calls: a branch decided by a score a hair from its threshold records
the cause the other branch gives, and the ledger says ``undetermined`` with both lines when the
score sits inside the band; a score farther away, or a band of 0, leaves the rule's cause."""

from __future__ import annotations

from ragsieve.evaluators.records import EvalResult
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.verdicts.corpus import CorpusHit
from ragsieve.jobs.verdicts.flagging import decide
from ragsieve.jobs.verdicts.ledger import DEFAULT_WEIGHTS, UNDETERMINED, Piece, combine, fit_weights
from ragsieve.jobs.verdicts.rootcause import Signals, assign, edges_of

Q = "What is the monthly price of the Starter plan?"
STARTER_LIMIT = "The Starter plan allows 120 requests per minute."
BANDS = {**DEFAULT_WEIGHTS, "close_over_band": 0.05, "close_under_band": 0.05,
         "close_lead_band": 0.05, "close_near_band": 0.05}  # fmt: skip
OFF = {**BANDS, **{k: 0.0 for k in BANDS if k.endswith("_band")}}


def _unfaithful(score: float, relevant: bool = True, weights=BANDS) -> Signals:
    chunks = [{"id": "plans#starter", "score": score}, {"id": "plans#pro", "score": 0.2}]
    return Signals(
        query=Q,
        context_relevant=relevant,
        relevant_chunks=("plans#starter",) if relevant else (),
        n_chunks=2,
        faithful=False,
        weights=weights,
        edges=edges_of(chunks, 0.6, relevant),
    )


def test_a_chunk_a_hair_over_the_threshold_leaves_it_undetermined_with_both_lines() -> None:
    got = assign(_unfaithful(0.62))
    assert got.label == UNDETERMINED
    gen, other = got.competing
    assert gen.startswith("generation: plans#starter reached the prompt")
    assert other.startswith("no_answer_expected: plans#starter scores 0.62, 0.02 over the context")
    assert "read the other way: none of 2 chunk(s) in the prompt was relevant" in other
    (close,) = [p for p in got.pieces if p.name == "close_over"]
    assert close.distance == 0.02


def test_a_score_outside_the_band_or_a_band_of_0_keeps_the_rules_cause() -> None:
    far = assign(_unfaithful(0.68))  # recorded (within reach), outside the 0.05 band
    assert (far.label, far.competing) == ("generation", ())
    assert [p.name for p in far.pieces] == ["rule", "close_over"]
    assert far.evidence == "plans#starter reached the prompt; the answer is unfaithful"
    assert assign(_unfaithful(0.62, weights=OFF)).label == "generation"
    assert [p.name for p in assign(_unfaithful(0.9)).pieces] == ["rule"]  # beyond reach


def test_a_chunk_a_hair_under_the_threshold_argues_for_the_answer() -> None:
    got = assign(_unfaithful(0.58, relevant=False))
    assert got.label == UNDETERMINED
    assert got.competing[0].startswith("no_answer_expected: none of 2 chunk(s)")
    assert got.competing[1].startswith(
        "generation: the prompt's best chunk plans#starter scores 0.58, 0.02 under the context"
    )


def test_other_evidence_still_decides_a_close_call() -> None:
    source = Piece("answer_in_prompt", "generation", "plans#starter holds what the answer says")
    s = _unfaithful(0.62)
    got = assign(
        Signals(**{**{k: getattr(s, k) for k in s.__dataclass_fields__}, "pieces": (source,)})
    )
    assert got.label == "generation"


def test_a_refusal_whose_other_side_passes_records_no_close_call() -> None:
    chunks = [{"id": "plans#starter", "score": 0.61}]
    s = Signals(query=Q, abstained=True, context_relevant=True, relevant_chunks=("plans#starter",),
                n_chunks=1, weights=BANDS, edges=edges_of(chunks, 0.6, True))  # fmt: skip
    got = assign(s)  # nothing could answer: the other side is a correct abstention, no cause
    assert (got.label, [p.name for p in got.pieces]) == ("abstained_wrongly", ["rule"])
    could = assign(Signals(**{**{k: getattr(s, k) for k in s.__dataclass_fields__},
                              "expected": "answerable"}))  # fmt: skip
    assert could.label == UNDETERMINED and could.competing[1].startswith("retrieval: plans#starter")


def test_a_missed_chunk_barely_clearly_better_is_a_close_call() -> None:
    hit = CorpusHit("prices#starter", 0.81, 2, "The Starter plan costs $49.", best_seen=0.7)
    s = Signals(query=Q, context_relevant=False, n_chunks=1, faithful=False,
                missed_chunk=hit.evidence(), weights=BANDS,
                edges=edges_of([], 0.6, False, missed=(hit, 0.1)))  # fmt: skip
    got = assign(s)
    assert got.label == UNDETERMINED
    assert got.competing[1].startswith(
        "no_answer_expected: the missed chunk prices#starter answers 0.11 better than the"
        " prompt's best, 0.01 over the 0.1 a miss needs"
    )


def test_the_job_reads_the_edges_from_the_context_judges_chunks() -> None:
    it = make_interaction(query=Q, context=[STARTER_LIMIT], answer="The Starter plan is $49.")
    it = it.model_copy(
        update={"documents": (it.documents[0].model_copy(update={"id": "plans#starter"}),)}
    )
    base = {"trace_id": it.trace_id, "span_id": it.span_id, "judge_version": "v1"}
    results = [
        EvalResult(evaluator="faithfulness", label="unfaithful", score=0.1, **base),
        EvalResult(evaluator="answer_relevance", label="relevant", score=0.9, **base),
        EvalResult(evaluator="context_relevance", label="relevant", score=0.61, **base,
                   metadata={"chunks": [{"id": "plans#starter", "score": 0.61, "relevant": True}]}),
    ]  # fmt: skip
    thresholds = {"faithfulness": 0.65, "answer_relevance": 0.5, "context_relevance": 0.6}
    v = decide(it, results, thresholds, weights=BANDS)
    assert (v.outcome, v.root_cause) == ("fail", UNDETERMINED)
    assert [c.split(":")[0] for c in v.competing] == ["generation", "no_answer_expected"]
    stored = [Piece.from_dict(p.as_dict()) for p in v.pieces]  # as the samples row keeps them
    assert stored == list(v.pieces) and stored[1].distance == 0.01
    assert decide(it, results, thresholds, weights=OFF).root_cause == "generation"


def test_reviewed_labels_move_a_close_calls_band_and_weight() -> None:
    # a deployment whose reviewers call a hair-over-the-threshold context "nothing relevant",
    # and a comfortably relevant one the model's fault: the fit widens the band past the first
    # and weighs the close call enough to state it, leaving the second as the rule says
    rule = Piece("rule", "generation", "plans#starter reached the prompt; the answer is unfaithful")
    hair = Piece("close_over", "no_answer_expected", "plans#starter scores 0.62", 0.02)
    clear = Piece("close_over", "no_answer_expected", "plans#starter scores 0.72", 0.12)
    labelled = [([rule, hair], "no_answer_expected")] * 6 + [([rule, clear], "generation")] * 6
    assert {combine(p, OFF).label for p, _ in labelled} == {"generation"}
    w = fit_weights(labelled, OFF)
    assert 0.02 < w["close_over_band"] <= 0.12 and w["close_over"] > 1.0
    assert [combine(p, w).label for p, _ in labelled] == [y for _, y in labelled]


def test_a_near_call_reads_the_chunk_that_made_the_refusal_wrong() -> None:
    """The near margin is crossed by the chunk close in meaning (plans#starter, 0.47), not by
    the best-scoring chunk (plans#pro, 0.58, about something else): the close call's distance
    and line are that chunk's (the golden set says the question is answerable, so read under
    the margin the refusal is a retrieval miss, not a pass)."""
    it = make_interaction(query=Q, context=[STARTER_LIMIT, "The Pro plan costs $99."],
                          answer="I don't know.")  # fmt: skip
    base = {"trace_id": it.trace_id, "span_id": it.span_id, "judge_version": "v1"}
    chunks = [{"id": "plans#pro", "score": 0.58, "cosine": 0.2},
              {"id": "plans#starter", "score": 0.47, "cosine": 0.9}]  # fmt: skip
    results = [
        EvalResult(evaluator="faithfulness", label="abstained", score=1.0, **base),
        EvalResult(evaluator="context_relevance", label="irrelevant", score=0.58, **base,
                   metadata={"chunks": chunks}),
    ]  # fmt: skip
    thresholds = {"faithfulness": 0.65, "answer_relevance": 0.5, "context_relevance": 0.6}
    v = decide(it, results, thresholds, expected="answerable", weights=BANDS)
    near = [p for p in v.pieces if p.name == "close_near"]
    assert near and near[0].distance == 0.02 and "plans#starter scores 0.47" in near[0].line
