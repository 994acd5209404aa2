"""Hand-computed cases for the ranking metrics and the registry."""

from __future__ import annotations

import math

import pytest

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.metrics import (
    METRICS,
    MetricSpec,
    build_relevance,
    evaluate,
    expand_metrics,
    parse_metric,
    ranking,
)


def test_mrr_worked_example_first_hits_at_ranks_1_3_2() -> None:
    qrels = {"a": {"r": 1}, "b": {"r": 1}, "c": {"r": 1}}
    run = {"a": ["r", "x", "y"], "b": ["x", "y", "r"], "c": ["x", "r", "y"]}
    assert round(evaluate(qrels, run, ["mrr"]).mean()["mrr"], 3) == 0.611


def test_ndcg_worked_example_graded_2_0_3() -> None:
    qrels = {"q": {"d1": 2, "d3": 3}}
    scores = evaluate(qrels, {"q": ["d1", "d2", "d3"]}, ["ndcg@3"])
    expected = (2 + 3 / math.log2(4)) / (3 + 2 / math.log2(3))
    assert scores.mean()["ndcg@3"] == pytest.approx(expected)
    assert round(scores.mean()["ndcg@3"], 3) == 0.821


def test_recall_and_precision_worked_example() -> None:
    qrels = {"q": {"a": 1, "b": 1}}
    means = evaluate(qrels, {"q": ["x", "a", "y", "z", "w"]}, ["recall@5", "precision@5"]).mean()
    assert means == {"recall@5": 0.5, "precision@5": 0.2}


def test_context_precision_by_hand() -> None:
    # relevant at ranks 1 and 3: (1/1 + 2/3) / 2
    qrels = {"q": {"a": 1, "c": 1, "z": 1}}
    means = evaluate(
        qrels, {"q": ["a", "b", "c", "d"]}, ["context_precision@3", "context_precision@2"]
    ).mean()
    assert means["context_precision@3"] == pytest.approx((1 + 2 / 3) / 2)
    assert means["context_precision@2"] == pytest.approx(1.0)
    none = evaluate(qrels, {"q": ["x", "y"]}, ["context_precision@2"]).mean()
    assert none["context_precision@2"] == 0.0


def test_hit_rate_and_mrr_cutoff() -> None:
    qrels = {"q": {"c": 1}}
    means = evaluate(
        qrels, {"q": ["a", "b", "c"]}, ["hit_rate@2", "hit_rate@3", "mrr@2", "mrr"]
    ).mean()
    assert means == {
        "hit_rate@2": 0.0,
        "hit_rate@3": 1.0,
        "mrr@2": 0.0,
        "mrr": pytest.approx(1 / 3),
    }


def test_duplicates_count_once_and_later_copies_are_dropped() -> None:
    qrels = {"q": {"a": 1, "b": 1}}
    scores = evaluate(qrels, {"q": ["a", "a", "a", "b"]}, ["precision@2", "recall@2", "mrr"])
    # after dropping the copies the list is [a, b]: both relevant in the top 2
    assert scores.mean() == {"precision@2": 1.0, "recall@2": 1.0, "mrr": 1.0}


def test_missing_query_scores_zero_and_counts_in_the_mean() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    scores = evaluate(qrels, {"q1": ["a"]}, ["recall@5", "ndcg@5", "mrr"])
    assert scores.per_query()["q2"] == {"recall@5": 0.0, "ndcg@5": 0.0, "mrr": 0.0}
    assert scores.mean() == {"recall@5": 0.5, "ndcg@5": 0.5, "mrr": 0.5}


def test_no_answer_queries_are_excluded() -> None:
    qrels = {"q1": {"a": 1}, "empty": {}, "zeros": {"a": 0}}
    scores = evaluate(qrels, {"q1": ["a"], "empty": ["a"], "zeros": ["b"]}, ["recall@1"])
    assert scores.query_ids == ("q1",)
    assert scores.mean() == {"recall@1": 1.0}


def test_grade_zero_chunk_is_not_relevant() -> None:
    qrels = {"q": {"a": 0, "b": 1}}
    means = evaluate(qrels, {"q": ["a", "b"]}, ["mrr", "precision@2", "ndcg@2"]).mean()
    assert means["mrr"] == 0.5
    assert means["precision@2"] == 0.5
    assert means["ndcg@2"] == pytest.approx(1 / math.log2(3))


def test_k_beyond_the_list_divides_by_k_and_uses_the_ideal_at_k() -> None:
    qrels = {"q": {"a": 1, "b": 2}}
    means = evaluate(qrels, {"q": ["b"]}, ["precision@10", "ndcg@10", "recall@10"]).mean()
    assert means["precision@10"] == 0.1
    assert means["recall@10"] == 0.5
    assert means["ndcg@10"] == pytest.approx(2 / (2 + 1 / math.log2(3)))


def test_empty_run_and_empty_qrels() -> None:
    assert evaluate({}, {}, ["ndcg@5"]).mean() == {"ndcg@5": 0.0}
    means = evaluate(
        {"q": {"a": 1}}, {"q": []}, list(map(str, expand_metrics(METRICS, [3])))
    ).mean()
    assert set(means.values()) == {0.0}


def test_relevance_matrix_shape_and_rows() -> None:
    rel = build_relevance([{"a": 3, "b": 1}, {"c": 1}], [["b", "x", "a"], None])
    assert rel.gains.tolist() == [[1.0, 0.0, 3.0], [0.0, 0.0, 0.0]]
    assert rel.n_relevant.tolist() == [2, 1]
    assert rel.ideal.tolist() == [[3.0, 1.0], [1.0, 0.0]]
    with pytest.raises(ValueError, match="k must be >= 1"):
        ranking.recall(rel, 0)


def test_parse_metric() -> None:
    assert parse_metric("ndcg@10") == MetricSpec("ndcg", 10)
    assert parse_metric(" MRR ") == MetricSpec("mrr")
    assert str(parse_metric("mrr@5")) == "mrr@5"
    for bad, msg in [
        ("ndcg", "needs a cutoff"),
        ("bleu@4", "unknown metric"),
        ("ndcg@", "expected name"),
        ("recall@0", "k must be >= 1"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            parse_metric(bad)


def test_expand_metrics_bare_names_take_every_k() -> None:
    specs = expand_metrics(["recall,mrr", "ndcg@3", "recall@5"], [5, 10])
    assert [str(s) for s in specs] == ["recall@5", "recall@10", "mrr", "ndcg@3"]
    with pytest.raises(ConfigError, match="needs a cutoff"):
        expand_metrics(["recall"], [])
    with pytest.raises(ConfigError, match="no metric"):
        expand_metrics([","], [5])
