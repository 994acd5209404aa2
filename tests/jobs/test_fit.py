"""``ragsieve judges fit``: labels, the fit on the job's verdict rule, calibrations in the store."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from ragsieve.collector.store import Store, open_store
from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.judges import build_judges
from ragsieve.evaluators.judges.combined.calibrated import (
    DEFAULT_WEIGHTS,
    CalibratedJudge,
    Calibration,
    MetricCalibration,
    rescore,
)
from ragsieve.evaluators.records import EvalResult, RagInteraction, RetrievedDocument
from ragsieve.jobs.fitting.evidence import group_of
from ragsieve.jobs.fitting.fit import NotEnoughLabels, Problem, run_fit
from ragsieve.jobs.fitting.folds import folds
from ragsieve.jobs.fitting.guards import beyond_chance
from ragsieve.jobs.fitting.labels import Label, add_label, read_labels_file, store_labels
from ragsieve.jobs.fitting.table import Example, Item, verdict_table
from ragsieve.jobs.judging import calibrations
from ragsieve.jobs.verdicts.flagging import decide

JOB = {"faithfulness": 0.65, "answer_relevance": 0.5, "context_relevance": 0.6}


def _interaction(i: int) -> RagInteraction:
    return RagInteraction(
        trace_id=f"{i:032x}",
        span_id=f"{i:016x}",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        query="What is the capital of France?",
        answer="The capital of France is Paris.",
        documents=[RetrievedDocument(id="c1", content="Paris is the capital of France.", rank=0)],
    )


def _faith(i: int, support: float) -> EvalResult:
    return EvalResult(
        trace_id=f"{i:032x}",
        span_id=f"{i:016x}",
        evaluator="faithfulness",
        label="faithful" if support >= 0.65 else "unfaithful",
        score=support,
        judge_version="offline-5:t0.65",
        metadata={"evidence": {"mean": support, "min": support, "share": 1.0}},
    )


def _examples(n: int, seed: int = 1) -> tuple[list[Example], list[Item]]:
    """Traces whose faithfulness support is uniform on [0.1, 0.9]; a person says a trace fails
    exactly when its support is below 0.4 (the default threshold, 0.65, over-flags)."""
    rng = np.random.default_rng(seed)
    examples, items = [], []
    for i, x in enumerate(rng.uniform(0.1, 0.9, n)):
        results = {"faithfulness": _faith(i, round(float(x), 4))}
        fail, causes = verdict_table(_interaction(i), results)
        examples.append(Example(f"{i:032x}", results, fail, causes))
        items.append(Item(i, None, bool(x < 0.4), "generation" if x < 0.4 else None))
    return examples, items


def test_verdict_table_is_the_job_rule_per_combination() -> None:
    it = _interaction(1)
    results = {"faithfulness": _faith(1, 0.9)}
    fail, causes = verdict_table(it, results)
    # bit 0 (faithfulness) decides; the other metrics are not judged here
    assert [bool(fail[c]) for c in range(8)] == [False, True] * 4
    assert causes[1] == decide(it, [_faith(1, 0.1)], JOB).root_cause == "generation"


def test_a_correct_refusal_stays_a_pass_in_the_table_on_the_job_s_scale() -> None:
    # a refusal whose only chunk scores 0.40 (below the job's 0.6 by more than the near margin)
    # and is near the question in meaning: the job passes it as a correct abstention, and so
    # must every combination in which context relevance fails
    it = _interaction(2).model_copy(update={"answer": "I don't have that information."})
    refusal = _faith(2, 0.0).model_copy(update={"label": "abstained", "score": None})
    chunk = {"id": "c1", "rank": 0, "relevant": False, "score": 0.4, "cosine": 0.45}
    ctx = refusal.model_copy(
        update={
            "evaluator": "context_relevance",
            "label": "irrelevant",
            "score": 0.4,
            "metadata": {"chunks": [chunk]},
        }
    )
    results = {"faithfulness": refusal, "context_relevance": ctx}
    assert decide(it, list(results.values()), JOB).outcome == "pass"
    fail, _ = verdict_table(it, results, thresholds=JOB)
    context_failed = [c for c in range(8) if c >> 2 & 1]
    assert not any(fail[c] for c in context_failed)
    near = {"context_relevance": ctx.model_copy(update={"metadata": {"chunks": [
        {**chunk, "score": 0.5}]}})}  # fmt: skip
    fail, causes = verdict_table(it, {**results, **near}, thresholds=JOB)
    assert all(fail[c] and causes[c] == "abstained_wrongly" for c in context_failed)


def test_fit_finds_the_people_s_threshold_and_says_it_is_better() -> None:
    examples, items = _examples(120)
    result = run_fit(examples, items, JOB, k=5, seed=0, reps=400)
    assert 0.36 <= result.params.thresholds["faithfulness"] <= 0.42
    agreement = result.report["agreement"]
    assert agreement["after"]["balanced_accuracy"]["value"] > 0.95
    assert agreement["before"]["balanced_accuracy"]["value"] < 0.85
    assert result.better and result.report["better"] is True
    assert result.report["root_cause_accuracy"]["after"] == 1.0


def _people_say(examples: list[Example], cut: float, flip: float, seed: int) -> list[Item]:
    """People fail a trace below ``cut`` in support, and disagree with that on a ``flip`` share."""
    rng = np.random.default_rng(seed)
    items = []
    for i, ex in enumerate(examples):
        failed = bool(ex.results["faithfulness"].score < cut) != bool(rng.random() < flip)
        items.append(Item(i, None, failed, "generation" if failed else None))
    return items


def test_a_fit_is_stored_when_the_folds_gain_even_within_noise_and_never_when_they_do_not() -> None:
    # people's threshold 0.58, just under the default 0.65: the fit moves to it, and the folds,
    # fitted on fewer labels, gain a little, not beyond noise: stored (its change already won
    # its labels beyond chance)
    examples, _ = _examples(60, seed=1)
    small = run_fit(examples, _people_say(examples, 0.58, 0.0, 11), JOB, k=5, reps=400)
    assert 0.56 <= small.params.thresholds["faithfulness"] <= 0.6
    assert 0 < small.gain["value"] and small.gain["ci"][0] <= 0
    assert small.worth_storing and not small.better and small.report["worth_storing"] is True
    # people who disagree among themselves: the fit still moves, the folds lose: not stored
    examples, _ = _examples(60, seed=2)
    noisy = run_fit(examples, _people_say(examples, 0.6, 0.15, 12), JOB, k=5, reps=400)
    assert noisy.changes and noisy.gain["value"] < 0
    assert not noisy.worth_storing and not noisy.report["worth_storing"]


def _anchors(n: int, offset: int = 10_000) -> list[Example]:
    """Unlabelled traces, support uniform on [0.1, 0.9], as a store holds them."""
    examples, _ = _examples(n, seed=7)
    return [
        Example(f"{i + offset:032x}", ex.results, ex.fail, ex.cause)
        for i, ex in enumerate(examples)
    ]


def _band_passed(examples: list[Example], lo: float, hi: float, keep: int) -> list[Item]:
    """Labels that agree with the defaults, but for ``keep`` traces between ``lo`` and ``hi``
    support that a person passes; the band's other traces carry no label."""
    support = [ex.results["faithfulness"].score for ex in examples]
    band = [i for i, x in enumerate(support) if lo < x < hi][:keep]
    return [
        Item(i, None, x < 0.65 and i not in band)
        for i, x in enumerate(support)
        if i in band or not lo < x < hi
    ]


