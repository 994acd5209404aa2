"""End to end: OTel SDK → collector (then stopped) → `ragsieve jobs run`, offline and LLM judges."""

from __future__ import annotations

import json
import time
from typing import Any

from click.testing import CliRunner

from ragsieve.collector.instrument import instrument, llm_span, rag_span, retriever_span
from ragsieve.evaluators.testing import FakeOpenAIServer, prompt_of
from ragsieve.jobs.cli import cli
from ragsieve.jobs.fitting.evidence import missed_chunks

PARIS = "Paris is the capital of France. It has been the seat of government since 987."
TURNS = [
    ("What is the capital of France?", PARIS, "The capital of France is Paris."),
    ("Which city is the capital of France?", PARIS, "Paris is the capital of France."),
    ("What is the capital of France?", PARIS, "The capital is Marseille, the seat since 1850."),
]


def send_turns(endpoint: str) -> None:
    provider = instrument("e2e-app", endpoint, set_global=False, flush_on_exit=False)
    for q, doc, answer in TURNS:
        with rag_span(q, tracer_provider=provider) as rag:
            with retriever_span(q, tracer_provider=provider) as r:
                r.record([{"id": "kb-1", "content": doc, "score": 0.8}])
            with llm_span(
                "gen", [{"role": "user", "content": f"{doc}\n{q}"}], tracer_provider=provider
            ) as llm:
                llm.record(answer, prompt_tokens=30, completion_tokens=8)
            rag.record(answer)
    provider.force_flush()
    provider.shutdown()


