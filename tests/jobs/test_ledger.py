"""The root-cause decision weighs every piece of evidence, and says ``undetermined`` when they
do not decide; the pieces come from a real observed corpus; reviewers' labels move the weights."""

from __future__ import annotations

import pytest

from ragsieve.collector.store import open_store
from ragsieve.evaluators.records import EvalResult
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.golden.review.suggest import asks_root_cause, evidence_chunks
from ragsieve.jobs.verdicts.corpus import ObservedCorpus
from ragsieve.jobs.verdicts.flagging import decide
from ragsieve.jobs.verdicts.gather import answer_source, dropped
from ragsieve.jobs.verdicts.ledger import (
    DEFAULT_WEIGHTS,
    UNDETERMINED,
    Piece,
    combine,
    fit_weights,
)
from ragsieve.jobs.verdicts.rootcause import Signals, assign

Q = "What is the monthly price of the Starter plan?"
STARTER_LIMIT = "The Starter plan allows 120 requests per minute."
PRO_LIMIT = "The Pro plan allows 600 requests per minute."
STARTER_PRICE = "The Starter plan costs $49 per month, billed monthly."
PRO_PRICE = "The Pro plan costs $199 per month, billed monthly."
GEN = Piece("rule", "generation", "plans#starter reached the prompt; the answer is unfaithful")
SOURCE = Piece("answer_source", "retrieval", "the observed chunk prices#starter holds 49")
RIVAL = Piece("rival", "retrieval", "the observed chunk prices#starter answers as well")
STATES_SOURCE = {**DEFAULT_WEIGHTS, "answer_source": 1.5}  # where the answer sits decides


def _trace(query: str, answer: str, *chunks: tuple[str, str, bool]):
    it = make_interaction(query=query, context=[c for _, c, _ in chunks], answer=answer)
    docs = tuple(
        d.model_copy(update={"id": cid, "in_prompt": shown})
        for d, (cid, _, shown) in zip(it.documents, chunks, strict=True)
    )
    return it.model_copy(update={"documents": docs})


