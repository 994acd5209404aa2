"""A close call argues for the other branch's cause only as that branch would end once its own
evidence is weighed: a reply that belongs to another conversation is the model's on either
branch, so a context a hair over its threshold leaves the rule's ``generation`` standing."""

from __future__ import annotations

from ragsieve.collector.store import open_store
from ragsieve.evaluators.judges import get_judge
from ragsieve.evaluators.records import EvalResult, Message
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.results.judgements import Judgement, save_judgements
from ragsieve.jobs.sampling.sampling import Pick
from ragsieve.jobs.verdicts.verdicts import decide_all

HISTORY = (
    Message(role="user", content="How much does it cost to renew a passport at the Madrid office?"),
    Message(role="assistant", content="Renewing a passport in Madrid costs 30 euros."),
)
HOURS = (
    "The Madrid passport office renews passports from Monday to Friday, 9:00 to 17:00. "
    "On Saturdays the passport office opens from 9:00 to 13:00."
)
THRESHOLDS = {"faithfulness": 0.65, "answer_relevance": 0.5, "context_relevance": 0.6}


async def _decided(tmp_path, answer: str, score: float):
    it = make_interaction(
        query="Can I also go there at the weekend?",
        context=[HOURS],
        answer=answer,
        chat_history=HISTORY,
    )
    [relevance] = await get_judge("answer_relevance").evaluate(it)
    base = {"trace_id": it.trace_id, "span_id": it.span_id, "judge_version": "v1"}
    cid = it.documents[0].id
    results = [
        relevance.model_copy(update={"judge_version": "v1"}),
        EvalResult(evaluator="faithfulness", label="unfaithful", score=0.1, **base),
        EvalResult(evaluator="context_relevance", label="relevant", score=score, **base,
                   metadata={"chunks": [{"id": cid, "score": score, "relevant": True}]}),
    ]  # fmt: skip
    tmp_path.mkdir(exist_ok=True)
    store = open_store(f"sqlite:///{tmp_path / 'bot.db'}")
    try:
        items = [Judgement(it.trace_id, r.evaluator, "v1", [r], True) for r in results]
        save_judgements(store, "run-1", items, 1.0)
        versions = {r.evaluator: "v1" for r in results}
        (got,) = decide_all(
            store, [Pick(it.trace_id, "all", 1.0)], {it.trace_id: it}, versions, THRESHOLDS, None
        )
    finally:
        store.close()
    return relevance, got.verdict


async def test_a_reply_from_another_conversation_a_hair_over_the_threshold_is_the_models(
    tmp_path,
) -> None:
    elsewhere = "Schools must deliver the textbooks by the seventh day of the term."
    relevance, v = await _decided(tmp_path, elsewhere, 0.61)
    assert relevance.label == "irrelevant" and relevance.metadata.get("leaves_conversation")
    assert (v.outcome, v.root_cause, v.competing) == ("fail", "generation", ())
    assert not [p for p in v.pieces if p.name.startswith("close_")]
    # the same hair over the threshold, a reply that stays on the conversation: read the other
    # way nothing answers it, the close call stands and the cause is the reviewer's to call
    relevance, v = await _decided(tmp_path / "b", "Yes, on Saturdays until 20:00.", 0.61)
    assert not relevance.metadata.get("leaves_conversation")
    assert v.root_cause == "undetermined"
    assert [c.split(":")[0] for c in v.competing] == ["generation", "no_answer_expected"]
