"""``results show``'s reading of the store: the verdict of the latest run that decided a trace,
with the judge results that run read (not those a later run wrote), found by a prefix even
after retention purged the interaction row."""

from __future__ import annotations

import json
from pathlib import Path

from ragsieve.collector.store import open_store
from ragsieve.jobs.results.show import find_trace, render, trace_verdict

T = "ab" * 16


def _result(st, run: str, label: str, score: float, at: float, why: str) -> None:
    st.execute(
        "INSERT INTO results (trace_id, evaluator, judge_version, run_id, label, score, flagged,"
        " root_cause, created_at, body) VALUES (?, 'faithfulness', ?, ?, ?, ?, 0, NULL, ?, ?)",
        (T, f"v-{run}", run, label, score, at, json.dumps({"explanation": why})),
    )


def test_a_verdict_is_shown_with_the_results_its_run_read(tmp_path: Path) -> None:
    st = open_store(f"sqlite:///{tmp_path / 's.db'}")
    for run, at in (("r1", 1.0), ("r2", 2.0)):
        st.execute("INSERT INTO runs (run_id, started_at) VALUES (?, ?)", (run, at))
    body = json.dumps({"evidence": "the answer says $49; no chunk of the prompt holds it"})
    st.execute(
        "INSERT INTO samples (run_id, trace_id, stratum, inclusion_p, verdict, root_cause, body)"
        " VALUES ('r1', ?, 's', 1.0, 'fail', 'generation', ?)",
        (T, body),
    )
    _result(st, "r1", "unfaithful", 0.2, 1.0, "$49 is not in the context")
    # a later run (a new judge version) left the trace undecided: its result is not the verdict's
    st.execute(
        "INSERT INTO samples (run_id, trace_id, stratum, inclusion_p, verdict, root_cause, body)"
        " VALUES ('r2', ?, 's', 1.0, 'unjudged', NULL, '{}')",
        (T,),
    )
    _result(st, "r2", "faithful", 0.93, 2.0, "every claim supported")
    doc = trace_verdict(st, find_trace(st, T[:8]))  # no interaction row: found among verdicts
    assert doc is not None and (doc["verdict"], doc["root_cause"], doc["run_id"]) == (
        "fail", "generation", "r1"
    )  # fmt: skip
    assert [(j["label"], j["score"]) for j in doc["judges"]] == [("unfaithful", 0.2)]
    text = render(doc)
    assert "$49 is not in the context" in text and "every claim supported" not in text
    assert doc["question"] is None and "question:" not in text