def run(store_url: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    res = CliRunner(env=env).invoke(
        cli,
        [
            "jobs",
            "run",
            "--store",
            store_url,
            "--since",
            "1h",
            "--settle",
            "0",
            "--all",
            "--json",
            *args,
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    report: dict[str, Any] = json.loads(res.stdout)
    return report


def test_offline_then_llm_judges_with_collector_stopped(start_collector: Any) -> None:
    col = start_collector(run_settler=False)  # only the job settles traces
    send_turns(col.traces_url)
    deadline = time.monotonic() + 10
    while col.store.count_spans() < 9 and time.monotonic() < deadline:
        time.sleep(0.05)
    col.server.stop()
    assert col.store.query("SELECT COUNT(*) FROM interactions")[0][0] == 0

    rep = run(col.store.url)
    assert rep["settled"] == 3 and rep["discovered"] == 3 and rep["judged"] == 3
    assert rep["flagged"] == 1 and rep["flagged_by_root_cause"] == {"generation": 1}
    fr = rep["failure_rate"]
    assert abs(fr["estimate"] - 1 / 3) < 1e-6 and fr["ci_low"] < fr["estimate"] < fr["ci_high"]

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        supported = "Marseille" not in prompt_of(body)
        return {
            "reasoning": "compared",
            "abstained": False,
            "claims": [{"claim": "answer", "supported": supported}],
        }

    with FakeOpenAIServer(default=reply, usage=(120, 30)) as server:
        env = {
            "RAGSIEVE_JOBS__BACKEND": "llm",
            "RAGSIEVE_LLM__BASE_URL": server.base_url,
            "RAGSIEVE_LLM__PRICE_PER_1K_PROMPT": "1.0",
        }
        rep = run(col.store.url, "--judge", "faithfulness", env=env)
        assert len(server.requests) == 3
    assert rep["judge_calls"] == 3 and rep["judge_errors"] == 0
    assert rep["cost"]["prompt_tokens"] == 360 and rep["cost"]["completion_tokens"] == 90
    assert abs(rep["cost"]["usd"] - 0.36) < 1e-9
    assert rep["flagged"] == 1 and rep["flagged_by_root_cause"] == {"generation": 1}
    assert rep["judges"][0]["name"] == "faithfulness"
    assert rep["judges"][0]["version"].startswith("llm")


REFUND_DOC = "Refunds for returned card readers are paid to the original card within 14 days."
FEES_DOC = "Card payments cost 2.4% plus 0.30 USD per successful transaction."
KEYS_DOC = "Each API key can open at most 25 simultaneous connections."


def send_corpus_turns(endpoint: str) -> None:
    """A refund question answered from the refund chunk; the same question later missing it
    (the answer invents a value); a question nothing answers, declined."""
    turns = [
        (
            "How long do refunds for a returned card reader take?",
            [("kb-refunds", REFUND_DOC), ("kb-fees", FEES_DOC)],
            "Refunds for returned card readers are paid within 14 days.",
        ),
        (
            "How many days until a refund for a returned reader is paid?",
            [("kb-keys", KEYS_DOC), ("kb-fees", FEES_DOC)],
            "A refund for a returned reader is paid within 45 days.",
        ),
        (
            "Is there a Tallyfox office in Madrid?",
            [("kb-keys", KEYS_DOC), ("kb-fees", FEES_DOC)],
            "I'm sorry, but the provided documents don't contain that information.",
        ),
    ]
    send_turns_with(endpoint, turns)


def send_turns_with(endpoint: str, turns: list[tuple[str, list[tuple[str, str]], str]]) -> None:
    """One RAG trace per ``(question, [(chunk id, content)], answer)``."""
    provider = instrument("e2e-app", endpoint, set_global=False, flush_on_exit=False)
    for q, docs, answer in turns:
        with rag_span(q, tracer_provider=provider) as rag:
            with retriever_span(q, tracer_provider=provider) as r:
                r.record([{"id": i, "content": c, "score": 0.5} for i, c in docs])
            prompt = "\n".join(c for _, c in docs) + "\n" + q
            with llm_span(
                "gen", [{"role": "user", "content": prompt}], tracer_provider=provider
            ) as llm:
                llm.record(answer, prompt_tokens=30, completion_tokens=8)
            rag.record(answer)
    provider.force_flush()
    provider.shutdown()


def test_a_retrieval_miss_names_the_chunk_other_traces_retrieved(start_collector: Any) -> None:
    col = start_collector(run_settler=False)
    send_corpus_turns(col.traces_url)
    deadline = time.monotonic() + 10
    while col.store.count_spans() < 9 and time.monotonic() < deadline:
        time.sleep(0.05)
    col.server.stop()
    rep = run(col.store.url)
    assert rep["judged"] == 3 and rep["observed_corpus"]["chunks"] == 3
    rows = col.store.query(
        "SELECT json_extract(i.body, '$.query'), s.verdict, s.root_cause, s.body"
        " FROM samples s JOIN interactions i ON i.trace_id = s.trace_id"
    )
    by_query = {q: (v, rc, json.loads(b)) for q, v, rc, b in rows}
    clean = by_query["How long do refunds for a returned card reader take?"]
    missed = by_query["How many days until a refund for a returned reader is paid?"]
    declined = by_query["Is there a Tallyfox office in Madrid?"]
    assert clean[0] == "pass"
    assert (missed[0], missed[1], missed[2]["missed_chunk"]) == ("fail", "retrieval", "kb-refunds")
    assert "kb-refunds" in missed[2]["evidence"]
    assert declined[0] == "pass"
    assert "none of the 3 chunks seen in traffic answers this" in declined[2]["evidence"]


REQUEST_DOC = "Refunds for returned card readers must be requested within 30 days of delivery."


def test_an_answer_from_a_chunk_the_retriever_missed_is_named_retrieval(
    start_collector: Any,
) -> None:
    # the second trace got a chunk on refunds (by when to ask for one, not when it is paid); its
    # answer states what only the payment chunk says, which an earlier trace retrieved
    col = start_collector(run_settler=False)
    turns = [
        ("How long do refunds for a returned card reader take?",
         [("kb-refunds", REFUND_DOC), ("kb-fees", FEES_DOC)],
         "Refunds for returned card readers are paid within 14 days."),
        ("When is the refund for a returned card reader paid?",
         [("kb-request", REQUEST_DOC), ("kb-keys", KEYS_DOC)],
         "The refund for a returned card reader is paid to the original card within 14 days."),
        ("When is the refund for a returned card reader due?",
         [("kb-request", REQUEST_DOC), ("kb-keys", KEYS_DOC)],
         "The refund for a returned card reader is paid in store credit within 3 days."),
    ]  # fmt: skip
    send_turns_with(col.traces_url, turns)
    deadline = time.monotonic() + 10
    while col.store.count_spans() < 9 and time.monotonic() < deadline:
        time.sleep(0.05)
    col.server.stop()
    run(col.store.url)
    rows = col.store.query(
        "SELECT json_extract(i.body, '$.query'), s.verdict, s.root_cause, s.body"
        " FROM samples s JOIN interactions i ON i.trace_id = s.trace_id"
    )
    by_query = {q: (v, rc, json.loads(b)) for q, v, rc, b in rows}
    paid = by_query[turns[1][0]]
    assert (paid[0], paid[1], paid[2]["missed_chunk"]) == ("fail", "retrieval", "kb-refunds")
    assert paid[2]["missed_holds_answer"] and "holds what the answer says" in paid[2]["evidence"]
    # a made-up value holds nowhere, so the missed chunk is not where the answer came from; but
    # it answers the question the prompt did not: either the model invented it from a prompt on
    # the topic, or the retriever missed the page; the flag says so with both lines
    made_up = by_query[turns[2][0]]
    assert made_up[:2] == ("fail", "undetermined"), made_up[2]["evidence"]
    assert [c.split(":")[0] for c in made_up[2]["competing"]] == ["generation", "retrieval"]
    assert "kb-refunds" in made_up[2]["competing"][1]
    ids = [tid for (tid,) in col.store.query("SELECT trace_id FROM samples")]
    found = missed_chunks(col.store, ids)
    assert sorted(found.values()) == [("kb-refunds", True)]  # what `judges fit` reads back
