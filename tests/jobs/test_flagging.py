"""Flagging: thresholds, unknown labels, abstentions and the root cause attached to a failure."""

from __future__ import annotations

from typing import Any

from ragsieve.evaluators.records import EvalResult
from ragsieve.evaluators.testing import make_interaction, make_result
from ragsieve.jobs.verdicts.corpus import CorpusHit
from ragsieve.jobs.verdicts.flagging import CorpusAnswer, decide, metric_failed

TH = {"faithfulness": 0.7, "answer_relevance": 0.5, "context_relevance": 0.2}
IT = make_interaction("What is the capital of France?")


def res(metric: str, label: str, score: float | None, **meta: Any) -> EvalResult:
    return make_result(IT, metric, label, score, **meta)


def ctx(relevant: bool) -> EvalResult:
    chunk = {"id": "doc-0", "rank": 0, "relevant": relevant, "score": 0.9 if relevant else 0.1}
    return res(
        "context_relevance",
        "relevant" if relevant else "irrelevant",
        1.0 if relevant else 0.0,
        chunks=[chunk],
    )


def test_metric_thresholds_and_unknown_labels() -> None:
    assert metric_failed(res("faithfulness", "faithful", 0.69), TH) is True
    assert metric_failed(res("faithfulness", "faithful", 0.7), TH) is False
    assert metric_failed(res("faithfulness", "error", None), TH) is None
    assert metric_failed(res("answer_relevance", "skipped", None), TH) is None
    assert metric_failed(res("custom", "unfaithful", None), TH) is True


def test_pass_fail_unjudged() -> None:
    good = [
        res("faithfulness", "faithful", 0.95),
        res("answer_relevance", "relevant", 0.9),
        ctx(True),
    ]
    assert decide(IT, good, TH).outcome == "pass"
    bad = [
        res("faithfulness", "unfaithful", 0.2),
        res("answer_relevance", "relevant", 0.9),
        ctx(True),
    ]
    v = decide(IT, bad, TH)
    assert (v.outcome, v.root_cause, v.failed_metrics) == ("fail", "generation", ("faithfulness",))
    assert "doc-0" in v.evidence
    errors = [res("faithfulness", "error", None), res("answer_relevance", "error", None)]
    assert decide(IT, errors, TH).outcome == "unjudged"


def test_abstention_fails_only_with_relevant_context_or_answerable_golden() -> None:
    abst = res("faithfulness", "abstained", None, abstained=True)
    low = res("answer_relevance", "irrelevant", 0.1)
    assert decide(IT, [abst, low, ctx(False)], TH).outcome == "pass"
    v = decide(IT, [abst, low, ctx(True)], TH)
    assert (v.outcome, v.root_cause) == ("fail", "abstained_wrongly")
    v = decide(IT, [abst, low, ctx(False)], TH, expected="answerable")
    assert (v.outcome, v.root_cause) == ("fail", "retrieval")


def test_an_abstention_is_checked_against_a_chunk_near_the_threshold_and_close_in_meaning() -> None:
    th = {**TH, "context_relevance": 0.6}
    abst = res("faithfulness", "abstained", None, abstained=True)
    low = res("answer_relevance", "irrelevant", 0.1)

    def scored(score: float, cosine: float | None) -> EvalResult:
        chunk = {"id": "doc-0", "rank": 0, "relevant": False, "score": score, "cosine": cosine}
        return res("context_relevance", "irrelevant", score, chunks=[chunk])

    v = decide(IT, [abst, low, scored(0.5, 0.4)], th)
    assert (v.outcome, v.root_cause) == ("fail", "abstained_wrongly")
    assert "doc-0 was relevant (nearly" in v.evidence
    for score, cosine in ((0.4, 0.4), (0.5, 0.2), (0.5, None)):  # too low, too far, no cosine
        assert decide(IT, [abst, low, scored(score, cosine)], th).outcome == "pass"
    # a turn that asks nothing retrieves for nothing: its refusal is not checked so
    said = make_interaction("My card was stolen last night.")
    assert decide(said, [abst, low, scored(0.5, 0.4)], th).outcome == "pass"
    # an answer (not an abstention) is held to the threshold itself
    answered = [res("faithfulness", "faithful", 0.9), res("answer_relevance", "relevant", 0.9)]
    v = decide(IT, [*answered, scored(0.5, 0.4)], th)
    assert v.context_relevant is False


def test_no_relevant_context_and_made_up_answer_is_no_answer_expected() -> None:
    v = decide(
        IT,
        [
            res("faithfulness", "unfaithful", 0.0),
            res("answer_relevance", "relevant", 0.8),
            ctx(False),
        ],
        TH,
    )
    assert (v.outcome, v.root_cause) == ("fail", "no_answer_expected")
    v = decide(IT, [res("faithfulness", "unfaithful", 0.0), ctx(False)], TH, expected="answerable")
    assert v.root_cause == "retrieval"


def test_answer_from_irrelevant_context_fails_even_above_threshold() -> None:
    # The context judge found no relevant chunk although its score is above the threshold (a
    # lenient third-party judge); an answer that shows no supporting chunk still fails.
    lenient = res(
        "context_relevance",
        "irrelevant",
        0.5,
        chunks=[{"id": "doc-0", "rank": 0, "relevant": False, "score": 0.3}],
    )
    v = decide(
        IT,
        [res("faithfulness", "faithful", 0.95), res("answer_relevance", "relevant", 0.9), lenient],
        TH,
    )
    assert (v.outcome, v.root_cause) == ("fail", "no_answer_expected")
    assert v.failed_metrics == ("context_relevance",)