def test_a_lone_label_is_not_enough_to_move_a_threshold() -> None:
    examples, _ = _examples(120)
    result = run_fit(examples, _band_passed(examples, 0.55, 0.65, 1), JOB, k=4, reps=200)
    assert result.params.thresholds["faithfulness"] == 0.65


def test_labels_do_not_move_what_many_unlabelled_traces_share() -> None:
    # four people's passes between 0.55 and 0.65 support are beyond chance; without the store's
    # other traces the threshold moves under them, with them it would change the verdict of one
    # trace in eight that no label speaks for, and stays
    examples, _ = _examples(120)
    items = _band_passed(examples, 0.55, 0.65, 4)
    alone = run_fit(examples, items, JOB, k=4, reps=200)
    passed = [examples[it.example].results["faithfulness"].score for it in items if not it.failed]
    assert alone.params.thresholds["faithfulness"] <= min(x for x in passed if x < 0.65)
    anchored = run_fit(examples, items, JOB, k=4, reps=200, anchors=_anchors(1000))
    assert anchored.params.thresholds["faithfulness"] == 0.65
    assert anchored.report["anchors"] == 1000


def test_anchors_stand_for_the_traffic_by_their_inclusion_probability() -> None:
    # the sampler picked every trace of the band but only one in twenty of the others: the
    # band is a small share of the traffic, so changing its verdicts costs little
    examples, _ = _examples(120)
    items = _band_passed(examples, 0.55, 0.65, 4)
    anchors = _anchors(1000)
    in_band = [0.55 < ex.results["faithfulness"].score < 0.65 for ex in anchors]
    weights = [1.0 if b else 20.0 for b in in_band]
    result = run_fit(examples, items, JOB, k=4, reps=200, anchors=anchors, anchor_weights=weights)
    assert result.params.thresholds["faithfulness"] < 0.6


