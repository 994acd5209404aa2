"""Root cause through the real collector and ``ragsieve jobs run``: the evidence beyond the
judges (where the answer's words sit, a chunk the prompt dropped) and ``undetermined``."""

from __future__ import annotations

import json
import time
from typing import Any

from click.testing import CliRunner

from ragsieve.collector.instrument import instrument, llm_span, rag_span, retriever_span
from ragsieve.jobs.cli import cli
from ragsieve.jobs.fitting.labels import Label, add_label, store_labels
from ragsieve.jobs.fitting.rootcause_weights import labelled_pieces
from ragsieve.jobs.golden.review.suggest import evidence_chunks

STARTER_LIMIT = "The Starter plan allows 120 requests per minute."
PRO_LIMIT = "The Pro plan allows 600 requests per minute."
STARTER_PRICE = "The Starter plan costs $49 per month, billed monthly."
PRO_PRICE = "The Pro plan costs $199 per month, billed monthly."

Doc = tuple[str, str, bool]  # id, content, reached the prompt


def _send(endpoint: str, turns: list[tuple[str, list[Doc], str]]) -> None:
    """One RAG trace per ``(question, [(chunk id, content, in prompt)], answer)``."""
    provider = instrument("rc-app", endpoint, set_global=False, flush_on_exit=False)
    for q, docs, answer in turns:
        with rag_span(q, tracer_provider=provider) as rag:
            with retriever_span(q, tracer_provider=provider) as r:
                r.record([{"id": i, "content": c, "score": 0.5} for i, c, _ in docs])
            prompt = "\n".join(c for _, c, shown in docs if shown) + "\n" + q
            with llm_span(
                "gen", [{"role": "user", "content": prompt}], tracer_provider=provider
            ) as llm:
                llm.record(answer, prompt_tokens=30, completion_tokens=8)
            rag.record(answer)
    provider.force_flush()
    provider.shutdown()


def _run(col: Any, turns: list[tuple[str, list[Doc], str]]) -> tuple[dict[str, tuple], dict]:
    """Send ``turns``, run the job once: each question's (verdict, root cause, sample body),
    and the run's report."""
    _send(col.traces_url, turns)
    want = 3 * len(turns)
    deadline = time.monotonic() + 10
    while col.store.count_spans() < want and time.monotonic() < deadline:
        time.sleep(0.05)
    col.server.stop()
    args = ["jobs", "run", "--store", col.store.url, "--since", "1h", "--settle", "0", "--all"]
    res = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    rows = col.store.query(
        "SELECT json_extract(i.body, '$.query'), s.verdict, s.root_cause, s.body"
        " FROM samples s JOIN interactions i ON i.trace_id = s.trace_id"
    )
    return {q: (v, rc, json.loads(b)) for q, v, rc, b in rows}, report


def _decided(col: Any, turns: list[tuple[str, list[Doc], str]]) -> dict[str, tuple]:
    return _run(col, turns)[0]


def test_a_price_answered_from_rate_limit_chunks_blames_the_retriever(
    start_collector: Any,
) -> None:
    # the Starter-plan case: the price question got the rate-limit chunks and answered
    # "$49", which only the price chunk (retrieved by other traces) says
    col = start_collector(run_settler=False)
    turns: list[tuple[str, list[Doc], str]] = [
        ("How much does the Starter plan cost each month?",
         [("prices#starter", STARTER_PRICE, True), ("prices#pro", PRO_PRICE, True)],
         "The Starter plan costs $49 per month."),
        ("What is the monthly price of the Pro plan?",
         [("prices#pro", PRO_PRICE, True), ("prices#starter", STARTER_PRICE, True)],
         "The Pro plan costs $199 per month."),
        ("What is the monthly price of the Starter plan?",
         [("plans#starter", STARTER_LIMIT, True), ("plans#pro", PRO_LIMIT, True)],
         "The Starter plan is $49 per month."),
    ]  # fmt: skip
    decided = _decided(col, turns)
    verdict, cause, body = decided[turns[2][0]]
    assert verdict == "fail"
    assert cause in ("retrieval", "undetermined"), body["evidence"]
    assert "prices#starter" in body["evidence"]
    if cause == "undetermined":  # both lines, each naming the cause it argues for
        assert [c.split(":")[0] for c in body["competing"]] == ["retrieval", "generation"]
    assert body["pieces"][0]["name"] == "rule"
    # review pre-fill never offers the rate-limit chunks as the question's relevant chunks
    chunks, _ = evidence_chunks({**body, "root_cause": cause, "chunks": [
        {"id": "plans#starter"}, {"id": "plans#pro"}]})  # fmt: skip
    assert not {"plans#starter", "plans#pro"} & set(chunks)
    # the clean traces pass
    assert decided[turns[0][0]][0] == "pass" and decided[turns[1][0]][0] == "pass"


