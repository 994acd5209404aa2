"""Traces that record only the LLM call (issue 21): ``completeness = generation_only``, judged.

Real OTel SDK traffic into a live collector, then ``jobs run`` with its default sampling: an
LLM-only trace is finished (status ok), applicable, and sampled outside the retrieval strata; a
retriever that found nothing is still a complete trace with a tiny context.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from click.testing import CliRunner
from test_run_support import PARIS, wait_stored

from ragsieve.collector.instrument import instrument, llm_span, rag_span, retriever_span
from ragsieve.jobs.cli import cli
from ragsieve.jobs.results.resultstore import window_candidates
from ragsieve.jobs.sampling.strata import assign_strata
from ragsieve.jobs.settings import SamplingSettings

QUESTION = "What is the capital of France?"
ANSWER = "The capital of France is Paris."


def send_shapes(endpoint: str) -> dict[str, str]:
    """One trace of each shape; returns shape -> trace id."""
    provider = instrument("gen-only-app", endpoint, set_global=False, flush_on_exit=False)
    msgs = [{"role": "user", "content": f"{PARIS}\n{QUESTION}"}]
    ids: dict[str, str] = {}
    try:
        with llm_span("test-model", msgs, tracer_provider=provider) as llm:  # the LLM call alone
            ids["llm_alone"] = llm.trace_id
            llm.record(ANSWER, prompt_tokens=10, completion_tokens=5)
        with rag_span(QUESTION, tracer_provider=provider) as rag:  # a root, no retrieval step
            ids["root_and_llm"] = rag.trace_id
            with llm_span("test-model", msgs, tracer_provider=provider) as llm:
                llm.record(ANSWER, prompt_tokens=10, completion_tokens=5)
            rag.record(ANSWER)
        with rag_span(QUESTION, tracer_provider=provider) as rag:  # retrieval found nothing
            ids["empty_retrieval"] = rag.trace_id
            with retriever_span(QUESTION, tracer_provider=provider) as r:
                r.record([])
            with llm_span("test-model", msgs, tracer_provider=provider) as llm:
                llm.record(ANSWER, prompt_tokens=10, completion_tokens=5)
            rag.record(ANSWER)
        with rag_span(QUESTION, tracer_provider=provider) as rag:  # a full RAG turn
            ids["rag"] = rag.trace_id
            with retriever_span(QUESTION, tracer_provider=provider) as r:
                r.record([{"id": "doc-0", "content": PARIS, "score": 0.9}])
            with llm_span("test-model", msgs, tracer_provider=provider) as llm:
                llm.record(ANSWER, prompt_tokens=10, completion_tokens=5)
            rag.record(ANSWER)
        provider.force_flush()
    finally:
        provider.shutdown()
    return ids


def test_llm_only_traces_are_generation_only_applicable_and_judged(collector: Any) -> None:
    ids = send_shapes(collector.traces_url)
    wait_stored(collector.store, len(ids))
    res = CliRunner().invoke(
        cli,
        ["jobs", "run", "--store", collector.store.url, "--since", "1h", "--settle", "0"]
        + ["--json"],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)

    recs = {shape: collector.store.get_interaction(tid) for shape, tid in ids.items()}
    assert {shape: (r.completeness, r.status) for shape, r in recs.items() if r} == {
        "llm_alone": ("generation_only", "ok"),
        "root_and_llm": ("generation_only", "ok"),
        "empty_retrieval": ("complete", "ok"),
        "rag": ("complete", "ok"),
    }
    assert recs["llm_alone"] and recs["llm_alone"].answer == ANSWER
    assert recs["root_and_llm"] and recs["root_and_llm"].documents == ()

    assert report["discovered"] == 4
    assert report["not_applicable"]["count"] == 0
    by = report["sampled"]["by_stratum"]
    assert by["tiny_context"]["population"] == 1  # only the retriever that found nothing
    assert by["uniform"]["population"] == 3
    judged = {
        (tid, ev): label
        for tid, ev, label in collector.store.query(
            "SELECT trace_id, evaluator, label FROM results"
        )
    }
    for shape in ("llm_alone", "root_and_llm"):
        label = judged.get((ids[shape], "answer_relevance"))
        assert label not in (None, "skipped", "error"), (shape, judged)


def test_generation_only_skips_the_retrieval_strata_but_not_slow(collector: Any) -> None:
    ids = send_shapes(collector.traces_url)
    wait_stored(collector.store, len(ids))
    CliRunner().invoke(
        cli,
        ["jobs", "run", "--store", collector.store.url, "--since", "1h", "--settle", "0"]
        + ["--dry-run"],
        catch_exceptions=False,
    )  # settles the traces into interactions
    now = datetime.now(UTC)
    items = window_candidates(collector.store, now - timedelta(hours=1), now + timedelta(hours=1))
    by_trace = {c.trace_id: c for c in items}
    gen_only = by_trace[ids["llm_alone"]]
    assert (gen_only.completeness, gen_only.not_applicable, gen_only.n_context) == (
        "generation_only",
        None,
        0,
    )
    # A very low chunk-score threshold and a slow threshold every trace exceeds.
    rules = SamplingSettings(low_score=2.0, slow_ms=1e-9)
    groups, _ = assign_strata(items, rules, seed=0, golden_vectors=None, embed=None)
    strata = {c.trace_id: name for name, members in groups.items() for c in members}
    assert strata[ids["llm_alone"]] == strata[ids["root_and_llm"]] == "slow"
    assert strata[ids["empty_retrieval"]] == "tiny_context"
    assert strata[ids["rag"]] == "low_retrieval"
