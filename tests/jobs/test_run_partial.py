"""Half-judged traces: a pass needs every judge, a crash before the verdicts loses none of them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from test_run_support import PARIS, settings

from ragsieve.collector.store import Store
from ragsieve.evaluators.judges.registry import get_judge
from ragsieve.evaluators.records import EvalResult, RagInteraction
from ragsieve.evaluators.testing import make_interaction
from ragsieve.jobs.results import resultstore
from ragsieve.jobs.run.run import run_once

BAD = "The capital of France is Marseille, the seat of government since 1850."
GOOD = "The capital of France is Paris."
JUDGES = ("answer_relevance", "context_relevance", "faithfulness")


class FirstCallErrors:
    """Wraps a real judge; its first call per trace answers like a rate-limited endpoint."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.version = inner, inner.name, inner.version
        self.seen: set[str] = set()

    async def evaluate(self, it: RagInteraction) -> Sequence[EvalResult]:
        if it.trace_id in self.seen:
            return list(await self.inner.evaluate(it))
        self.seen.add(it.trace_id)
        return [
            EvalResult(
                trace_id=it.trace_id,
                span_id=it.span_id,
                evaluator=self.name,
                label="error",
                score=None,
                explanation="429 rate limited",
                judge_version=str(self.version),
            )
        ]


def plant(store: Store, n: int, *, bad: bool, **fields: Any) -> list[str]:
    ids = []
    for _ in range(n):
        it = make_interaction(context=(PARIS,), answer=BAD if bad else GOOD, **fields)
        seq = store.query("SELECT COALESCE(MAX(seq), 0) + 1 FROM interactions")[0][0]
        ts = it.started_at.timestamp()
        store.execute(
            "INSERT INTO interactions (trace_id, revision, seq, started_at, settled_at, status,"
            " body) VALUES (?,?,?,?,?,?,?)",
            (it.trace_id, 1, seq, ts, ts, it.status, it.model_dump_json()),
        )
        ids.append(it.trace_id)
    return ids


def flagged_traces(store: Store) -> set[str]:
    return {r["trace_id"] for r in resultstore.list_results(store, flagged=True)}


def seen_candidates(store: Store) -> int:
    rows = store.query("SELECT COALESCE(SUM(seen), 0) FROM candidates WHERE status='candidate'")
    return int(rows[0][0])


def test_judge_error_leaves_trace_partial_and_the_retry_flags_it(store: Store) -> None:
    bad = set(plant(store, 3, bad=True))
    s = settings(store=store.url)
    judges = [FirstCallErrors(get_judge("faithfulness"))] + [get_judge(n) for n in JUDGES[:2]]
    first = run_once(store, s, take_all=True, deliver=False, judges=judges).report
    assert first["judge_errors"] == 3
    assert first["passed"] == 0 and first["partial"] == 3  # not a pass: faithfulness is missing
    rows = store.query("SELECT verdict, body FROM samples")
    assert {v for v, _ in rows} == {"unjudged"}
    assert all(json.loads(b)["missing"] == ["faithfulness"] for _, b in rows)
    again = run_once(store, s, take_all=True, deliver=False, judges=judges).report
    assert again["judge_errors"] == 0 and again["flagged"] == 3
    assert again["flagged_by_root_cause"] == {"generation": 3}
    assert flagged_traces(store) == bad  # `results list --flagged` agrees
    assert seen_candidates(store) == 3
    assert store.query("SELECT COUNT(*) FROM outbox")[0][0] > 0  # annotations queued
    third = run_once(store, s, take_all=True, deliver=False, judges=judges).report
    assert third["flagged"] == 0 and third["judge_calls"] == 0  # decided once


def test_stop_mid_trace_keeps_no_partial_pass(store: Store) -> None:
    bad = set(plant(store, 4, bad=True))
    s = settings(store=store.url)
    judges = [get_judge(n) for n in JUDGES]
    calls = {"n": 0}

    def stop() -> bool:  # SIGTERM after 4 judge calls, as `ragsieve up` wires should_stop
        calls["n"] += 1
        return calls["n"] > 4

    first = run_once(
        store, s, take_all=True, deliver=False, judges=judges, concurrency=1, should_stop=stop
    ).report
    assert first["passed"] == 0  # the half-judged trace is not a pass
    run_once(store, s, take_all=True, deliver=False, judges=judges)
    assert flagged_traces(store) == bad
    assert seen_candidates(store) == 4


def test_partial_pass_recorded_before_the_fix_is_decided_again(store: Store) -> None:
    plant(store, 2, bad=False)
    s = settings(store=store.url)
    judges = [get_judge(n) for n in JUDGES]
    first = run_once(store, s, take_all=True, deliver=False, judges=judges).report
    emitted = first["annotations"]["queued"]
    assert first["passed"] == 2 and emitted >= 6  # at least one per (trace, judge)
    again = run_once(store, s, take_all=True, deliver=False, judges=judges).report
    assert again["annotations"]["queued"] == 0  # final verdicts are not emitted twice
    # A pass row without the completeness flag (written by an older version) is not final.
    store.execute("UPDATE samples SET body = json_remove(body, '$.complete')")
    third = run_once(store, s, take_all=True, deliver=False, judges=judges).report
    assert third["judge_calls"] == 0 and third["annotations"]["queued"] == emitted
    last = run_once(store, s, take_all=True, deliver=False, judges=judges).report
    assert last["annotations"]["queued"] == 0


def test_crash_before_verdicts_is_recovered_when_the_sample_moves_on(store: Store) -> None:
    bad = set(plant(store, 2, bad=True))
    plant(store, 2, bad=False)
    s = settings(store=store.url)
    judges = [get_judge(n) for n in JUDGES]
    store.execute(
        "CREATE TRIGGER crash BEFORE INSERT ON samples BEGIN SELECT RAISE(ABORT, 'killed'); END"
    )
    try:
        run_once(store, s, take_all=True, deliver=False, judges=judges)
    except Exception as exc:  # the store error the crash stands for
        assert "killed" in str(exc)
    else:
        raise AssertionError("the crash trigger did not fire")
    store.execute("DROP TRIGGER crash")
    assert store.query("SELECT COUNT(*) FROM checkpoints")[0][0] == 12
    assert store.query("SELECT COUNT(*) FROM samples")[0][0] == 0
    # The next run draws one trace of four; the other three are decided anyway, at no cost.
    rep = run_once(store, settings(store=store.url, **{"jobs.sample_size": 1}), deliver=False)
    r = rep.report
    assert r["sampled"]["total"] == 1 and r["judge_calls"] == 0
    assert r["recovered"] == 3
    assert r["failure_rate"]["n"] == 1  # recovered traces stay out of this run's estimate
    assert flagged_traces(store) == bad
    verdicts = dict(store.query("SELECT trace_id, verdict FROM samples"))
    assert len(verdicts) == 4 and {verdicts[t] for t in bad} == {"fail"}
