"""Hostile inputs, second round (issue 28 row 8): one 1 MiB word as a question, an answer or a
chunk. A golden file refuses it with ``path:line``; a trace is cut to what a judge reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from test_hostile2_files import ragsieve, refused

from ragsieve.collector.store import Store
from ragsieve.evaluators.records import RagInteraction, RetrievedDocument
from ragsieve.evaluators.tools.limits import MAX_ANSWER_CHARS, MAX_CHUNK_CHARS, MAX_QUESTION_CHARS

WORD = "a" * (1024 * 1024)


def test_a_golden_case_with_a_1_mib_query_is_refused_with_its_line(
    tmp_path: Path, store: Store
) -> None:
    golden = tmp_path / "golden_v1.jsonl"
    rows = [{"id": "ok", "query": "How much is Pro?", "relevant_chunks": ["c1"]}]
    rows.append({"id": "big", "query": WORD, "relevant_chunks": ["c1"]})
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ran = ragsieve("golden", "import", golden, "--store", store.url)
    refused(ran, f"{golden}:2: query: ", f"at most {MAX_QUESTION_CHARS} characters")
    rows[1] = {"id": "big", "query": "q", "reference_answer": WORD}
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ran = ragsieve("golden", "import", golden, "--store", store.url)
    refused(ran, f"{golden}:2: reference_answer: ", f"at most {MAX_ANSWER_CHARS} characters")


def test_a_trace_is_cut_to_what_a_judge_reads_and_says_so() -> None:
    chunk = RetrievedDocument(id="c1", content=WORD, rank=0)
    assert len(chunk.content or "") == MAX_CHUNK_CHARS and chunk.possibly_truncated
    rec = RagInteraction(
        trace_id="0" * 32,
        span_id="0" * 16,
        started_at=datetime.now(UTC),
        query=WORD,
        answer=WORD,
        documents=(chunk, RetrievedDocument(id="c2", content="short", rank=1)),
    )
    assert len(rec.query or "") == MAX_QUESTION_CHARS and len(rec.answer or "") == MAX_ANSWER_CHARS
    assert rec.possibly_truncated and not rec.documents[1].possibly_truncated
    again = RagInteraction.model_validate(rec.model_dump())  # a stored record reads back as is
    assert again == rec
    small = RagInteraction(
        trace_id="1" * 32, span_id="1" * 16, started_at=datetime.now(UTC), query="q", answer="a"
    )
    assert not small.possibly_truncated
