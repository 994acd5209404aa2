"""Issue 47: the report's per-query rows as one matrix (``QueryRows``), written row by row.

The bytes written are the bytes the dict of dicts wrote (``to_json()`` still gives dicts to
anyone calling it); the memory saved is measured in ``bench/gate_memory.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ragsieve.evaluators.golden.sets import load_golden
from ragsieve.evaluators.metrics import DEFAULT_METRICS, expand_metrics
from ragsieve.evaluators.metrics.report import QueryRows, build_report, dumps

CASES = [
    {"id": "q1", "query": "How do I export?", "relevant_chunks": {"c1": 2, "c2": 1}},
    {"id": "q2", "query": "¿Cómo exporto?", "relevant_chunks": ["c3"], "category": "es"},
    {"id": "q3", "query": "Nothing here", "relevant_chunks": []},
    {"id": "q 4", "query": 'Quotes " and \\ in ids', "relevant_chunks": ["c4"]},
]
RUN = {"q1": ["c2", "c9", "c1"], "q2": ["c3"], "q 4": ["c9"]}


def _report(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "golden_v1.jsonl"
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES), "utf-8")
    return build_report(load_golden(path), RUN, expand_metrics(DEFAULT_METRICS, [1, 5]))


def test_rows_written_one_at_a_time_are_the_bytes_the_dicts_wrote(tmp_path: Path) -> None:
    report = _report(tmp_path)
    assert isinstance(report.per_query, QueryRows)
    lean, full = report.to_json(rows=False), report.to_json()
    assert isinstance(full["per_query"], dict) and not isinstance(lean["per_query"], dict)
    for indent in (0, 1):
        assert dumps(lean, indent=indent) == dumps(full, indent=indent)
    assert json.loads(dumps(lean)) == json.loads(json.dumps(full, ensure_ascii=False))


def test_query_rows_read_like_the_dict_they_replace(tmp_path: Path) -> None:
    rows = _report(tmp_path).per_query
    assert list(rows) == ["q1", "q2", "q 4"] and len(rows) == 3 and "q3" not in rows
    assert rows["q2"]["mrr"] == 1.0 and rows["q1"]["mrr"] == 1.0 and rows["q 4"]["mrr"] == 0.0
    assert rows["q 4"]["recall@5"] == 0.0 and rows["q1"] is not rows["q1"]  # a new dict each read
    assert dict(rows) == {q: rows[q] for q in ["q1", "q2", "q 4"]}