def test_a_turn_that_asks_nothing_is_not_failed_for_its_context() -> None:
    # "No, I know that already." retrieves for nothing: the reply is judged by its fit and its
    # faithfulness, and the same judges' results on a question still fail for the context
    judged = [
        res("faithfulness", "faithful", 0.95),
        res("answer_relevance", "relevant", 0.9),
        ctx(False),
    ]
    said = make_interaction("No, I know that already.", answer="Shall I explain how to apply?")
    assert decide(said, judged, TH).outcome == "pass"
    asked = make_interaction("How do I apply?", answer="Shall I explain how to apply?")
    v = decide(asked, judged, TH)
    assert (v.outcome, v.failed_metrics) == ("fail", ("context_relevance",))
    unsupported = [res("faithfulness", "unfaithful", 0.1), *judged[1:]]
    assert decide(said, unsupported, TH).failed_metrics == ("faithfulness",)


def test_abstention_with_context_relevance_unknown_is_not_a_pass() -> None:
    abst = res("faithfulness", "abstained", None, abstained=True)
    ok = res("answer_relevance", "relevant", 0.9)
    unknown = res("context_relevance", "error", None)
    v = decide(IT, [abst, ok, unknown], TH)
    assert v.outcome == "unjudged" and v.abstained and "unknown" in v.evidence
    assert decide(IT, [abst, ok], TH).outcome == "unjudged"  # context judge missing
    v = decide(IT, [abst, ok, unknown], TH, expected="answerable")
    assert (v.outcome, v.root_cause) == ("fail", "retrieval")
    bare = IT.model_copy(update={"documents": ()})  # nothing reached the prompt
    skipped = res("context_relevance", "skipped", None)
    assert decide(bare, [abst, ok, skipped], TH).outcome == "pass"


def test_judges_agree_a_chunk_backing_a_faithful_on_question_answer_is_relevant() -> None:
    faithful = res("faithfulness", "faithful", 0.95, evidence_chunks=["doc-0"])
    on_question = res("answer_relevance", "relevant", 0.9)
    v = decide(IT, [faithful, on_question, ctx(False)], TH)
    assert v.outcome == "pass" and v.context_relevant is True
    # without the supporting chunk, or with an off-question answer, nothing is rescued
    bare = res("faithfulness", "faithful", 0.95)
    assert decide(IT, [bare, on_question, ctx(False)], TH).outcome == "fail"
    off = res("answer_relevance", "irrelevant", 0.1)
    v = decide(IT, [faithful, off, ctx(False)], TH)
    assert v.outcome == "fail" and "context_relevance" in v.failed_metrics


HIT = CorpusHit("kb-42", 0.81, 3, "Refunds take 14 days.")


def test_a_chunk_the_retriever_missed_makes_it_a_retrieval_failure() -> None:
    made_up = [res("faithfulness", "unfaithful", 0.0), res("answer_relevance", "relevant", 0.8)]
    v = decide(IT, [*made_up, ctx(False)], TH, corpus=CorpusAnswer(HIT, 120))
    assert (v.outcome, v.root_cause, v.missed_chunk) == ("fail", "retrieval", "kb-42")
    assert "kb-42" in v.evidence and "3 other trace" in v.evidence
    v = decide(IT, [*made_up, ctx(False)], TH, corpus=CorpusAnswer(None, 120))
    assert (v.root_cause, v.missed_chunk) == ("no_answer_expected", None)
    assert "none of the 120 chunks seen in traffic answers this" in v.evidence


def test_an_abstention_is_correct_only_when_nothing_seen_answers() -> None:
    abst = res("faithfulness", "abstained", None, abstained=True)
    low = res("answer_relevance", "irrelevant", 0.1)
    v = decide(IT, [abst, low, ctx(False)], TH, corpus=CorpusAnswer(None, 50))
    assert v.outcome == "pass" and "none of the 50 chunks seen" in v.evidence
    v = decide(IT, [abst, low, ctx(False)], TH, corpus=CorpusAnswer(HIT, 50))
    assert (v.outcome, v.root_cause) == ("fail", "retrieval") and "kb-42" in v.evidence


def test_an_unfaithful_answer_that_holds_in_a_missed_chunk_is_a_retrieval_failure() -> None:
    # the prompt held a relevant chunk, but what the answer says is in a chunk the retriever
    # missed (one that answers the question better): the answer came from knowledge the prompt
    # lacked, so the retriever is to blame
    made_up = [res("faithfulness", "unfaithful", 0.0), res("answer_relevance", "relevant", 0.8)]
    source = CorpusHit("kb-42", 0.81, 3, "Refunds take 14 days.", holds_answer=True)
    v = decide(IT, [*made_up, ctx(True)], TH, corpus=CorpusAnswer(source, 120))
    assert (v.outcome, v.root_cause, v.missed_chunk) == ("fail", "retrieval", "kb-42")
    assert v.missed_holds_answer and "holds what the answer says" in v.evidence
    # a missed chunk that only answers the question leaves an unfaithful answer to generation
    v = decide(IT, [*made_up, ctx(True)], TH, corpus=CorpusAnswer(HIT, 120))
    assert v.root_cause == "generation" and not v.missed_holds_answer
    # found as an unfaithful answer's source, it says nothing once the answer is faithful
    off = [res("faithfulness", "faithful", 0.9), res("answer_relevance", "irrelevant", 0.1)]
    v = decide(IT, [*off, ctx(True)], TH, corpus=CorpusAnswer(source, 120))
    assert (v.root_cause, v.missed_chunk) == ("generation", None)