def test_weights_are_fitted_only_from_fifty_labels_of_each_class() -> None:
    few = run_fit(*_examples(120), JOB, k=4, reps=100)  # about 45 failures
    many = run_fit(*_examples(300), JOB, k=4, reps=100)  # about 110 failures
    assert few.report["weights_fitted"] is False and many.report["weights_fitted"] is True
    assert few.params.weights["faithfulness"] == DEFAULT_WEIGHTS["faithfulness"]


def test_the_store_s_traces_do_not_stop_a_fit_the_labels_agree_on() -> None:
    examples, items = _examples(120)
    result = run_fit(examples, items, JOB, k=5, seed=0, reps=400, anchors=_anchors(1000))
    assert 0.36 <= result.params.thresholds["faithfulness"] <= 0.42
    assert result.better


def _mixed_band(n: int = 200) -> tuple[list[Example], list[Item]]:
    """Support uniform on [0.1, 0.9]: below 0.45 a person fails the trace, from 0.65 passes it;
    in between (the default threshold flags all of it) two in five are passes. Clearing the band
    loses more failures than it spares passes: balanced accuracy keeps the threshold."""
    examples, _ = _examples(n)
    support = [ex.results["faithfulness"].score for ex in examples]
    band = sorted((x, i) for i, x in enumerate(support) if 0.45 <= x < 0.65)
    passed = {i for j, (_, i) in enumerate(band) if j % 5 in (1, 3)}
    items = [Item(i, None, x < 0.65 and i not in passed) for i, x in enumerate(support)]
    return examples, items


def test_a_false_flag_that_costs_more_clears_the_mixed_band() -> None:
    examples, items = _mixed_band()
    plain = run_fit(examples, items, JOB, k=4, reps=300)
    assert plain.params.thresholds["faithfulness"] == 0.65 and not plain.better
    costly = run_fit(examples, items, JOB, k=4, reps=300, false_flag_cost=3.0)
    flagged, _ = Problem(examples, items).predict(costly.params)  # the final fit's verdicts
    support = np.array([examples[it.example].results["faithfulness"].score for it in items])
    assert not flagged[(support >= 0.5) & (support < 0.65)].any()
    assert flagged[support < 0.4].all()
    agreement = costly.report["agreement"]  # cross-validated: each fold fitted on the others
    assert agreement["before"]["false_flag_rate"]["value"] > 0.2
    assert agreement["after"]["false_flag_rate"]["value"] < 0.1
    assert agreement["after"]["recall"]["value"] > 0.7  # the failures below the band stay
    assert agreement["delta"]["cost_weighted_accuracy"]["value"] > 0
    assert costly.report["false_flag_cost"] == 3.0 and costly.better
    assert "cost_weighted_accuracy" not in plain.report["agreement"]["after"]


