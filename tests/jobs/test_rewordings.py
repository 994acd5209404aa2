"""One failure asked in other words gets one root cause, decided on all its readings."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.records import EvalResult, Message
from ragsieve.evaluators.testing import make_interaction, make_result
from ragsieve.jobs.verdicts.corpus import CorpusHit
from ragsieve.jobs.verdicts.flagging import CorpusAnswer, Verdict, decide
from ragsieve.jobs.verdicts.rewordings import agree, same_failure_groups, same_wording

TH = {"faithfulness": 0.65, "answer_relevance": 0.5, "context_relevance": 0.6}
CHUNKS = ("The DMV can issue a conditional license to a driver whose license was revoked.",)
ANSWER = "A conditional license lets you drive to work, and it costs nothing."


def _trace(question: str, context_score: float, answer: str = ANSWER) -> tuple:
    it = make_interaction(question, CHUNKS, answer)
    chunk = {"id": "doc-0", "rank": 0, "relevant": context_score >= 0.6, "score": context_score}
    results = [
        make_result(it, "faithfulness", "unfaithful", 0.2),
        make_result(it, "answer_relevance", "relevant", 0.8),
        make_result(
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
    typed = _trace("Do you know how does the conditiional lisense work?", 0.4)
    before, after, changed = _agreed([clean, typed])
    assert [v.root_cause for v in before] == ["generation", "no_answer_expected"]
    assert [v.root_cause for v in after] == ["generation", "generation"] and changed == 1
    assert clean[0].trace_id in after[1].evidence  # says whose reading decided it
    assert after[0] is before[0]  # the copy whose cause stands is untouched
    assert after[1].failed_metrics == before[1].failed_metrics  # what its own judges found


def test_other_answers_or_other_questions_are_other_failures() -> None:
    clean = _trace("How does the conditional license work?", 0.8)
    other_answer = _trace("How does the conditional license work?", 0.4, answer="It is free.")
    other_question = _trace("Where do I surrender my plates?", 0.4)
    for pair in ([clean, other_answer], [clean, other_question]):
        before, after, changed = _agreed(pair)
        assert changed == 0 and after == before


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I protect myself from fraud?", "Do you know how do I protect myeslf from faud?"),
        ("¿Qué países forman los Países Bajos?", "Dime, ¿qué países froman los Paaíses Bajos?"),
        (
            "How can I keep personalized plates?",
            "I'd like to know, how can I keep personalized pates?",
        ),
        ("What benefits do the plans give?", "What benefits do the pans give?"),
        (
            "Oh, I see. What benefits exist under the first program?",
            "Do you know oh, I see. What benefits exist unedr the first program?",
        ),
        (
            "When do I need to present my certificate to someone?",
            "Can you tell me: when do I need to preseent my certificate to soomeone?",
        ),
    ],
)
def test_same_wording_reads_typos_and_lead_ins(a: str, b: str) -> None:
    assert same_wording(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I renew my permit?", "How do I cancel my permit?"),  # cosine 0.84
        ("Is the dental plan free?", "Is the mental plan free?"),  # one letter, two words
        ("Taxes for 2023?", "Taxes for 2024?"),
        ("What about Saturdays?", "What about Sundays?"),
        ("Do the plans cover plates?", "Do the pans cover pates?"),  # two words made other words
        ("Can I pay by card?", "Can I pay by car?"),  # a word under four letters
        ("What does tier cost?", "What does tier2 cost?"),  # not two words
        ("Does the iphone work?", "Does the iphone8 work?"),
    ],
)
def test_other_questions_are_not_the_same_wording(a: str, b: str) -> None:
    assert not same_wording(a, b)


def _refusal(question: str, score: float, cosine: float) -> tuple:
    it = make_interaction(question, CHUNKS, "I don't have that information.")
    chunk = {"id": "doc-0", "rank": 0, "relevant": False, "score": score, "cosine": cosine}
    results = [
        make_result(it, "faithfulness", "abstained", None, abstained=True),
        make_result(it, "answer_relevance", "irrelevant", 0.1),
        make_result(it, "context_relevance", "irrelevant", score, chunks=[chunk]),
    ]
    return it, results


def test_one_refusal_of_one_question_asked_with_a_typo_gets_one_root_cause() -> None:
    # the clean wording's chunk nearly answers (a refusal that withholds it is abstained_wrongly);
    # the typo hides it, and the corpus search finds the chunk elsewhere: retrieval, until the
    # copies are read together
    traces = [
        _refusal("How does the conditional license work?", 0.5, 0.45),
        _refusal("Do you know how does the conditiional lisense work?", 0.3, 0.1),
    ]
    its = [it for it, _ in traces]
    results = [rs for _, rs in traces]
    found = [CorpusAnswer(None, 10), CorpusAnswer(CorpusHit("kb-7", 0.8, 2, "It is free."), 10)]
    before = [decide(it, rs, TH, corpus=c) for (it, rs), c in zip(traces, found, strict=True)]
    assert [v.root_cause for v in before] == ["abstained_wrongly", "retrieval"]

    def redecide(i: int, pooled: list[EvalResult], hit: CorpusAnswer | None) -> Verdict:
        return decide(its[i], pooled, TH, corpus=hit)

    after = list(before)
    assert agree(its, after, results, found, redecide) == 1
    assert [v.root_cause for v in after] == ["abstained_wrongly", "abstained_wrongly"]
    assert after[1].abstained and its[0].trace_id in after[1].evidence


def test_a_refusal_of_other_questions_and_conversation_turns_are_never_one_failure() -> None:
    refusal = "I don't have that information."
    its = [
        make_interaction(q, CHUNKS, refusal) for q in ("How do I renew it?", "How do I cancel it?")
    ]
    fails = [Verdict("fail", ("faithfulness",), c, abstained=True) for c in ("a", "b")]
    assert same_failure_groups(its, fails) == []
    history = (Message(role="user", content="Is the office open on Saturdays?"),)
    turns = [
        make_interaction(q, CHUNKS, ANSWER, chat_history=history)
        for q in ("And on Sundays?", "And on Sundys?")
    ]
    fails = [Verdict("fail", ("faithfulness",), c) for c in ("retrieval", "generation")]
    assert same_failure_groups(turns, fails) == []


def test_grouping_does_not_depend_on_who_comes_first() -> None:
    qs = (
        "Where do I surrender my plates?",
        "How do I renew my permit?",
        "Do you know how do I renw my permit?",
    )
    its = [make_interaction(q, CHUNKS, ANSWER) for q in qs]
    fails = [
        Verdict("fail", ("faithfulness",), c) for c in ("generation", "retrieval", "generation")
    ]
    assert same_failure_groups(its, fails) == [[1, 2]]
