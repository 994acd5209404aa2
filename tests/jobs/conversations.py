"""Conversations as a chat app sends them: one trace per turn, the LLM span holding the whole chat.

Each turn goes through the real OTel SDK exporter (OTLP/HTTP) with ``instrument``: a CHAIN root
carrying ``session.id``, an optional retriever span for the app's standalone rewrite (what a
history-aware retriever or a condense-question engine records), the retriever span that fed
the answer, and an LLM span whose messages are the system prompt with the passages, the earlier
user and assistant turns, then the new user turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragsieve.collector.instrument import instrument, llm_span, rag_span, retriever_span


@dataclass(frozen=True)
class ChatTurn:
    """One turn: what the person typed, the passages, the reply, and the app's rewrite if any."""

    question: str
    docs: Sequence[str]
    answer: str
    rewrite: str | None = None  # the standalone question the app retrieved with


def send_conversation(
    endpoint: str, session_id: str | None, turns: Sequence[ChatTurn], *, doc_prefix: str = "doc"
) -> list[str]:
    """Send the turns of one conversation in order; their trace ids."""
    provider = instrument(
        "chat-test-app", endpoint, set_global=False, flush_on_exit=False, schedule_delay_ms=50
    )
    ids: list[str] = []
    history: list[dict[str, str]] = []
    try:
        for n, t in enumerate(turns):
            with rag_span(t.question, session_id=session_id, tracer_provider=provider) as rag:
                ids.append(rag.trace_id)
                query = t.rewrite or t.question
                with retriever_span(query, tracer_provider=provider) as r:
                    r.record(
                        [
                            {"id": f"{doc_prefix}-{n}-{i}", "content": d, "score": 0.9 - 0.1 * i}
                            for i, d in enumerate(t.docs)
                        ]
                    )
                system = "Answer from these passages only.\n\n" + "\n\n".join(t.docs)
                msgs = [
                    {"role": "system", "content": system},
                    *history,
                    {"role": "user", "content": t.question},
                ]
                with llm_span("test-model", msgs, tracer_provider=provider) as llm:
                    llm.record(t.answer, prompt_tokens=10, completion_tokens=5)
                rag.record(t.answer)
            history += [
                {"role": "user", "content": t.question},
                {"role": "assistant", "content": t.answer},
            ]
        provider.force_flush()
    finally:
        provider.shutdown()
    return ids