def _cleared(passes: int, failures: int) -> tuple[np.ndarray, ...]:
    """A change that clears the flags of ``passes`` labelled passes and ``failures`` labelled
    failures: truth, the change's verdicts, the current verdicts (one column)."""
    truth = np.array([False] * passes + [True] * failures)
    n = len(truth)
    return truth, np.zeros((n, 1), bool), np.ones((n, 1), bool)


def _sure(truth: np.ndarray, pred: np.ndarray, cur: np.ndarray, cost: float) -> bool:
    n = len(truth)
    no_cause = np.zeros((n, 1), bool)
    return bool(beyond_chance(truth, pred, no_cause, cur, no_cause, np.zeros(n, bool), cost)[0])


@pytest.mark.parametrize("cost", [0.2, 1.0, 3.0, 20.0])
def test_one_or_two_labels_never_move_a_verdict_whatever_the_cost(cost: float) -> None:
    for passes in (1, 2):
        assert not _sure(*_cleared(passes, 0), cost)
        truth, pred, cur = _cleared(0, passes)  # flags added on labelled failures
        assert not _sure(truth, cur, pred, cost)


def test_the_sign_test_weighs_a_pass_by_the_false_flag_cost() -> None:
    # clearing 24 flags of which 8 are passes: against at cost 1, break-even at cost 2, worth it
    # at cost 8 (64 for, 16 against)
    assert not _sure(*_cleared(8, 16), 1.0)
    assert not _sure(*_cleared(8, 16), 2.0)
    assert _sure(*_cleared(8, 16), 8.0)
    # at cost 1 it is the plain sign test: 3 of 3 passes, not 2 of 2 nor 6 of 8
    assert _sure(*_cleared(3, 0), 1.0) and not _sure(*_cleared(6, 2), 1.0)
    # a change worth nothing on average, half clearing and half adding flags, does not pass
    truth = np.array([False, True] * 20)
    cur = np.array([True, True, False, False] * 10)[:, None]
    pred = ~cur
    assert not _sure(truth, pred, cur, 3.0)


def test_a_costly_false_flag_still_needs_labels_beyond_chance() -> None:
    # at cost 3 a change that clears flags is worth nothing when one in four of them is a pass:
    # a band with one pass in five is not moved, however many labels it holds
    examples, _ = _examples(400)
    support = [ex.results["faithfulness"].score for ex in examples]
    band = sorted((x, i) for i, x in enumerate(support) if 0.45 <= x < 0.65)
    passed = {i for j, (_, i) in enumerate(band) if j % 5 == 2}
    items = [Item(i, None, x < 0.65 and i not in passed) for i, x in enumerate(support)]
    result = run_fit(examples, items, JOB, k=4, reps=200, false_flag_cost=3.0)
    assert result.report["agreement"]["delta"]["false_flag_rate"]["value"] == 0
    assert not result.better


def test_the_labels_of_one_question_are_cross_validated_in_one_fold() -> None:
    # the same question asked again (or turns of one conversation) would otherwise let a fold be
    # tested on a near copy of what it was fitted on
    examples, items = _examples(120)
    grouped = [
        Example(ex.trace_id, ex.results, ex.fail, ex.cause, f"question:{i // 3}")
        for i, ex in enumerate(examples)
    ]
    fold = folds(Problem(grouped, items), 5, seed=0)
    by_group: dict[str, set[int]] = {}
    for it, f in zip(items, fold, strict=True):
        by_group.setdefault(grouped[it.example].group, set()).add(int(f))
    assert all(len(fs) == 1 for fs in by_group.values())
    assert len(set(fold.tolist())) == 5  # still five folds


