"""The demo app's OpenAI-compatible generator: real openai client and collector on loopback."""

from __future__ import annotations

import re
import time
from typing import Any

from ragsieve.collector.derive.settle import settle
from ragsieve.collector.store import Store
from ragsieve.evaluators.records import RagInteraction
from ragsieve.evaluators.testing import FakeOpenAIServer
from ragsieve.jobs.demo import load_kb, run_traffic
from ragsieve.jobs.demo.tallyfox.generate import SYSTEM_PROMPT

N_QUERIES = 12
USAGE = (321, 17)
_FIRST_CHUNK = re.compile(r"^\[1\] \(([^)]+)\) ", re.MULTILINE)


class ScriptedAnswers:
    """Answers each chat request with a numbered sentence naming the first context chunk."""

    def __init__(self) -> None:
        self.replies: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        match = _FIRST_CHUNK.search(user)
        cited = match.group(1) if match else "no context"
        reply = f"Scripted reply {len(self.replies) + 1} drawn from {cited}."
        self.replies.append(reply)
        return reply


def _interactions(store: Store, trace_ids: list[str], timeout_s: float = 20.0) -> dict[str, Any]:
    """Settle until every trace has its interaction row; return them by trace id."""
    deadline = time.monotonic() + timeout_s
    found: dict[str, RagInteraction] = {}
    while time.monotonic() < deadline:
        settle(store, quiet_s=0.2, max_wait_s=5)
        found = {i.trace_id: i for i in store.list_interactions() if i.trace_id in trace_ids}
        if len(found) == len(trace_ids):
            break
        time.sleep(0.1)
    return found


def test_llm_answers_reach_spans_and_the_prompt_carries_the_retrieved_context(
    start_collector: Any, tmp_path: Any
) -> None:
    col = start_collector(quiet_period_s=0.2, settle_interval_s=0.1)
    answers = ScriptedAnswers()
    with FakeOpenAIServer(default=answers, usage=USAGE) as llm:
        records = run_traffic(
            col.traces_url,
            N_QUERIES,
            seed=5,
            failure_share=0.3,
            llm_base_url=llm.base_url,
            log_path=tmp_path / "planted.jsonl",
        )
    assert len(records) == N_QUERIES
    # one chat completion per query, in traffic order, each holding that query's context
    assert len(llm.requests) == N_QUERIES == len(answers.replies)
    kb = load_kb()
    for rec, body in zip(records, llm.requests, strict=True):
        assert body["model"] == "gpt-4o-mini" and body["temperature"] == 0
        system, user = body["messages"]
        assert system == {"role": "system", "content": SYSTEM_PROMPT}
        assert user["role"] == "user"
        content = user["content"]
        assert content.endswith(f"Question: {rec.query}")
        assert rec.context_chunk_ids
        positions = []
        for rank, cid in enumerate(rec.context_chunk_ids, 1):
            line = f"[{rank}] ({cid}) {kb.chunk(cid).text}"
            assert line in content, f"context chunk {cid} missing from the prompt"
            positions.append(content.index(line))
        assert positions == sorted(positions)

    # clean traffic and retrieval misses keep the model's answer; other plants rewrite it
    kinds = {rec.kind for rec in records}
    assert None in kinds and len(kinds) > 1, kinds
    for rec, reply in zip(records, answers.replies, strict=True):
        if rec.kind in (None, "retrieval_miss"):
            assert rec.answer == reply
        else:
            assert rec.answer != reply, rec.kind

    # the collector assembled each trace into an interaction carrying the generated answer
    found = _interactions(col.store, [r.trace_id for r in records])
    assert set(found) == {r.trace_id for r in records}
    for rec, body in zip(records, llm.requests, strict=True):
        it = found[rec.trace_id]
        assert it.answer == rec.answer
        assert it.query == rec.query
        assert it.model == "gpt-4o-mini" and it.provider == "openai"
        assert (it.tokens.prompt, it.tokens.completion) == USAGE
        assert it.retrieved_ids == list(rec.context_chunk_ids)
        # the LLM span carries exactly the messages the endpoint received
        assert it.prompt.system == SYSTEM_PROMPT
        sent = [(m["role"], m["content"]) for m in body["messages"]]
        assert [(m.role, m.content) for m in it.prompt.messages] == sent
