"""Shared helpers for the job tests: real OTel SDK traffic into a live collector, settings."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsieve.collector.instrument import instrument, llm_span, rag_span, retriever_span
from ragsieve.collector.store import Store
from ragsieve.jobs.settings import load_settings

PARIS = "Paris is the capital of France. It has been the seat of government since 987."
BANANA = "Bananas are rich in potassium and grow in tropical climates."
REFUND = "Refunds are issued within 14 days of receiving the returned item."


@dataclass(frozen=True)
class Turn:
    """One RAG turn the test app performs."""

    question: str
    docs: Sequence[str]
    answer: str
    fail: bool = False  # the app raises inside the root span


# Kinds of traffic with the root cause a correct job assigns (None: passes).
KINDS: dict[str, tuple[Turn, str | None]] = {
    "good": (
        Turn("What is the capital of France?", [PARIS], "The capital of France is Paris."),
        None,
    ),
    "good_refund": (
        Turn(
            "How many days until a refund is issued?",
            [REFUND],
            "Refunds are issued within 14 days of receiving the returned item.",
        ),
        None,
    ),
    "unfaithful": (
        Turn(
            "What is the capital of France?",
            [PARIS],
            "The capital of France is Marseille, the seat of government since 1850.",
        ),
        "generation",
    ),
    "missing_abstention": (
        Turn(
            "Who won the 1930 football world cup final?",
            [BANANA],
            "Uruguay beat Argentina 4-2 in Montevideo to win the 1930 final.",
        ),
        "no_answer_expected",
    ),
}


def send(
    endpoint: str,
    turns: Sequence[Turn],
    *,
    project_name: str | None = None,
    roots: dict[str, str] | None = None,
) -> list[str]:
    """Send ``turns`` through the OTel SDK (OTLP/HTTP) and return their trace ids.

    ``roots`` (if given) receives trace id -> root span id.
    """
    provider = instrument(
        "job-test-app", endpoint, project_name=project_name, set_global=False, flush_on_exit=False
    )
    ids: list[str] = []
    try:
        for t in turns:
            try:
                with rag_span(t.question, tracer_provider=provider) as rag:
                    ids.append(rag.trace_id)
                    if roots is not None:
                        roots[rag.trace_id] = rag.span_id
                    with retriever_span(t.question, tracer_provider=provider) as r:
                        r.record(
                            [
                                {"id": f"doc-{i}", "content": d, "score": 0.9 - 0.1 * i}
                                for i, d in enumerate(t.docs)
                            ]
                        )
                    msgs = [{"role": "user", "content": "\n".join(t.docs) + "\n" + t.question}]
                    with llm_span("test-model", msgs, tracer_provider=provider) as llm:
                        if t.fail:
                            raise RuntimeError("generator crashed")
                        llm.record(t.answer, prompt_tokens=10, completion_tokens=5)
                    rag.record(t.answer)
            except RuntimeError:
                pass
        provider.force_flush()
    finally:
        provider.shutdown()
    return ids


def wait_stored(store: Store, n_traces: int, timeout: float = 10.0) -> None:
    """Wait until the collector committed spans of ``n_traces`` traces."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if store.query("SELECT COUNT(*) FROM traces")[0][0] >= n_traces:
            return
        time.sleep(0.05)
    raise TimeoutError(f"collector stored fewer than {n_traces} traces")


def settings(**flags: Any) -> Any:
    """Settings with flags (dotted keys) over the defaults; no config file."""
    base = {"jobs.since": "1h", "jobs.settle_s": 0.0}
    return load_settings(None, {**base, **flags})


def test_support_sends_one_trace_per_turn(collector: Any) -> None:
    ids = send(collector.traces_url, [KINDS["good"][0], KINDS["unfaithful"][0]])
    wait_stored(collector.store, 2)
    assert len(set(ids)) == 2
    assert {r[0] for r in collector.store.query("SELECT trace_id FROM traces")} == set(ids)