def test_a_question_asked_twice_is_one_group_and_a_conversation_is_one() -> None:
    it = _interaction(1)
    again = _interaction(2).model_copy(update={"query": "  what is the CAPITAL of France? "})
    turn = _interaction(3).model_copy(update={"session_id": "s-9", "query": "And its size?"})
    other = _interaction(4).model_copy(update={"query": "What is the capital of Spain?"})
    assert group_of(it) == group_of(again) != group_of(other)
    assert group_of(turn) == "session:s-9"
    assert group_of(_interaction(5).model_copy(update={"query": None})).startswith("trace:")


def test_fit_refuses_below_the_minimum_and_says_how_many_more() -> None:
    examples, items = _examples(120)
    few = [it for it in items if not it.failed][:30] + [it for it in items if it.failed][:12]
    with pytest.raises(NotEnoughLabels, match="label 8 more failures"):
        run_fit(examples, few, JOB)


def test_same_labels_no_gain_is_not_written() -> None:
    # labels that agree with the default decision: nothing to gain, so not "better"
    examples, _ = _examples(80)
    items = [
        Item(i, None, bool(ex.fail[1] and ex.results["faithfulness"].score < 0.65))
        for i, ex in enumerate(examples)
    ]
    result = run_fit(examples, items, JOB, k=4, reps=300)
    assert not result.better and not result.changes and not result.worth_storing


def test_calibrated_judge_labels_at_the_fit_and_reports_on_the_job_scale() -> None:
    cal = Calibration({"faithfulness": MetricCalibration(0.4, None)}, series=1)
    [judge] = build_judges(["faithfulness"], thresholds=JOB, calibration=cal)
    assert judge.version.endswith(cal.id) and cal.id.startswith("cal1-")
    it = _interaction(3).model_copy(update={"answer": "The capital of France is Paris since 1850."})
    [r] = asyncio.run(judge.evaluate(it))
    raw = r.metadata["raw_score"]
    assert r.metadata["calibration"] == cal.id
    assert (r.label == "faithful") == (raw >= 0.4)
    # the job decides with jobs.thresholds on the reported score: the same decision
    assert (r.score < JOB["faithfulness"]) == (raw < 0.4)
    assert rescore("faithfulness", r, DEFAULT_WEIGHTS["faithfulness"]) == pytest.approx(
        raw, abs=1e-4
    )


def test_calibrated_context_chunks_are_relevant_at_the_fitted_threshold() -> None:
    inner = build_judges(["context_relevance"], thresholds=JOB)[0]
    judge = CalibratedJudge(inner, 0.2, 0.6, "cal9-00000000")
    [r] = asyncio.run(judge.evaluate(_interaction(4)))
    for c in r.metadata["chunks"]:
        assert c["relevant"] == (c["raw_score"] >= 0.2)
        assert (c["score"] >= 0.6) == c["relevant"]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Store:
    st = open_store(f"sqlite:///{tmp_path / 's.db'}")
    for i in range(3):  # derived records, as the collector stores them
        it = _interaction(i)
        st.execute(
            "INSERT INTO interactions (trace_id, revision, seq, started_at, settled_at, status,"
            " body) VALUES (?, 1, ?, 0, 0, ?, ?)",
            (it.trace_id, i + 1, it.status, it.model_dump_json()),
        )
    yield st
    st.close()