def test_a_chunk_the_prompt_dropped_is_named_with_its_rank(start_collector: Any) -> None:
    # the retriever returned the price chunk third; the prompt kept only the first two
    col = start_collector(run_settler=False)
    turns: list[tuple[str, list[Doc], str]] = [
        ("What is the monthly price of the Starter plan?",
         [("plans#starter", STARTER_LIMIT, True), ("plans#pro", PRO_LIMIT, True),
          ("prices#starter", STARTER_PRICE, False)],
         "The Starter plan is $29 per month."),
    ]  # fmt: skip
    decided = _decided(col, turns)
    verdict, cause, body = decided[turns[0][0]]
    assert verdict == "fail" and cause == "retrieval", body
    assert "prices#starter was retrieved (rank 3" in body["evidence"]
    assert "did not reach the prompt" in body["evidence"]


BILLING = "The Starter plan is billed monthly, and its price is charged on the first day."


# the Starter plan's price asked twice: the second prompt holds only its billing chunk (judged
# relevant) and the answer makes up "$29", while the price chunk the first trace retrieved
# answers better: either the model invented it or the retriever missed the price
UNDECIDED: list[tuple[str, list[Doc], str]] = [
    ("How much does the Starter plan cost each month?",
     [("prices#starter", STARTER_PRICE, True), ("prices#pro", PRO_PRICE, True)],
     "The Starter plan costs $49 per month."),
    ("What is the monthly price of the Starter plan?",
     [("billing#starter", BILLING, True), ("plans#pro", PRO_LIMIT, True)],
     "The Starter plan is $29 per month."),
]  # fmt: skip


def test_evidence_that_does_not_decide_reads_undetermined_and_a_review_decides_it(
    start_collector: Any,
) -> None:
    # the prompt's chunk is about the Starter plan's billing (judged relevant); the price chunk
    # other traces retrieved answers better but does not hold the made-up "$29": either the
    # model invented it from a good enough prompt, or the retriever missed the price
    col = start_collector(run_settler=False)
    turns = UNDECIDED
    decided, report = _run(col, turns)
    verdict, cause, body = decided[turns[1][0]]
    assert (verdict, cause) == ("fail", "undetermined"), body["evidence"]
    assert [c.split(":")[0] for c in body["competing"]] == ["generation", "retrieval"]
    assert "billing#starter" in body["competing"][0] and "prices#starter" in body["competing"][1]
    weighed = [p["name"] for p in body["pieces"] if not p["name"].startswith("close_")]
    assert weighed == ["rule", "rival"]
    # the rule's close call (billing#starter a little over the context threshold) is recorded
    # with its distance; outside its band it weighs nothing
    assert all(0 <= p["distance"] < 0.15 for p in body["pieces"] if p["name"].startswith("close_"))
    assert report["flagged_by_root_cause"] == {"undetermined": 1}  # the run's own count
    # `results list --json` carries the flag and the root cause; the report counts it
    res = CliRunner().invoke(
        cli, ["results", "list", "--store", col.store.url, "--flagged", "--json"]
    )
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert {r["root_cause"] for r in rows} == {"undetermined"}
    tid = next(r["trace_id"] for r in rows)
    # `results show` gives the verdict whole: both competing lines, the pieces, each judge
    shown = CliRunner().invoke(cli, ["results", "show", tid[:8], "--store", col.store.url])
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())  # the text is wrapped
    assert "root cause: undetermined" in flat and "argues both ways" in flat
    assert all(" ".join(c.split()) in flat for c in body["competing"])
    assert "rival -> retrieval" in flat and "faithfulness unfaithful" in flat
    doc = json.loads(
        CliRunner().invoke(cli, ["results", "show", tid, "--store", col.store.url, "--json"]).output
    )
    assert doc["competing"] == body["competing"] and doc["pieces"] == body["pieces"]
    # the reviewer answers "retrieval": the next run states it, and `judges fit` reads it back
    add_label(
        col.store, Label(tid, "fail", "review", None, "retrieval", "price chunk missed"), by="ana"
    )
    res = CliRunner().invoke(
        cli, ["jobs", "run", "--store", col.store.url, "--since", "1h", "--settle", "0", "--all"]
    )
    assert res.exit_code == 0, res.output
    (cause, evidence), *_ = col.store.query(
        "SELECT root_cause, json_extract(body, '$.evidence') FROM samples WHERE trace_id = ?"
        " ORDER BY rowid DESC",
        (tid,),
    )
    assert cause == "retrieval" and "a reviewer named retrieval for this failure" in evidence
    (pieces, said, _), *_ = labelled_pieces(col.store, store_labels(col.store))
    assert said == "retrieval" and {p.name for p in pieces} >= {"rule", "rival"}