@pytest.fixture
def corpus(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    corpus = ObservedCorpus(store)
    seen = _trace(
        "How much do the plans cost?",
        "x",
        ("prices#starter", STARTER_PRICE, True),
        ("prices#pro", PRO_PRICE, True),
    )
    corpus.update([seen])
    yield corpus
    store.close()


def test_the_rule_alone_stands_as_it_was() -> None:
    got = combine([GEN])
    assert (got.label, got.evidence, got.competing) == ("generation", GEN.line, ())


def test_evidence_that_does_not_decide_is_undetermined_with_both_lines() -> None:
    got = combine([GEN, RIVAL])
    assert got.label == UNDETERMINED
    assert got.competing == (f"generation: {GEN.line}", f"retrieval: {RIVAL.line}")
    assert got.evidence == "; ".join(got.competing)


def test_where_the_answer_sits_decides_only_where_the_weights_let_it() -> None:
    got = combine([GEN, SOURCE], STATES_SOURCE)
    assert got.label == "retrieval" and "prices#starter" in got.evidence
    # ... unless the weights say it does not decide alone (the shipped weight, chosen leave one
    # source out: the "could be either, here is why", with both lines)
    alone = combine([GEN, SOURCE])
    assert alone.label == UNDETERMINED
    assert [c.split(":")[0] for c in alone.competing] == ["generation", "retrieval"]


def test_assign_weighs_the_pieces_with_the_rule() -> None:
    s = Signals(query=Q, context_relevant=True, relevant_chunks=("plans#starter",), faithful=False)
    assert assign(s).label == "generation" and assign(s).pieces[0].name == "rule"
    both = assign(Signals(**{**_fields(s), "pieces": (RIVAL,)}))
    assert both.label == UNDETERMINED and len(both.competing) == 2


def _fields(s: Signals) -> dict:
    return {k: getattr(s, k) for k in s.__dataclass_fields__}


def test_the_answers_value_found_only_in_a_missed_chunk_is_named(corpus) -> None:
    it = _trace(
        Q,
        "The Starter plan is $49 per month.",
        ("plans#starter", STARTER_LIMIT, True),
        ("plans#pro", PRO_LIMIT, True),
    )
    (piece,) = answer_source(it, Q, corpus)
    assert (piece.name, piece.cause) == ("answer_source", "retrieval")
    assert "prices#starter" in piece.line and "49" in piece.line
    # a value that sits nowhere names no source
    made_up = it.model_copy(update={"answer": "The Starter plan is $31 per month."})
    assert answer_source(made_up, Q, corpus) == ()


def test_an_answer_partly_in_the_prompt_is_the_models(corpus) -> None:
    # the first sentence is the prompt's, the second was added from elsewhere: an added claim
    it = _trace(
        Q,
        "The Starter plan costs $49 per month, billed monthly. The Pro plan allows 600 requests"
        " per minute.",
        ("prices#starter", STARTER_PRICE, True),
    )
    (piece,) = answer_source(it, Q, corpus)
    assert (piece.name, piece.cause) == ("answer_in_prompt", "generation")
    assert "1 of 2 sentences" in piece.line


def test_a_chunk_the_prompt_dropped_that_answers_is_retrieval() -> None:
    it = _trace(
        Q,
        "The Starter plan is $29 per month.",
        ("plans#starter", STARTER_LIMIT, True),
        ("prices#starter", STARTER_PRICE, False),
    )
    (piece,) = dropped(it, Q, threshold=0.6, context_best=0.3)
    assert piece.cause == "retrieval" and "prices#starter was retrieved (rank 2" in piece.line
    # a dropped chunk that answers no better than the prompt is not evidence
    assert dropped(it, Q, threshold=0.6, context_best=0.99) == ()


def _results(it, ctx_score: float) -> list[EvalResult]:
    base = {"trace_id": it.trace_id, "span_id": it.span_id, "judge_version": "v1"}
    chunk = {"id": "plans#starter", "score": ctx_score, "relevant": ctx_score >= 0.6}
    return [
        EvalResult(evaluator="faithfulness", label="unfaithful", score=0.1, **base),
        EvalResult(evaluator="answer_relevance", label="relevant", score=0.9, **base),
        EvalResult(
            evaluator="context_relevance",
            label="relevant",
            score=ctx_score,
            metadata={"chunks": [chunk]},
            **base,
        ),
    ]


def test_the_verdict_carries_the_competing_lines_and_pre_fill_waits_for_the_reviewer() -> None:
    it = _trace(Q, "The Starter plan is $49 per month.", ("plans#starter", STARTER_LIMIT, True))
    thresholds = {"faithfulness": 0.65, "answer_relevance": 0.5, "context_relevance": 0.6}
    v = decide(it, _results(it, 0.65), thresholds, pieces=(RIVAL,))
    assert (v.outcome, v.root_cause) == ("fail", UNDETERMINED)
    assert [c.split(":")[0] for c in v.competing] == ["generation", "retrieval"]
    body = {"root_causes": {UNDETERMINED: 1}, "evidence": v.evidence, "chunks": [
        {"id": "plans#starter"}]}  # fmt: skip
    assert evidence_chunks(body) == ({}, "")  # the rate-limit chunk is not offered as relevant
    assert asks_root_cause(UNDETERMINED, body)
    assert not asks_root_cause(UNDETERMINED, {"review": {"root_cause": "retrieval"}})
    # decided from where the answer sits: the observed chunk is offered, not the prompt's
    v = decide(it, _results(it, 0.65), thresholds, pieces=(SOURCE,), weights=STATES_SOURCE)
    assert v.root_cause == "retrieval"
    body = {"root_causes": {"retrieval": 1}, "evidence": v.evidence, "chunks": [
        {"id": "plans#starter"}]}  # fmt: skip
    assert evidence_chunks(body)[0] == {"prices#starter": 1}


def test_reviewed_root_causes_move_the_weights() -> None:
    # a deployment whose reviewers call every "rule says generation, a rival chunk answers as
    # well" failure a retrieval failure: the fit weighs the rival enough to state it
    labelled = [([GEN, RIVAL], "retrieval")] * 6 + [([GEN], "generation")] * 6
    before = [combine(p).label for p, _ in labelled[:6]]
    assert set(before) == {UNDETERMINED}
    w = fit_weights(labelled)
    assert w["rival"] > DEFAULT_WEIGHTS["rival"]
    assert {combine(p, w).label for p, _ in labelled[:6]} == {"retrieval"}
    assert {combine(p, w).label for p, _ in labelled[6:]} == {"generation"}
    # labels it could not change leave the defaults as they are
    assert fit_weights([([GEN], "generation")]) == dict(DEFAULT_WEIGHTS)


def test_a_refusals_missed_page_counts_only_when_it_holds_what_the_prompt_lacks() -> None:
    from ragsieve.jobs.verdicts.branches import missed_attribute
    from ragsieve.jobs.verdicts.corpus import CorpusHit

    q = "What is the monthly price of the Starter plan?"
    limits = [
        "The Starter plan allows 120 requests per minute.",
        "The Pro plan allows 600 requests per minute.",
    ]
    it = make_interaction(query=q, context=limits, answer="I don't know.")
    price = "The Starter plan costs $49 per month, billed monthly."
    (piece,) = missed_attribute(q, it, CorpusHit("prices#starter", 0.94, 3, price))
    assert (piece.name, piece.cause) == ("missed_attribute", "retrieval")
    assert "prices#starter" in piece.line and "'monthly'" in piece.line
    # a page that says what the prompt says (pages overlap) does not blame the retriever
    same = "Starter plan: 120 requests per minute, billed yearly."
    assert missed_attribute(q, it, CorpusHit("plans#copy", 0.9, 2, same)) == ()
    assert missed_attribute(q, it, None) == ()
    # a page on another subject that words the asked attribute like the question keeps none of
    # what the prompt holds of it (the Starter plan): it is not the page the retriever missed
    news = "The monthly newsletter lists each price change."
    assert missed_attribute(q, it, CorpusHit("news#monthly", 0.9, 2, news)) == ()


def test_a_follow_ups_carried_words_are_not_what_it_asks() -> None:
    # "Which restrictions apply?" after a turn about the conditional license: the carried words
    # name the earlier subject, which the prompt's chunk words otherwise ("junior license"); the
    # turn asks for the restrictions, and the prompt holds them
    from ragsieve.jobs.verdicts.branches import missed_attribute
    from ragsieve.jobs.verdicts.corpus import CorpusHit

    typed = "Which restrictions apply?"
    resolved = f"{typed} (conditional license)"
    junior = "Restrictions apply to the junior license: no driving between 9 pm and 5 am."
    it = make_interaction(query=typed, context=[junior], answer="I don't know.")
    page = "Restrictions apply to the conditional license: no driving between 9 pm and 5 am."
    hit = CorpusHit("dmv#conditional", 0.9, 2, page)
    assert missed_attribute(resolved, it, hit)  # read with the carried words, it would blame
    assert missed_attribute(resolved, it, hit, typed) == ()


def _ctx(score: float, cosine: float) -> EvalResult:
    return EvalResult(
        trace_id="t",
        span_id="s",
        evaluator="context_relevance",
        label="irrelevant",
        score=score,
        metadata={"chunks": [{"id": "plans#starter", "score": score, "cosine": cosine}]},
    )


def test_an_off_question_answer_beside_a_chunk_that_nearly_answers_is_the_models() -> None:
    # the rule says nothing answers (no chunk reached the context threshold); a chunk within the
    # near margin, close in meaning, reached the prompt and the answer is about something else
    from ragsieve.jobs.verdicts.branches import near_context
    from ragsieve.jobs.verdicts.flagging import Verdict

    off = Verdict(
        "fail",
        ("answer_relevance", "context_relevance", "faithfulness"),
        "no_answer_expected",
    )
    (piece,) = near_context([_ctx(0.52, 0.45)], off, 0.6)
    assert (piece.name, piece.cause) == ("near_context", "generation")
    assert "plans#starter" in piece.line
    rule = Piece("rule", "no_answer_expected", "none of 1 chunk(s) in the prompt was relevant")
    assert combine([rule, piece], {**DEFAULT_WEIGHTS, "near_context": 1.5}).label == "generation"
    assert combine([rule, piece]).label == UNDETERMINED  # the shipped weight: both lines
    # an answer made up for the question is what "nothing answers this" explains
    on = Verdict("fail", ("context_relevance", "faithfulness"), "no_answer_expected")
    assert near_context([_ctx(0.52, 0.45)], on, 0.6) == ()
    # a chunk far below the threshold, or far in meaning, does not nearly answer
    assert near_context([_ctx(0.3, 0.45)], off, 0.6) == ()
    assert near_context([_ctx(0.52, 0.1)], off, 0.6) == ()
    # another cause of the rule is left as it is
    gen = Verdict("fail", ("answer_relevance",), "generation")
    assert near_context([_ctx(0.52, 0.45)], gen, 0.6) == ()


def test_a_missed_page_explains_an_answer_only_when_it_answers_the_question(corpus) -> None:
    # "$49" sits only in the observed prices#starter: on the question, the model had it from a
    # page the prompt lacked (answer_source), and a page that answers as well is a rival. An
    # answer the answer-relevance judge failed as off the question came from neither page.
    from ragsieve.jobs.verdicts.corpus import CorpusHit
    from ragsieve.jobs.verdicts.flagging import Verdict
    from ragsieve.jobs.verdicts.gather import failure_pieces

    it = _trace(Q, "The Starter plan is $49 per month.", ("plans#starter", STARTER_LIMIT, True))
    rival = CorpusHit("prices#starter", 0.7, 1, STARTER_PRICE, best_seen=0.65)

    def names(*failed: str, abstained: bool = False) -> list[str]:
        verdict = Verdict("fail", failed, "generation", "", abstained, context_relevant=True)
        got = failure_pieces(it, [], verdict, corpus, {}, None, rival)
        return [p.name for p in got]

    assert names("faithfulness") == ["rival", "answer_source"]
    assert names("answer_relevance", "faithfulness") == []
    # a refusal fails answer relevance by saying nothing: the rival still argues it was there
    assert names("answer_relevance", "faithfulness", abstained=True) == ["rival"]


def test_a_refusal_blamed_on_a_chunk_that_only_nearly_answers_weighs_the_missed_one() -> None:
    from ragsieve.jobs.verdicts.branches import near_refusal
    from ragsieve.jobs.verdicts.corpus import CorpusHit

    hit = CorpusHit("prices#starter", 0.82, 3, STARTER_PRICE, best_seen=0.5)
    (piece,) = near_refusal(hit, best=0.52, threshold=0.6)
    assert (piece.name, piece.cause) == ("near_refusal", "retrieval")
    assert "0.52" in piece.line and "prices#starter" in piece.line
    # the rule's "nearly" and the missed chunk's "outright" are one judge read both ways: a tie
    rule = Piece("rule", "abstained_wrongly", "abstained although plans#starter was relevant")
    got = combine([rule, piece])
    assert got.label == UNDETERMINED
    assert got.competing[1].startswith("retrieval: no chunk of the prompt")
    # a prompt chunk over the threshold answered: the refusal is the model's, nothing to weigh
    assert near_refusal(hit, best=0.61, threshold=0.6) == ()
    # a missed chunk that does not answer outright (under the threshold) says nothing either
    assert near_refusal(CorpusHit("x", 0.58, 1, "w"), best=0.45, threshold=0.6) == ()
    assert near_refusal(None, best=0.52, threshold=0.6) == ()


def test_an_off_question_answer_the_prompt_holds_is_still_the_models(corpus) -> None:
    from ragsieve.jobs.verdicts.flagging import Verdict
    from ragsieve.jobs.verdicts.gather import failure_pieces

    it = _trace(Q, STARTER_LIMIT, ("plans#starter", STARTER_LIMIT, True))
    off = Verdict("fail", ("answer_relevance",), "generation", "", context_relevant=True)
    assert [p.name for p in failure_pieces(it, [], off, corpus, {}, None, None)] == [
        "answer_in_prompt"
    ]
