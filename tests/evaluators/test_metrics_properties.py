"""Hypothesis properties of the ranking metrics, and agreement with a naive per-query reference."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ragsieve.evaluators.metrics import METRICS, evaluate, expand_metrics

CHUNKS = [f"c{i}" for i in range(12)]
ALL = [str(s) for s in expand_metrics(METRICS, [1, 3, 5, 20])] + ["mrr@3"]

qrels_st = st.dictionaries(st.sampled_from(CHUNKS), st.integers(0, 3), min_size=1, max_size=8)
run_st = st.lists(st.sampled_from(CHUNKS), max_size=15)
case_st = st.lists(st.tuples(qrels_st, run_st), min_size=1, max_size=6)


def _as_inputs(cases: list[tuple[dict[str, int], list[str]]]) -> tuple[dict, dict]:
    qrels = {f"q{i}": g for i, (g, _) in enumerate(cases)}
    run = {f"q{i}": r for i, (_, r) in enumerate(cases)}
    return qrels, run


def _answerable(qrels: dict[str, dict[str, int]]) -> list[str]:
    return [q for q, grades in qrels.items() if any(g > 0 for g in grades.values())]


def _reference(grades: dict[str, int], ids: list[str], name: str, k: int | None) -> float:
    ranked = list(dict.fromkeys(ids))
    top = ranked if k is None else ranked[:k]
    rel = [grades.get(c, 0) for c in top]
    hits = [g > 0 for g in rel]
    n_rel = sum(g > 0 for g in grades.values())
    if name == "hit_rate":
        return float(any(hits))
    if name == "precision":
        return sum(hits) / k
    if name == "recall":
        return sum(hits) / n_rel
    if name == "mrr":
        return next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    if name == "ndcg":
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(rel))
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
        return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    prec = [sum(hits[: i + 1]) / (i + 1) for i in range(len(hits))]
    return sum(p for p, h in zip(prec, hits, strict=True) if h) / sum(hits) if any(hits) else 0.0


@settings(max_examples=60, deadline=None)
@given(case_st)
def test_scores_are_in_unit_interval(cases: list) -> None:
    qrels, run = _as_inputs(cases)
    scores = evaluate(qrels, run, ALL)
    n = len(_answerable(qrels))
    assert list(scores.query_ids) == _answerable(qrels)
    assert set(scores.values) == {str(s) for s in expand_metrics(ALL, [])}
    for values in scores.values.values():
        assert values.shape == (n,)
        assert ((values >= 0) & (values <= 1 + 1e-12)).all()


@settings(max_examples=60, deadline=None)
@given(case_st)
def test_vectorised_metrics_match_the_naive_reference(cases: list) -> None:
    qrels, run = _as_inputs(cases)
    per_query = evaluate(qrels, run, ALL).per_query()
    assert list(per_query) == _answerable(qrels)
    specs = {str(s) for s in expand_metrics(ALL, [])}
    assert all(set(row) == specs for row in per_query.values())
    for qid, row in per_query.items():
        for spec in expand_metrics(ALL, []):
            expected = _reference(qrels[qid], run[qid], spec.name, spec.k)
            assert math.isclose(row[str(spec)], expected, abs_tol=1e-9), (qid, str(spec))


@settings(max_examples=60, deadline=None)
@given(qrels_st.filter(lambda g: any(v > 0 for v in g.values())), run_st)
def test_ideal_ranking_gives_ndcg_one(grades: dict[str, int], noise: list[str]) -> None:
    ideal = sorted((c for c, g in grades.items() if g > 0), key=lambda c: -grades[c])
    ranking = ideal + [c for c in noise if grades.get(c, 0) == 0]
    scores = evaluate({"q": grades}, {"q": ranking}, ["ndcg@1", "ndcg@5", "ndcg@20", "mrr"])
    assert scores.query_ids == ("q",)
    means = scores.mean()
    assert set(means) == {"ndcg@1", "ndcg@5", "ndcg@20", "mrr"}
    assert all(math.isclose(v, 1.0) for v in means.values())


@settings(max_examples=60, deadline=None)
@given(case_st)
def test_recall_never_decreases_with_k(cases: list) -> None:
    qrels, run = _as_inputs(cases)
    names = [f"recall@{k}" for k in range(1, 17)]
    values = evaluate(qrels, run, names).values
    assert set(values) == set(names)
    assert all(v.shape == (len(_answerable(qrels)),) for v in values.values())
    for a, b in zip(names, names[1:], strict=False):
        assert (values[b] >= values[a]).all()
