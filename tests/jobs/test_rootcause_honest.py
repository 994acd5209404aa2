"""Issue 43: a root cause that rests on one judgement, beside evidence the other way, is
``undetermined`` with both lines; an explanation names a chunk reaching the prompt once."""

from __future__ import annotations

import pytest

from ragsieve.collector.store import open_store
from ragsieve.evaluators.records import EvalResult, GoldenCase
from ragsieve.evaluators.testing import make_interaction
from ragsieve.evaluators.tools.embeddings import embed
from ragsieve.jobs.sampling.golden_index import GoldenIndex
from ragsieve.jobs.verdicts.corpus import ObservedCorpus
from ragsieve.jobs.verdicts.flagging import Verdict
from ragsieve.jobs.verdicts.gather import answer_source, failure_pieces, golden_chunks
from ragsieve.jobs.verdicts.ledger import DEFAULT_WEIGHTS, UNDETERMINED, Piece, combine

Q = "What is the rate limit of the Starter plan?"
STARTER_LIMIT = "The Starter plan allows 120 requests per minute for every API key."
STARTER_PRICE = "The Starter plan costs $49 per month, billed monthly."
NONE = Piece(
    "rule",
    "no_answer_expected",
    "none of 1 chunk(s) in the prompt was relevant; none of the 2 chunks seen in traffic answers"
    " this; the system made unsupported claims instead of abstaining",
)


def _trace(query: str, answer: str, *chunks: tuple[str, str]):
    it = make_interaction(query=query, context=[c for _, c in chunks], answer=answer)
    docs = tuple(
        d.model_copy(update={"id": cid}) for d, (cid, _) in zip(it.documents, chunks, strict=True)
    )
    return it.model_copy(update={"documents": docs})


@pytest.fixture
def corpus(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    corpus = ObservedCorpus(store)
    corpus.update([_trace("How much is Starter?", "x", ("prices#starter", STARTER_PRICE))])
    yield corpus
    store.close()


def test_a_chunk_reaching_the_prompt_is_said_once(corpus) -> None:
    # the rule's line says plans#starter reached the prompt; no other line says it again
    it = _trace(
        Q, "The Starter plan allows 120 requests per minute.", ("plans#starter", STARTER_LIMIT)
    )
    (piece,) = answer_source(it, Q, corpus)
    rule = Piece("rule", "generation", "plans#starter reached the prompt; the answer is unfaithful")
    got = combine([rule, piece])
    assert got.label == "generation" and "plans#starter" in piece.line
    assert got.evidence.count("reached the prompt") == 1


def test_no_answer_expected_beside_a_prompt_chunk_holding_most_of_the_answer_is_undetermined(
    corpus,
) -> None:
    # the value changed, the rest of the answer is the prompt's chunk about the Starter plan
    it = _trace(
        Q,
        "The Starter plan allows 90 requests per minute for every API key.",
        ("plans#starter", STARTER_LIMIT),
    )
    pieces = answer_source(it, Q, corpus, rule_cause="no_answer_expected")
    assert [p.name for p in pieces] == ["answer_partly_in_prompt"]
    assert "plans#starter" in pieces[0].line
    got = combine([NONE, *pieces])
    assert got.label == UNDETERMINED
    assert {c.split(":")[0] for c in got.competing} == {"generation", "no_answer_expected"}
    # the piece answers the rule's "no chunk answers" only: beside a rule that blames the
    # answer (or the retriever, on other evidence) it is not weighed
    assert answer_source(it, Q, corpus, rule_cause="generation") == ()


def test_an_answer_made_up_beside_an_unrelated_prompt_is_still_no_answer_expected(corpus) -> None:
    it = _trace(Q, "The Starter plan allows 90 requests per minute.", ("faq#2fa", "Turn on 2FA."))
    pieces = answer_source(it, Q, corpus, rule_cause="no_answer_expected")
    assert combine([NONE, *pieces]).label == "no_answer_expected"


def test_the_golden_sets_chunk_in_the_prompt_is_not_said_to_reach_it_twice() -> None:
    it = _trace(
        Q, "The Starter plan allows 90 requests per minute.", ("plans#starter", STARTER_LIMIT)
    )
    case = GoldenCase(id="g1", query=Q, relevant_chunks={"plans#starter": 1})
    golden = GoldenIndex([case], embed([Q]), embed)
    (piece,) = golden_chunks(golden, it, "generation")
    rule = Piece("rule", "generation", "plans#starter reached the prompt; the answer is unfaithful")
    got = combine([rule, piece])
    assert got.label == "generation" and "golden set" in got.evidence
    assert got.evidence.count("reached the prompt") == 1


def test_a_chunk_that_nearly_answers_is_not_counted_again_as_partly_holding_the_answer(
    corpus,
) -> None:
    """``near_context`` and ``answer_partly_in_prompt`` read one fact (the model had a chunk
    about the question and did not keep to it); beside a dropped chunk the two must not outweigh
    it and turn a tie into a stated cause."""
    it = _trace(
        Q,
        "The Starter plan allows 90 requests per minute for every API key.",
        ("plans#starter", STARTER_LIMIT),
    )
    near = EvalResult(
        trace_id=it.trace_id,
        span_id=it.span_id,
        evaluator="context_relevance",
        label="irrelevant",
        score=0.5,
        metadata={"chunks": [{"id": "plans#starter", "score": 0.5, "cosine": 0.6}]},
    )
    failed = ("answer_relevance", "context_relevance", "faithfulness")
    verdict = Verdict("fail", failed, "no_answer_expected", "", False, False)
    got = failure_pieces(it, [near], verdict, corpus, {"context_relevance": 0.6}, None, None)
    names = [p.name for p in got]
    assert "near_context" in names and "answer_partly_in_prompt" not in names
    dropped = Piece("dropped", "retrieval", "plans#burst was retrieved, not in the prompt")
    weighs = {**DEFAULT_WEIGHTS, "near_context": 1.5}  # as much as the dropped chunk
    assert combine([NONE, *got, dropped], weighs).label == UNDETERMINED