def test_labels_file_lines_are_checked_against_the_store(
    tmp_path: Path, sqlite_store: Store
) -> None:
    good = tmp_path / "ok.jsonl"
    good.write_text(
        json.dumps({"trace_id": f"{1:032x}", "verdict": "fail", "root_cause": "retrieval"})
        + "\n\n"
        + json.dumps({"trace_id": f"{2:032x}", "verdict": "pass", "metric": "faithfulness"})
        + "\n"
    )
    labels = read_labels_file(good, sqlite_store)
    assert [(x.verdict, x.metric, x.root_cause) for x in labels] == [
        ("fail", None, "retrieval"),
        ("pass", "faithfulness", None),
    ]
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(
        json.dumps({"trace_id": f"{1:032x}", "verdict": "pass"})
        + "\n"
        + json.dumps({"trace_id": "f" * 32, "verdict": "pass"})
        + "\n"
    )
    with pytest.raises(ConfigError, match=r"unknown.jsonl:2: trace_id: f{32} is not in the store"):
        read_labels_file(unknown, sqlite_store)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"trace_id": f"{1:032x}", "verdict": "maybe"}) + "\n")
    with pytest.raises(ConfigError, match=r"bad.jsonl:1: verdict: "):
        read_labels_file(bad, sqlite_store)
    # a file saved with a byte-order mark reads as without it; a byte that is not UTF-8 is named
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + good.read_bytes())
    assert read_labels_file(bom, sqlite_store) == labels
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(good.read_bytes() + b'{"trace_id": "\xff", "verdict": "fail"}\n')
    with pytest.raises(ConfigError, match=r"latin.jsonl:4: not UTF-8 \(byte 0xff"):
        read_labels_file(latin, sqlite_store)
    listed = tmp_path / "list.jsonl"
    listed.write_text('["fail"]\n')
    with pytest.raises(ConfigError, match=r"list.jsonl:1: line: a JSON object per line"):
        read_labels_file(listed, sqlite_store)


def test_review_labels_and_candidates_become_labels(sqlite_store: Store) -> None:
    rows = [
        ("q1", "accepted", "generation", {"source_trace_ids": ["t1"]}),
        (
            "q2",
            "rejected",
            "retrieval",
            {"source_trace_ids": ["t2"], "review": {"reason": "false_alarm: x"}},
        ),
        (
            "q3",
            "rejected",
            "retrieval",
            {"source_trace_ids": ["t3"], "review": {"reason": "duplicate"}},
        ),
        ("audit:t4", "audit_fail", None, {"source_trace_ids": ["t4"], "audit": True}),
        (
            "q5",
            "accepted",
            "generation",
            {"source_trace_ids": ["t5"], "review": {"via": "phoenix", "root_cause": "retrieval"}},
        ),
    ]
    for cid, status, cause, body in rows:
        sqlite_store.execute(
            "INSERT INTO candidates (id, status, category, root_cause, norm_query, seen,"
            " created_at, updated_at, body) VALUES (?, ?, NULL, ?, ?, 1, 0, 0, ?)",
            (cid, status, cause, cid, json.dumps(body)),
        )
    add_label(sqlite_store, Label("t6", "pass", "review", reason="the answer is right"), by="ann")
    got = {(x.trace_id, x.verdict, x.source, x.root_cause) for x in store_labels(sqlite_store)}
    assert got == {
        ("t1", "fail", "candidates", "generation"),
        ("t2", "pass", "candidates", None),
        ("t4", "fail", "audits", None),
        ("t5", "fail", "phoenix", "retrieval"),
        ("t6", "pass", "review", None),
    }


def test_calibrations_are_versioned_exported_imported_and_reset(
    tmp_path: Path, sqlite_store: Store
) -> None:
    assert calibrations.active(sqlite_store) is None
    cal = Calibration(
        {"faithfulness": MetricCalibration(0.5, {"mean": 0.4, "min": 0.6, "share": 0.0})},
        series=calibrations.next_series(sqlite_store),
    )
    calibrations.save(sqlite_store, cal)
    got = calibrations.active(sqlite_store)
    assert got is not None and got.id == cal.id and got.metrics == cal.metrics
    calibrations.export(sqlite_store, tmp_path / "cal.json")
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        imported = calibrations.import_(other, tmp_path / "cal.json")
        assert imported.metrics == cal.metrics and imported.series == 1
    finally:
        other.close()
    assert calibrations.next_series(sqlite_store) == 2
    assert calibrations.reset(sqlite_store) == 1 and calibrations.active(sqlite_store) is None
    (tmp_path / "bad.json").write_text('{"metrics": {"faithfulness": {"threshold": 2}}}')
    with pytest.raises(ConfigError, match="bad.json: metrics.faithfulness.threshold"):
        calibrations.import_(sqlite_store, tmp_path / "bad.json")


