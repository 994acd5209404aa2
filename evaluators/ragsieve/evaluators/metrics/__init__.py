"""Retrieval metrics by name: the ``METRICS`` registry, ``name@k`` parsing and :func:`evaluate`.

Takes qrels (from a golden set) and a run (ranked ids per query); gives per-query and mean scores
(``ranking``: one short function per metric). Beside them: ``generation`` answers a sample of
golden cases and judges the answers (and abstention), and ``report`` builds the eval report
(``ragsieve eval``) the gate reads.

Example:
    >>> scores = evaluate({"q1": {"a": 1, "b": 1}}, {"q1": ["x", "a", "y"]}, ["recall@2", "mrr"])
    >>> scores.mean()
    {'recall@2': 0.5, 'mrr': 0.5}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragsieve.evaluators.errors import ConfigError
from ragsieve.evaluators.metrics import ranking
from ragsieve.evaluators.metrics.ranking import Relevance, build_relevance

MetricFn = Callable[[Relevance, "int | None"], np.ndarray]


@dataclass(frozen=True)
class MetricDef:
    """A registered metric: the function and whether it needs a cutoff ``@k``."""

    fn: MetricFn
    needs_k: bool


METRICS: dict[str, MetricDef] = {
    "hit_rate": MetricDef(ranking.hit_rate, needs_k=True),
    "precision": MetricDef(ranking.precision, needs_k=True),
    "recall": MetricDef(ranking.recall, needs_k=True),
    "mrr": MetricDef(ranking.mrr, needs_k=False),
    "ndcg": MetricDef(ranking.ndcg, needs_k=True),
    "context_precision": MetricDef(ranking.context_precision, needs_k=True),
}
DEFAULT_METRICS: tuple[str, ...] = (
    "recall",
    "precision",
    "hit_rate",
    "mrr",
    "ndcg",
    "context_precision",
)
_SPEC = re.compile(r"^([a-z_]+)(?:@(\d+))?$")


@dataclass(frozen=True)
class MetricSpec:
    """A metric name with an optional cutoff, written ``name@k`` (``mrr`` alone: whole list)."""

    name: str
    k: int | None = None

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"


def parse_metric(text: str) -> MetricSpec:
    """Parse ``"ndcg@10"`` into ``MetricSpec("ndcg", 10)``; raises ConfigError when unknown."""
    m = _SPEC.match(text.strip().lower())
    if m is None:
        raise ConfigError(f"metric {text!r}: expected name or name@k, e.g. 'ndcg@10'")
    name, k = m.group(1), m.group(2)
    if name not in METRICS:
        raise ConfigError(f"metric {text!r}: unknown metric; available: {', '.join(METRICS)}")
    if k is None:
        if METRICS[name].needs_k:
            raise ConfigError(f"metric {text!r}: needs a cutoff, e.g. '{name}@10'")
        return MetricSpec(name)
    if int(k) < 1:
        raise ConfigError(f"metric {text!r}: k must be >= 1")
    return MetricSpec(name, int(k))


def expand_metrics(names: Iterable[str], ks: Sequence[int]) -> list[MetricSpec]:
    """Turn names into specs: ``name@k`` stays, a bare name gets every k (``mrr`` stays bare)."""
    out: list[MetricSpec] = []
    for raw in names:
        for text in (t for t in raw.split(",") if t.strip()):
            base = text.strip().lower()
            if "@" in base or (base in METRICS and not METRICS[base].needs_k):
                specs = [parse_metric(base)]
            elif not ks:
                raise ConfigError(f"metric {text!r}: needs a cutoff; pass -k or write '{base}@10'")
            else:
                specs = [parse_metric(f"{base}@{k}") for k in ks]
            out.extend(s for s in specs if s not in out)
    if not out:
        raise ConfigError("metrics: no metric selected")
    return out


@dataclass(frozen=True)
class Scores:
    """Per-query metric values for the answerable queries, in golden order."""

    query_ids: tuple[str, ...]
    values: Mapping[str, np.ndarray]

    def mean(self) -> dict[str, float]:
        """Mean of each metric over all scored queries (missing queries count as 0)."""
        return {m: float(v.mean()) if v.size else 0.0 for m, v in self.values.items()}

    def per_query(self) -> dict[str, dict[str, float]]:
        """``query id → metric → value``."""
        cols = {m: v.tolist() for m, v in self.values.items()}
        return {q: {m: cols[m][i] for m in cols} for i, q in enumerate(self.query_ids)}


def score_relevance(rel: Relevance, metrics: Iterable[MetricSpec]) -> dict[str, np.ndarray]:
    """Compute each metric on a prepared relevance matrix."""
    return {str(s): METRICS[s.name].fn(rel, s.k) for s in metrics}


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[str]],
    metrics: Iterable[str | MetricSpec],
) -> Scores:
    """Score a run against graded qrels.

    Queries whose qrels have no grade > 0 (no-answer cases) are left out. A query missing from
    ``run`` scores 0 on every metric and still counts in the means.
    """
    specs = [m if isinstance(m, MetricSpec) else parse_metric(m) for m in metrics]
    ids = tuple(q for q, grades in qrels.items() if any(g > 0 for g in grades.values()))
    rel = build_relevance([qrels[q] for q in ids], (run.get(q) for q in ids))
    return Scores(query_ids=ids, values=score_relevance(rel, specs))


__all__ = [
    "DEFAULT_METRICS",
    "METRICS",
    "MetricDef",
    "MetricSpec",
    "Relevance",
    "Scores",
    "build_relevance",
    "evaluate",
    "expand_metrics",
    "parse_metric",
    "score_relevance",
]
