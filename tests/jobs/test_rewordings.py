"""One failure asked in other words gets one root cause, decided on all its readings."""

from __future__ import annotations

from typing import Any

from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.verdicts.flagging import CorpusAnswer, Verdict, decide
from ragsieve.jobs.verdicts.rewordings import agree, same_failure_groups, same_wording

TH = {"faithfulness": 0.65, "answer_relevance": 0.5, "context_relevance": 0.6}
CHUNKS = ("The DMV can issue a conditional license to a driver whose license was revoked.",)
ANSWER = "A conditional license lets you drive to work, and it costs nothing."


def _res(it: RagInteraction, metric: str, label: str, score: float, **meta: Any) -> EvalResult:
    return EvalResult(
        trace_id=it.trace_id,
        span_id=it.span_id,
        evaluator=metric,
        label=label,
        score=score,
        metadata=meta,
    )


def _trace(question: str, context_score: float, answer: str = ANSWER) -> tuple:
    it = make_interaction(question, CHUNKS, answer)
    chunk = {"id": "doc-0", "rank": 0, "relevant": context_score >= 0.6, "score": context_score}
    results = [
        _res(it, "faithfulness", "unfaithful", 0.2),
        _res(it, "answer_relevance", "relevant", 0.8),
        _res(
            it,
            "context_relevance",
            "relevant" if context_score >= 0.6 else "irrelevant",
            context_score,
            chunks=[chunk],
        ),
    ]
    return it, results


def _agreed(traces: list[tuple]) -> tuple[list[Verdict], list[Verdict], int]:
    its = [it for it, _ in traces]
    results = [rs for _, rs in traces]
    before = [decide(it, rs, TH, corpus=CorpusAnswer(None, 10)) for it, rs in traces]
    after = list(before)

    def redecide(i: int, pooled: list[EvalResult], found: CorpusAnswer | None) -> Verdict:
        return decide(its[i], pooled, TH, corpus=found)

    changed = agree(its, after, results, [CorpusAnswer(None, 10)] * len(its), redecide)
    return before, after, changed


def test_a_typo_that_hid_the_answering_chunk_no_longer_splits_the_root_cause() -> None:
    clean = _trace("How does the conditional license work?", 0.8)
    typed = _trace("Do you know how does the conditiional lisence work?", 0.4)
    before, after, changed = _agreed([clean, typed])
    assert [v.root_cause for v in before] == ["generation", "no_answer_expected"]
    assert [v.root_cause for v in after] == ["generation", "generation"] and changed == 1
    assert clean[0].trace_id in after[1].evidence  # says whose reading decided it
    assert after[0] is before[0]  # the copy whose cause stands is untouched


def test_other_answers_or_other_questions_are_other_failures() -> None:
    clean = _trace("How does the conditional license work?", 0.8)
    other_answer = _trace("How does the conditional license work?", 0.4, answer="It is free.")
    other_question = _trace("Where do I surrender my plates?", 0.4)
    for pair in ([clean, other_answer], [clean, other_question]):
        before, after, changed = _agreed(pair)
        assert changed == 0 and after == before


def test_same_wording_reads_typos_and_lead_ins_not_other_questions() -> None:
    assert same_wording(
        "How do I protect myself from fraud?", "Do you know how do I protect myeslf from faud?"
    )
    assert not same_wording("How do I renew my permit?", "How do I cancel my permit?")
    its = [make_interaction(q, CHUNKS, ANSWER) for q in ("When is it open?", "Where is it?")]
    fails = [Verdict("fail", ("faithfulness",), c) for c in ("generation", "retrieval")]
    assert same_failure_groups(its, fails) == []
