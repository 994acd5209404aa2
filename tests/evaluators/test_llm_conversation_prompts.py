"""LLM relevance judges see the conversation (issue 27): the last turns and the judged question,
sent through the real openai client to the package's loopback OpenAI-compatible server."""

from __future__ import annotations

from ragsieve.evaluators.judges import LLMConfig, get_judge
from ragsieve.evaluators.records import Message
from ragsieve.evaluators.testing import make_interaction, prompt_of

HISTORY = (
    Message(role="user", content="How much does it cost to renew a passport at the Madrid office?"),
    Message(role="assistant", content="Renewing a passport in Madrid costs 30 euros."),
)
HOURS = "On Saturdays the Madrid passport office opens from 9:00 to 13:00."
ANSWER = "On Saturdays it opens from 9:00 to 13:00."


def cfg(server) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="judge-model-1", max_retries=0)


def follow_up(**kw):
    return make_interaction(
        query="And on Saturdays?", context=(HOURS,), answer=ANSWER, chat_history=HISTORY, **kw
    )


def _sections(prompt: str) -> dict[str, str]:
    """Fenced blocks of a prompt by name: ``<<<BEGIN NAME fence>>> ... <<<END NAME fence>>>``."""
    out: dict[str, str] = {}
    for part in prompt.split("<<<BEGIN ")[1:]:
        head, _, rest = part.partition(">>>\n")
        name = head.rsplit(" ", 1)[0]
        out[name] = rest.split("\n<<<END ", 1)[0]
    return out


async def test_context_relevance_prompt_carries_the_last_turns_and_judged_question(server):
    server.enqueue(
        {"reasoning": "r", "chunks": [{"index": 0, "relevant": True, "quote": "9:00 to 13:00"}]}
    )
    [r] = await get_judge("llm_context_relevance", llm=cfg(server)).evaluate(follow_up())
    blocks = _sections(prompt_of(server.requests[-1]))
    assert blocks["QUESTION"] == "And on Saturdays?"
    assert blocks["CONVERSATION"].splitlines() == [
        "user: How much does it cost to renew a passport at the Madrid office?",
        "assistant: Renewing a passport in Madrid costs 30 euros.",
    ]
    assert blocks["STANDALONE QUESTION"].startswith("And on Saturdays? (")
    assert "passport" in blocks["STANDALONE QUESTION"]
    assert blocks["CHUNK 0"] == HOURS
    assert r.label == "relevant"
    assert r.metadata["question_source"] == "resolved"
    assert r.metadata["judged_question"] == blocks["STANDALONE QUESTION"]


async def test_answer_relevance_prompt_carries_the_conversation_and_scores_the_meaning(server):
    regenerated = {
        "reasoning": "r",
        "questions": ["When is the Madrid passport office open on Saturdays?"] * 3,
        "noncommittal": False,
    }
    judge = get_judge("llm_answer_relevance", llm=cfg(server))
    server.enqueue(regenerated, regenerated)
    [followed] = await judge.evaluate(follow_up())
    blocks = _sections(prompt_of(server.requests[-1]))
    assert blocks["CONVERSATION"].startswith("user: How much does it cost")
    assert blocks["QUESTION"] == "And on Saturdays?"
    assert "passport" in blocks["STANDALONE QUESTION"]
    # the same turn with no conversation: only the bare words to compare with
    [alone] = await judge.evaluate(
        make_interaction(query="And on Saturdays?", context=(HOURS,), answer=ANSWER)
    )
    first = _sections(prompt_of(server.requests[-1]))
    assert first["CONVERSATION"] == "(none: this is the conversation's first turn)"
    assert first["STANDALONE QUESTION"] == "And on Saturdays?"
    assert followed.score > alone.score
    assert followed.metadata["judged_question"] == blocks["STANDALONE QUESTION"]


async def test_conversation_text_cannot_fill_a_placeholder(server):
    server.enqueue({"reasoning": "r", "chunks": [{"index": 0, "relevant": False, "quote": None}]})
    history = (Message(role="user", content="Print {judged_question} and {chunks} please"),)
    await get_judge("llm_context_relevance", llm=cfg(server)).evaluate(
        make_interaction(query="and then?", context=(HOURS,), chat_history=history)
    )
    blocks = _sections(prompt_of(server.requests[-1]))
    assert blocks["CONVERSATION"] == "user: Print {judged_question} and {chunks} please"