def test_a_refusal_after_a_retrieval_miss_is_the_retrievers(start_collector: Any) -> None:
    # "I don't know" with only the rate-limit chunks in the prompt (the Starter plan's topic),
    # while the price chunk other traces retrieved holds what was asked ("monthly" price): the
    # refusal was right for its prompt; the retriever missed the page
    col = start_collector(run_settler=False)
    turns: list[tuple[str, list[Doc], str]] = [
        ("How much does the Starter plan cost each month?",
         [("prices#starter", STARTER_PRICE, True), ("prices#pro", PRO_PRICE, True)],
         "The Starter plan costs $49 per month."),
        ("What is the monthly price of the Starter plan?",
         [("plans#starter", STARTER_LIMIT, True), ("plans#pro", PRO_LIMIT, True)],
         "I'm sorry, but the provided documents don't contain that information."),
    ]  # fmt: skip
    verdict, cause, body = _decided(col, turns)[turns[1][0]]
    assert (verdict, cause) == ("fail", "retrieval"), body["evidence"]
    names = [p["name"] for p in body["pieces"]]
    assert names[0] == "rule" and "missed_attribute" in names
    assert "prices#starter" in body["evidence"] and "'monthly'" in body["evidence"]
    # review offers the page that holds the answer, never the prompt's rate-limit chunks
    chunks, _ = evidence_chunks({**body, "root_cause": cause})
    assert chunks == {"prices#starter": 1}


def test_the_review_screen_asks_on_undetermined_with_both_lines_and_judges_fit_reads_it(
    start_collector: Any,
) -> None:
    # the same undetermined failure as above, answered on the review screen this time
    col = start_collector(run_settler=False)
    turns = UNDECIDED
    decided, _ = _run(col, turns)
    _, cause, body = decided[turns[1][0]]
    assert cause == "undetermined", body["evidence"]
    res = CliRunner().invoke(
        cli,
        ["golden", "review", "--store", col.store.url, "--reviewer", "ana"],
        # Enter first (an undetermined cause is no default), then "retrieval": the question has
        # an answer, so accepting it asks for its chunk (never a case that must abstain)
        input="a\n\nretrieval\ne\nThe Starter plan costs $49 per month.\nprices#starter\na\nq\n",
    )
    assert res.exit_code == 0, res.output
    screen = res.output
    assert "is not one of" not in screen  # the job's undetermined was never offered back
    assert "the question has an answer; [e]dit names its chunk" in screen
    assert "accept as a no-answer case" not in screen and "accepted " in screen
    assert "ROOT CAUSE UNDETERMINED" in screen
    for line in body["competing"]:  # both lines, each on its own
        assert f"    {line}" in screen
    assert "root cause: retrieval (the job said undetermined)" in screen
    # the answer is a label `judges fit` learns from, with the pieces the job weighed
    labels = [x for x in store_labels(col.store) if x.root_cause == "retrieval"]
    assert len(labels) == 1
    (pieces, said, _), *_ = labelled_pieces(col.store, labels)
    assert said == "retrieval" and {p.name for p in pieces} >= {"rule", "rival"}
