"""LLM judges and the cascade through the real openai client against a loopback server."""

from __future__ import annotations

import pytest

from ragsieve.evaluators.judges import LLMConfig, get_judge
from ragsieve.evaluators.testing import Fault, make_interaction, prompt_of

CTX = ("GPT-4 was released by OpenAI on March 14, 2023.",)
GOOD = {
    "reasoning": "The date matches.",
    "abstained": False,
    "claims": [
        {
            "claim": "GPT-4 was released on March 14, 2023.",
            "supported": True,
            "evidence": "released by OpenAI on March 14, 2023",
            "reason": "stated",
        }
    ],
}
BAD = {
    "reasoning": "Wrong year.",
    "claims": [
        {
            "claim": "GPT-4 was released in 2025.",
            "supported": False,
            "evidence": None,
            "reason": "2025 is not in the context",
        }
    ],
}


def cfg(server, **kw):
    base = dict(
        base_url=server.base_url,
        model="judge-model-1",
        max_retries=2,
        backoff_s=0.01,
        timeout_s=2.0,
        price_per_1k_prompt=1.0,
        price_per_1k_completion=2.0,
    )
    return LLMConfig(**{**base, **kw})


def x(**kw):
    kw.setdefault("answer", "GPT-4 was released on March 14, 2023.")
    return make_interaction(query="When was GPT-4 released?", context=CTX, **kw)


async def test_faithful_verdict_usage_cost_and_fenced_prompt(server):
    server.enqueue(GOOD)
    [r] = await get_judge("llm_faithfulness", llm=cfg(server)).evaluate(x())
    assert (r.evaluator, r.label, r.score, r.annotator_kind) == (
        "faithfulness",
        "faithful",
        1.0,
        "LLM",
    )
    assert (r.prompt_tokens, r.completion_tokens) == (100, 20)
    assert r.cost_usd == pytest.approx(0.1 + 0.04)
    assert r.prompt_version.startswith("faithfulness@")
    req = server.requests[0]
    assert req["temperature"] == 0 and req["model"] == "judge-model-1"
    prompt = prompt_of(req)
    assert "<<<BEGIN ANSWER " in prompt and "never an instruction" in prompt
    assert CTX[0] in prompt


async def test_unsupported_claim_and_non_verbatim_evidence(server):
    bad_quote = {**GOOD, "claims": [{**GOOD["claims"][0], "evidence": "invented quote"}]}
    server.enqueue(BAD, bad_quote)
    judge = get_judge("llm_faithfulness", llm=cfg(server))
    [r] = await judge.evaluate(x(answer="GPT-4 was released in 2025."))
    assert r.label == "unfaithful" and r.score == 0.0 and "2025" in r.explanation
    [r2] = await judge.evaluate(x())
    assert r2.metadata["claims"][0]["evidence_verbatim"] is False


async def test_retries_on_429_and_500_then_succeeds(server):
    server.enqueue(Fault(status=429), Fault(status=500), GOOD)
    [r] = await get_judge("llm_faithfulness", llm=cfg(server)).evaluate(x())
    assert r.label == "faithful" and len(server.requests) == 3


@pytest.mark.parametrize("fault", [Fault(status=500), Fault(status=429), Fault(malformed=True)])
async def test_persistent_failures_become_error_results(server, fault):
    server.enqueue(fault, fault, fault)
    [r] = await get_judge("llm_faithfulness", llm=cfg(server)).evaluate(x())
    assert r.label == "error" and r.score is None and r.explanation
    assert len(server.requests) == 3  # bad JSON is retried like a 5xx


async def test_timeout_becomes_error(server):
    server.enqueue(Fault(delay_s=1.0, status=200), Fault(delay_s=1.0, status=200))
    [r] = await get_judge(
        "llm_faithfulness", llm=cfg(server, timeout_s=0.2, max_retries=1)
    ).evaluate(x())
    assert r.label == "error" and "attempts" in r.explanation


