"""Several retrieval steps in one trace (query rewriting, multi-hop, a tool that retrieves), sent
through the real OTel exporter: the chunks judged are the ones that reached the final prompt,
and each chunk says which step retrieved it."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from test_run_support import settings

from ragsieve.collector.instrument import (
    instrument,
    llm_span,
    rag_span,
    retriever_span,
)
from ragsieve.evaluators.records import RagInteraction
from ragsieve.jobs.run.run import run_once
from ragsieve.jobs.verdicts.steps import step_note

PARIS = "Paris is the capital of France. It has been the seat of government since 987."
LYON = "Lyon is known for its cuisine and sits where the Rhone meets the Saone."
SEINE = "The Seine flows through Paris and into the English Channel at Le Havre."
LOUVRE = "The Louvre in Paris is the most visited art museum in the world."


def _docs(prefix: str, texts: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {"id": f"{prefix}-{i}", "content": t, "score": 0.9 - 0.1 * i} for i, t in enumerate(texts)
    ]


def _wait(store: Any, trace_id: str) -> RagInteraction:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        rec = store.get_interaction(trace_id)
        if rec is not None:
            return rec  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"trace {trace_id} did not settle")


def _provider(url: str) -> Any:
    return instrument("steps-app", url, set_global=False, flush_on_exit=False, schedule_delay_ms=50)


REWRITE = "Since when has Paris been the seat of the French government?"
HISTORY = [
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Paris."},
]


def send_rewritten_follow_up(url: str, answer: str) -> str:
    """Retrieve with the raw follow-up, rewrite it with an LLM call, retrieve again, answer from
    the second step only; the trace id."""
    tp = _provider(url)
    with rag_span("and since when?", session_id="s-9", tracer_provider=tp) as rag:
        with retriever_span("and since when?", name="raw_search", tracer_provider=tp) as r1:
            r1.record(_docs("raw", [LYON]))
        msgs = [*HISTORY, {"role": "user", "content": "Rewrite as one question: and since when?"}]
        with llm_span("rewriter", msgs, name="condense", tracer_provider=tp) as cq:
            cq.record(REWRITE)
        with retriever_span(REWRITE, name="search", tracer_provider=tp) as r2:
            r2.record(_docs("kb", [PARIS, SEINE]))
        final = [
            {"role": "system", "content": "Answer from these passages.\n\n" + PARIS},
            *HISTORY,
            {"role": "user", "content": "and since when?"},
        ]
        with llm_span("answerer", final, name="answer", tracer_provider=tp) as llm:
            llm.record(answer)
        rag.record(answer)
    tp.shutdown()
    return rag.trace_id


def test_query_rewriting_judges_the_rewritten_steps_chunks(collector: Any) -> None:
    """The first step's chunks are kept but marked as not in the prompt; the context is the
    second step's chunk that reached the final prompt."""
    rewrite = REWRITE
    trace_id = send_rewritten_follow_up(collector.traces_url, "Since 987.")
    rec = _wait(collector.store, trace_id)

    assert rec.query == "and since when?" and rec.answer == "Since 987."
    assert rec.model == "answerer"  # the final answer's call, not the rewrite
    assert rewrite in rec.retrieval_queries
    assert [(m.role, m.content) for m in rec.chat_history] == [
        ("user", "What is the capital of France?"),
        ("assistant", "Paris."),
    ]
    # judged: only what reached the final prompt
    assert [d.id for d in rec.context] == ["kb-0"]
    by_id = {d.id: d for d in rec.documents}
    assert by_id["raw-0"].in_prompt is False and by_id["kb-1"].in_prompt is False
    # each chunk names its step: the span, the step's name and query, its position in the trace
    steps = {st.span_id: (i, st) for i, st in enumerate(rec.stages, start=1)}
    assert [st.name for st in rec.stages] == ["raw_search", "search"]
    step, stage = steps[by_id["kb-0"].span_id]
    assert (step, stage.query, by_id["kb-0"].retriever_name) == (2, rewrite, "search")
    assert steps[by_id["raw-0"].span_id][1].query == "and since when?"


def test_multi_hop_and_a_retrieving_tool_feed_one_answer(collector: Any) -> None:
    """Two hops whose chunks both reach the prompt, and a third step under a TOOL span whose
    chunk does not: the context is both hops' chunks, each tagged with its hop."""
    tp = _provider(collector.traces_url)
    q = "Which river flows through the city that has been France's seat of government since 987?"
    with rag_span(q, tracer_provider=tp) as rag:
        with retriever_span("seat of government since 987", name="hop1", tracer_provider=tp) as h1:
            h1.record(_docs("h1", [PARIS]))
        with retriever_span("river through Paris", name="hop2", tracer_provider=tp) as h2:
            h2.record(_docs("h2", [SEINE]))
        from opentelemetry import trace

        tracer = trace.get_tracer("steps", tracer_provider=tp)
        with tracer.start_as_current_span(
            "museum_lookup", attributes={"openinference.span.kind": "TOOL", "input.value": q}
        ):
            with retriever_span("museums in Paris", name="tool_search", tracer_provider=tp) as t:
                t.record(_docs("tool", [LOUVRE]))
        final = [
            {"role": "system", "content": f"Passages:\n{PARIS}\n\n{SEINE}"},
            {"role": "user", "content": q},
        ]
        with llm_span("answerer", final, tracer_provider=tp) as llm:
            llm.record("The Seine.")
        rag.record("The Seine.")
    tp.shutdown()
    rec = _wait(collector.store, rag.trace_id)

    assert sorted(d.id for d in rec.context) == ["h1-0", "h2-0"]
    names = {st.span_id: st.name for st in rec.stages}
    assert {d.id: names[str(d.span_id)] for d in rec.context} == {"h1-0": "hop1", "h2-0": "hop2"}
    tool = [d for d in rec.documents if d.id == "tool-0"]
    assert not tool or tool[0].in_prompt is False  # never judged as context
    assert step_note(rec) == (
        '; context from steps 1 "hop1" (query "seat of government since 987"),'
        ' 2 "hop2" (query "river through Paris") of 3'
    )


def test_the_failure_evidence_names_the_step_that_fed_the_answer(collector: Any) -> None:
    trace_id = send_rewritten_follow_up(
        collector.traces_url, "Paris has been the seat of government since 1850, after Marseille."
    )
    _wait(collector.store, trace_id)
    out = run_once(collector.store, settings(store=collector.store.url), take_all=True)
    (case,) = out.flagged
    assert case.interaction.trace_id == trace_id
    assert f'context from step 2 "search" (query "{REWRITE}") of 2' in case.evidence
    verdict = collector.store.query("SELECT body FROM samples WHERE trace_id = ?", (trace_id,))
    assert "step 2" in json.loads(verdict[0][0])["evidence"]