def _llm_examples(n: int) -> tuple[list[Example], list[Item]]:
    """LLM faithfulness results (a score, no evidence); people fail a trace below 0.3."""
    rng = np.random.default_rng(3)
    examples, items = [], []
    for i, x in enumerate(rng.uniform(0.0, 1.0, n)):
        r = _faith(i, round(float(x), 4)).model_copy(
            update={"metadata": {}, "judge_version": "llm-2:judge-1"}
        )
        fail, causes = verdict_table(_interaction(i), {"faithfulness": r})
        examples.append(Example(f"{i:032x}", {"faithfulness": r}, fail, causes))
        items.append(Item(i, None, bool(x < 0.3)))
    return examples, items


def test_llm_judges_get_a_threshold_only() -> None:
    examples, items = _llm_examples(100)
    result = run_fit(examples, items, JOB, k=4, reps=300, backend="llm")
    assert 0.25 <= result.params.thresholds["faithfulness"] <= 0.35
    assert result.better
    cal = result.calibration(1, 0.0)
    assert cal.backend == "llm" and cal.metrics["faithfulness"].weights is None
    assert result.report["metrics"]["faithfulness"]["weights"] is None


def test_a_calibration_applies_to_the_backend_it_was_fitted_for() -> None:
    from ragsieve.evaluators.judges import LLMConfig

    llm = LLMConfig(base_url="http://127.0.0.1:9/v1", model="judge-1")
    llm_cal = Calibration({"faithfulness": MetricCalibration(0.3, None)}, backend="llm")
    off_cal = Calibration({"faithfulness": MetricCalibration(0.4, None)})
    [judged] = build_judges(["faithfulness"], backend="llm", llm=llm, calibration=llm_cal)
    assert isinstance(judged, CalibratedJudge) and judged.version.endswith(llm_cal.id)
    [plain] = build_judges(["faithfulness"], backend="llm", llm=llm, calibration=off_cal)
    assert not isinstance(plain, CalibratedJudge)
    [offline] = build_judges(["faithfulness"], calibration=llm_cal)
    assert not isinstance(offline, CalibratedJudge)
    assert llm_cal.id != Calibration(llm_cal.metrics).id  # the backend is part of the fit
    again = Calibration.from_json(llm_cal.to_json())
    assert again.backend == "llm" and again.id == llm_cal.id


def _context(it: RagInteraction, score: float) -> EvalResult:
    """A context-relevance result of one chunk, relevant from 0.5 on."""
    relevant = score >= 0.5
    return EvalResult(
        trace_id=it.trace_id,
        span_id=it.span_id,
        evaluator="context_relevance",
        label="relevant" if relevant else "irrelevant",
        score=score,
        metadata={"chunks": [{"id": "c1", "relevant": relevant, "score": score}]},
    )


def test_verdict_table_keeps_the_corpus_chunk_the_job_found() -> None:
    it = _interaction(5).model_copy(update={"answer": "I don't know."})
    faith = _faith(5, 0.9).model_copy(
        update={"label": "abstained", "score": None, "metadata": {"abstained": True}}
    )
    results = {"faithfulness": faith, "context_relevance": _context(it, 0.1)}
    ctx_fails = 1 << 2
    fail, causes = verdict_table(it, results)
    assert not fail[ctx_fails]  # a correct abstention: nothing answers it
    fail, causes = verdict_table(it, results, missed_chunk="kb-9")
    assert fail[ctx_fails] and causes[ctx_fails] == "retrieval"


def test_the_fit_reads_a_missed_chunk_that_holds_the_answer_as_the_job_does() -> None:
    it = _interaction(3)
    results = {"faithfulness": _faith(3, 0.9), "context_relevance": _context(it, 0.9)}
    unfaithful, faithful = 1, 0
    _, causes = verdict_table(it, results, missed_chunk="kb-9")
    assert causes[unfaithful] == "generation"  # a chunk that answers, not the answer's source
    fail, causes = verdict_table(it, results, missed_chunk="kb-9", holds_answer=True)
    assert causes[unfaithful] == "retrieval"
    assert not fail[faithful]