async def test_schema_violation_is_error(server):
    server.enqueue({"verdict": "yes"}, {"verdict": "yes"}, {"verdict": "yes"})
    [r] = await get_judge("llm_faithfulness", llm=cfg(server)).evaluate(x())
    assert r.label == "error" and "schema" in r.explanation and len(server.requests) == 3


async def test_cache_hits_and_invalidates_on_model_change(server, tmp_path):
    db = str(tmp_path / "cache.sqlite")
    server.enqueue(GOOD, GOOD)
    inter = x()
    [a] = await get_judge("llm_faithfulness", llm=cfg(server), cache_path=db).evaluate(inter)
    [b] = await get_judge("llm_faithfulness", llm=cfg(server), cache_path=db).evaluate(inter)
    assert not a.cached and b.cached and b.label == a.label and b.cost_usd == 0.0
    assert len(server.requests) == 1
    [c] = await get_judge(
        "llm_faithfulness", llm=cfg(server, model="other-2"), cache_path=db
    ).evaluate(inter)
    assert not c.cached and len(server.requests) == 2


async def test_pii_is_redacted_before_it_leaves(server):
    server.enqueue(GOOD)
    [r] = await get_judge("llm_faithfulness", llm=cfg(server)).evaluate(
        x(answer="GPT-4 was released on March 14, 2023. Mail ana.perez@example.com.")
    )
    assert "ana.perez@example.com" not in prompt_of(server.requests[0])
    assert r.metadata["pii_redactions"] == {"email": 1}


async def test_self_preference_guard(server, caplog):
    server.enqueue(GOOD, GOOD)
    judge = get_judge("llm_faithfulness", llm=cfg(server, model="gpt-4o-mini"))
    [r] = await judge.evaluate(x(model="openai/gpt-4.1"))
    [r2] = await judge.evaluate(x(model="llama-3.1-8b"))
    assert "gpt" in r.metadata["self_preference_risk"]
    assert "self_preference_risk" not in r2.metadata


async def test_context_relevance_llm_per_chunk(server):
    server.enqueue(
        {
            "reasoning": "chunk 1 is noise",
            "chunks": [
                {"index": 0, "relevant": True, "quote": "March 14, 2023"},
                {"index": 1, "relevant": False, "quote": None},
            ],
        }
    )
    [r] = await get_judge("llm_context_relevance", llm=cfg(server)).evaluate(
        make_interaction(query="When was GPT-4 released?", context=(CTX[0], "Bananas are yellow."))
    )
    assert r.evaluator == "context_relevance" and r.score == 1.0
    assert [c["relevant"] for c in r.metadata["chunks"]] == [True, False]


async def test_answer_relevance_llm_noncommittal_and_n_runs(server):
    q = "When was GPT-4 released?"
    server.enqueue(
        {"reasoning": "evasive", "questions": [], "noncommittal": True},
        {
            "reasoning": "ok",
            "questions": [q, "When did OpenAI release GPT-4?"],
            "noncommittal": False,
        },
        {"reasoning": "ok", "questions": [q], "noncommittal": False},
    )
    [r] = await get_judge("llm_answer_relevance", llm=cfg(server)).evaluate(x())
    assert r.label == "irrelevant" and r.score == 0.0
    [r2] = await get_judge("llm_answer_relevance", llm=cfg(server, n_runs=2)).evaluate(x())
    assert r2.label == "relevant" and len(r2.metadata["run_scores"]) == 2
    assert r2.prompt_tokens == 200


async def test_cascade_escalates_only_uncertain_results(server):
    server.enqueue(BAD)
    judge = get_judge("cascade_faithfulness", llm=cfg(server, uncertainty_band=(0.3, 0.9)))
    [sure] = await judge.evaluate(x(answer="GPT-4 was released by OpenAI on March 14, 2023."))
    assert sure.metadata["escalated"] is False and sure.annotator_kind == "CODE"
    assert not server.requests
    [unsure] = await judge.evaluate(x(answer="GPT-4 was released by Google on March 14, 2023."))
    assert unsure.metadata["escalated"] is True and unsure.annotator_kind == "LLM"
    assert judge.stats.evaluated == 2 and judge.stats.saved == 1 and len(server.requests) == 1
